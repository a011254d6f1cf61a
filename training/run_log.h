// log.csv: one row per progress report,
//   step,train_loss,val_loss,lr,tokens_seen,elapsed_s,grad_norm,clipped,accuracy
// with val_loss empty where the step had no evaluation; grad_norm is the mean gradient norm
// before clipping of the report's steps (as train_loss is their mean loss) and clipped how
// many of them were clipped; accuracy is a task's (data/task.h: the share of the validation
// split's predictable characters the model predicts), empty without a task or an evaluation.
// The last columns came later (grad_norm and clipped, then accuracy): a resumed run whose
// log.csv has an older header rewrites it with the new header and the missing fields empty in
// its rows, so the file stays one table; readers of the first columns see no change.
// Every write is checked. And the points of the loss plot, read from log.csv's rows when a run
// resumes (or ./generate --timeline rebuilds a run's page) and added at each report.
#ifndef CHARGPT_RUN_LOG_H
#define CHARGPT_RUN_LOG_H

#include <stddef.h>
#include <stdio.h>

#include "../model/gpt.h"
#include "../viewer/loss_plot.h"

// ----------------------------------------------------------------------------
// log.csv

// The longest a row may be, its newline included: a row's nine figures take at most about 200
// bytes. Rows are written whole, so only the last can be unfinished (cut by a kill during its
// write): an unterminated end of the log longer than this, or holding what no row holds (a
// row is digits, '.', ',', '-', '+', 'e', and "nan" or "inf"), is damage, not a torn row.
#define RUN_LOG_ROW_MAX 512

typedef struct {
    FILE *fp;
    char path[1100];
    size_t torn_bytes;     // of a row torn at the log's end, cut when a resumed run opened it
    size_t damaged_bytes;  // of a damaged end (no row) found when a resumed run opened it:
    char aside[1100];      //   the log was moved here, its whole rows copied back
} RunLog;

// Opens the log at path, never through a symbolic link. A new run starts it afresh with its
// header. A run resuming at `step` appends to it, first dropping the rows of steps after
// `step` (written by a run that was stopped before saving them), a row torn at its end (by a
// kill during its write: torn_bytes says how many bytes) and bringing an older header up to
// date (above); an end that is no torn row is damage: the log is moved aside first (to
// log.csv.damaged, or .damaged.2, ...: format/probe_file.h's probe_file_set_aside) and its
// whole rows copied into a new one (damaged_bytes and aside say so). The file is started
// afresh if it is missing. Returns 0, or -1 with err (also when path exists and is not a
// regular file, a symbolic link included).
int run_log_open(RunLog *log, const char *path, int resuming, long step, char err[ERR_LEN]);
// The rows of the log at path whose step is after `step`: how many, and the first and last of
// those steps (rows are in step order; a row torn at the end is none). A missing log, or a
// path that is not a regular file (a symbolic link included), has none. Returns 0, or -1 with err when the log cannot be read.
typedef struct {
    long count, first, last;
} RunLogRows;
int run_log_rows_after(const char *path, long step, RunLogRows *rows, char err[ERR_LEN]);
// One report's figures: val_loss, grad_norm and accuracy NAN when unknown (no evaluation at
// that step, no task).
typedef struct {
    long step;
    double train_loss, val_loss, lr;
    long long tokens_seen;
    double elapsed_s, grad_norm;
    int clipped;
    double accuracy;
} RunLogRow;
// Appends a row and flushes it. Returns 0, or -1 with err.
int run_log_row(RunLog *log, const RunLogRow *row, char err[ERR_LEN]);
// Closes the log. Returns 0, or -1 with err when the last writes failed.
int run_log_close(RunLog *log, char err[ERR_LEN]);

// ----------------------------------------------------------------------------
// the loss history
//
// The points of the loss plot (viewer/loss_plot.h): one per progress report, as log.csv has
// them; a resumed run starts from the rows of its log.csv.
//
// Memory: at most LOSS_HISTORY_MAX_POINTS points (1.5 MB), whatever the number of reports.
// Past that, the points are thinned evenly: each pair of neighbours becomes one, so that a
// point stands for 2, then 4, 8, ... consecutive reports, and new reports are gathered so too.
// The point kept for a group is its last report with a validation loss, else its last one:
// evaluations are kept while they are fewer than the points. (A plot is drawn with at most a
// few thousand pixels across; the timeline keeps fewer points still, viewer/timeline.h.)

#define LOSS_HISTORY_MAX_POINTS 32768  // even

typedef struct {
    LossPoint *points;
    size_t n, capacity;
    long stride;       // reports a point stands for (0 or 1 until the history is first full)
    long in_last;      // reports the last point stands for so far
} LossHistory;

// Reads the rows of log.csv (step,train_loss,val_loss,lr,tokens_seen,elapsed_s,grad_norm,
// clipped,accuracy; an empty field, or a missing later column, is NAN) into history, which
// must be empty, a line at a time; a row torn at its end (above) is left out. A missing file
// gives no points; anything but a regular file (a FIFO) is refused. Returns 0, or -1 with err
// (a line that is no row, a damaged end).
int loss_history_read(LossHistory *history, const char *log_path, char err[ERR_LEN]);
// Adds a report's point (thinning the history when it is full, see above). Returns 0, or -1
// with err when memory runs out.
int loss_history_add(LossHistory *history, LossPoint point, char err[ERR_LEN]);
void loss_history_free(LossHistory *history);
// Whether the history (log.csv's rows) is the log of the run whose probe file is at
// probe_path (format/probe_file.h): a report is due at every probe, so at each probe record's
// step that has a point (thinning keeps real rows), the record's train loss, validation loss
// and learning rate are the row's, as log.csv prints them. Returns 0 when they all agree (or
// no record meets a row); 1 with why naming the first step where they do not; -1 with why
// when the probe file cannot be read.
int loss_history_check_probe(const LossHistory *history, const char *probe_path, char why[ERR_LEN]);

#endif
