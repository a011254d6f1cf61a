// The points of the loss plot (viewer/loss_plot.h): one per progress report, as log.csv has
// them; a resumed run starts from the rows of its log.csv.
//
// Memory: at most LOSS_HISTORY_MAX_POINTS points (1.5 MB), whatever the number of reports.
// Past that, the points are thinned evenly: each pair of neighbours becomes one, so that a
// point stands for 2, then 4, 8, ... consecutive reports, and new reports are gathered so too.
// The point kept for a group is its last report with a validation loss, else its last one:
// evaluations are kept while they are fewer than the points. (A plot is drawn with at most a
// few thousand pixels across; the timeline keeps fewer points still, viewer/timeline.h.)
#ifndef CHARGPT_LOSS_HISTORY_H
#define CHARGPT_LOSS_HISTORY_H

#include <stddef.h>

#include "../viewer/loss_plot.h"

#define LOSS_HISTORY_MAX_POINTS 32768  // even

typedef struct {
    LossPoint *points;
    size_t n, capacity;
    long stride;       // reports a point stands for (0 or 1 until the history is first full)
    long in_last;      // reports the last point stands for so far
} LossHistory;

// Reads the rows of log.csv (step,train_loss,val_loss,lr,tokens_seen,elapsed_s,grad_norm,
// clipped; an empty field, or a missing grad_norm and clipped, is NAN) into history, which
// must be empty, a line at a time. A missing file gives no points; anything but a regular
// file (a FIFO) is refused. Returns 0, or -1 with err.
int loss_history_read(LossHistory *history, const char *log_path, char err[ERR_LEN]);
// Adds a report's point (thinning the history when it is full, see above). Returns 0, or -1
// with err when memory runs out.
int loss_history_add(LossHistory *history, LossPoint point, char err[ERR_LEN]);
void loss_history_free(LossHistory *history);

#endif
