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
