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

// p[0, n) = uniform values in [-1, 1) from a fixed linear congruential sequence of seed.
void fill_uniform(float *p, size_t n, unsigned seed);

// The kernels this CPU runs (kernels.h): its backends fastest first, then the plain loops;
// or of those only the ones $CHARGPT_TEST_BACKENDS names (comma-separated): how many, their
// names.
#define TEST_MAX_BACKENDS 8
int test_backends(const char *names[TEST_MAX_BACKENDS]);
// Switches to backend `name` (a failed check when it cannot); test_restore_backend returns
// to the one the run started with (CHARGPT_KERNELS's, or the fastest).
int test_use_backend(const char *name);
void test_restore_backend(void);
// Declares names (the backends this CPU runs) and count, then runs the statement after it
// with each of them in use in turn (call test_restore_backend after).
#define EACH_BACKEND(i, names, count)        \
    const char *names[TEST_MAX_BACKENDS];    \
    int count = test_backends(names);        \
    for (int i = 0; i < count; i++)          \
        if (test_use_backend(names[i]))
// The same over the backends alone, without the plain loops (which have no backend.h table):
// tests of a backend's own products and conversions.
#define EACH_FAST_BACKEND(i, names, count)   \
    const char *names[TEST_MAX_BACKENDS];    \
    int count = test_backends(names);        \
    for (int i = 0; i < count; i++)          \
        if (!test_plain(names[i]) && test_use_backend(names[i]))
// Whether name is the plain loops' (kernels/plain.c).
int test_plain(const char *name);

// The whole file, malloc'd and NUL-terminated (*len excludes the NUL), or NULL.
char *test_read_file(const char *path, size_t *len);

// The test program's own path (the run_tests in $CHARGPT_BIN where there is one, else
// platform_executable_path, else its argv[0] made absolute), to run it again (test_run's
// measuring process).
const char *test_self_path(void);

// Path of a built program ("train", "generate"): in the directory $CHARGPT_BIN names (as
// `make sanitize` sets it), else in the working directory, the repository root.
const char *test_program(const char *name);

// ---- tests/test_helpers.c

// A finished child process.
typedef struct {
    int status;        // wait status; -1 when it could not be started
    double seconds;    // wall time
    long max_rss_kib;  // its peak resident memory
    char *output;      // its stdout and stderr, NUL-terminated
} TestRun;

// Runs argv (argv[0] a path, NULL-terminated) with stdin from in_path (NULL: /dev/null) and
// stdout and stderr into out_path. file_size_limit > 0 sets RLIMIT_FSIZE in the child. A child
// still running after timeout_s seconds is killed and recorded as a failure.
TestRun test_run(const char *const *argv, const char *in_path, const char *out_path, long file_size_limit,
                 double timeout_s);
// The measuring process test_run starts (see test_helpers.c); test_main.c calls it when the
// test program is run as `run_tests --spawn-measured PROGRAM ARGS...`.
int test_spawn_measured(char **argv);
// The same with stdout into stdout_path (a file or a device such as /dev/full) and stderr alone
// into out_path, whose text is the run's output.
TestRun test_run_stdout(const char *const *argv, const char *in_path, const char *stdout_path, const char *out_path,
                        double timeout_s);
// test_run of the built program `name` (test_program) with args, NULL-terminated.
TestRun test_run_program(const char *name, const char *in_path, const char *out_path, double timeout_s,
                         const char *const *args);
// Creates directory path unless it exists; 0 (a failed check) when it cannot.
int test_make_dir(const char *path);
// parent/name in path (parent a directory under tests/tmp), created, and emptied of whatever an
// earlier run left there; 0 (a failed check) when it cannot be.
int test_fresh_dir(char *path, size_t n, const char *parent, const char *name);
// 1 when path names something stat(2) can see (a file, a directory), else 0.
int test_file_exists(const char *path);
// Writes len bytes to path; returns 0, or -1 (recorded as a failure).
int test_write_file(const char *path, const void *bytes, size_t len);
// 1 when the run exited normally with status want; otherwise a failure quoting its output.
int test_exit_status(const TestRun *r, int want, const char *what);
// 1 when the output contains text; otherwise a failure quoting it.
int test_output_has(const TestRun *r, const char *text, const char *what);
void test_run_free(TestRun *r);

// A change to a checkpoint, made by test_edit_checkpoint.
typedef struct {
    const char *key, *value;  // metadata key set to value (NULL: removed), or no key
    const char *tensor;       // a tensor whose element gets the value x, or NULL
    size_t element;
    float x;
    int v1;                   // write format chargpt-1, whose crc32 covers the data alone
} CheckpointEdit;
// Writes dst: the checkpoint src with the edit, as a valid file with its CRC recomputed (so
// only the checks after the CRC can refuse it). Returns 0 or -1 (recorded as a failure).
int test_edit_checkpoint(const char *src, const char *dst, const CheckpointEdit *edit);
// The metadata value for key in the checkpoint at path, copied into value (empty when
// absent); returns 1 if present.
int test_meta_value(const char *path, const char *key, char *value, size_t n);
#endif
