// A small test framework: TEST(name) registers a test; CHECK records a failure in the
// current test with a message. `tests/run_tests [substring]` runs the tests whose names
// contain the substring; the last line is "N passed, N failed".
#ifndef CHARGPT_TEST_H
#define CHARGPT_TEST_H

typedef void (*TestFn)(void);
void test_register(const char *name, TestFn fn);
// records one check; returns ok so callers can stop early on failure
int test_check(int ok, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#define TEST(name)                                                         \
    static void name(void);                                                \
    __attribute__((constructor)) static void register_##name(void) {      \
        test_register(#name, name);                                        \
    }                                                                      \
    static void name(void)

#define CHECK(cond, ...) test_check(!!(cond), __FILE__, __LINE__, __VA_ARGS__)

#include <stddef.h>

// Relative error in the max norm: max_i |got_i - want_i| / max_i |want_i|
// (0 when both are all zero). The standard by which kernels are compared.
double rel_error_ff(const float *got, const float *want, size_t n);
double rel_error_fd(const float *got, const double *want, size_t n);
double rel_error_dd(const double *got, const double *want, size_t n);

// The whole file, malloc'd and NUL-terminated (*len excludes the NUL), or NULL.
char *test_read_file(const char *path, size_t *len);

// Path of a built program ("train", "generate"): in the directory $CHARGPT_BIN names (as
// `make sanitize` sets it), else in the working directory, the repository root.
const char *test_program(const char *name);
#endif
