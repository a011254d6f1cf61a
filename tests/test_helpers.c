// Helpers shared by the tests: running a program as a child process, and editing checkpoints.
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "../format/checkpoint.h"
#include "../format/safetensors.h"
#include "test.h"

static double seconds_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

TestRun test_run(const char *const *argv, const char *in_path, const char *out_path, long file_size_limit,
                 double timeout_s) {
    TestRun r = {-1, 0.0, 0, NULL};
    fflush(stdout);
    double start = seconds_now();
    pid_t pid = fork();
    if (pid < 0) return r;
    if (pid == 0) {
        int in = open(in_path ? in_path : "/dev/null", O_RDONLY);
        int out = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (in < 0 || out < 0) _exit(126);
        dup2(in, 0), dup2(out, 1), dup2(out, 2);
        close(in), close(out);
        if (file_size_limit > 0) {
            struct rlimit limit = {(rlim_t)file_size_limit, (rlim_t)file_size_limit};
            if (setrlimit(RLIMIT_FSIZE, &limit) != 0) _exit(126);
        }
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    struct rusage usage;
    int status = 0;
    for (;;) {
        pid_t done = wait4(pid, &status, WNOHANG, &usage);
        if (done == pid) break;
        if (done < 0) return r;
        if (seconds_now() - start > timeout_s) {
            kill(pid, SIGKILL);
            wait4(pid, &status, 0, &usage);
            CHECK(0, "%s did not finish within %.0f s: killed", argv[0], timeout_s);
            break;
        }
        usleep(2000);
    }
    r.status = status;
    r.seconds = seconds_now() - start;
    r.max_rss_kib = usage.ru_maxrss;
    size_t n;
    r.output = test_read_file(out_path, &n);
    if (!r.output) r.output = strdup("");
    return r;
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
