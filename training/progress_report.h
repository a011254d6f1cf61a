// What ./train tells while it trains and when it ends: the figures of each report (the mean
// train loss of the steps since the last report, which log.csv gets too; ms/step, tok/s and the
// ETA of training steps alone, not evaluating or saving), the progress line that shows them
// (training/progress_line.h fits it to a terminal's width), and the end-of-run summary.
#ifndef CHARGPT_PROGRESS_REPORT_H
#define CHARGPT_PROGRESS_REPORT_H

#include <stddef.h>

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
} ProgressReport;

void progress_report_init(ProgressReport *r, long start_step, long steps, long tokens_per_step);
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
// A duration as "1m05s", or "2h03m" from an hour on (negative or not finite: "0m00s").
void format_duration(char *buf, size_t n, double seconds);

#endif
