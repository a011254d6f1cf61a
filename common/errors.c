#include "errors.h"

#include <stdarg.h>
#include <stdio.h>

int error_status(char err[ERR_LEN], int status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, ERR_LEN, fmt, ap);
    va_end(ap);
    return status;
}

void format_bytes(double bytes, char *text, size_t n) {
    static const char *units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    int u = 0;
    while (bytes >= 1024.0 && u < 6) bytes /= 1024.0, u++;
    if (u == 0) snprintf(text, n, "%.0f bytes", bytes);
    else snprintf(text, n, bytes < 10.0 ? "%.2f %s" : bytes < 100.0 ? "%.1f %s" : "%.0f %s", bytes, units[u]);
}
