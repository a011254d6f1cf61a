#include "program.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"
#include "platform.h"

static DieMeeting *meeting;

void die_meets_others(DieMeeting *meet) { meeting = meet; }

void die(int status, const char *fmt, ...) {
    int report = 1;
    if (meeting) status = meeting(status, &report);
    fflush(stdout);
    if (report) {
        char message[3 * ERR_LEN];  // names and metadata in it shown safely (common/utf8.h)
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(message, sizeof(message), fmt, ap);
        va_end(ap);
        fprintf(stderr, "%s: ", program_name());
        utf8_write_shown(stderr, message, NULL);
        fputc('\n', stderr);
    }
    exit(status);
}

// 1 when s is written in decimal as a person writes a number: digits, a sign, a point, an
// exponent, nothing else (strtol and strtod also read "0x10", "inf", "nan" and leading spaces).
static int decimal_text(const char *s) { return s[0] && strspn(s, "0123456789+-.eE") == strlen(s); }

int whole_number_parse(const char *s, long *value) {
    if (!decimal_text(s)) return -1;
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
    char *end = NULL;
    errno = 0;
    double v = decimal_text(s) ? strtod(s, &end) : NAN;
    if (!end || errno || end == s || *end || !isfinite(v))
        die(EXIT_USAGE, "%s expects a number, got '%s' (see --help)", flag, s);
    if (v < min || v > max || (!max_inclusive && v == max))
        die(EXIT_USAGE, "%s must be in [%g, %g%c, got %s", flag, min, max, max_inclusive ? ']' : ')', s);
    return v;
}

void option_given_twice(const char *flag, const char *first, const char *second, const char *again) {
    if (first && second)
        die(EXIT_USAGE, "%s is given twice ('%s', then '%s'): give each option once (%s)", flag, first, second, again);
    die(EXIT_USAGE, "%s is given twice: give each option once (%s)", flag, again);
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

// The margin kept free of a bound of `total` bytes (the machine's memory, a cgroup's limit,
// RLIMIT_AS) when no --max-memory is given: a tenth of it, and at least 256 MiB or a quarter of
// it, whichever is less. The tenth leaves a large machine's other programs and its page cache
// room (2.4 GiB of 24 GiB: a run that takes the rest left a neighbour OOM-killed); the 256 MiB
// are what a small machine or container needs beside the run, its shell and daemons and what
// no plan counts of this program (its code, thread stacks, stdio and zlib buffers, malloc's
// arenas: 10 to 40 MB); the quarter keeps that floor from taking a small cgroup whole (of 300
// MiB, 75 MiB are kept).
#define MEMORY_MARGIN_SHARE 0.10
#define MEMORY_MARGIN_FLOOR (256.0 * 1048576)

static double memory_margin(double total) {
    double floor = total / 4 < MEMORY_MARGIN_FLOOR ? total / 4 : MEMORY_MARGIN_FLOOR;
    return total * MEMORY_MARGIN_SHARE > floor ? total * MEMORY_MARGIN_SHARE : floor;
}

double memory_limit(double max_memory, int processes, const char **source) {
    static char text[192];
    if (max_memory > 0) {
        *source = "--max-memory";
        return max_memory;
    }
    MemoryBound bounds[PLATFORM_MEMORY_BOUNDS];
    int n = platform_memory_bounds(bounds, source);
    if (n == 0) return 0.0;
    int least = 0;
    double limit = 0.0, kept = 0.0;
    for (int i = 0; i < n; i++) {
        const MemoryBound *b = &bounds[i];
        double margin = memory_margin(b->total > 0 ? b->total : b->available);
        double room = b->available > margin ? b->available - margin : 0.0;
        if (b->shared && processes > 1) room /= processes;
        if (i == 0 || room < limit) least = i, limit = room, kept = margin;
    }
    char kept_text[32];
    format_bytes(kept, kept_text, sizeof(kept_text));
    snprintf(text, sizeof(text), "available (%s, less %s kept free)%s", bounds[least].name, kept_text,
             bounds[least].shared && processes > 1 ? " per process on this machine" : "");
    *source = text;
    return limit > 1.0 ? limit : 1.0;  // nothing left: every plan is refused (0 would mean no limit)
}

