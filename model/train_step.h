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
double train_step(GPT *model, AdamW *opt, const int *inputs, const int *targets, int B, int t,
                  uint64_t dropout_seed, float lr, float max_norm);

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
