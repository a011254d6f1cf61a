// What ./train tells while it trains and when it ends: the figures of each report (the mean
// train loss of the steps since the last report, which log.csv gets too; ms/step and tok/s of
// training steps alone), the ETA of everything left (the steps, the evaluations, the saves and
// the whole-validation pass at the end), the progress line that shows them, fitted to a
// terminal's width, the line an evaluation or the final pass shows while it runs, and the
// end-of-run summary. The report records what it is told and composes the lines; the run's
// stages tell it and print them (training/run_report.c), and ./generate uses its lines too.
#ifndef CHARGPT_PROGRESS_H
#define CHARGPT_PROGRESS_H

#include <stddef.h>

#include "schedule.h"

// ----------------------------------------------------------------------------
// a pass in progress
//
// How far a long pass has got, for a progress line: the periodic evaluation (its batches) and
// the whole-validation pass at the end (its characters) call `report` as they go. Library
// code reports; the program decides what to show, and how often.
typedef struct {
    // called before each piece of work with `done` of `total` finished (and once at the end
    // with done == total)
    void (*report)(void *context, long done, long total);
    void *context;
} PassProgress;

// Calls progress->report when there is one (progress may be NULL).
static inline void pass_progress(const PassProgress *progress, long done, long total) {
    if (progress && progress->report) progress->report(progress->context, done, total);
}

// ----------------------------------------------------------------------------
// the progress line
//
// The progress line on a terminal: fields such as "step 120/2000" or "ETA 1m05s" joined by
// " | ", fitted to the terminal's width by dropping the least important fields first, so the
// line is rewritten in place instead of wrapping.

// Columns of the terminal on fd (platform_terminal_width) when fd is one that knows its size; else
// $COLUMNS when it is a number from 1 to 10000; else 80.
int terminal_width(int fd);

// Joins the n fields (n <= 16, ASCII) with " | " into out, leaving out fields until the line
// has at most width - 1 characters (the last column stays free so the terminal never wraps).
// importance[i] ranks field i: the field with the largest number goes first; the field with
// importance 0 is always kept, cut short if even it alone is too wide.
void progress_line_fit(const char *const *fields, const int *importance, int n, int width, char *out,
                       size_t size);

// ----------------------------------------------------------------------------
// the report

typedef struct {
    long start_step;       // the step this process started from (0, or a resumed checkpoint's)
    long steps;            // the run's last step (--steps)
    long tokens_per_step;  // B * T
    double train_s;        // seconds spent in training steps so far
    double comm_s;         // of which in the steps' collectives (dist.h)
    double loss_sum, ms_sum;  // since the last report: the steps' losses and milliseconds
    int loss_count;           // and how many steps
    double report_loss;    // the last report's mean loss (NAN before the first)
    int report_count;      // and how many steps it covered (0 before the first)
    // what the run does besides steps (progress_report_plan), and what it took so far
    long eval_every, eval_batches;  // an evaluation of eval_batches batches (0: none) every
                                    // eval_every steps and at the last
    long save_every;                // a save every save_every steps and at the last
    long final_chars;               // characters the whole-validation pass scores (0: none)
    double eval_s, save_s;          // seconds spent evaluating and saving
    long evals, saves;              // evaluations and saves done
    const ProbeSchedule *early_probes;  // the timeline's early probes (training/schedule.h), or NULL
    double probe_s;                 // seconds the timeline's probes took
    long probes;                    // and how many there were
} ProgressReport;

void progress_report_init(ProgressReport *r, long start_step, long steps, long tokens_per_step);
// What the run does besides its steps, for the ETA (see ProgressReport).
void progress_report_plan(ProgressReport *r, long eval_every, long eval_batches, long save_every, long final_chars);
// An evaluation, or a save (of one checkpoint or two), took `seconds`.
void progress_report_evaluated(ProgressReport *r, double seconds);
void progress_report_saved(ProgressReport *r, double seconds);
// The timeline's probe at an evaluation (training/probe.h) took `seconds`.
void progress_report_probed(ProgressReport *r, double seconds);
// The time left after `step` steps: the steps left at the mean step's time, the evaluations
// left at the mean evaluation's (before the first, eval_batches forwards at a third of a step
// each: a forward is about a third of a forward and backward), the saves left at the mean
// save's, the timeline's probes left (at the evaluations and the early steps of its schedule)
// at the mean probe's, and the whole-validation pass (its forwards, as an evaluation's).
double progress_report_eta(const ProgressReport *r, long step);
// The line while the evaluation after `step` steps runs, `done` of its `total` batches in
// `seconds`: "step 250/2000 | evaluating: 45/200 batches | ETA 1m05s" (the ETA counts the
// rest of it).
void progress_report_eval_line(const ProgressReport *r, long step, long done, long total, double seconds, int width,
                               char *line, size_t size);
// The line while the whole-validation pass runs, `done` of `total` characters in `seconds`:
// "whole-validation pass: 350000/1000000 characters | ETA 0m08s".
void progress_report_final_line(long done, long total, double seconds, int width, char *line, size_t size);
// The same line for any task of `total` units (./generate's scoring and generating), the ETA
// at the rate so far: "<task>: <done>/<total> <units> | ETA 0m08s".
void progress_report_task_line(const char *task, long done, long total, const char *units, double seconds, int width,
                               char *line, size_t size);
// A training step's loss and time, seconds in all, comm_seconds of them in collectives.
void progress_report_step(ProgressReport *r, double loss, double seconds, double comm_seconds);
// The progress line after `step` steps, fitted to width columns (a large width: every
// figure): "step 120/2000 | loss 2.1234 (mean of 10) | val 2.3456 | lr 1.00e-03 |
// 27.4 ms/step | 28000 tok/s | 0m03s elapsed | ETA 1m05s" (val_loss NAN: "val -").
void progress_report_line(const ProgressReport *r, long step, double val_loss, float lr, double elapsed_s, int width,
                          char *line, size_t size);
// Ends the steps since the last report: returns their mean loss and starts counting anew.
double progress_report_close(ProgressReport *r);
// "done: 2000 steps in 80.1 s: 70.2 s training at 28000 tok/s, 9.9 s evaluating and saving;
// final train loss 2.1234 (mean of the last 10 steps), val loss 2.3456, best val loss
// 2.3400" after `step` steps (val losses when best_val_loss is finite), and with several
// processes a second line, "communication: ...".
void progress_report_summary(const ProgressReport *r, long step, double wall_s, double val_loss, double best_val_loss,
                             int processes, char *text, size_t size);

// ----------------------------------------------------------------------------
// on the terminal

// A pass in progress on the terminal's progress line (an evaluation, or the whole-validation
// pass at the end), redrawn at most 5 times a second: pass_line_show with a PassLine as the
// PassProgress's context.
typedef struct {
    const ProgressReport *report;  // the run's (an evaluation's line counts the rest of the run)
    long step;                     // the steps done
    const char *what;              // "evaluation" or "final"
    double start, drawn;
    void (*flush)(void);           // flushes standard output after each line
} PassLine;
void pass_line_show(void *context, long done, long total);

#endif
