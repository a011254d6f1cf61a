#include "run_dir.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const run_files[] = {"ckpt.safetensors", "best.safetensors", "log.csv"};
#define NUM_RUN_FILES (int)(sizeof(run_files) / sizeof(run_files[0]))

// 1 when the file has a second line.
static int has_row(const char *path) {
    FILE *fp = fopen(path, "r");
    if (!fp) return 0;
    int c, lines = 0;
    while ((c = getc(fp)) != EOF && lines < 1) lines += c == '\n';
    int row = lines == 1 && c != EOF;
    fclose(fp);
    return row;
}

int run_dir_find_run(const char *dir, char *found, size_t size) {
    const char *present[NUM_RUN_FILES];
    int n = 0;
    for (int i = 0; i < NUM_RUN_FILES; i++) {
        char path[4200];
        struct stat st;
        snprintf(path, sizeof(path), "%s/%s", dir, run_files[i]);
        if (lstat(path, &st) != 0) continue;
        // a log counts once it has a row: a run refused before its first step leaves the header alone
        if (strcmp(run_files[i], "log.csv") == 0 && (!S_ISREG(st.st_mode) || !has_row(path))) continue;
        present[n++] = run_files[i];
    }
    size_t used = 0;
    found[0] = '\0';
    for (int i = 0; i < n && used < size; i++)
        used += (size_t)snprintf(found + used, size - used, "%s%s", i == 0 ? "" : i == n - 1 ? " and " : ", ",
                                 present[i]);
    return n;
}

int run_dir_remove_old_outputs(const char *dir, char err[ERR_LEN]) {
    static const char *const old[] = {"best.safetensors", "loss.svg"};
    for (size_t i = 0; i < sizeof(old) / sizeof(old[0]); i++) {
        char path[4200];
        snprintf(path, sizeof(path), "%s/%s", dir, old[i]);
        if (unlink(path) != 0 && errno != ENOENT) {
            snprintf(err, ERR_LEN, "cannot remove %s of the run --force replaces: %s", path, strerror(errno));
            return -1;
        }
    }
    return 0;
}

void run_dir_find_corpus(const char *saved, const char *checkpoint_path, char *out, size_t size) {
    snprintf(out, size, "%s", saved);
    if (saved[0] == '/' || access(saved, F_OK) == 0) return;
    const char *slash = strrchr(checkpoint_path, '/');
    int dir_len = slash ? (int)(slash - checkpoint_path) : 0;
    const char *name = strrchr(saved, '/');
    const char *candidates[] = {saved, name ? name + 1 : saved};
    for (int i = 0; i < 2; i++) {
        char path[4200];
        if (slash) snprintf(path, sizeof(path), "%.*s/%s", dir_len, checkpoint_path, candidates[i]);
        else snprintf(path, sizeof(path), "%s", candidates[i]);
        if (access(path, F_OK) == 0 && strlen(path) < size) {
            snprintf(out, size, "%s", path);
            return;
        }
    }
}
