#include "out_dir.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../common/input_file.h"
#include "../common/platform.h"
#include "../dist/dist.h"
#include "../format/atomic_file.h"
#include "../viewer/timeline.h"
#include "run.h"

void out_paths(const char *dir, OutPaths *paths) {
    snprintf(paths->ckpt, sizeof(paths->ckpt), "%s/ckpt.safetensors", dir);
    snprintf(paths->best, sizeof(paths->best), "%s/best.safetensors", dir);
    snprintf(paths->log, sizeof(paths->log), "%s/log.csv", dir);
    snprintf(paths->plot, sizeof(paths->plot), "%s/loss.svg", dir);
    snprintf(paths->probe, sizeof(paths->probe), "%s/%s", dir, PROBE_FILE);
    snprintf(paths->timeline, sizeof(paths->timeline), "%s/%s", dir, TIMELINE_FILE);
}

// ----------------------------------------------------------------------------
// the lock

// The process id written in the lock file, or 0 when there is none (yet) or it is not running.
static long holder_pid(int fd) {
    char text[32];
    long n = platform_read_at(fd, text, sizeof(text) - 1, 0);
    if (n <= 0) return 0;
    text[n] = '\0';
    char *end;
    long pid = strtol(text, &end, 10);
    if (end == text || *end != '\n' || pid <= 0) return 0;
    return platform_process_running(pid) ? pid : 0;
}

// The holder writes its pid right after it takes the lock: wait up to a second for it.
static long wait_for_holder_pid(int fd) {
    long pid = 0;
    for (int i = 0; i < 100 && (pid = holder_pid(fd)) == 0; i++) nanosleep(&(struct timespec){0, 10000000}, NULL);
    return pid;
}

enum { LOCK_HELD = 0, LOCK_BUSY = 1, LOCK_UNSUPPORTED = 2, LOCK_ABSENT = 3, LOCK_FAILED = -1 };

// Takes the lock of dir, creating its file when `create` (dir exists then). Returns LOCK_HELD;
// LOCK_ABSENT when not `create` and dir or the file is not there; LOCK_BUSY when another
// process holds it (err names its pid, read from the file); LOCK_UNSUPPORTED when the file
// system has no locks (err says so; the lock is not held); LOCK_FAILED when the file cannot
// be created or opened (err).
static int take_lock(OutDirLock *lock, const char *dir, int create, char err[ERR_LEN]) {
    char path[4200];
    snprintf(path, sizeof(path), "%s/%s", dir, OUT_DIR_LOCK_NAME);
    lock->held = 0;
    int how = PLATFORM_READ | PLATFORM_WRITE | PLATFORM_NO_FOLLOW | (create ? PLATFORM_CREATE : 0);
    lock->fd = platform_open(path, how);
    if (lock->fd < 0 && !create && (errno == ENOENT || errno == ENOTDIR)) return LOCK_ABSENT;
    if (lock->fd < 0) {
        snprintf(err, ERR_LEN, "cannot %s %s: %s", create ? "create" : "open", path, strerror(errno));
        return LOCK_FAILED;
    }
    int locked = platform_lock(lock->fd);
    if (locked != PLATFORM_LOCK_HELD) {
        int error = errno, busy = locked == PLATFORM_LOCK_BUSY;
        if (busy) {
            long pid = wait_for_holder_pid(lock->fd);
            char holder[64] = "another process (its pid is not written in the lock)";
            if (pid) snprintf(holder, sizeof(holder), "another run (pid %ld)", pid);
            snprintf(err, ERR_LEN, "%s is in use by %s, which holds %s: wait for it to end or stop it, or give "
                     "another --out", dir, holder, path);
        } else {
            snprintf(err, ERR_LEN, "cannot lock %s: %s", path, strerror(error));
        }
        close(lock->fd);
        return busy ? LOCK_BUSY : locked == PLATFORM_LOCK_UNSUPPORTED ? LOCK_UNSUPPORTED : LOCK_FAILED;
    }
    lock->held = 1;
    char text[32];
    int n = snprintf(text, sizeof(text), "%ld\n", platform_process_id());
    if (ftruncate(lock->fd, 0) != 0 || platform_write_at(lock->fd, text, (size_t)n, 0) != n) {
        snprintf(err, ERR_LEN, "cannot write %s: %s", path, strerror(errno));
        out_dir_unlock(lock);
        return LOCK_FAILED;
    }
    return LOCK_HELD;
}

void out_dir_unlock(OutDirLock *lock) {
    if (!lock->held) return;
    int emptied = ftruncate(lock->fd, 0);  // an empty file: no holder (a failure here changes nothing)
    (void)emptied;
    close(lock->fd);
    lock->held = 0;
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

// The status of take_lock's answer, with err the message to give or (a file system without
// locks) the warning to print, once.
static int lock_status(int locked, const char *dir, OutDirLock *lock, const char *why, char err[ERR_LEN]) {
    err[0] = '\0';
    if (locked == LOCK_BUSY) snprintf(err, ERR_LEN, "%s", why);
    if (locked == LOCK_FAILED) snprintf(err, ERR_LEN, "cannot write into %s: %s", dir, why);
    if (locked == LOCK_UNSUPPORTED && !lock->lockless)
        snprintf(err, ERR_LEN, "%s (this file system has no locks: make sure no other run writes into %s)", why, dir);
    lock->lockless |= locked == LOCK_UNSUPPORTED;
    return locked == LOCK_BUSY ? EXIT_USAGE : locked == LOCK_FAILED ? EXIT_DATA : 0;
}

int out_dir_lock_if_there(const char *dir, OutDirLock *lock, char err[ERR_LEN]) {
    char why[ERR_LEN];
    return lock_status(take_lock(lock, dir, 0, why), dir, lock, why, err);
}

int out_dir_lock(const char *dir, OutDirLock *lock, char err[ERR_LEN]) {
    if (make_dirs(dir, err) != 0) return EXIT_DATA;
    char why[ERR_LEN];
    return lock_status(take_lock(lock, dir, 1, why), dir, lock, why, err);
}

// ----------------------------------------------------------------------------
// what it holds, and what the run does to it

static const char *const run_files[] = {"ckpt.safetensors", "best.safetensors", "log.csv"};
#define NUM_RUN_FILES (int)(sizeof(run_files) / sizeof(run_files[0]))

// dir/name into path (size 4200).
static const char *in_dir(char path[4200], const char *dir, const char *name) {
    snprintf(path, 4200, "%s/%s", dir, name);
    return path;
}

// 1 when the file has a second line.
static int has_row(const char *path) {
    char err[ERR_LEN];
    FILE *fp = input_file_fopen(path, 0, NULL, err);
    if (!fp) return 0;
    int c, lines = 0;
    while ((c = getc(fp)) != EOF && lines < 1) lines += c == '\n';
    int row = lines == 1 && c != EOF;
    fclose(fp);
    return row;
}

int out_dir_find_run(const char *dir, char *found, size_t size) {
    const char *present[NUM_RUN_FILES];
    int n = 0;
    for (int i = 0; i < NUM_RUN_FILES; i++) {
        char path[4200];
        PlatformFileInfo info;
        if (platform_path_info(in_dir(path, dir, run_files[i]), 0, &info) != 0) continue;
        // a log counts once it has a row: a run refused before its first step leaves the header alone
        if (strcmp(run_files[i], "log.csv") == 0 && (info.kind != PLATFORM_FILE_REGULAR || !has_row(path))) continue;
        present[n++] = run_files[i];
    }
    size_t used = 0;
    found[0] = '\0';
    for (int i = 0; i < n && used < size; i++)
        used += (size_t)snprintf(found + used, size - used, "%s%s", i == 0 ? "" : i == n - 1 ? " and " : ", ",
                                 present[i]);
    return n;
}

// "rows of steps 20 to 30", or "row of step 30" when there is one
static const char *rows_text(const RunLogRows *rows, char text[80]) {
    if (rows->first == rows->last) snprintf(text, 80, "row of step %ld", rows->first);
    else snprintf(text, 80, "rows of steps %ld to %ld", rows->first, rows->last);
    return text;
}

static int exists(const char *dir, const char *name) {
    char path[4200];
    PlatformFileInfo info;
    return platform_path_info(in_dir(path, dir, name), 0, &info) == 0;
}

// The plan that replaces the run in dir (--force).
static void plan_replace(OutDirPlan *plan, const char *dir, const char *found) {
    plan->remove_ckpt = plan->remove_best = plan->remove_plot = plan->fresh_log = 1;
    snprintf(plan->message, sizeof(plan->message), "--force: replacing the run in %s (%s)", dir, found);
}

// Starts a plan that changes nothing, with the checkpoint read from (or NULL).
static int plan_start(OutDirPlan *plan, const char *source, char err[ERR_LEN]) {
    memset(plan, 0, sizeof(*plan));
    if (!source) return 0;
    if (platform_path_info(source, 1, &plan->source) != 0) {
        snprintf(err, ERR_LEN, "cannot read %s: %s", source, strerror(errno));
        return -1;
    }
    plan->has_source = 1;
    return 0;
}

static int is_source(const OutDirPlan *plan, const PlatformFileInfo *info) {
    return plan->has_source && platform_same_file(info, &plan->source);
}

int out_dir_plan_new(const char *dir, const char *source, int force, OutDirPlan *plan, char err[ERR_LEN]) {
    if (plan_start(plan, source, err) != 0) return -1;
    plan->fresh_log = 1;
    char found[128], path[4200], text[80];
    if (out_dir_find_run(dir, found, sizeof(found)) == 0) return 0;
    if (force) {
        plan_replace(plan, dir, found);
        return 0;
    }
    RunLogRows rows;
    if (exists(dir, "ckpt.safetensors"))
        snprintf(err, ERR_LEN, "%s already holds a run (%s): continue it with --resume %s, or give --force to "
                 "replace it (or another --out)", dir, found, in_dir(path, dir, "ckpt.safetensors"));
    else if (exists(dir, "best.safetensors"))
        snprintf(err, ERR_LEN, "%s already holds a run (%s): continue it from its best checkpoint with --resume %s, "
                 "or give --force to replace it (or another --out)", dir, found, in_dir(path, dir, "best.safetensors"));
    else if (run_log_rows_after(in_dir(path, dir, "log.csv"), -1, &rows, err) != 0)
        return -1;
    else
        snprintf(err, ERR_LEN, "%s already holds a run: the log.csv of a run stopped before it saved a checkpoint "
                 "(%s), so it cannot be continued; give --force to replace it, or another --out",
                 dir, rows_text(&rows, text));
    return OUT_DIR_REFUSED;
}

// 1 when the directory holding `file` is dir.
static int in_same_dir(const char *file, const char *dir) {
    char parent[4200];
    const char *slash = platform_path_last_separator(file);
    snprintf(parent, sizeof(parent), "%.*s", slash ? (int)(slash - file) : 1, slash ? file : ".");
    if (!parent[0]) strcpy(parent, "/");
    PlatformFileInfo a, b;
    return platform_path_info(parent, 1, &a) == 0 && platform_path_info(dir, 1, &b) == 0 && platform_same_file(&a, &b);
}

// What a resumed run would drop: up to two newer checkpoints and log.csv's rows.
typedef struct {
    char parts[3][160];  // "ckpt.safetensors at step 30", "log.csv's rows of steps 20 to 30"
    int count;
    char newest[4200];   // the latest newer checkpoint
} Dropped;

// "a", "a and b", "a, b and c".
static void join_dropped(const Dropped *d, char *out, size_t size) {
    size_t used = 0;
    out[0] = '\0';
    for (int i = 0; i < d->count && used < size; i++)
        used += (size_t)snprintf(out + used, size - used, "%s%s", i == 0 ? "" : i == d->count - 1 ? " and " : ", ",
                                 d->parts[i]);
}

// The checkpoints of dir other than `mine`, the resumed one (at mine->step): the first of
// another run (or unreadable) is described in other; newer work of the same run goes into
// dropped, marked in the plan for removal. The directory's newest checkpoint is its
// ckpt.safetensors, else its best.safetensors: newer work is that one at a later step (with
// best.safetensors too when it is later as well). A best.safetensors alone later than the
// resumed ckpt.safetensors was saved at an evaluation after ckpt.safetensors's last save (or
// just before a kill): the resumed run makes those steps again. Returns how many checkpoints
// dir has.
static int compare_checkpoints(const char *dir, const RunIdentity *mine, OutDirPlan *plan, char *other,
                               size_t other_size, Dropped *dropped) {
    static const char *const names[2] = {"ckpt.safetensors", "best.safetensors"};
    int *removes[2] = {&plan->remove_ckpt, &plan->remove_best};
    int count = 0, ckpt_present = 0, newest_later = 0;
    long newest_step = -1;
    for (int i = 0; i < 2 && !other[0]; i++) {
        char path[4200], why[ERR_LEN];
        PlatformFileInfo info;
        if (platform_path_info(in_dir(path, dir, names[i]), 1, &info) != 0) continue;
        count++;
        ckpt_present |= i == 0;
        if (is_source(plan, &info)) continue;
        RunIdentity theirs;
        if (run_identity_read(path, &theirs, why) != 0) {
            snprintf(other, other_size, "its %s cannot be read (%.300s)", names[i], why);
            continue;
        }
        if (run_identity_compare(mine, &theirs, why, sizeof(why)) != 0) {
            snprintf(other, other_size, "its %s %.400s", names[i], why);
        } else if (theirs.step > mine->step) {
            snprintf(dropped->parts[dropped->count++], sizeof(dropped->parts[0]), "%s at step %ld", names[i],
                     theirs.step);
            *removes[i] = 1;
            newest_later |= i == 0 || !ckpt_present;
            if (theirs.step > newest_step) newest_step = theirs.step, strcpy(dropped->newest, path);
        }
        run_identity_free(&theirs);
    }
    if (!newest_later) dropped->count = plan->remove_ckpt = plan->remove_best = 0;
    return count;
}

int out_dir_plan_resume(const char *dir, const char *checkpoint, long step, int force, OutDirPlan *plan,
                        char err[ERR_LEN]) {
    if (plan_start(plan, checkpoint, err) != 0) return -1;
    RunIdentity mine;
    RunLogRows after, all;
    Dropped dropped = {.count = 0};
    char log[4200], other[ERR_LEN] = "", found[128], text[80];
    if (run_log_rows_after(in_dir(log, dir, "log.csv"), step, &after, err) != 0 ||
        run_log_rows_after(log, -1, &all, err) != 0 || run_identity_read(checkpoint, &mine, err) != 0)
        return -1;
    mine.step = step;
    out_dir_find_run(dir, found, sizeof(found));
    int checkpoints = compare_checkpoints(dir, &mine, plan, other, sizeof(other), &dropped);
    run_identity_free(&mine);
    if (!other[0] && checkpoints == 0 && all.count > 0 && !in_same_dir(checkpoint, dir))
        snprintf(other, sizeof(other), "its log.csv (%s) is of a run that saved no checkpoint", rows_text(&all, text));
    if (other[0]) {
        plan->remove_ckpt = plan->remove_best = 0;
        if (force) {
            plan_replace(plan, dir, found);
            return 0;
        }
        snprintf(err, ERR_LEN, "%s holds another run than %s: %s. Resuming there would replace that run: give "
                 "another --out (by default a resumed run writes beside its checkpoint), or --force to replace it",
                 dir, checkpoint, other);
        return OUT_DIR_REFUSED;
    }
    int newer = dropped.count > 0;
    if (after.count > 0)
        snprintf(dropped.parts[dropped.count++], sizeof(dropped.parts[0]), "log.csv's %s", rows_text(&after, text));
    char what[500];
    join_dropped(&dropped, what, sizeof(what));
    if (newer && !force) {
        snprintf(err, ERR_LEN, "%s is at step %ld, before the newer work of its run in %s: resuming it would drop "
                 "%s; continue the newest with --resume %s, or give --force to drop them", checkpoint, step, dir, what,
                 dropped.newest);
        return OUT_DIR_REFUSED;
    }
    if (newer)
        snprintf(plan->message, sizeof(plan->message), "--force: dropping %s of %s", what, dir);
    else if (after.count > 0)
        snprintf(plan->message, sizeof(plan->message), "dropping %s of %s, written after the last checkpoint was "
                 "saved", what, dir);
    return 0;
}

void out_dir_existing_parent(const char *dir, char *existing, size_t size) {
    snprintf(existing, size, "%s", dir);
    struct stat st;
    while (stat(existing, &st) != 0 && (errno == ENOENT || errno == ENOTDIR)) {
        char *slash = (char *)platform_path_last_separator(existing);
        if (!slash) snprintf(existing, size, ".");
        else if (slash == existing) existing[1] = '\0';  // the root
        else *slash = '\0';
    }
}

// A directory that is not there: whether it can be made, its nearest existing parent a
// directory that takes new entries. Returns 0, or EXIT_DATA with err.
static int check_makeable(const char *dir, char err[ERR_LEN]) {
    char parent[1024];
    out_dir_existing_parent(dir, parent, sizeof(parent));
    struct stat st;
    if (stat(parent, &st) != 0) {
        snprintf(err, ERR_LEN, "cannot create directory %s: %s: %s", dir, parent, strerror(errno));
        return EXIT_DATA;
    }
    if (!S_ISDIR(st.st_mode)) {
        snprintf(err, ERR_LEN, "cannot create directory %s: %s is not a directory", dir, parent);
        return EXIT_DATA;
    }
    if (access(parent, W_OK) != 0) {
        snprintf(err, ERR_LEN, "cannot create directory %s in %s: %s", dir, parent, strerror(errno));
        return EXIT_DATA;
    }
    return 0;
}

int out_dir_prepare(const TrainOptions *o, long step, const OutPaths *paths, OutDirPlan *plan, int *removed,
                    char err[ERR_LEN]) {
    *removed = 0;
    struct stat st;
    if (stat(o->out, &st) == 0 && !S_ISDIR(st.st_mode)) {
        snprintf(err, ERR_LEN, "--out %s is not a directory", o->out);
        return EXIT_DATA;
    }
    int planned = o->resume[0] ? out_dir_plan_resume(o->out, o->resume, step, o->force, plan, err)
                               : out_dir_plan_new(o->out, o->init_from[0] ? o->init_from : NULL, o->force, plan, err);
    if (planned != 0) return planned == OUT_DIR_REFUSED ? EXIT_USAGE : EXIT_DATA;
    if (stat(o->out, &st) != 0) return check_makeable(o->out, err);
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

int out_dir_apply(const char *dir, const OutDirPlan *plan, char err[ERR_LEN]) {
    static const char *const names[5] = {"ckpt.safetensors", "best.safetensors", "loss.svg", "probe.bin",
                                         "timeline.html"};
    const int remove[5] = {plan->remove_ckpt, plan->remove_best, plan->remove_plot, plan->remove_plot,
                           plan->remove_plot};
    for (int i = 0; i < 5; i++) {
        char path[4200];
        PlatformFileInfo info;
        if (!remove[i] || platform_path_info(in_dir(path, dir, names[i]), 0, &info) != 0 ||
            (platform_path_info(path, 1, &info) == 0 && is_source(plan, &info)))
            continue;
        if (platform_remove_file(path) != 0 && errno != ENOENT) {
            snprintf(err, ERR_LEN, "cannot remove %s of the run --force replaces: %s", path, strerror(errno));
            return -1;
        }
    }
    return 0;
}

// ----------------------------------------------------------------------------
// the run's --out

int set_up_out_dir(Run *r, char err[ERR_LEN]) {
    out_paths(r->o.out, &r->paths);
    if (dist_rank() != 0) return 0;
    int removed;
    int status = out_dir_prepare(&r->o, r->state.step, &r->paths, &r->out_plan, &removed, err);
    if (removed > 0)
        printf("removed %d temporary file%s left in %s by a run that was stopped\n", removed, removed == 1 ? "" : "s",
               r->o.out);
    return status;
}

// Step 3's start: --out made and locked when step 1 found no lock to take, and planned once
// more, now that no other run can start there. Returns 0, or the exit status with err.
static int take_out_dir(Run *r, char err[ERR_LEN]) {
    if (r->lock.held) return 0;
    int status = out_dir_lock(r->o.out, &r->lock, err);
    if (status != 0) return status;
    if (err[0]) fprintf(stderr, "%s: warning: %s\n", program_name(), err);
    return set_up_out_dir(r, err);
}

int check_timeline_disk(Run *r, char err[ERR_LEN]) {
    char there[1024];
    double free_bytes;
    out_dir_existing_parent(r->o.out, there, sizeof(there));
    if (dist_rank() != 0 || platform_free_space(there, &free_bytes) != 0) return 0;  // unknown: no bound
    return run_probe_check_disk(&r->probe, r->state.step, r->o.steps, r->o.eval_every,
                                !r->resuming && r->ds.val_len > 0, free_bytes, r->o.out, err) != 0 ? EXIT_USAGE : 0;
}

int start_out_dir(Run *r, char err[ERR_LEN]) {
    if (dist_rank() == 0) {
        int status = take_out_dir(r, err);
        if (status != 0) return status;
        if (out_dir_apply(r->o.out, &r->out_plan, err) != 0) return EXIT_DATA;
        if (r->out_plan.message[0]) printf("%s\n", r->out_plan.message);
        if (run_log_open(&r->log, r->paths.log, !r->out_plan.fresh_log, r->state.step, err) != 0) return EXIT_DATA;
        if (r->log.torn_bytes)
            printf("%s: cut %zu bytes of a row that a stopped run left unfinished\n", r->paths.log, r->log.torn_bytes);
        if (r->log.damaged_bytes)
            printf("%s: its last %zu bytes are no row (a row is at most %d bytes of figures, and only the last, cut by "
                   "a kill, can be unfinished): moved the file to %s; %s keeps its whole rows\n", r->paths.log,
                   r->log.damaged_bytes, RUN_LOG_ROW_MAX, r->log.aside, r->paths.log);
    }
    char probe_message[2 * ERR_LEN];
    if (run_probe_open(&r->probe, &r->model, r->state.step, probe_message, sizeof(probe_message), err) != 0)
        return EXIT_DATA;
    if (probe_message[0]) printf("%s\n", probe_message);
    snprintf(r->plot_title, sizeof(r->plot_title), "chargpt: %s", r->data_name);
    if (r->resuming && dist_rank() == 0 && loss_history_read(&r->losses, r->paths.log, err) != 0) return EXIT_DATA;
    return 0;
}
