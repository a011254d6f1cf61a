// A training step over the processes of a data-parallel run (dist.h) and over the
// micro-batches of gradient accumulation. The global batch of B sequences is split into K
// micro-batches of B/K; of each, process r of N computes rows [r B/(NK), (r+1) B/(NK)).
// Every process holds the whole batch's tokens (all draw it from the same seeded generator),
// and the model numbers dropout elements by the global row (gpt.h: batch_offset), so the
// step is the 1-process, 1-micro-batch step up to the order of float sums:
//   gradients: each part's backward adds d(sum of its token losses)/dp / (B T); the parts
//              of a process add up in its gradient buffer, then the processes' buffers are
//              summed (all-reduce), or with ZeRO stage 1 each process receives the sum of
//              its 1/N of the parameters only (reduce-scatter), updates those with its own
//              moments, and the processes exchange the updated parameters (all-gather).
//   clipping:  by the global norm, sqrt of the sum of squares of the summed gradient (with
//              ZeRO the sum over processes of their shards' sums of squares).
// The norm, clipping and AdamW are train_step's (model/train_step.h: train_step_update).
#ifndef CHARGPT_DATA_PARALLEL_H
#define CHARGPT_DATA_PARALLEL_H

#include <stddef.h>
#include <stdint.h>

#include "../common/errors.h"
#include "../kernels/parallel.h"
#include "../model/adamw.h"
#include "../model/gpt.h"

typedef struct DataParallel {
    int B, T;             // the global batch
    int grad_accum;       // K, micro-batches per step
    int zero;             // 1: optimizer state sharded over the processes (ZeRO stage 1)
    int rows;             // B / (N K): sequences of each micro-batch this process computes
    size_t num_parameters;
    size_t shard_first;   // this process's parameters [shard_first, shard_first + shard_n):
    size_t shard_n;       // all of them without ZeRO
    float *full_v;        // rank 0 with ZeRO, while a checkpoint is written: every second moment
    ThreadTuner tuner;
} DataParallel;

// Checks the split of batch B over K micro-batches and N processes and fills dp (nothing is
// allocated yet). Returns 0, or -1 with err when B is not divisible by N K.
int data_parallel_plan(DataParallel *dp, int B, int T, int grad_accum, int zero, size_t num_parameters,
                       char err[ERR_LEN]);
// Initialises opt for this process's parameters (all, or its shard with ZeRO). Returns 0, or
// -1 with err when memory runs out.
int data_parallel_init(DataParallel *dp, const GPT *model, AdamW *opt, float beta1, float beta2, float eps,
                       float weight_decay, char err[ERR_LEN]);
void data_parallel_free(DataParallel *dp);
// The sequences of the micro-batches that train_step cuts this run's steps into, one process's
// whole batch at once (model/train_step.h), or 0 when the steps run whole.
int data_parallel_micro_sequences(const DataParallel *dp, const GPTConfig *config, Precision precision);

// One optimizer step on the global batch inputs, targets (B, T) with learning rate lr,
// clipping to max_norm; dropout masks keyed by dropout_seed. Sets model->mean_loss to the batch's mean loss and returns the
// gradient's global norm; both are the same on every process. When either is not finite
// the parameters and optimizer state are unchanged. Collective.
double data_parallel_step(DataParallel *dp, GPT *model, AdamW *opt, const int *inputs, const int *targets,
                          uint64_t dropout_seed, float lr, float max_norm);

// The optimizer with every parameter's moments, as a checkpoint stores it, in *full on rank 0:
// opt itself, or with ZeRO `copy`, gathered from the processes (its moments valid until
// data_parallel_release_optimizer or the next step: the first moments go to the model's
// gradient buffer, which is free between steps); *full is NULL on the other ranks. Returns 0,
// or -1 with err on every rank when rank 0 has no memory for the moments. Collective.
int data_parallel_gather_optimizer(DataParallel *dp, GPT *model, const AdamW *opt, AdamW *copy, const AdamW **full,
                                   char err[ERR_LEN]);
void data_parallel_release_optimizer(DataParallel *dp);

#endif
