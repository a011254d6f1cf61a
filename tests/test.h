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
#include <stdio.h>

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
// `make sanitize` sets it), else in the working directory, the repository root; NAME.exe where
// NAME is not there (Windows).
const char *test_program(const char *name);

// Marks the running test skipped: what it tests this system lacks (test_system_has), said in
// `why`. A skipped test counts as neither passed nor failed; the line before the last says how
// many were skipped.
void test_skip(const char *why);
// The same, and the test ends there (the runner goes on with the next): for a test that cannot
// go on without what the system lacks, found where it asks for it (WebAssembly has no processes:
// tests/test_process.c calls it when a test would start one).
_Noreturn void test_skip_rest(const char *why);

// Whether the tests run on an emulated CPU (CHARGPT_TEST_EMULATED, which scripts/test_arm64.sh
// sets for qemu-aarch64): a step takes some 300 times a native one, the emulator's own memory
// adds to every program's, and the limits a program sets on itself (RLIMIT_AS) go unseen.
int test_emulated(void);

// ---- tests/test_process.c: processes and special files, on POSIX and on Windows

#define TEST_MAX_ARGS 64  // a child's arguments, its program's path included

// A child process, started by test_child_start, until test_child_wait or test_child_kill has
// seen it end.
typedef struct {
    long pid;         // its process id (on Windows as GetCurrentProcessId gives it)
    void *handle;     // Windows: its process handle
    int peak_rss_fd;  // POSIX: where its measuring process reports its peak RSS, or -1
    int killed;       // Windows: ended by test_child_kill
    long peak_kib;    // Windows: its peak working set as last seen
} TestChild;

// How a child ended.
typedef struct {
    int status;        // its exit status; -1 when it did not exit (then signal), or was not started
    int signal;        // the signal that ended it, or 0. On Windows SIGINT for the exit code of a
                       // console event (STATUS_CONTROL_C_EXIT), TEST_SIGKILL after test_child_kill,
                       // an exception's as POSIX names it (an access violation: SIGSEGV), else -1
    long max_rss_kib;  // its peak resident memory (Windows: peak working set), or -1 when the
                       // system did not say
} TestEnd;
#define TEST_SIGKILL 9  // SIGKILL's number, which Windows's C library has not

// How a child starts (zero: stdin from the null device, the test program's stdout and stderr).
typedef struct {
    const char *in_path;      // stdin, or NULL
    int *stdin_pipe;          // stdin from a new pipe, whose writing end *stdin_pipe gets (no in_path)
    const char *out_path;     // stderr, and stdout unless stdout_path; NULL: the test program's
    const char *stdout_path;  // stdout apart (a file or a device such as /dev/full), with out_path
    int *stdout_pipe;         // stdout into a new pipe, whose reading end *stdout_pipe gets
    const char *cwd;          // its working directory, or NULL: this one
    long file_size_limit;     // > 0: RLIMIT_FSIZE (test_system_has(TEST_FILE_SIZE_LIMIT))
    int measure;              // its peak RSS measured apart from the test program's (POSIX: see
                              // test_process.c); a measured child is not sent stop requests
    int search_path;          // argv[0] looked up in PATH
    const char *const *unset_env;  // names removed from its environment (POSIX), NULL-terminated
} TestSpawn;

// Starts argv (argv[0] a path, NULL-terminated). Returns 0, or -1 with errno.
int test_child_start(TestChild *c, const char *const *argv, const TestSpawn *how);
// Waits up to timeout_s seconds (0: only looks): 1 when the child has ended (*end), else 0.
int test_child_wait(TestChild *c, double timeout_s, TestEnd *end);
// Kills the child (SIGKILL; Windows: TerminateProcess) and waits for it.
void test_child_kill(TestChild *c, TestEnd *end);

// What a person does to stop a program: SIGINT (Ctrl-C), SIGTERM, SIGHUP (the terminal
// closed). On Windows Ctrl-C and Ctrl-Break in the child's console, both of which the program
// takes as SIGINT (Wine sends no Ctrl-Break: TEST_TERMINATE_REQUESTS); no process can close
// another's console (TEST_HANG_UPS).
typedef enum { TEST_INTERRUPT, TEST_TERMINATE, TEST_HANG_UP } TestStop;
// Sends it to the child; 0, or -1.
int test_child_stop(TestChild *c, TestStop stop);
// The signal the program names the request by (common/platform.h's platform_signal_name), and
// exits with 128 + it after saving.
int test_stop_signal(TestStop stop);

// A run of a program to its end: its output, read from out_path, and how it ended.
typedef struct {
    int status;        // its exit status, or -1 (see TestEnd)
    int signal;        // see TestEnd
    double seconds;    // wall time
    long max_rss_kib;  // its peak resident memory
    char *output;      // its stdout and stderr (out_path's text), NUL-terminated
} TestRun;
// Runs argv as `how` says to its end; one still running after timeout_s seconds is killed and
// recorded as a failure.
TestRun test_run_spawned(const char *const *argv, const TestSpawn *how, double timeout_s);
// "exit status 2", "ended by signal 2", "ended by an exception", for messages.
const char *test_end_text(const TestEnd *end, char text[64]);

// The test program's other roles: `run_tests --child NAME ARGS...` calls the child main
// registered as NAME with ARGS, and exits with its return value: what a test would fork to do
// (a crash of its own, a process that leaves a file behind). TEST_CHILD(name) defines and
// registers one.
typedef int (*TestChildMain)(int argc, char **argv);
void test_register_child(const char *name, TestChildMain fn);
#define TEST_CHILD(name)                                                  \
    static int name(int argc, char **argv);                               \
    __attribute__((constructor)) static void register_child_##name(void) { \
        test_register_child(#name, name);                                 \
    }                                                                     \
    static int name(int argc, char **argv)
// Runs the child main `name` with args (NULL-terminated) to its end (at most timeout_s).
TestEnd test_run_child(const char *name, const char *const *args, double timeout_s);
// Called first by main: when argv asks for one of the roles (a child main, POSIX's measuring
// process, Windows's sender of console events), plays it and returns 1 with *status to exit
// with; else 0.
int test_process_mode(int argc, char **argv, int *status);

// What some systems lack: the tests of it check the rest, and say what they left out.
typedef enum {
    TEST_FIFOS,            // mkfifo
    TEST_SYMLINKS,         // symlink (Windows: only with a privilege a user lacks)
    TEST_TERMINALS,        // pseudo-terminals
    TEST_FILE_SIZE_LIMIT,  // RLIMIT_FSIZE
    TEST_FULL_DEVICE,      // /dev/full
    TEST_HANG_UPS,         // SIGHUP sent to a child
    TEST_MAKE_INSTALL,     // `make install` to a DESTDIR
    TEST_READ_ONLY_DIRS,   // a directory of mode 0555 that this user cannot write into
    TEST_PROC_DIR,         // /proc, where no one creates a file
    TEST_TERMINATE_REQUESTS,  // TEST_TERMINATE sent (Windows's Ctrl-Break, which Wine cannot send)
    TEST_BYTE_ARGUMENTS,   // arguments of any bytes (Windows's are UTF-16: not UTF-8 arrives as U+FFFD)
    TEST_LONG_PATHS,       // paths past 259 bytes (MAX_PATH: Windows's msvcrt.dll takes none)
    TEST_ANY_NAMES,        // file names of any bytes but '/' and NUL (Windows's are UTF-16, without
                           // control characters)
    TEST_FORK,             // fork(2), which scripts/bench runs its jobs with (not built on Windows)
} TestFeature;
int test_system_has(TestFeature feature);
// The null device ("/dev/null", "NUL"); a device that is no regular file ("/dev/zero", "NUL").
const char *test_null_device(void);
const char *test_device(void);
// mkfifo (replacing what is at path), symlink, chmod 0555 (read_only) or 0755, rmdir: 0, or -1
// with errno (ENOTSUP where the system has no such thing).
int test_make_fifo(const char *path);
// Writes text into the FIFO at path, before any process reads it: returns the descriptor it
// wrote through, kept open (a writer, which a reader that opens the FIFO then finds, and waits
// on until it is closed), or -1 with errno. test_fifo_wait_read waits at most timeout_s
// seconds for a reader to have read all of it: 0, or -1 with errno.
int test_fifo_feed(const char *path, const char *text);
int test_fifo_wait_read(int fd, double timeout_s);
int test_make_symlink(const char *target, const char *path);
int test_make_read_only(const char *dir, int read_only);
int test_remove_dir(const char *path);
// How much more than glibc's the system's heap may hold at its peak for the same allocations:
// 1, or 1.25 on Windows, whose heap grows a large block (realloc) by copying it to a new one,
// the old one held meanwhile, where glibc moves its pages (measured under Wine: 1.1 times
// glibc's peak for a safetensors header of 1.8 M values).
double test_heap_slack(void);
// Limits this process's address space to `bytes` (RLIMIT_AS). 0, or -1 (Windows has no such
// limit).
int test_limit_address_space(double bytes);
// Sets the environment variable name to value (NULL: removes it). 0, or -1.
int test_set_env(const char *name, const char *value);
// Runs argv on a new pseudo-terminal of `columns` (its controlling terminal, stdin, stdout and
// stderr; COLUMNS unset) to its end; returns what it wrote (malloc'd), or NULL
// (test_system_has(TEST_TERMINALS)).
char *test_run_on_terminal(const char *const *argv, int columns, TestEnd *end);
// Opens a terminal of `columns` into *fd: a new pseudo-terminal (*other its other side), or on
// Windows the process's console (*other -1), which a child of test_child_start has. 0, or -1.
int test_open_terminal(int columns, int *fd, int *other);

// ---- tests/test_helpers.c

// Runs argv (argv[0] a path, NULL-terminated) with stdin from in_path (NULL: the null device)
// and stdout and stderr into out_path, its peak RSS measured. file_size_limit > 0 sets
// RLIMIT_FSIZE in the child. A child still running after timeout_s seconds is killed and
// recorded as a failure.
TestRun test_run(const char *const *argv, const char *in_path, const char *out_path, long file_size_limit,
                 double timeout_s);
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
// Copies the file from to `to`; returns 0, or -1 (recorded as a failure).
int test_copy_file(const char *from, const char *to);
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
    const char *added_tensor; // a tensor added under this name (a copy of transformer.wte.weight), or NULL
} CheckpointEdit;
// Writes dst: the checkpoint src with the edit, as a valid file with its CRC recomputed (so
// only the checks after the CRC can refuse it). Returns 0 or -1 (recorded as a failure).
int test_edit_checkpoint(const char *src, const char *dst, const CheckpointEdit *edit);
// The metadata value for key in the checkpoint at path, copied into value (empty when
// absent); returns 1 if present.
int test_meta_value(const char *path, const char *key, char *value, size_t n);
#endif
