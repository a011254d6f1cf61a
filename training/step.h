// The training step: what the learning rate is at each step (the schedule), one optimizer
// step over the processes of a data-parallel run and the micro-batches of gradient
// accumulation, and the update-to-weight ratios of the step just taken. The run's stages that
// plan, build and take the steps are in training/run.h.
#ifndef CHARGPT_STEP_H
#define CHARGPT_STEP_H

#include <stddef.h>

#include "../data/batch.h"
#include "../format/probe_file.h"
#include "../kernels/parallel.h"
#include "../model/adamw.h"
#include "../model/gpt.h"
#include "run_state.h"

// ----------------------------------------------------------------------------
// the learning-rate schedule
//
// The learning rate of each step: nanoGPT's schedule, a linear warm-up to --lr, then a cosine
// decay to --min-lr at --decay-steps, then --min-lr. It starts at the options'
// schedule_start: 0, or the step where a resumed run began a new schedule (--warmup or
// --decay-steps given with --resume). And what it does over a run's steps, in words: the run
// prints that, so that what it says is what the learning rate does, whatever the options (a
// run that ends inside its warm-up, a decay that ended before a resume, a decay set to end
// inside the warm-up).

// The learning rate of the step that follows `step` steps done:
//   step - start < warmup:   lr * (step - start + 1) / (warmup + 1)
//   step >= decay_steps:     min_lr
//   otherwise:               min_lr + (lr - min_lr) * (1 + cos(pi * ratio)) / 2, ratio the
//                            share of the decay done, (step - start - warmup) / (decay_steps - start - warmup)
float learning_rate(const TrainOptions *o, long step);

// A stretch of steps over which the learning rate does one thing. Steps are counted as
// log.csv counts them: step k is the k-th step taken, whose learning rate is
// learning_rate(o, k - 1).
typedef enum {
    LR_WARMUP,  // rising (linearly)
    LR_DECAY,   // falling (cosine)
    LR_FLAT,    // at --min-lr
} LrPhaseKind;

typedef struct {
    LrPhaseKind kind;
    long first, last;        // steps first to last
    float lr_first, lr_last; // their learning rates
} LrPhase;

#define LR_MAX_PHASES 3

// The phases of steps from + 1 to `to` (the steps a run takes from `from` steps done), in
// order; returns how many (0 when to <= from).
int schedule_phases(const TrainOptions *o, long from, long to, LrPhase phases[LR_MAX_PHASES]);
// What the learning rate does over those steps, in words: "steps 1-100 warm up from 9.9e-06 to
// 0.00099, then steps 101-2000 decay (cosine) from 0.001 to 0.0001", with what the options
// make of it (a decay that ends after the run, or ended before it, or inside the warm-up).
// A run that ends inside its warm-up is schedule_warning's.
void schedule_describe(const TrainOptions *o, long from, long to, char *text, size_t size);
// A run whose last step is inside its warm-up (or its last): a warning saying what the
// learning rate does and what to give instead; returns 1 with it in text, else 0 ("").
int schedule_warning(const TrainOptions *o, long from, long to, char *text, size_t size);
// The warm-up of a fine-tuning run (--init-from) when --warmup is not given: a tenth of its
// steps, at most the default's 100, so that it fits the run.
long schedule_fine_tune_warmup(long steps);

// ----------------------------------------------------------------------------
// the data-parallel step
//
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

// ----------------------------------------------------------------------------
// the update-to-weight ratios
//
// The update-to-weight ratio of each parameter group: |what the last AdamW step subtracted|
// / |the weights|, L2 norms over the group. A learning rate that is too high shows as ratios
// far above 1e-3, one that is too low far below (Karpathy's rule of thumb for Adam). The
// groups are the model's kinds of tensor (gpt.c's table: transformer.wte.weight,
// attn.c_attn.weight, ...), each over all layers.

// The groups of a model of config c: how many (at most PROBE_MAX_GROUPS), their names.
int update_groups(const GPTConfig *c, char names[][PROBE_GROUP_NAME]);
// ratios (update_groups of them) after the step that used learning rate lr; NAN for a group
// whose weights are all 0. Collective: every process calls it after the same step (with ZeRO
// each holds the moments of its shard, and the groups' sums are added over the processes).
void update_ratios(const DataParallel *dp, const GPT *model, const AdamW *opt, float lr, float *ratios);

#endif
