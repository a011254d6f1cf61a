// The timeline page (timeline.html in a run's directory): one self-contained page (inline
// CSS and JavaScript, nothing fetched) that shows a run learning, from its probe file
// (format/probe_file.h) and its log.csv. A step slider with a play button picks an
// evaluation; at that step the page shows the loss curves with the step marked, the sample,
// the probe passage coloured by surprisal, the model view of every head under its label (on
// the passage or on the repeated random sequence) and a larger view of the chosen one (its
// weights, or the scores q.k / sqrt(hs) behind them), the attention math of one of its queries
// (viewer/attention_math.html, from the record's queries, keys and values), the logit-lens grid
// (layers x positions), charts of every head's pattern scores over all steps with their axes,
// the share of steps whose gradient was clipped with what it means, and the gradient's norm and
// the update-to-weight ratios. Hover gives the numbers; the address keeps the step, the head,
// the text and the query (#step=500&layer=1&head=2&text=repeated&query=40[&values=scores]);
// without a head it opens on the one with the strongest label at the last step.
//
// The data goes in a <script type="application/json"> as the header's contents (with the head
// patterns' names), the loss history, the clipping figures (from every row of the history:
// the steps it reports on and how many were clipped, by twentieths of the run, and the mean
// train loss of its last two quarters), each record's payload as base64, exactly as the probe
// file holds it (the page decodes the layout probe_file.h documents, both versions), and each
// record's labels (head_scores.h's head_label on its scores and the header's reach). The page is bounded: the records take at most
// TIMELINE_MAX_RECORD_BYTES of it (as base64); past that, the probe records kept whole (with
// attention, predictions and the lens) are thinned to evenly spaced steps, always the first
// and the last, and the other records keep their light part (scores, sample, training
// health), themselves thinned evenly when they alone would take more than half of it. The
// loss history keeps every row with a validation loss and at most TIMELINE_MAX_LOSS_POINTS
// others, evenly spaced.
//
// With "selftest" in the address's fragment the page reads back what it drew and sets on
// <body>: data-steps (positions of the slider), data-first-step (its first step), data-step
// (the step shown), data-view
// ("step,layer,head,text"), data-default-head ("layer,head" with the strongest label),
// data-model-cells (model-view thumbnails whose every cell shows its weight's colour),
// data-head-cells (cells of the chosen head's large view in their value's colour), data-values
// (what it shows: weights or scores), data-lens-cells (lens cells showing their top character
// in the colour of the next character's probability), data-text-cells (passage characters
// coloured by their surprisal), data-score-charts (head charts drawn), data-chart-axes (charts
// with their axes' values and their label), data-labels (thumbnails captioned with their
// label), data-clipping (the clipping panel's verdict), data-math-rows and data-math-query
// (the attention math's rows and query), data-math-weight-error (the largest difference, over
// every head and query of the text shown, between the page's softmax and the weights the file
// keeps), data-stacked and data-page-overflow; and data-rendered once everything is drawn,
// data-failed on a script error.
// scripts/check_timeline.sh checks them in headless Chromium.
#ifndef CHARGPT_TIMELINE_H
#define CHARGPT_TIMELINE_H

#include <stddef.h>
#include <stdint.h>

#include "loss_plot.h"

#define TIMELINE_MAX_RECORD_BYTES (32u << 20)
#define TIMELINE_MAX_LOSS_POINTS 20000
#define TIMELINE_FILE "timeline.html"

// What a page holds.
typedef struct {
    long records;          // in the probe file (its whole records before any damage)
    long whole;            // with a probe (attention, predictions, lens)
    long kept, kept_whole; // in the page
    uint64_t torn_bytes;   // a torn tail of the probe file, or all from a damaged record on, left out
    const char *damage;    // NULL, or what is wrong with the first damaged record (probe_file.h's
    uint64_t damaged_at;   //   ProbeReader): record number `records` + 1, at this byte offset
    long steps;            // positions of the slider: the records kept whole
} TimelineSummary;

// The memory timeline_write takes at most for the probe file at probe_path, besides the loss
// history's points: its header read twice, one record at a time (as read and decoded), and a
// byte or two per record of the file (which records the page keeps). Returns 0 with *bytes,
// or -1 with err (the file missing, not a regular file, damaged in its header).
int timeline_memory(const char *probe_path, double *bytes, char err[ERR_LEN]);

// Writes the page of the run whose probe file is probe_path, with the loss history points
// (n, log.csv's rows), to path, atomically. title names the run; budget is the bytes the
// records may take in the page (TIMELINE_MAX_RECORD_BYTES; the tests give less); replace 1:
// the page replaces one there, 0: it is written only while nothing is there
// (format/atomic_file.h). Returns 0, ATOMIC_FILE_EXISTS with err (replace 0), or -1 with err
// (the probe file missing, damaged in its header, unreadable, or the page not written).
int timeline_write(const char *path, const char *probe_path, const LossPoint *points, size_t n, const char *title,
                   double budget, int replace, TimelineSummary *summary, char err[ERR_LEN]);

#endif
