// One training step in one parallel region: the threads of the team meet only at the
// team's own barriers inside it (parallel.h), not at OpenMP's fork and join, which would
// otherwise come five times a step (forward, backward, norm, clipping, update).
#ifndef CHARGPT_TRAIN_STEP_H
#define CHARGPT_TRAIN_STEP_H

#include "adamw.h"
#include "gpt.h"

// Forward with targets on tokens (B, t) as a training pass (the config's dropout, masks keyed
// by dropout_seed), backward (into zeroed gradients), then train_step_update: the global
// gradient norm, clipping to max_norm (grad_clip) and an AdamW update with learning rate lr.
// Returns the gradient norm. The team has up to omp_get_max_threads() threads, as many as the
// model's recent steps found fastest (its step_tuner, parallel.h); the result does not depend
// on it. When the loss (model->mean_loss) or the norm is not finite it stops before clipping,
// and the parameters and optimizer state are unchanged.
// With micro-batches (model->micro, of B sequences in all: gpt_alloc_micro_batches) each
// thread runs whole micro-batches alone, forward and backward, and their gradients are added
// up in micro-batch order: the same result on any number of threads, but not the bits of the
// whole batch at once (each weight's gradient is summed per micro-batch first).
double train_step(GPT *model, AdamW *opt, const int *inputs, const int *targets, int B, int t,
                  uint64_t dropout_seed, float lr, float max_norm);

// The sequences of each micro-batch a step of B sequences is best cut into, or B: the fewest
// that give at least MICRO_BATCH_ROWS_PER_CHANNEL rows (positions) per channel of n_embd,
// and at least MICRO_BATCHES_MIN micro-batches; fp32 only. A step of a small model keeps more
// activations than a core's cache holds (the lesson's, 2 layers of 64 channels on 32 sequences
// of 64: 22 MiB and 10 MiB of scratch), and each layer reads what the last one wrote from
// memory; one of a few sequences keeps them in the cache, but its thread then reads the weights
// and writes their gradients once per micro-batch, 12 C^2 floats a layer, which pays where the
// rows are many times C. Steps in turn on an Intel Xeon with full-width AVX-512, 2 threads
// (docs/benchmarks.md, eighth round): the lesson's in micro-batches of 4 sequences (256 rows at
// C 64) 1.17x the whole batch's speed; in a patch, tiny's (C 128) of 2 sequences 0.95x and
// small's of 1 to 4 0.87-0.95x.
#define MICRO_BATCH_ROWS_PER_CHANNEL 4
#define MICRO_BATCHES_MIN 4
int train_step_micro_sequences(const GPTConfig *config, Precision precision, int B);

// What every training step does once its gradients are in model->grads_memory (train_step's,
// and the data-parallel step's over processes and micro-batches, training/data_parallel.h):
//   norm     = sqrt(sum_of_squares), the gradients' global L2 norm; the caller sums the
//              squares (grad_sum_of_squares), over the processes' shards when the optimizer
//              holds one shard of the parameters;
//   clipping = grad_clip to max_norm, of the gradients of the optimizer's parameters
//              [opt->first, opt->first + opt->n);
//   update   = adamw_update of those parameters with learning rate lr.
// When the loss (model->mean_loss) or the norm is not finite it stops before clipping: the
// parameters and optimizer state are unchanged. Returns 1 when it updated (the caller then
// calls gpt_params_changed, once every parameter it changed is in place), else 0; *norm gets
// the norm either way. A team function (parallel.h), or called from serial code.
int train_step_update(GPT *model, AdamW *opt, double sum_of_squares, float lr, float max_norm, double *norm);

// The number of threads the model's latest step ran on.
int train_step_threads(const GPT *model);

#endif
