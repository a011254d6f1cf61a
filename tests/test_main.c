// Runs every registered test in name order and prints "N passed, N failed", on the kernels'
// backend CHARGPT_KERNELS names (else the fastest this CPU runs). `run_tests --backends`
// prints the backends this CPU runs instead, one a line.
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/clock.h"
#include "../common/platform.h"
#include "../kernels/kernels.h"
#include "test.h"

#define MAX_TESTS 512

typedef struct {
    const char *name;
    TestFn fn;
} TestCase;

static TestCase tests[MAX_TESTS];
static int num_tests;
static int current_failures;
static const char *current_skip;  // why the running test was skipped, or NULL

void test_register(const char *name, TestFn fn) {
    if (num_tests == MAX_TESTS) {
        fprintf(stderr, "too many tests: raise MAX_TESTS\n");
        exit(2);
    }
    tests[num_tests].name = name;
    tests[num_tests].fn = fn;
    num_tests++;
}

int test_check(int ok, const char *file, int line, const char *fmt, ...) {
    if (ok) return 1;
    current_failures++;
    fprintf(stdout, "    %s:%d: ", file, line);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stdout, fmt, ap);
    va_end(ap);
    fputc('\n', stdout);
    fflush(stdout);
    return 0;
}

static int by_name(const void *a, const void *b) {
    return strcmp(((const TestCase *)a)->name, ((const TestCase *)b)->name);
}

int test_emulated(void) {
    const char *e = getenv("CHARGPT_TEST_EMULATED");
    return e && *e;
}

void test_skip(const char *why) {
    current_skip = why;
    printf("    skipped: %s\n", why);
}

static jmp_buf test_end;  // where test_skip_rest returns to: the runner, after the test

_Noreturn void test_skip_rest(const char *why) {
    test_skip(why);
    longjmp(test_end, 1);
}

// Whether name starts with one of the comma-separated prefixes of list.
static int starts_with_listed(const char *list, const char *name) {
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, ",");
        if (n > 0 && strncmp(name, p, n) == 0) return 1;
        p += n + (p[n] == ',');
    }
    return 0;
}

static char self_path[PATH_MAX];

const char *test_self_path(void) { return self_path; }

// The run_tests in $CHARGPT_BIN, where there is one, as self_path: under qemu-user a program
// cannot execute itself (without binfmt_misc the kernel runs no AArch64 executable), so
// scripts/test_arm64.sh puts there a script that runs it under the emulator, as it does for
// ./train and ./generate. Returns 1 when it set self_path.
static int self_from_bin_dir(void) {
    const char *dir = getenv("CHARGPT_BIN");
    return dir && *dir && snprintf(self_path, sizeof(self_path), "%s/run_tests", dir) < (int)sizeof(self_path) &&
           test_file_exists(self_path);
}

int main(int argc, char **argv) {
    platform_init(argc, argv);
    char err[ERR_LEN];
    if (!self_from_bin_dir() && platform_executable_path(self_path, sizeof(self_path), err) != 0 &&
        platform_real_path(argv[0], self_path, sizeof(self_path)) != 0)
        snprintf(self_path, sizeof(self_path), "%s", argv[0]);
    int status;
    if (test_process_mode(argc, argv, &status)) return status;
    const char *filter = argc > 1 ? argv[1] : NULL;
    if (filter && strcmp(filter, "--backends") == 0) {
        const char *names[TEST_MAX_BACKENDS];
        int count = test_backends(names);
        for (int i = 0; i < count; i++) printf("%s\n", names[i]);
        return 0;
    }
    if (filter && strcmp(filter, "--list") == 0) {  // every test's name, one a line
        qsort(tests, num_tests, sizeof(TestCase), by_name);
        for (int i = 0; i < num_tests; i++) printf("%s\n", tests[i].name);
        return 0;
    }
    if (kernels_init(err) != 0) {  // CHARGPT_KERNELS=name runs every test on that backend
        fprintf(stderr, "run_tests: %s\n", err);
        return 2;
    }
    const char *names[TEST_MAX_BACKENDS], *only = getenv("CHARGPT_TEST_BACKENDS");
    int count = test_backends(names);
    size_t listed_length = 0;  // the names count found in the list, with their commas
    for (int i = 0; i < count; i++) listed_length += strlen(names[i]) + (i > 0);
    if (only && *only && (count == 0 || listed_length != strlen(only))) {  // a name this CPU does not run
        kernels_available_text(err, sizeof(err));
        fprintf(stderr, "run_tests: CHARGPT_TEST_BACKENDS=%s: name only backends this CPU runs (%s), once each\n", only,
                err);
        return 2;
    }
    printf("kernels: %s\n", kernels_name());
    if (only && *only) {
        printf("per-backend tests on:");
        for (int i = 0; i < count; i++) printf(" %s", names[i]);
        printf(" (CHARGPT_TEST_BACKENDS)\n");
    }
    // CHARGPT_TEST_LEAVE_OUT=prefix,...: the tests whose names start with one are not run
    // (scripts/test_arm64.sh shares out the tests that any AArch64 CPU runs alike)
    const char *leave_out = getenv("CHARGPT_TEST_LEAVE_OUT");
    qsort(tests, num_tests, sizeof(TestCase), by_name);
    int passed = 0, failed = 0, skipped = 0, left_out = 0;
    for (int i = 0; i < num_tests; i++) {
        if (filter && !strstr(tests[i].name, filter)) continue;
        if (leave_out && starts_with_listed(leave_out, tests[i].name)) {
            left_out++;
            continue;
        }
        current_failures = 0;
        current_skip = NULL;
        double t0 = now_seconds();
        if (setjmp(test_end) == 0) tests[i].fn();
        double secs = now_seconds() - t0;
        int skip = current_skip && current_failures == 0;
        if (skip) skipped++;
        else if (current_failures == 0) passed++;
        else failed++;
        printf("%s %s (%.2fs)\n", current_failures ? "FAIL" : skip ? "skip" : "ok  ", tests[i].name, secs);
        fflush(stdout);
    }
    if (left_out) printf("%d left out: their names start with %s (CHARGPT_TEST_LEAVE_OUT)\n", left_out, leave_out);
    if (skipped) printf("%d skipped: what they test %s lacks\n", skipped, platform_name());
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}

#define REL_ERROR_BODY                                           \
    double num = 0.0, den = 0.0;                                 \
    for (size_t i = 0; i < n; i++) {                             \
        double d = fabs((double)got[i] - (double)want[i]);       \
        double w = fabs((double)want[i]);                        \
        if (d > num || d != d) num = d != d ? INFINITY : d;      \
        if (w > den) den = w;                                    \
    }                                                            \
    if (num == 0.0) return 0.0;                                  \
    return den > 0.0 ? num / den : INFINITY;

double rel_error_ff(const float *got, const float *want, size_t n) { REL_ERROR_BODY }
double rel_error_fd(const float *got, const double *want, size_t n) { REL_ERROR_BODY }
double rel_error_dd(const double *got, const double *want, size_t n) { REL_ERROR_BODY }

// Whether name is one of the comma-separated names of list.
static int listed(const char *list, const char *name) {
    size_t n = strlen(name);
    for (const char *p = list;; p++) {
        if (strncmp(p, name, n) == 0 && (p[n] == ',' || p[n] == '\0')) return 1;
        p = strchr(p, ',');
        if (!p) return 0;
    }
}

// Every backend this CPU runs, or of those only the ones $CHARGPT_TEST_BACKENDS names
// (comma-separated): scripts/test_arm64.sh shares them out between its two emulated runs.
int test_backends(const char *names[TEST_MAX_BACKENDS]) {
    const char *all[TEST_MAX_BACKENDS], *only = getenv("CHARGPT_TEST_BACKENDS");
    int available = kernels_available(all, TEST_MAX_BACKENDS), count = 0;
    for (int i = 0; i < available; i++)
        if (!only || !*only || listed(only, all[i])) names[count++] = all[i];
    return count;
}

int test_plain(const char *name) { return strcmp(name, "plain") == 0; }

static char starting_backend[32];

int test_use_backend(const char *name) {
    char err[ERR_LEN];
    if (!starting_backend[0]) snprintf(starting_backend, sizeof(starting_backend), "%s", kernels_name());
    return test_check(kernels_use(name, err) == 0, __FILE__, __LINE__, "%s", err);
}

void test_restore_backend(void) {
    char err[ERR_LEN];
    if (starting_backend[0] && kernels_use(starting_backend, err) != 0) test_check(0, __FILE__, __LINE__, "%s", err);
}

void fill_uniform(float *p, size_t n, unsigned seed) {
    unsigned s = seed * 2654435761u + 1u;
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        p[i] = (float)(s >> 8) / 8388608.0f - 1.0f;
    }
}

char *test_read_file(const char *path, size_t *len) {
    *len = 0;
    FILE *fp = fopen(path, "rb");
    if (!fp) return NULL;
    fseek(fp, 0, SEEK_END);
    long size = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    char *buf = size >= 0 ? malloc((size_t)size + 1) : NULL;
    if (buf) {
        *len = fread(buf, 1, (size_t)size, fp);
        buf[*len] = '\0';
    }
    fclose(fp);
    return buf;
}

const char *test_program(const char *name) {
#if defined(__EMSCRIPTEN__)
    // WebAssembly starts no process: a test that runs a program ends here, skipped
    char why[96];
    snprintf(why, sizeof(why), "it runs ./%s as a process, and WebAssembly has none to start", name);
    test_skip_rest(strdup(why));
#endif
    static struct {
        char name[32];
        char path[1024];
    } known[4];
    int i = 0;
    while (i < 4 && known[i].name[0] && strcmp(known[i].name, name) != 0) i++;
    if (i == 4) i = 0;
    if (strcmp(known[i].name, name) != 0) {
        const char *dir = getenv("CHARGPT_BIN");
        snprintf(known[i].name, sizeof(known[i].name), "%s", name);
        snprintf(known[i].path, sizeof(known[i].path), "%s/%s", dir && *dir ? dir : ".", name);
        if (!test_file_exists(known[i].path))  // Windows's programs end in .exe
            snprintf(known[i].path, sizeof(known[i].path), "%s/%s.exe", dir && *dir ? dir : ".", name);
    }
    return known[i].path;
}
