#include "out_dir.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "../common/platform.h"
#include "../format/atomic_file.h"
#include "../viewer/timeline.h"
#include "run_probe.h"

void out_paths(const char *dir, OutPaths *paths) {
    snprintf(paths->ckpt, sizeof(paths->ckpt), "%s/ckpt.safetensors", dir);
    snprintf(paths->best, sizeof(paths->best), "%s/best.safetensors", dir);
    snprintf(paths->log, sizeof(paths->log), "%s/log.csv", dir);
    snprintf(paths->plot, sizeof(paths->plot), "%s/loss.svg", dir);
    snprintf(paths->probe, sizeof(paths->probe), "%s/%s", dir, PROBE_FILE);
    snprintf(paths->timeline, sizeof(paths->timeline), "%s/%s", dir, TIMELINE_FILE);
}

// Makes path and the directories above it. Returns 0, or -1 with err.
static int make_dirs(const char *path, char err[ERR_LEN]) {
    char buf[1024];
    snprintf(buf, sizeof(buf), "%s", path);
    for (char *p = buf + 1; ; p++) {
        if (platform_is_path_separator(*p) || *p == '\0') {
            char saved = *p;
            *p = '\0';
            if (platform_make_dir(buf) != 0 && errno != EEXIST) {
                snprintf(err, ERR_LEN, "cannot create directory %s: %s", buf, strerror(errno));
                return -1;
            }
            *p = saved;
            if (saved == '\0') break;
        }
    }
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) {
        snprintf(err, ERR_LEN, "%s is not a directory", path);
        return -1;
    }
    return 0;
}

int out_dir_lock(const char *dir, RunLock *lock, char err[ERR_LEN]) {
    if (make_dirs(dir, err) != 0) return EXIT_DATA;
    char why[ERR_LEN];
    int locked = run_lock_take(lock, dir, why);
    err[0] = '\0';
    if (locked == RUN_LOCK_BUSY) snprintf(err, ERR_LEN, "%s", why);
    if (locked == RUN_LOCK_FAILED) snprintf(err, ERR_LEN, "cannot write into --out %s: %s", dir, why);
    if (locked == RUN_LOCK_UNSUPPORTED)
        snprintf(err, ERR_LEN, "%s (this file system has no locks: make sure no other run writes into %s)", why, dir);
    return locked == RUN_LOCK_BUSY ? EXIT_USAGE : locked == RUN_LOCK_FAILED ? EXIT_DATA : 0;
}

int out_dir_prepare(const TrainOptions *o, long step, const OutPaths *paths, RunDirPlan *plan, int *removed,
                    char err[ERR_LEN]) {
    *removed = 0;
    int planned = o->resume[0] ? run_dir_plan_resume(o->out, o->resume, step, o->force, plan, err)
                               : run_dir_plan_new(o->out, o->init_from[0] ? o->init_from : NULL, o->force, plan, err);
    if (planned != 0) return planned == RUN_DIR_REFUSED ? EXIT_USAGE : EXIT_DATA;
    const char *const outputs[] = {paths->ckpt, paths->best, paths->log, paths->plot, paths->probe, paths->timeline};
    for (size_t i = 0; i < sizeof(outputs) / sizeof(outputs[0]); i++) {
        int n = atomic_file_remove_stale(outputs[i], err);
        if (n < 0) {
            *removed = 0;  // the failure is what the run says
            return EXIT_DATA;
        }
        *removed += n;
    }
    AtomicFile probe;
    char why[ERR_LEN];
    if (atomic_file_open(&probe, paths->ckpt, why) != 0) {
        snprintf(err, ERR_LEN, "cannot write into --out %s: %s", o->out, why);
        return EXIT_DATA;
    }
    atomic_file_abort(&probe);
    return 0;
}
