#include "timeline_rebuild.h"

#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/platform.h"
#include "../format/atomic_file.h"
#include "../format/output.h"
#include "../format/probe_csv.h"
#include "../generation/outputs.h"
#include "../viewer/timeline.h"
#include "run_log.h"

// --timeline: the page's memory (viewer/timeline.h) and the loss history's (at most
// LOSS_HISTORY_MAX_POINTS points, training/run_log.h) within the memory limit. Returns 0;
// EXIT_USAGE or EXIT_DATA with err.
static int check_timeline_memory(const Job *j, const char *probe, char err[ERR_LEN]) {
    char why[ERR_LEN];
    double bytes;
    if (timeline_memory(probe, &bytes, why) != 0) return error_status(err, EXIT_DATA, "--timeline %s", why);
    bytes += LOSS_HISTORY_MAX_POINTS * sizeof(LossPoint);
    const char *source;
    double limit = j->memory_limit(&j->o, &source);
    if (limit <= 0 || bytes <= limit) return 0;
    char needed[32], limit_text[32];
    format_bytes(bytes, needed, sizeof(needed));
    format_bytes(limit, limit_text, sizeof(limit_text));
    return error_status(err, EXIT_USAGE, "--timeline %s: making its page needs %s of memory (a record of %s at a time, "
                        "and its loss history), more than the %s %s", j->o.timeline, needed, probe, limit_text, source);
}

// --timeline RUN_DIR's probe.bin, in probe (n bytes), when the directory holds one (else
// EXIT_DATA with err).
static int timeline_probe_path(const GenerateOptions *o, char *probe, size_t n, char err[ERR_LEN]) {
    snprintf(probe, n, "%s/probe.bin", o->timeline);
    struct stat st;
    if (stat(o->timeline, &st) != 0 || !S_ISDIR(st.st_mode))
        return error_status(err, EXIT_DATA, "--timeline %s: %s", o->timeline,
                            errno == ENOENT ? "no such directory" : "not a directory");
    if (access(probe, F_OK) != 0)
        return error_status(err, EXIT_DATA, "--timeline %s: it holds no probe.bin (a run from before the timeline, or "
                            "with --no-probe)", o->timeline);
    return 0;
}

// --timeline's summary: what the page holds, and what it left out of probe.bin, named as
// --resume names it. Returns 0, or EXIT_DATA with err when stdout cannot be written.
static int say_what_the_page_holds(const Job *j, const char *page, const char *probe, const TimelineSummary *s,
                                   char err[ERR_LEN]) {
    printf("%s: %ld probed step%s of %ld in full, %ld of %ld records%s\n", page, s->kept_whole,
           s->kept_whole == 1 ? "" : "s", s->whole, s->kept, s->records,
           s->torn_bytes && !s->damage ? "; a torn record at the end of probe.bin left out" : "");
    if (j->flush_stdout(err) != 0) return EXIT_DATA;
    if (s->damage)
        fprintf(stderr, "%s: warning: %s: record %ld (at byte %llu) %s: the page holds the %ld records before it and "
                "leaves out the %llu bytes from there (./train --resume moves such a file aside)\n", program_name(),
                probe, s->records + 1, (unsigned long long)s->damaged_at, s->damage, s->records,
                (unsigned long long)s->torn_bytes);
    return 0;
}

int rebuild_timeline(const Job *j, OutDirLock *lock, char err[ERR_LEN]) {
    const GenerateOptions *o = &j->o;
    char probe[4200], log[4200], page[4200], why[ERR_LEN], title[4300];
    int status = timeline_probe_path(o, probe, sizeof(probe), err);
    if (status != 0) return status;
    snprintf(log, sizeof(log), "%s/log.csv", o->timeline);
    snprintf(page, sizeof(page), "%s/%s", o->timeline, TIMELINE_FILE);
    status = out_dir_lock_if_there(o->timeline, lock, why);
    if (status != 0)
        return error_status(err, status, "--timeline %s%s", why,
                            status == EXIT_USAGE ? " (the run rewrites its timeline.html itself)" : "");
    if (why[0]) fprintf(stderr, "%s: warning: %s\n", program_name(), why);
    if (refuse_existing("--timeline", page, o->force, err) != 0) return EXIT_USAGE;
    status = check_timeline_memory(j, probe, err);
    if (status != 0) return status;
    int removed;
    if (output_prepare(page, &removed, why) != 0) return error_status(err, EXIT_DATA, "--timeline %s", why);
    LossHistory losses = {0};
    if (loss_history_read(&losses, log, err) != 0) {
        loss_history_free(&losses);
        return EXIT_DATA;
    }
    int rc = loss_history_check_probe(&losses, probe, why);
    if (rc != 0) {
        loss_history_free(&losses);
        if (rc < 0) return error_status(err, EXIT_DATA, "%s", why);
        return error_status(err, EXIT_DATA, "--timeline %s: %s is not the log of the run probe.bin probed: %s (a "
                            "log.csv of another run?); move it away to make the page without its loss curves",
                            o->timeline, log, why);
    }
    snprintf(title, sizeof(title), "chargpt: %s", o->timeline);
    TimelineSummary s;
    rc = timeline_write(page, probe, losses.points, losses.n, title, TIMELINE_MAX_RECORD_BYTES, o->force, &s, err);
    loss_history_free(&losses);
    if (rc != 0) return rc == ATOMIC_FILE_EXISTS ? EXIT_USAGE : EXIT_DATA;
    return say_what_the_page_holds(j, page, probe, &s, err);
}

int timeline_csv(const Job *j, char err[ERR_LEN]) {
    const GenerateOptions *o = &j->o;
    char probe[4200], why[ERR_LEN];
    int status = timeline_probe_path(o, probe, sizeof(probe), err);
    if (status != 0) return status;
    if (refuse_existing("--csv", o->csv, o->force, err) != 0) return EXIT_USAGE;
    long rows;
    int torn;
    int rc = probe_csv_write(probe, o->csv, o->force, &rows, &torn, why);
    if (rc != 0) return error_status(err, rc == ATOMIC_FILE_EXISTS ? EXIT_USAGE : EXIT_DATA, "--timeline %s", why);
    printf("%s: %ld rows, a head each at every probed step of %s%s\n", o->csv, rows, probe,
           torn ? " (up to a torn or damaged record)" : "");
    return j->flush_stdout(err) != 0 ? EXIT_DATA : 0;
}
