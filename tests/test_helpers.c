// Helpers shared by the tests: running a program as a child process, fresh directories under
// tests/tmp, and editing checkpoints.
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "../common/clock.h"
#include "../common/platform.h"
#include "../format/checkpoint.h"
#include "../format/safetensors.h"
#include "test.h"


#define SPAWN_FLAG "--spawn-measured"
#define PEAK_RSS_FD 3  // where the measuring process reports the program's peak RSS

// A process forked from the test program starts with the test program's resident pages, and
// Linux keeps that peak through exec: the peak RSS of a program run so would be at least the
// test program's. So the child re-executes the test program (small when it starts) as
// `run_tests --spawn-measured PROGRAM ARGS...`, which runs PROGRAM as its own child, writes
// its peak RSS to PEAK_RSS_FD and leaves with its exit status (or signal). A signal that
// ends the measuring process (SIGTERM at a test's timeout, Ctrl-C) ends PROGRAM first.
static volatile sig_atomic_t measured_pid;

static void end_measured(int sig) {
    if (measured_pid > 0) kill(measured_pid, SIGKILL);
    signal(sig, SIG_DFL);
    raise(sig);
}

int test_spawn_measured(char **argv) {
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

// Runs argv with stdout into stdout_path and stderr into out_path (the same file when
// stdout_path is NULL); the run's output is out_path's text.
static TestRun run_child(const char *const *argv, const char *in_path, const char *stdout_path, const char *out_path,
                         long file_size_limit, double timeout_s) {
    TestRun r = {-1, 0.0, 0, NULL};
    const char *self = test_self_path();
    fflush(stdout);
    double start = now_seconds();
    int peak_rss[2];
    if (pipe(peak_rss) != 0) return r;
    pid_t pid = fork();
    if (pid < 0) return r;
    if (pid == 0) {
        int in = open(in_path ? in_path : "/dev/null", O_RDONLY);
        int out = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int std_out = stdout_path ? open(stdout_path, O_WRONLY | O_CREAT | O_TRUNC, 0644) : dup(out);
        if (in < 0 || out < 0 || std_out < 0) _exit(126);
        dup2(in, 0), dup2(std_out, 1), dup2(out, 2);
        close(in), close(out), close(std_out), close(peak_rss[0]);
        if (peak_rss[1] != PEAK_RSS_FD && (dup2(peak_rss[1], PEAK_RSS_FD) < 0 || close(peak_rss[1]) != 0)) _exit(126);
        if (file_size_limit > 0) {
            struct rlimit limit = {(rlim_t)file_size_limit, (rlim_t)file_size_limit};
            if (setrlimit(RLIMIT_FSIZE, &limit) != 0) _exit(126);
        }
        const char *spawn[64] = {"run_tests", SPAWN_FLAG};
        for (int i = 0; argv[i] && i < 61; i++) spawn[i + 2] = argv[i];
        execv(self, (char *const *)spawn);
        _exit(127);
    }
    close(peak_rss[1]);
    struct rusage usage;
    int status = 0;
    for (;;) {
        pid_t done = wait4(pid, &status, WNOHANG, &usage);
        if (done == pid) break;
        if (done < 0) {
            close(peak_rss[0]);
            return r;
        }
        if (now_seconds() - start > timeout_s) {
            kill(pid, SIGTERM);  // the measuring process ends the program, then itself
            wait4(pid, &status, 0, &usage);
            CHECK(0, "%s did not finish within %.0f s: killed", argv[0], timeout_s);
            break;
        }
        usleep(2000);
    }
    long kib;
    r.status = status;
    r.seconds = now_seconds() - start;
    r.max_rss_kib = read(peak_rss[0], &kib, sizeof(kib)) == (ssize_t)sizeof(kib) ? kib
                                                                           : platform_max_rss_kib(usage.ru_maxrss);
    close(peak_rss[0]);
    size_t n;
    r.output = test_read_file(out_path, &n);
    if (!r.output) r.output = strdup("");
    return r;
}

TestRun test_run(const char *const *argv, const char *in_path, const char *out_path, long file_size_limit,
                 double timeout_s) {
    return run_child(argv, in_path, NULL, out_path, file_size_limit, timeout_s);
}

TestRun test_run_stdout(const char *const *argv, const char *in_path, const char *stdout_path, const char *out_path,
                        double timeout_s) {
    return run_child(argv, in_path, stdout_path, out_path, 0, timeout_s);
}

TestRun test_run_program(const char *name, const char *in_path, const char *out_path, double timeout_s,
                         const char *const *args) {
    const char *argv[48] = {test_program(name)};
    int n = 1;
    while (args[n - 1] && n < 47) argv[n] = args[n - 1], n++;
    argv[n] = NULL;
    return test_run(argv, in_path, out_path, 0, timeout_s);
}

int test_make_dir(const char *path) {
    return CHECK(mkdir(path, 0755) == 0 || errno == EEXIST, "cannot create %s: %s", path, strerror(errno));
}

// Removes what is inside path: its files, and its directories with all they hold.
static void remove_contents(const char *path) {
    DIR *dir = opendir(path);
    if (!dir) return;
    struct dirent *e;
    char file[1024];
    while ((e = readdir(dir)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        snprintf(file, sizeof(file), "%s/%s", path, e->d_name);
        struct stat st;
        if (lstat(file, &st) == 0 && S_ISDIR(st.st_mode)) {
            remove_contents(file);
            rmdir(file);
        } else {
            unlink(file);
        }
    }
    closedir(dir);
}

int test_fresh_dir(char *path, size_t n, const char *parent, const char *name) {
    snprintf(path, n, "%s/%s", parent, name);
    if (!test_make_dir("tests/tmp") || !test_make_dir(parent) || !test_make_dir(path)) return 0;
    remove_contents(path);
    return 1;
}

int test_file_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

int test_write_file(const char *path, const void *bytes, size_t len) {
    FILE *fp = fopen(path, "wb");
    if (!CHECK(fp != NULL, "cannot write %s: %s", path, strerror(errno))) return -1;
    size_t put = fwrite(bytes, 1, len, fp);
    return CHECK(fclose(fp) == 0 && put == len, "short write to %s", path) ? 0 : -1;
}

int test_exit_status(const TestRun *r, int want, const char *what) {
    int ok = r->status != -1 && WIFEXITED(r->status) && WEXITSTATUS(r->status) == want;
    if (r->status != -1 && WIFSIGNALED(r->status))
        CHECK(0, "%s: killed by signal %d (want exit status %d); output:\n%s", what, WTERMSIG(r->status), want,
              r->output);
    else
        CHECK(ok, "%s: exit status %d, want %d; output:\n%s", what,
              r->status != -1 && WIFEXITED(r->status) ? WEXITSTATUS(r->status) : -1, want, r->output);
    return ok;
}

int test_output_has(const TestRun *r, const char *text, const char *what) {
    return CHECK(strstr(r->output, text) != NULL, "%s: the output lacks \"%s\"; it is:\n%s", what, text, r->output);
}

void test_run_free(TestRun *r) {
    free(r->output);
    r->output = NULL;
}

int test_edit_checkpoint(const char *src, const char *dst, const CheckpointEdit *edit) {
    SafeTensors st;
    char err[ERR_LEN];
    if (!CHECK(safetensors_read(src, &st, err) == 0, "%s", err)) return -1;
    StWriteTensor *tensors = calloc((size_t)st.num_tensors, sizeof(StWriteTensor));
    StMeta *meta = calloc((size_t)st.num_meta + 2, sizeof(StMeta));
    float *edited = NULL;
    int rc = -1, m = 0, found_key = edit->key == NULL, found_tensor = edit->tensor == NULL;
    for (int i = 0; i < st.num_tensors; i++) {
        const StTensor *t = &st.tensors[i];
        tensors[i] = (StWriteTensor){t->name, t->dtype, t->ndim, {0}, safetensors_tensor_data(&st, t)};
        memcpy(tensors[i].shape, t->shape, sizeof(t->shape));
        if (edit->tensor && strcmp(t->name, edit->tensor) == 0 && edit->element < t->nbytes / 4) {
            edited = malloc(t->nbytes);
            memcpy(edited, tensors[i].data, t->nbytes);
            edited[edit->element] = edit->x;
            tensors[i].data = edited;
            found_tensor = 1;
        }
    }
    for (int i = 0; i < st.num_meta; i++) {
        const char *key = st.meta[i].key;
        if (strcmp(key, "crc32") == 0) continue;
        if (edit->key && strcmp(key, edit->key) == 0) {
            found_key = 1;
            if (edit->value) meta[m++] = (StMeta){st.meta[i].key, (char *)edit->value};
        } else if (edit->v1 && strcmp(key, "format") == 0) {
            meta[m++] = (StMeta){st.meta[i].key, CHECKPOINT_FORMAT_V1};
        } else {
            meta[m++] = st.meta[i];
        }
    }
    if (edit->key && !found_key && edit->value) meta[m++] = (StMeta){(char *)edit->key, (char *)edit->value};
    CHECK(found_key || edit->value, "%s has no metadata '%s' to remove", src, edit->key);
    CHECK(found_tensor, "%s has no tensor %s with an element %zu", src, edit->tensor, edit->element);
    char data_crc[16];
    if (edit->v1) {
        // chargpt-1: the CRC of the data section alone, stored as ordinary metadata
        uLong crc = crc32(0L, Z_NULL, 0);
        for (int i = 0; i < st.num_tensors; i++)
            crc = crc32(crc, tensors[i].data, (uInt)st.tensors[i].nbytes);
        snprintf(data_crc, sizeof(data_crc), "%08lx", crc);
        meta[m++] = (StMeta){"crc32", data_crc};
    }
    if (CHECK(safetensors_write(dst, tensors, st.num_tensors, meta, m, edit->v1 ? NULL : "crc32", err) == 0, "%s",
              err))
        rc = 0;
    free(edited);
    free(tensors);
    free(meta);
    safetensors_free(&st);
    return rc;
}

int test_meta_value(const char *path, const char *key, char *value, size_t n) {
    SafeTensors st;
    char err[ERR_LEN];
    value[0] = '\0';
    if (safetensors_read(path, &st, err) != 0) return 0;
    const char *v = safetensors_meta(&st, key);
    if (v) snprintf(value, n, "%s", v);
    safetensors_free(&st);
    return v != NULL;
}
