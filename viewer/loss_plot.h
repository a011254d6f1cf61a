// The loss plot: an SVG line chart of a training run, written atomically so a browser or
// image viewer reloading it mid-run never sees half a file.
//
// Left axis: train loss (a blue line) and validation loss (an orange line with a dot at each
// evaluation); right axis: learning rate (a green dashed line, from 0); bottom axis: step.
// Axes carry "nice" ticks (1, 2 or 5 times a power of ten) with grid lines; a legend and a
// title sit above the plot. Non-finite values (NaN: no evaluation at that step) are left out
// and each line joins the finite values on either side; a series with a single finite value
// is drawn as a dot. Values beyond +-1e300 are drawn at the edge of the plot.
//
// The elements a checker can find: <path class="train-loss">, <path class="val-loss">,
// <path class="lr"> (each with its stroke colour), <g class="val-points"> (one <circle> per
// evaluation), <g class="x-ticks">, <g class="y-ticks">, <g class="lr-ticks"> (one <text>
// per tick) and <g class="legend">.
//
// When some point has a gradient norm (log.csv's grad_norm column), a second panel below,
// on the same steps, shows it: <path class="grad-norm"> (a purple line; its axis <g
// class="grad-ticks"> on a log scale when the norms span more than a factor of 20) and <g
// class="clipped-points">, a red dot at each report some of whose steps were clipped, with
// a <title> saying how many.
#ifndef CHARGPT_LOSS_PLOT_H
#define CHARGPT_LOSS_PLOT_H

#include <stddef.h>
#include <stdio.h>

#include "../common/errors.h"

// One report of a training run: a row of log.csv.
typedef struct {
    long step;
    double train_loss;  // mean over the steps since the previous report
    double val_loss;    // NAN when this step had no evaluation
    double lr;
    double grad_norm;   // mean gradient norm before clipping over those steps; NAN: not known
    double clipped;     // how many of those steps were clipped; NAN: not known
    double accuracy;    // a task's accuracy at this step's evaluation (run_log.h); NAN: none
} LossPoint;

// Writes the SVG of n points (in step order; n may be 0) to fp. title (may be NULL) is shown
// above the plot, XML-escaped.
void loss_plot_svg(FILE *fp, const LossPoint *points, size_t n, const char *title);

// Writes the SVG to path atomically (temporary file, fsync, rename). Returns 0, or -1 with
// err naming the file (the old file, if any, is left as it was).
int loss_plot_write(const char *path, const LossPoint *points, size_t n, const char *title,
                    char err[ERR_LEN]);

#endif
