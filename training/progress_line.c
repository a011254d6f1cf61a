#include "progress_line.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/platform.h"

#define MAX_FIELDS 16
#define SEPARATOR " | "

int terminal_width(int fd) {
    int width = platform_terminal_width(fd);
    if (width > 0) return width;
    const char *columns = getenv("COLUMNS");
    if (columns) {
        char *end;
        long n = strtol(columns, &end, 10);
        if (end != columns && !*end && n >= 1 && n <= 10000) return (int)n;
    }
    return 80;
}

void progress_line_fit(const char *const *fields, const int *importance, int n, int width, char *out,
                       size_t size) {
    if (n > MAX_FIELDS) n = MAX_FIELDS;
    int kept[MAX_FIELDS];
    size_t length = 0;
    for (int i = 0; i < n; i++) {
        kept[i] = 1;
        length += strlen(fields[i]) + (i > 0 ? strlen(SEPARATOR) : 0);
    }
    size_t limit = width > 1 ? (size_t)width - 1 : 1;
    // drop the least important field left until the line fits
    for (int kept_count = n; length > limit && kept_count > 1; kept_count--) {
        int worst = -1;
        for (int i = 0; i < n; i++)
            if (kept[i] && importance[i] > 0 && (worst < 0 || importance[i] > importance[worst])) worst = i;
        if (worst < 0) break;
        kept[worst] = 0;
        length -= strlen(fields[worst]) + strlen(SEPARATOR);
    }
    size_t used = 0;
    out[0] = '\0';
    for (int i = 0; i < n; i++) {
        if (!kept[i]) continue;
        used += (size_t)snprintf(out + used, used < size ? size - used : 0, "%s%s", used ? SEPARATOR : "", fields[i]);
        if (used >= size) break;
    }
    if (limit < size && strlen(out) > limit) out[limit] = '\0';
}
