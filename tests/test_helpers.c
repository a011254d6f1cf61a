// Helpers shared by the tests: running a program to its end (tests/test_process.c starts it),
// fresh directories under tests/tmp, and editing checkpoints.
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "../common/platform.h"
#include "../format/checkpoint.h"
#include "../format/safetensors.h"
#include "test.h"

TestRun test_run(const char *const *argv, const char *in_path, const char *out_path, long file_size_limit,
                 double timeout_s) {
    TestSpawn how = {.in_path = in_path, .out_path = out_path, .file_size_limit = file_size_limit, .measure = 1};
    return test_run_spawned(argv, &how, timeout_s);
}

TestRun test_run_stdout(const char *const *argv, const char *in_path, const char *stdout_path, const char *out_path,
                        double timeout_s) {
    TestSpawn how = {.in_path = in_path, .out_path = out_path, .stdout_path = stdout_path, .measure = 1};
    return test_run_spawned(argv, &how, timeout_s);
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
    return CHECK(platform_make_dir(path) == 0 || errno == EEXIST, "cannot create %s: %s", path, strerror(errno));
}

// Removes what is inside path: its files, and its directories with all they hold (each path
// on the heap: a chain of directories may be as deep as PATH_MAX allows).
static void remove_contents(const char *path) {
    DIR *dir = opendir(path);
    if (!dir) return;
    struct dirent *e;
    while ((e = readdir(dir)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        size_t size = strlen(path) + strlen(e->d_name) + 2;
        char *file = malloc(size);
        snprintf(file, size, "%s/%s", path, e->d_name);
        PlatformFileInfo info;
        if (platform_path_info(file, 0, &info) == 0 && info.kind == PLATFORM_FILE_DIRECTORY) {
            remove_contents(file);
            test_remove_dir(file);
        } else {
            platform_remove_file(file);
        }
        free(file);
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
    PlatformFileInfo info;
    return platform_path_info(path, 1, &info) == 0;
}

int test_write_file(const char *path, const void *bytes, size_t len) {
    FILE *fp = fopen(path, "wb");
    if (!CHECK(fp != NULL, "cannot write %s: %s", path, strerror(errno))) return -1;
    size_t put = fwrite(bytes, 1, len, fp);
    return CHECK(fclose(fp) == 0 && put == len, "short write to %s", path) ? 0 : -1;
}

int test_copy_file(const char *from, const char *to) {
    size_t n;
    char *bytes = test_read_file(from, &n);
    int rc = CHECK(bytes != NULL, "cannot read %s", from) ? test_write_file(to, bytes, n) : -1;
    free(bytes);
    return rc;
}

int test_exit_status(const TestRun *r, int want, const char *what) {
    char text[64];
    TestEnd end = {r->status, r->signal, r->max_rss_kib};
    return CHECK(r->status == want, "%s: %s, want exit status %d; output:\n%s", what, test_end_text(&end, text), want,
                 r->output);
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
    StWriteTensor *tensors = calloc((size_t)st.num_tensors + 1, sizeof(StWriteTensor));
    StMeta *meta = calloc((size_t)st.num_meta + 2, sizeof(StMeta));
    float *edited = NULL;
    int rc = -1, m = 0, found_key = edit->key == NULL, found_tensor = edit->tensor == NULL, n = st.num_tensors;
    for (int i = 0; i < st.num_tensors; i++) {
        const StTensor *t = &st.tensors[i];
        tensors[i] = (StWriteTensor){t->name, t->dtype, t->ndim, {0}, safetensors_tensor_data(&st, t)};
        memcpy(tensors[i].shape, t->shape, sizeof(t->shape));
        if (edit->added_tensor && strcmp(t->name, "transformer.wte.weight") == 0)
            tensors[n] = tensors[i], tensors[n++].name = edit->added_tensor;
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
    CHECK(!edit->added_tensor || n > st.num_tensors, "%s has no transformer.wte.weight to copy", src);
    char data_crc[16];
    if (edit->v1) {
        // chargpt-1: the CRC of the data section alone, stored as ordinary metadata
        uLong crc = crc32(0L, Z_NULL, 0);
        for (int i = 0; i < st.num_tensors; i++)
            crc = crc32(crc, tensors[i].data, (uInt)st.tensors[i].nbytes);
        snprintf(data_crc, sizeof(data_crc), "%08lx", crc);
        meta[m++] = (StMeta){"crc32", data_crc};
    }
    if (CHECK(safetensors_write(dst, tensors, n, meta, m, edit->v1 ? NULL : "crc32", err) == 0, "%s", err))
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
