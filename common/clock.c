#include "clock.h"

#include <math.h>
#include <stdio.h>
#include <time.h>

double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

void format_duration(char *buf, size_t n, double seconds) {
    if (!isfinite(seconds) || seconds < 0) seconds = 0;
    long t = (long)(seconds + 0.5);
    if (t >= 3600) snprintf(buf, n, "%ldh%02ldm", t / 3600, t / 60 % 60);
    else snprintf(buf, n, "%ldm%02lds", t / 60, t % 60);
}
