// The arrays a check hands to the learner's function, each between two guard zones, and what
// the child process says when the function crashes (check.h).
//
// A guard zone is GUARD floats of a pattern no computation writes. After the call every zone
// must still hold it, and every input what it held. With AddressSanitizer the zones are also
// poisoned, so that the first read or write of one stops the function there, and its report
// names the line; this file then names the array and the element from the address.
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../common/rng.h"
#include "check.h"
#include "exit_codes.h"

#if defined(__SANITIZE_ADDRESS__)
#define WITH_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define WITH_ASAN 1
#endif
#endif
#ifdef WITH_ASAN
#include <sanitizer/asan_interface.h>
#endif

#define GUARD 16  // elements of each guard zone
#define GUARD_BITS 0x7fa5a5a5u  // a NaN that no arithmetic makes
#define MAX_BUFFERS 64

typedef struct {
    const char *name;
    void *block;  // the allocation: guard, payload, guard
    unsigned char *data;  // the payload
    size_t n;  // elements
    size_t size;  // bytes of one element (4: float or int)
    int input;
    void *copy;  // an input's values before the call
} Buffer;

static Buffer buffers[MAX_BUFFERS];
static int buffer_count;
static double *double_arrays[MAX_BUFFERS * 4];
static int double_count;
static Rng rng;

// What runs now (check.h)
static char local_title[256];
static char *title = local_title;
static size_t title_size = sizeof(local_title);
static const char *function_name = "the function";

void buffers_share_title(char *slot, size_t size) {
    title = slot;
    title_size = size;
    title[0] = '\0';
}

void buffers_set_function(const char *function) { function_name = function; }

const char *running_title(void) { return title; }
const char *running_function(void) { return function_name; }

void check_title(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(title, title_size, fmt, ap);
    va_end(ap);
}

static void poison(void *p, size_t bytes, int on) {
#ifdef WITH_ASAN
    if (on)
        ASAN_POISON_MEMORY_REGION(p, bytes);
    else
        ASAN_UNPOISON_MEMORY_REGION(p, bytes);
#else
    (void)p, (void)bytes, (void)on;
#endif
}

static void *guarded(const char *name, size_t n, size_t size, int input) {
    if (buffer_count == MAX_BUFFERS) {
        fprintf(stderr, "exercise checker: more than %d buffers in one check\n", MAX_BUFFERS);
        exit(EXIT_CHECKER);
    }
    unsigned char *block = malloc((n + 2 * GUARD) * size);
    if (!block) {
        fprintf(stderr, "exercise checker: out of memory\n");
        exit(EXIT_CHECKER);
    }
    uint32_t bits = GUARD_BITS;
    for (size_t i = 0; i < GUARD; i++) {
        memcpy(block + i * size, &bits, size);
        memcpy(block + (GUARD + n + i) * size, &bits, size);
    }
    poison(block, GUARD * size, 1);
    poison(block + (GUARD + n) * size, GUARD * size, 1);
    buffers[buffer_count] = (Buffer){name, block, block + GUARD * size, n, size, input, NULL};
    return buffers[buffer_count++].data;
}

// After the values are in: an input keeps a copy to compare with after the call.
static void keep_input(void) {
    Buffer *b = &buffers[buffer_count - 1];
    if (!b->input) return;
    b->copy = malloc(b->n * b->size + 1);
    memcpy(b->copy, b->data, b->n * b->size);
}

double uniform(double lo, double hi) { return lo + (hi - lo) * rng_uniform(&rng); }

float *buffer(const char *name, size_t n, const float *from, float lo, float hi, int input) {
    float *x = guarded(name, n, sizeof(float), input);
    for (size_t i = 0; i < n; i++) x[i] = from ? from[i] : (float)uniform(lo, hi);
    keep_input();
    return x;
}

int *int_buffer(const char *name, size_t n, const int *from) {
    int *x = guarded(name, n, sizeof(int), 1);
    memcpy(x, from, n * sizeof(int));
    keep_input();
    return x;
}

double *doubles(size_t n) {
    double *x = calloc(n ? n : 1, sizeof(double));
    if (!x || double_count == (int)(sizeof(double_arrays) / sizeof(double_arrays[0]))) {
        fprintf(stderr, "exercise checker: out of memory, or too many arrays in one check\n");
        exit(EXIT_CHECKER);
    }
    return double_arrays[double_count++] = x;
}

float *floats(size_t n) { return (float *)doubles(n / 2 + 1); }

double *doubles_of(const float *x, size_t n) {
    double *d = doubles(n);
    for (size_t i = 0; i < n; i++) d[i] = x[i];
    return d;
}

float *snapshot(const float *x, size_t n) {
    float *copy = floats(n);
    memcpy(copy, x, n * sizeof(float));
    return copy;
}

// The first element of zone [from, to) of b that changed, or -1.
static long changed_guard(const Buffer *b, size_t from, size_t to) {
    uint32_t bits = GUARD_BITS;
    unsigned char *zone = (unsigned char *)b->block + from * b->size;
    long changed = -1;
    poison(zone, (to - from) * b->size, 0);
    for (size_t i = from; i < to && changed < 0; i++)
        if (memcmp((unsigned char *)b->block + i * b->size, &bits, b->size) != 0) changed = (long)i;
    poison(zone, (to - from) * b->size, 1);
    return changed;
}

int buffers_intact(void) {
    for (int k = 0; k < buffer_count; k++) {
        Buffer *b = &buffers[k];
        long before = changed_guard(b, 0, GUARD), after = changed_guard(b, GUARD + b->n, 2 * GUARD + b->n);
        if (before >= 0 || after >= 0) {
            long index = before >= 0 ? before - GUARD : after - GUARD;
            check_fail(
                "your %s wrote %s[%ld], %s of %s, which holds %zu values (%s[0] to %s[%zu]): a loop "
                "that runs one step too far, or an index computed with the wrong row length",
                function_name, b->name, index, before >= 0 ? "before the start" : "past the end", b->name, b->n,
                b->name, b->name, b->n ? b->n - 1 : 0);
            return 0;
        }
        if (b->input && memcmp(b->copy, b->data, b->n * b->size) != 0) {
            size_t i = 0;
            while (memcmp((unsigned char *)b->copy + i * b->size, b->data + i * b->size, b->size) == 0) i++;
            check_fail(
                "your %s changed %s[%zu], an input: it may only read %s (did you write to the "
                "wrong array?)",
                function_name, b->name, i, b->name);
            return 0;
        }
    }
    return 1;
}

void buffers_reset(unsigned seed) {
    for (int k = 0; k < buffer_count; k++) {
        Buffer *b = &buffers[k];
        poison(b->block, (b->n + 2 * GUARD) * b->size, 0);
        free(b->block);
        free(b->copy);
    }
    buffer_count = 0;
    for (int k = 0; k < double_count; k++) free(double_arrays[k]);
    double_count = 0;
    rng_seed(&rng, seed);
}

// ---------------------------------------------------------------------------------------
// crashes

// Names the array and element an address falls in or next to; 0 when it is none of them.
static int describe_address(uintptr_t address, char *text, size_t size) {
    for (int k = 0; k < buffer_count; k++) {
        const Buffer *b = &buffers[k];
        uintptr_t start = (uintptr_t)b->block, data = (uintptr_t)b->data;
        if (address < start || address >= start + (b->n + 2 * GUARD) * b->size) continue;
        long index = ((long)address - (long)data) / (long)b->size;
        const char *where = index < 0 ? "before the start of" : index >= (long)b->n ? "past the end of" : "inside";
        snprintf(text, size, "%s[%ld], %s %s, which holds %zu values (%s[0] to %s[%zu])", b->name, index, where,
                 b->name, b->n, b->name, b->name, b->n ? b->n - 1 : 0);
        return 1;
    }
    return 0;
}

static void say_crash(const char *what, uintptr_t address, int have_address, int is_write) {
    char where[320] = "";
    const char *access = is_write < 0 ? "read or wrote" : is_write ? "wrote" : "read";
    char line[1024];
    if (have_address && describe_address(address, where, sizeof(where)))
        snprintf(line, sizeof(line), "  FAIL  %s\n        your %s %s %s%s%s%s\n", title, function_name, access, where,
                 what ? " (" : "", what ? what : "", what ? ")" : "");
    else if (have_address && address < 4096)
        snprintf(line, sizeof(line),
                 "  FAIL  %s\n        your %s %s through a NULL pointer (%s): is an array that may be NULL "
                 "(a bias, dinp, dbias) read or written when it is NULL?\n",
                 title, function_name, access, what ? what : "AddressSanitizer");
    else
        snprintf(line, sizeof(line),
                 "  FAIL  %s\n        your %s crashed (%s): it read or wrote memory that is not its arrays', "
                 "far outside them (an index from the wrong formula, an uninitialised pointer or count)\n",
                 title, function_name, what ? what : "AddressSanitizer");
    fflush(stdout);
    if (write(STDOUT_FILENO, line, strlen(line)) < 0) return;
}

#ifdef WITH_ASAN
// AddressSanitizer calls this once it has printed the report of a bad access, before it ends
// the process. (Signals are this file's own: on_signal.)
void __asan_on_error(void) {
    if (!__asan_report_present()) return;
    uintptr_t address = (uintptr_t)__asan_get_report_address();
    const char *description = __asan_get_report_description();
    // an access to a guard zone is reported as use-after-poison: describe_address says it better
    if (description && strcmp(description, "use-after-poison") == 0) description = NULL;
    say_crash(description, address, address != 0, __asan_get_report_access_type());
}

// No leak report (a leak is not what the exercises are about); the signals left to
// on_signal, which knows the faulting address; its own exit status, which check_main.c
// tells apart.
const char *__asan_default_options(void) {
    return "detect_leaks=0:handle_segv=0:handle_sigbus=0:handle_sigfpe=0:handle_abort=0:exitcode=" EXIT_ASAN_TEXT;
}
#endif
const char *__ubsan_default_options(void) { return "print_stacktrace=1:exitcode=" EXIT_UBSAN_TEXT; }

static void on_signal(int sig, siginfo_t *info, void *context) {
    (void)context;
    const char *what = sig == SIGSEGV  ? "SIGSEGV, an access to memory it does not own"
                       : sig == SIGBUS ? "SIGBUS, an access to memory it does not own"
                       : sig == SIGFPE ? "SIGFPE, an integer division by zero"
                       : sig == SIGILL ? "SIGILL, an illegal instruction"
                                       : "SIGABRT, it called abort() or an assert failed";
    int have_address = sig == SIGSEGV || sig == SIGBUS;
    say_crash(what, have_address ? (uintptr_t)info->si_addr : 0, have_address, -1);
    _exit(EXIT_CRASHED);
}

void buffers_catch_crashes(void) {
    // an alternate stack, so that a stack overflow (endless recursion) is reported too
    static char alt[1 << 16];
    stack_t ss = {.ss_sp = alt, .ss_size = sizeof(alt), .ss_flags = 0};
    sigaltstack(&ss, NULL);
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    int signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
    for (size_t i = 0; i < sizeof(signals) / sizeof(signals[0]); i++) sigaction(signals[i], &sa, NULL);
}
