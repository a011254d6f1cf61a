#include "float_text.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

// 9 significant digits always read back as the same float, 17 as the same double; fewer
// often do, and the first precision that does is the shortest text.
void float_text(float x, char *buf, size_t size) {
    for (int digits = 1; digits <= 9; digits++) {
        snprintf(buf, size, "%.*g", digits, (double)x);
        if (strtof(buf, NULL) == x) return;
    }
}

void double_text(double x, char *buf, size_t size) {
    for (int digits = 1; digits <= 17; digits++) {
        snprintf(buf, size, "%.*g", digits, x);
        if (strtod(buf, NULL) == x) return;
    }
}

int whole_number_parse(const char *s, long *value) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (!errno && end != s && !*end) {
        *value = v;
        return 0;
    }
    errno = 0;
    double d = strtod(s, &end);
    if (end == s || *end || isnan(d)) return -1;
    if (d != floor(d)) return -2;
    // LONG_MIN is a power of 2, a double; -LONG_MIN is the first whole number past LONG_MAX
    if (errno || d < (double)LONG_MIN || d >= -(double)LONG_MIN) return -3;
    *value = (long)d;
    return 0;
}
