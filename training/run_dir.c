#include "run_dir.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/input_file.h"
#include "run_identity.h"
#include "run_log.h"

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

int run_dir_find_run(const char *dir, char *found, size_t size) {
    const char *present[NUM_RUN_FILES];
    int n = 0;
    for (int i = 0; i < NUM_RUN_FILES; i++) {
        char path[4200];
        struct stat st;
        if (lstat(in_dir(path, dir, run_files[i]), &st) != 0) continue;
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

// "rows of steps 20 to 30", or "row of step 30" when there is one
static const char *rows_text(const RunLogRows *rows, char text[80]) {
    if (rows->first == rows->last) snprintf(text, 80, "row of step %ld", rows->first);
    else snprintf(text, 80, "rows of steps %ld to %ld", rows->first, rows->last);
    return text;
}

static int exists(const char *dir, const char *name) {
    char path[4200];
    struct stat st;
    return lstat(in_dir(path, dir, name), &st) == 0;
}

// The plan that replaces the run in dir (--force).
static void plan_replace(RunDirPlan *plan, const char *dir, const char *found) {
    plan->remove_ckpt = plan->remove_best = plan->remove_plot = plan->fresh_log = 1;
    snprintf(plan->message, sizeof(plan->message), "--force: replacing the run in %s (%s)", dir, found);
}

// Starts a plan that changes nothing, with the checkpoint read from (or NULL).
static int plan_start(RunDirPlan *plan, const char *source, char err[ERR_LEN]) {
    memset(plan, 0, sizeof(*plan));
    struct stat st;
    if (!source) return 0;
    if (stat(source, &st) != 0) {
        snprintf(err, ERR_LEN, "cannot read %s: %s", source, strerror(errno));
        return -1;
    }
    plan->has_source = 1;
    plan->source_dev = st.st_dev;
    plan->source_ino = st.st_ino;
    return 0;
}

static int is_source(const RunDirPlan *plan, const struct stat *st) {
    return plan->has_source && st->st_dev == plan->source_dev && st->st_ino == plan->source_ino;
}

int run_dir_plan_new(const char *dir, const char *source, int force, RunDirPlan *plan, char err[ERR_LEN]) {
    if (plan_start(plan, source, err) != 0) return -1;
    plan->fresh_log = 1;
    char found[128], path[4200], text[80];
    if (run_dir_find_run(dir, found, sizeof(found)) == 0) return 0;
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
    return RUN_DIR_REFUSED;
}

// 1 when the directory holding `file` is dir.
static int in_same_dir(const char *file, const char *dir) {
    char parent[4200];
    const char *slash = strrchr(file, '/');
    snprintf(parent, sizeof(parent), "%.*s", slash ? (int)(slash - file) : 1, slash ? file : ".");
    if (!parent[0]) strcpy(parent, "/");
    struct stat a, b;
    return stat(parent, &a) == 0 && stat(dir, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
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
static int compare_checkpoints(const char *dir, const RunIdentity *mine, RunDirPlan *plan, char *other,
                               size_t other_size, Dropped *dropped) {
    static const char *const names[2] = {"ckpt.safetensors", "best.safetensors"};
    int *removes[2] = {&plan->remove_ckpt, &plan->remove_best};
    int count = 0, ckpt_present = 0, newest_later = 0;
    long newest_step = -1;
    for (int i = 0; i < 2 && !other[0]; i++) {
        char path[4200], why[ERR_LEN];
        struct stat st;
        if (stat(in_dir(path, dir, names[i]), &st) != 0) continue;
        count++;
        ckpt_present |= i == 0;
        if (is_source(plan, &st)) continue;
        RunIdentity theirs;
        if (run_identity_read(path, &theirs, why) != 0)
            snprintf(other, other_size, "its %s cannot be read (%.300s)", names[i], why);
        else if (run_identity_compare(mine, &theirs, why, sizeof(why)) != 0)
            snprintf(other, other_size, "its %s %.400s", names[i], why);
        else if (theirs.step > mine->step) {
            snprintf(dropped->parts[dropped->count++], sizeof(dropped->parts[0]), "%s at step %ld", names[i],
                     theirs.step);
            *removes[i] = 1;
            newest_later |= i == 0 || !ckpt_present;
            if (theirs.step > newest_step) newest_step = theirs.step, strcpy(dropped->newest, path);
        }
    }
    if (!newest_later) dropped->count = plan->remove_ckpt = plan->remove_best = 0;
    return count;
}

int run_dir_plan_resume(const char *dir, const char *checkpoint, long step, int force, RunDirPlan *plan,
                        char err[ERR_LEN]) {
    if (plan_start(plan, checkpoint, err) != 0) return -1;
    RunIdentity mine;
    RunLogRows after, all;
    Dropped dropped = {.count = 0};
    char log[4200], other[ERR_LEN] = "", found[128], text[80];
    if (run_identity_read(checkpoint, &mine, err) != 0 || run_log_rows_after(in_dir(log, dir, "log.csv"), step,
                                                                             &after, err) != 0 ||
        run_log_rows_after(log, -1, &all, err) != 0)
        return -1;
    mine.step = step;
    run_dir_find_run(dir, found, sizeof(found));
    int checkpoints = compare_checkpoints(dir, &mine, plan, other, sizeof(other), &dropped);
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
        return RUN_DIR_REFUSED;
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
        return RUN_DIR_REFUSED;
    }
    if (newer)
        snprintf(plan->message, sizeof(plan->message), "--force: dropping %s of %s", what, dir);
    else if (after.count > 0)
        snprintf(plan->message, sizeof(plan->message), "dropping %s of %s, written after the last checkpoint was "
                 "saved", what, dir);
    return 0;
}

int run_dir_apply(const char *dir, const RunDirPlan *plan, char err[ERR_LEN]) {
    static const char *const names[5] = {"ckpt.safetensors", "best.safetensors", "loss.svg", "probe.bin",
                                         "timeline.html"};
    const int remove[5] = {plan->remove_ckpt, plan->remove_best, plan->remove_plot, plan->remove_plot,
                           plan->remove_plot};
    for (int i = 0; i < 5; i++) {
        char path[4200];
        struct stat st;
        if (!remove[i] || lstat(in_dir(path, dir, names[i]), &st) != 0 || (stat(path, &st) == 0 && is_source(plan, &st)))
            continue;
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
