// The points of the loss plot (viewer/loss_plot.h): one per progress report, as log.csv has
// them; a resumed run starts from the rows of its log.csv.
#ifndef CHARGPT_LOSS_HISTORY_H
#define CHARGPT_LOSS_HISTORY_H

#include <stddef.h>

#include "../viewer/loss_plot.h"

typedef struct {
    LossPoint *points;
    size_t n, capacity;
} LossHistory;

// Reads the rows of log.csv (step,train_loss,val_loss,lr,tokens_seen,elapsed_s,grad_norm,
// clipped; an empty field, or a missing grad_norm and clipped, is NAN) into history, which
// must be empty. A missing file gives no points. Returns 0, or -1 with err.
int loss_history_read(LossHistory *history, const char *log_path, char err[ERR_LEN]);
// Appends a point. Returns 0, or -1 with err when memory runs out.
int loss_history_add(LossHistory *history, LossPoint point, char err[ERR_LEN]);
void loss_history_free(LossHistory *history);

#endif
