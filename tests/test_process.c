// What the tests ask of the operating system beyond what the programs do (common/platform.h):
// starting a program as a child process with its standard streams in files, waiting for it
// with a timeout, asking it to stop as a user would (SIGINT, SIGTERM, SIGHUP; Windows: Ctrl-C
// and Ctrl-Break in the child's own console), killing it, measuring its peak memory; and the
// special files some tests need (FIFOs, links, a full device, a memory stream). Three versions,
// POSIX's, Windows's and WebAssembly's (no processes): this is the one test file that asks
// which system it is on.
#if defined(_WIN32)
#define TEST_WINDOWS 1
#elif defined(__EMSCRIPTEN__)
#define TEST_WASM 1
#endif

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/clock.h"
#include "../common/platform.h"
#include "test.h"

#if defined(TEST_WINDOWS)
#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#include <fcntl.h>
#include <io.h>
#include <psapi.h>
#include <signal.h>
#else
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#endif

#define SPAWN_FLAG "--spawn-measured"

// A program's argv of at most TEST_MAX_ARGS arguments, with `before` (NULL-terminated) first.
static int join_args(const char **out, const char *const *before, const char *const *argv) {
    int n = 0;
    for (int i = 0; before && before[i] && n < TEST_MAX_ARGS; i++) out[n++] = before[i];
    for (int i = 0; argv[i] && n < TEST_MAX_ARGS; i++) out[n++] = argv[i];
    out[n] = NULL;
    return n;
}

TestRun test_run_spawned(const char *const *argv, const TestSpawn *how, double timeout_s) {
    TestRun r = {-1, 0, 0.0, 0, NULL};
    TestChild c;
    double start = now_seconds();
    if (!CHECK(test_child_start(&c, argv, how) == 0, "cannot start %s: %s", argv[0], strerror(errno))) {
        r.output = strdup("");
        return r;
    }
    TestEnd end;
    if (!test_child_wait(&c, timeout_s, &end)) {
        test_child_kill(&c, &end);
        CHECK(0, "%s did not finish within %.0f s: killed", argv[0], timeout_s);
    }
    r.status = end.status;
    r.signal = end.signal;
    r.seconds = now_seconds() - start;
    r.max_rss_kib = end.max_rss_kib;
    CHECK(!how->measure || end.max_rss_kib >= 0, "%s: its peak memory was not measured", argv[0]);
    size_t n;
    r.output = how->out_path ? test_read_file(how->out_path, &n) : NULL;
    if (!r.output) r.output = strdup("");
    return r;
}

// ----------------------------------------------------------------------------
// the test program's other roles: `run_tests --child NAME ARGS...` runs a child main

#define MAX_CHILD_MAINS 16
static struct {
    const char *name;
    TestChildMain fn;
} child_mains[MAX_CHILD_MAINS];
static int num_child_mains;

void test_register_child(const char *name, TestChildMain fn) {
    if (num_child_mains == MAX_CHILD_MAINS) {
        fprintf(stderr, "too many child mains: raise MAX_CHILD_MAINS\n");
        exit(2);
    }
    child_mains[num_child_mains].name = name;
    child_mains[num_child_mains++].fn = fn;
}

static int child_main(int argc, char **argv) {
    for (int i = 0; i < num_child_mains; i++)
        if (strcmp(child_mains[i].name, argv[0]) == 0) return child_mains[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "run_tests: no child main called %s\n", argv[0]);
    return 2;
}

TestEnd test_run_child(const char *name, const char *const *args, double timeout_s) {
    const char *argv[TEST_MAX_ARGS + 1];
    join_args(argv, (const char *[]){test_self_path(), "--child", name, NULL}, args);
    TestChild c;
    TestEnd end = {-1, 0, 0};
    if (!CHECK(test_child_start(&c, argv, &(TestSpawn){0}) == 0, "cannot start %s: %s", name, strerror(errno)))
        return end;
    if (!test_child_wait(&c, timeout_s, &end)) {
        test_child_kill(&c, &end);
        CHECK(0, "the child %s did not finish within %.0f s: killed", name, timeout_s);
    }
    return end;
}

const char *test_end_text(const TestEnd *end, char text[64]) {
    if (end->status >= 0) snprintf(text, 64, "exit status %d", end->status);
    else if (end->signal > 0) snprintf(text, 64, "ended by signal %d", end->signal);
    else if (end->signal < 0) snprintf(text, 64, "ended by an exception");
    else snprintf(text, 64, "not started or not waited for");
    return text;
}

#if defined(TEST_WASM)

// ----------------------------------------------------------------------------
// WebAssembly (`make test-wasm`, under node): one process, which can start none. A test that
// would start one (./train, ./generate, a child main of its own) ends there, skipped: what it
// checked before stands, and the runner names it among the skipped. The files are node's
// (emscripten's NODERAWFS), without FIFOs, terminals or limits of a process's own.

int test_child_start(TestChild *c, const char *const *argv, const TestSpawn *how) {
    memset(c, 0, sizeof(*c));
    char why[160];
    const char *slash = strrchr(argv[0], '/');
    snprintf(why, sizeof(why), "it runs %s as a process, and WebAssembly has none to start",
             strcmp(argv[0], test_self_path()) == 0 ? "run_tests" : slash ? slash + 1 : argv[0]);
    test_skip_rest(strdup(why));  // (the runner keeps the reason: not freed)
}

int test_child_wait(TestChild *c, double timeout_s, TestEnd *end) {
    *end = (TestEnd){-1, 0, -1};
    return 1;
}

int test_stop_signal(TestStop stop) { return SIGINT; }
int test_child_stop(TestChild *c, TestStop stop) { return -1; }
void test_child_kill(TestChild *c, TestEnd *end) { test_child_wait(c, 0, end); }
int test_process_mode(int argc, char **argv, int *status) {
    if (argc <= 2 || strcmp(argv[1], "--child") != 0) return 0;
    *status = child_main(argc - 2, argv + 2);  // `node run_tests.js --child NAME ARGS...`
    return 1;
}

int test_system_has(TestFeature feature) {
    switch (feature) {
        case TEST_SYMLINKS: case TEST_BYTE_ARGUMENTS: case TEST_LONG_PATHS: case TEST_ANY_NAMES: return 1;
        default: return 0;
    }
}

const char *test_null_device(void) { return "/dev/null"; }
const char *test_device(void) { return "/dev/zero"; }

int test_make_fifo(const char *path) {
    errno = ENOTSUP;
    return -1;
}

int test_fifo_feed(const char *path, const char *text) {
    errno = ENOTSUP;
    return -1;
}

int test_fifo_wait_read(int fd, double timeout_s) {
    errno = ENOTSUP;
    return -1;
}

int test_make_symlink(const char *target, const char *path) { return symlink(target, path); }
int test_make_read_only(const char *dir, int read_only) { return chmod(dir, read_only ? 0555 : 0755); }
int test_remove_dir(const char *path) { return rmdir(path); }
int test_set_env(const char *name, const char *value) { return value ? setenv(name, value, 1) : unsetenv(name); }
double test_heap_slack(void) { return 1.0; }
int test_limit_address_space(double bytes) { return -1; }
int test_open_terminal(int columns, int *fd, int *other) { return -1; }

char *test_run_on_terminal(const char *const *argv, int columns, TestEnd *end) {
    *end = (TestEnd){-1, 0, -1};
    return NULL;
}

#elif !defined(TEST_WINDOWS)

// ----------------------------------------------------------------------------
// POSIX

#define PEAK_RSS_FD 3  // where the measuring process reports the program's peak RSS

// A process forked from the test program starts with the test program's resident pages, and
// Linux keeps that peak through exec: the peak RSS of a program run so would be at least the
// test program's. So a measured child re-executes the test program (small when it starts) as
// `run_tests --spawn-measured PROGRAM ARGS...`, which runs PROGRAM as its own child, writes
// its peak RSS to PEAK_RSS_FD and leaves with its exit status (or signal). A signal that
// ends the measuring process (SIGTERM at a test's timeout, Ctrl-C) ends PROGRAM first: a
// measured child is not one to send stop requests to.
static volatile sig_atomic_t measured_pid;

static void end_measured(int sig) {
    if (measured_pid > 0) kill(measured_pid, SIGKILL);
    signal(sig, SIG_DFL);
    raise(sig);
}

static int spawn_measured(char **argv) {
    fcntl(PEAK_RSS_FD, F_SETFD, FD_CLOEXEC);
    static const int ending[] = {SIGTERM, SIGINT, SIGHUP};
    for (size_t i = 0; i < sizeof(ending) / sizeof(ending[0]); i++) signal(ending[i], end_measured);
    pid_t pid = fork();
    if (pid < 0) return 126;
    if (pid == 0) {
        execv(argv[0], argv);  // which gives the signals caught here their default action again
        _exit(127);
    }
    measured_pid = pid;
    int status;
    struct rusage usage;
    pid_t done;
    while ((done = wait4(pid, &status, 0, &usage)) < 0 && errno == EINTR) continue;
    if (done != pid) return 126;
    long kib = platform_max_rss_kib(usage.ru_maxrss);
    if (write(PEAK_RSS_FD, &kib, sizeof(kib)) != (ssize_t)sizeof(kib)) return 126;
    if (WIFSIGNALED(status)) {
        signal(WTERMSIG(status), SIG_DFL);
        raise(WTERMSIG(status));
    }
    return WEXITSTATUS(status);
}

// In the child: its standard streams (stdin from in_end, stdout into out_end when they are not
// -1), directory, limits and environment as `how` says, then argv (through the measuring
// process when how->measure).
static void become(const char *const *argv, const TestSpawn *how, int peak_rss_fd, int in_end, int out_end) {
    int in = in_end >= 0 ? in_end : open(how->in_path ? how->in_path : "/dev/null", O_RDONLY);
    if (in < 0 || dup2(in, 0) < 0) _exit(126);
    close(in);
    if (how->out_path) {
        int out = open(how->out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int std_out = how->stdout_path ? open(how->stdout_path, O_WRONLY | O_CREAT | O_TRUNC, 0644) : dup(out);
        if (out < 0 || std_out < 0) _exit(126);
        dup2(std_out, 1), dup2(out, 2);
        close(out), close(std_out);
    }
    if (out_end >= 0 && (dup2(out_end, 1) < 0 || close(out_end) != 0)) _exit(126);
    if (how->cwd && chdir(how->cwd) != 0) _exit(126);
    if (how->file_size_limit > 0) {
        struct rlimit limit = {(rlim_t)how->file_size_limit, (rlim_t)how->file_size_limit};
        if (setrlimit(RLIMIT_FSIZE, &limit) != 0) _exit(126);
    }
    for (int i = 0; how->unset_env && how->unset_env[i]; i++) unsetenv(how->unset_env[i]);
    if (how->measure) {
        if (peak_rss_fd != PEAK_RSS_FD && (dup2(peak_rss_fd, PEAK_RSS_FD) < 0 || close(peak_rss_fd) != 0)) _exit(126);
        const char *spawn[TEST_MAX_ARGS + 3];
        join_args(spawn, (const char *[]){"run_tests", SPAWN_FLAG, NULL}, argv);
        execv(test_self_path(), (char *const *)spawn);
    } else if (how->search_path) {
        execvp(argv[0], (char *const *)argv);
    } else {
        execv(argv[0], (char *const *)argv);
    }
    _exit(127);
}

int test_child_start(TestChild *c, const char *const *argv, const TestSpawn *how) {
    memset(c, 0, sizeof(*c));
    c->peak_rss_fd = -1;
    int peak_rss[2] = {-1, -1}, out_pipe[2] = {-1, -1}, in_pipe[2] = {-1, -1};
    if ((how->measure && pipe(peak_rss) != 0) || (how->stdout_pipe && pipe(out_pipe) != 0) ||
        (how->stdin_pipe && pipe(in_pipe) != 0))
        return -1;
    if (how->stdin_pipe) fcntl(in_pipe[1], F_SETFD, FD_CLOEXEC);  // no other child holds the pipe open
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        if (how->measure) close(peak_rss[0]);
        if (how->stdout_pipe) close(out_pipe[0]);
        become(argv, how, peak_rss[1], in_pipe[0], out_pipe[1]);
    }
    // the parent keeps the measuring process's and stdout's reading ends and stdin's writing end
    if (how->measure) close(peak_rss[1]);
    if (how->stdout_pipe) close(out_pipe[1]);
    if (how->stdin_pipe) close(in_pipe[0]);
    if (pid < 0) {
        if (how->measure) close(peak_rss[0]);
        if (how->stdout_pipe) close(out_pipe[0]);
        if (how->stdin_pipe) close(in_pipe[1]);
        return -1;
    }
    c->pid = pid;
    c->peak_rss_fd = peak_rss[0];
    if (how->stdout_pipe) *how->stdout_pipe = out_pipe[0];
    if (how->stdin_pipe) *how->stdin_pipe = in_pipe[1];
    return 0;
}

static void ended(TestChild *c, int status, const struct rusage *usage, TestEnd *end) {
    end->status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    end->signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    long kib;
    end->max_rss_kib = c->peak_rss_fd >= 0 && read(c->peak_rss_fd, &kib, sizeof(kib)) == (ssize_t)sizeof(kib)
                           ? kib
                           : platform_max_rss_kib(usage->ru_maxrss);
    if (c->peak_rss_fd >= 0) close(c->peak_rss_fd);
    c->peak_rss_fd = -1;
    c->pid = 0;
}

int test_child_wait(TestChild *c, double timeout_s, TestEnd *end) {
    *end = (TestEnd){-1, 0, 0};
    if (c->pid <= 0) return 1;
    double start = now_seconds();
    for (;;) {
        int status;
        struct rusage usage;
        pid_t done = wait4((pid_t)c->pid, &status, WNOHANG, &usage);
        if (done == (pid_t)c->pid) {
            ended(c, status, &usage, end);
            return 1;
        }
        if (done < 0 && errno != EINTR) return 1;  // not ours, or already waited for
        if (now_seconds() - start >= timeout_s) return 0;
        usleep(2000);
    }
}

static const int stop_signals[] = {[TEST_INTERRUPT] = SIGINT, [TEST_TERMINATE] = SIGTERM, [TEST_HANG_UP] = SIGHUP};

int test_stop_signal(TestStop stop) { return stop_signals[stop]; }

int test_child_stop(TestChild *c, TestStop stop) { return kill((pid_t)c->pid, stop_signals[stop]); }


void test_child_kill(TestChild *c, TestEnd *end) {
    if (c->pid > 0) kill((pid_t)c->pid, c->peak_rss_fd >= 0 ? SIGTERM : SIGKILL);  // the measuring process: SIGTERM
    test_child_wait(c, 1e9, end);
}

int test_process_mode(int argc, char **argv, int *status) {
    if (argc > 2 && strcmp(argv[1], "--child") == 0) *status = child_main(argc - 2, argv + 2);
    else if (argc > 2 && strcmp(argv[1], SPAWN_FLAG) == 0) *status = spawn_measured(argv + 2);
    else return 0;
    return 1;
}

int test_system_has(TestFeature feature) {
    switch (feature) {
        case TEST_FIFOS: case TEST_SYMLINKS: case TEST_TERMINALS: case TEST_FILE_SIZE_LIMIT: case TEST_HANG_UPS:
        case TEST_MAKE_INSTALL: case TEST_TERMINATE_REQUESTS: case TEST_BYTE_ARGUMENTS: case TEST_LONG_PATHS:
        case TEST_ANY_NAMES: case TEST_FORK: return 1;
        case TEST_PROC_DIR: return access("/proc", F_OK) == 0;
        case TEST_FULL_DEVICE: return access("/dev/full", W_OK) == 0;
        case TEST_READ_ONLY_DIRS: return geteuid() != 0;  // root writes into a directory of mode 0555
    }
    return 0;
}

const char *test_null_device(void) { return "/dev/null"; }
const char *test_device(void) { return "/dev/zero"; }

int test_make_fifo(const char *path) {
    unlink(path);
    return mkfifo(path, 0600);
}

// Opened for reading and writing (which Linux and macOS give a FIFO without waiting), the
// FIFO has a writer from the start; FIONREAD says when its bytes have been read.
int test_fifo_feed(const char *path, const char *text) {
    int fd = open(path, O_RDWR | O_CLOEXEC);  // read and write: open(2) does not wait for a reader
    if (fd < 0) return -1;
    size_t len = strlen(text);
    if (write(fd, text, len) != (long)len) {
        close(fd);
        return -1;
    }
    return fd;
}

int test_fifo_wait_read(int fd, double timeout_s) {
    for (double waited = 0; waited < timeout_s; waited += 0.005) {
        int unread = 0;
        if (ioctl(fd, FIONREAD, &unread) != 0 || unread == 0) return 0;
        usleep(5000);
    }
    errno = ETIMEDOUT;
    return -1;
}

int test_make_symlink(const char *target, const char *path) { return symlink(target, path); }

int test_make_read_only(const char *dir, int read_only) { return chmod(dir, read_only ? 0555 : 0755); }

int test_remove_dir(const char *path) { return rmdir(path); }

int test_set_env(const char *name, const char *value) { return value ? setenv(name, value, 1) : unsetenv(name); }

double test_heap_slack(void) { return 1.0; }

int test_limit_address_space(double bytes) {
    struct rlimit limit = {(rlim_t)bytes, (rlim_t)bytes};
    return setrlimit(RLIMIT_AS, &limit);
}

int test_open_terminal(int columns, int *fd, int *other) {
    int master = posix_openpt(O_RDWR | O_NOCTTY);
    const char *name = master >= 0 && grantpt(master) == 0 && unlockpt(master) == 0 ? ptsname(master) : NULL;
    int slave = name ? open(name, O_RDWR | O_NOCTTY) : -1;
    struct winsize ws = {24, (unsigned short)columns, 0, 0};
    if (slave < 0 || ioctl(slave, TIOCSWINSZ, &ws) != 0) {
        if (slave >= 0) close(slave);
        if (master >= 0) close(master);
        return -1;
    }
    *fd = slave;
    *other = master;
    return 0;
}

// forkpty's work in POSIX calls: a child whose controlling terminal, stdin, stdout and stderr
// are a new pseudo-terminal of `columns`, running argv; the parent reads what it writes.
char *test_run_on_terminal(const char *const *argv, int columns, TestEnd *end) {
    *end = (TestEnd){-1, 0, 0};
    int master = posix_openpt(O_RDWR | O_NOCTTY);
    const char *name = master >= 0 && grantpt(master) == 0 && unlockpt(master) == 0 ? ptsname(master) : NULL;
    char slave[256];
    if (!name || snprintf(slave, sizeof(slave), "%s", name) >= (int)sizeof(slave)) {
        if (master >= 0) close(master);
        return NULL;
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        close(master);
        return NULL;
    }
    if (pid == 0) {
        close(master);
        setsid();
        int s = open(slave, O_RDWR);  // the session's first terminal: its controlling terminal
        if (s < 0) _exit(126);
#ifdef TIOCSCTTY
        ioctl(s, TIOCSCTTY, 0);  // where opening it is not enough (the BSDs, macOS)
#endif
        struct winsize ws = {24, (unsigned short)columns, 0, 0};
        if (ioctl(s, TIOCSWINSZ, &ws) != 0) _exit(126);
        dup2(s, 0), dup2(s, 1), dup2(s, 2);
        if (s > 2) close(s);
        unsetenv("COLUMNS");
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    size_t cap = 1 << 16, len = 0;
    char *out = malloc(cap);
    for (;;) {
        struct pollfd p = {master, POLLIN, 0};
        if (poll(&p, 1, 60000) <= 0) break;
        if (len + 4096 > cap) out = realloc(out, cap *= 2);
        ssize_t got = read(master, out + len, 4096);
        if (got <= 0) break;  // EIO once the child has closed the terminal
        len += (size_t)got;
    }
    out[len] = '\0';
    close(master);
    int status;
    struct rusage usage;
    TestChild c = {.pid = pid, .peak_rss_fd = -1};
    if (wait4(pid, &status, 0, &usage) == pid) ended(&c, status, &usage, end);
    return out;
}

#else

// ----------------------------------------------------------------------------
// Windows: CreateProcessW, each child in a console of its own (CREATE_NO_WINDOW: no window),
// which a helper process attaches to to send it Ctrl-C or Ctrl-Break

#define CONSOLE_EVENT_FLAG "--console-event"  // run_tests --console-event PID EVENT: the helper
#define KILLED_CODE 137u                      // TerminateProcess's exit code, told apart by `killed`

static wchar_t *wide_of(const char *s) {
    int n = MultiByteToWideChar(CP_UTF8, 0, s, -1, NULL, 0);
    wchar_t *w = n > 0 ? malloc((size_t)n * sizeof(wchar_t)) : NULL;
    if (w) MultiByteToWideChar(CP_UTF8, 0, s, -1, w, n);
    return w;
}

// Appends arg to the command line as the C runtime's parser reads it back: quoted, with the
// backslashes before a quote (and before the closing one) doubled.
static void quote_arg(char *line, size_t size, const char *arg) {
    size_t n = strlen(line);
    if (n && n + 1 < size) line[n++] = ' ';
    if (n + 1 < size) line[n++] = '"';
    for (const char *p = arg;; p++) {
        size_t slashes = 0;
        while (*p == '\\') p++, slashes++;
        size_t copies = *p == '"' ? 2 * slashes + 1 : *p == '\0' ? 2 * slashes : slashes;
        for (size_t i = 0; i < copies && n + 1 < size; i++) line[n++] = '\\';
        if (*p == '\0') break;
        if (n + 1 < size) line[n++] = *p;
    }
    if (n + 1 < size) line[n++] = '"';
    line[n] = '\0';
}

// A file handle the child inherits: path opened for reading, or created for writing.
static HANDLE inherited_file(const char *path, int write) {
    SECURITY_ATTRIBUTES inherit = {sizeof(inherit), NULL, TRUE};
    wchar_t *w = wide_of(path);
    HANDLE h = w ? CreateFileW(w, write ? GENERIC_WRITE : GENERIC_READ,
                               FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, &inherit,
                               write ? CREATE_ALWAYS : OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL, NULL)
                 : INVALID_HANDLE_VALUE;
    free(w);
    return h;
}

// The program's path as Windows takes it: '\' between directories, ".exe" added when the
// file without it is not there.
static void program_path(const char *program, char *path, size_t size) {
    snprintf(path, size, "%s", program);
    for (char *p = path; *p; p++)
        if (*p == '/') *p = '\\';
    size_t n = strlen(path);
    if ((n < 4 || _stricmp(path + n - 4, ".exe") != 0) && !test_file_exists(path) && n + 4 < size)
        strcat(path, ".exe");
}

int test_child_start(TestChild *c, const char *const *argv, const TestSpawn *how) {
    memset(c, 0, sizeof(*c));
    if (how->file_size_limit > 0 || how->unset_env) {  // no such limit (TEST_FILE_SIZE_LIMIT); make's variables
        errno = ENOTSUP;
        return -1;
    }
    char program[4096], *line = malloc(65536);
    program_path(argv[0], program, sizeof(program));
    line[0] = '\0';
    for (int i = 0; argv[i]; i++) quote_arg(line, 65536, i == 0 ? program : argv[i]);
    // the pipes' ends the child has are inherited, this process's are not
    HANDLE in = INVALID_HANDLE_VALUE, pipe_write = INVALID_HANDLE_VALUE, pipe_read = INVALID_HANDLE_VALUE;
    SECURITY_ATTRIBUTES inheritable = {sizeof(inheritable), NULL, TRUE};
    if (!how->stdin_pipe) in = inherited_file(how->in_path ? how->in_path : "NUL", 0);
    else if (CreatePipe(&in, &pipe_write, &inheritable, 0)) SetHandleInformation(pipe_write, HANDLE_FLAG_INHERIT, 0);
    HANDLE out = how->out_path ? inherited_file(how->out_path, 1) : GetStdHandle(STD_ERROR_HANDLE);
    HANDLE std_out = how->stdout_path ? inherited_file(how->stdout_path, 1)
                     : how->out_path  ? out
                                      : GetStdHandle(STD_OUTPUT_HANDLE);
    if (how->stdout_pipe) {
        if (!CreatePipe(&pipe_read, &std_out, &inheritable, 0)) pipe_read = std_out = INVALID_HANDLE_VALUE;
        else SetHandleInformation(pipe_read, HANDLE_FLAG_INHERIT, 0);
    }
    STARTUPINFOW start = {.cb = sizeof(start), .dwFlags = STARTF_USESTDHANDLES};
    start.hStdInput = in, start.hStdOutput = std_out, start.hStdError = out;
    PROCESS_INFORMATION info;
    wchar_t *wide_program = wide_of(how->search_path ? argv[0] : program), *wide_line = wide_of(line),
            *wide_cwd = how->cwd ? wide_of(how->cwd) : NULL;
    fflush(stdout);
    fflush(stderr);
    int ok = in != INVALID_HANDLE_VALUE && out != INVALID_HANDLE_VALUE && std_out != INVALID_HANDLE_VALUE;
    DWORD error = ok ? 0 : GetLastError();
    // A program that is there but did not start (Wine under load once failed so, and the rerun
    // passed) is started again, twice at most, with a note: a real exit is never retried.
    for (int attempt = 0; ok && attempt < 3; attempt++) {
        if (CreateProcessW(how->search_path ? NULL : wide_program, wide_line, NULL, NULL, TRUE, CREATE_NO_WINDOW,
                           NULL, wide_cwd, &start, &info))
            break;
        error = GetLastError();
        ok = error != ERROR_FILE_NOT_FOUND && error != ERROR_PATH_NOT_FOUND && attempt < 2;
        if (ok) {
            printf("    %s did not start (Windows error %lu): starting it again\n", program, (unsigned long)error);
            fflush(stdout);
            Sleep(200);
        }
    }
    free(wide_program), free(wide_line), free(wide_cwd), free(line);
    if (in != INVALID_HANDLE_VALUE) CloseHandle(in);
    if (how->out_path && out != INVALID_HANDLE_VALUE) CloseHandle(out);
    if ((how->stdout_path || how->stdout_pipe) && std_out != INVALID_HANDLE_VALUE) CloseHandle(std_out);
    if (!ok) {
        if (pipe_read != INVALID_HANDLE_VALUE) CloseHandle(pipe_read);
        if (pipe_write != INVALID_HANDLE_VALUE) CloseHandle(pipe_write);
        errno = error == ERROR_FILE_NOT_FOUND || error == ERROR_PATH_NOT_FOUND ? ENOENT : EIO;
        return -1;
    }
    if (how->stdout_pipe) *how->stdout_pipe = _open_osfhandle((intptr_t)pipe_read, _O_RDONLY);
    if (how->stdin_pipe) *how->stdin_pipe = _open_osfhandle((intptr_t)pipe_write, _O_WRONLY);
    CloseHandle(info.hThread);
    c->pid = (long)info.dwProcessId;
    c->handle = info.hProcess;
    return 0;
}

// The signal POSIX names a crash by, for the exception that ended a process (else -1).
static int signal_of_exception(DWORD code) {
    switch (code) {
        case 0xC0000005u: case 0xC00000FDu: return SIGSEGV;  // an access violation, a stack overflow
        case 0xC000001Du: case 0xC0000096u: return SIGILL;   // an illegal or a privileged instruction
        case 0xC000008Eu: case 0xC0000090u: case 0xC0000094u: case 0xC0000095u: return SIGFPE;
        case 0xC0000409u: return SIGABRT;                     // a fast fail (abort, a buffer overrun)
        default: return -1;
    }
}

// The child's peak working set so far, kept in c->peak_kib.
static void sample_peak(TestChild *c) {
    PROCESS_MEMORY_COUNTERS memory = {.cb = sizeof(memory)};
    if (GetProcessMemoryInfo(c->handle, &memory, sizeof(memory)) && (long)(memory.PeakWorkingSetSize / 1024) > c->peak_kib)
        c->peak_kib = (long)(memory.PeakWorkingSetSize / 1024);
}

// Waits in slices of 5 ms, asking the peak working set at each: Wine answers it only while the
// process runs (from /proc), so what it grew in its last 5 ms may be missed there.
int test_child_wait(TestChild *c, double timeout_s, TestEnd *end) {
    *end = (TestEnd){-1, 0, 0};
    if (!c->handle) return 1;
    double start = now_seconds();
    for (;;) {
        sample_peak(c);
        if (WaitForSingleObject(c->handle, 5) != WAIT_TIMEOUT) break;
        if (now_seconds() - start >= timeout_s) return 0;
    }
    sample_peak(c);  // Windows itself answers for an ended process too
    DWORD code = 0;
    GetExitCodeProcess(c->handle, &code);
    end->max_rss_kib = c->peak_kib > 0 ? c->peak_kib : -1;
    if (c->killed) end->signal = TEST_SIGKILL;
    else if (code == (DWORD)STATUS_CONTROL_C_EXIT) end->signal = SIGINT;  // as the console's events end a program
    else if (code >= 0xC0000000u) end->signal = signal_of_exception(code);
    else end->status = (int)code;
    CloseHandle(c->handle);
    c->handle = NULL;
    return 1;
}

static const DWORD stop_events[] = {[TEST_INTERRUPT] = CTRL_C_EVENT, [TEST_TERMINATE] = CTRL_BREAK_EVENT,
                                    [TEST_HANG_UP] = CTRL_CLOSE_EVENT};

// Every console event arrives as SIGINT (common/platform.c). The console's close cannot be sent
// (test_system_has(TEST_HANG_UPS) is 0).
int test_stop_signal(TestStop stop) { return SIGINT; }

// `run_tests --console-event PID EVENT`, without a console of its own: attaches to the child's
// console, ignores the event itself, and sends it.
static int send_console_event(int argc, char **argv) {
    if (argc != 2 || !AttachConsole((DWORD)strtoul(argv[0], NULL, 10))) return 2;
    SetConsoleCtrlHandler(NULL, TRUE);
    return GenerateConsoleCtrlEvent((DWORD)strtoul(argv[1], NULL, 10), 0) ? 0 : 3;
}

int test_child_stop(TestChild *c, TestStop stop) {
    if (!c->handle || stop == TEST_HANG_UP) return -1;  // no process can close another's console
    char pid[32], event[16], program[4096], line[8192] = "";
    snprintf(pid, sizeof(pid), "%ld", c->pid);
    snprintf(event, sizeof(event), "%lu", (unsigned long)stop_events[stop]);
    const char *argv[] = {test_self_path(), CONSOLE_EVENT_FLAG, pid, event, NULL};
    program_path(argv[0], program, sizeof(program));
    for (int i = 0; argv[i]; i++) quote_arg(line, sizeof(line), i == 0 ? program : argv[i]);
    STARTUPINFOW start = {.cb = sizeof(start)};
    PROCESS_INFORMATION info;
    wchar_t *wide_program = wide_of(program), *wide_line = wide_of(line);
    int ok = CreateProcessW(wide_program, wide_line, NULL, NULL, FALSE, DETACHED_PROCESS, NULL, NULL, &start, &info);
    free(wide_program), free(wide_line);
    if (!ok) return -1;
    DWORD code = 1;
    WaitForSingleObject(info.hProcess, 30000);
    GetExitCodeProcess(info.hProcess, &code);
    CloseHandle(info.hProcess), CloseHandle(info.hThread);
    return code == 0 ? 0 : -1;
}

void test_child_kill(TestChild *c, TestEnd *end) {
    if (c->handle && TerminateProcess(c->handle, KILLED_CODE)) c->killed = 1;
    test_child_wait(c, 1e9, end);
}

// A crash in a child ends it with its exception's code, without the system's dialog (the
// error mode is inherited).
int test_process_mode(int argc, char **argv, int *status) {
    SetErrorMode(SEM_FAILCRITICALERRORS | SEM_NOGPFAULTERRORBOX);
    if (argc > 2 && strcmp(argv[1], "--child") == 0) *status = child_main(argc - 2, argv + 2);
    else if (argc > 3 && strcmp(argv[1], CONSOLE_EVENT_FLAG) == 0) *status = send_console_event(argc - 2, argv + 2);
    else return 0;
    return 1;
}

// None of them (see TestFeature). Ctrl-Break is left out because Wine, where the tests run, does
// not send it (GenerateConsoleCtrlEvent fails); on Windows itself test_child_stop sends it.
int test_system_has(TestFeature feature) { return 0; }

const char *test_null_device(void) { return "NUL"; }
const char *test_device(void) { return "NUL"; }

int test_make_fifo(const char *path) {
    errno = ENOTSUP;
    return -1;
}

int test_fifo_feed(const char *path, const char *text) {
    errno = ENOTSUP;
    return -1;
}

int test_fifo_wait_read(int fd, double timeout_s) {
    errno = ENOTSUP;
    return -1;
}

int test_make_symlink(const char *target, const char *path) {
    errno = ENOTSUP;
    return -1;
}

int test_make_read_only(const char *dir, int read_only) {
    errno = ENOTSUP;
    return -1;
}

int test_remove_dir(const char *path) {
    wchar_t *w = wide_of(path);
    int ok = w && RemoveDirectoryW(w);
    free(w);
    return ok ? 0 : -1;
}

int test_set_env(const char *name, const char *value) { return _putenv_s(name, value ? value : ""); }

double test_heap_slack(void) { return 1.25; }

int test_limit_address_space(double bytes) {
    errno = ENOTSUP;
    return -1;
}

char *test_run_on_terminal(const char *const *argv, int columns, TestEnd *end) {
    *end = (TestEnd){-1, 0, 0};
    return NULL;  // no pseudo-terminal: TEST_TERMINALS
}

// This process's console (a child of test_child_start has one of its own), its screen
// buffer `columns` wide: CONOUT$ as a file descriptor.
int test_open_terminal(int columns, int *fd, int *other) {
    *other = -1;
    HANDLE h = CreateFileW(L"CONOUT$", GENERIC_READ | GENERIC_WRITE, FILE_SHARE_READ | FILE_SHARE_WRITE, NULL,
                           OPEN_EXISTING, 0, NULL);
    CONSOLE_SCREEN_BUFFER_INFO info;
    if (h == INVALID_HANDLE_VALUE || !GetConsoleScreenBufferInfo(h, &info)) {
        if (h != INVALID_HANDLE_VALUE) CloseHandle(h);
        return -1;
    }
    // the window narrower than the buffer first (it may not pass it), then the buffer
    SMALL_RECT window = {0, 0, (SHORT)(columns - 1), (SHORT)(info.srWindow.Bottom - info.srWindow.Top)};
    COORD size = {(SHORT)columns, info.dwSize.Y};
    SetConsoleWindowInfo(h, TRUE, &window);
    if (!SetConsoleScreenBufferSize(h, size) || !SetConsoleWindowInfo(h, TRUE, &window)) {
        CloseHandle(h);
        return -1;
    }
    *fd = _open_osfhandle((intptr_t)h, 0);
    return *fd >= 0 ? 0 : -1;
}

#endif
