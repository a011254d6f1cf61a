// Evaluation: the loss on the validation split, at every --eval-every steps over a fixed
// sample of its windows shared by the processes, and at the end over the whole split, each
// character once.
#ifndef CHARGPT_EVALUATION_H
#define CHARGPT_EVALUATION_H

#include "../data/batch.h"
#include "../model/gpt.h"
#include "data_parallel.h"
#include "progress.h"

// ----------------------------------------------------------------------------
// the periodic evaluation

// Mean loss over the fixed validation batches 0 .. num_batches - 1 (dropout off), each
// process computing its share of them. inputs, targets: room for (B, T). NAN when a stop
// signal (stop_signals.h) abandoned it: the processes agree on that before each batch, so
// all abandon it together. progress (or NULL) hears of the batches done (all processes'
// together, counted from this one's share). *accuracy: for a task's dataset (ds->val_scored),
// the share of its scored targets that are the model's most likely next token; else NAN.
// Collective.
double data_parallel_evaluate(DataParallel *dp, GPT *model, const Dataset *ds, long num_batches,
                              const PassProgress *progress, int *inputs, int *targets, double *accuracy);

// ----------------------------------------------------------------------------
// the whole-validation pass
//
// The loss of the whole validation split, each character once: consecutive windows of
// block_size, [0, T), [T, 2T), ..., the last one shorter, each scoring every position (the
// first character of the split is context only). The periodic evaluation instead averages a
// fixed sample of overlapping windows (dataset_val_batch).
//
// ./generate --score on the same text with --stride block_size reads it through the same
// windows (generation/score.h), so the two give the same loss.

// The characters the pass scores by default (its time grows with the model's size; the pass
// shows a progress line); train --final-val-chars changes it.
#define VALIDATION_PASS_DEFAULT_CHARS 1000000L

// The characters the pass scores of a split of val_len: all but the first (context only), at
// most max_chars of them (max_chars < 0: no limit).
long validation_pass_chars(size_t val_len, long max_chars);

// Mean loss in nats per character over the validation split's first validation_pass_chars
// characters after its first (the whole split when it is no longer), with dropout off;
// *count gets the number of characters scored. The model's activations must hold B
// sequences of T; inputs and targets (B, T) are scratch. Needs val_len >= 2. progress (or
// NULL) hears of the characters scored before each forward.
// The forwards can be shared by `parts` processes: part p (0 <= p < parts) computes forwards
// p, p + parts, ... and returns their losses' sum / *count, so that the parts' results sum to
// the mean (parts 1: all of them).
// A stop signal (training/stop_signals.h) ends the pass before its next forward: it returns
// NAN.
double validation_pass(GPT *model, const Dataset *ds, long max_chars, int B, int T, int part, int parts,
                       const PassProgress *progress, int *inputs, int *targets, long *count);

#endif
