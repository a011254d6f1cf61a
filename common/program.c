#include "program.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "platform.h"

static DieMeeting *meeting;

void die_meets_others(DieMeeting *meet) { meeting = meet; }

void die(int status, const char *fmt, ...) {
    int report = 1;
    if (meeting) status = meeting(status, &report);
    fflush(stdout);
    if (report) {
        va_list ap;
        va_start(ap, fmt);
        fprintf(stderr, "%s: ", program_name());
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        va_end(ap);
    }
    exit(status);
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

long option_long(const char *flag, const char *s, long min, long max) {
    long v;
    int read = whole_number_parse(s, &v);
    if (read == -2) die(EXIT_USAGE, "%s expects a whole number (such as 2000 or 2e3), got '%s'", flag, s);
    if (read == -3) die(EXIT_USAGE, "%s must be between %ld and %ld, got %s", flag, min, max, s);
    if (read != 0) die(EXIT_USAGE, "%s expects a whole number, got '%s' (see --help)", flag, s);
    if (v < min || v > max) die(EXIT_USAGE, "%s must be between %ld and %ld, got %ld", flag, min, max, v);
    return v;
}

double option_double(const char *flag, const char *s, double min, double max, int max_inclusive) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v)) die(EXIT_USAGE, "%s expects a number, got '%s' (see --help)", flag, s);
    if (v < min || v > max || (!max_inclusive && v == max))
        die(EXIT_USAGE, "%s must be in [%g, %g%c, got %s", flag, min, max, max_inclusive ? ']' : ')', s);
    return v;
}

int stdout_flush(char err[ERR_LEN]) {
    errno = 0;
    if (fflush(stdout) == 0 && !ferror(stdout)) return 0;
    snprintf(err, ERR_LEN, "cannot write to standard output: %s", errno ? strerror(errno) : "an earlier write failed");
    return -1;
}

void stdout_flush_or_die(void) {
    char err[ERR_LEN];
    if (stdout_flush(err) != 0) die(EXIT_DATA, "%s", err);
}

static void (*fatal_cleanup)(void);

static void on_fatal_signal(int sig) {
    if (fatal_cleanup) fatal_cleanup();
    platform_end_by_signal(sig);
}

void fatal_signals_install(void (*cleanup)(void), int stop_signals_handled) {
    fatal_cleanup = cleanup;
    platform_signals_catch(PLATFORM_FATAL_SIGNALS, on_fatal_signal, 1);
    if (!stop_signals_handled) platform_signals_catch(PLATFORM_STOP_SIGNALS, on_fatal_signal, 1);
}

double memory_limit(double max_memory, int processes, const char **source) {
    static char text[128];
    if (max_memory > 0) {
        *source = "--max-memory";
        return max_memory;
    }
    const char *available_source;
    double available = platform_memory_available(&available_source);
    if (available <= 0) {
        *source = available_source;
        return 0.0;
    }
    snprintf(text, sizeof(text), "available (%s)%s", available_source,
             processes > 1 ? " per process on this machine" : "");
    *source = text;
    return available / (processes > 0 ? processes : 1);
}
