// The learning rate of each step: nanoGPT's schedule, a linear warm-up to --lr, then a cosine
// decay to --min-lr at --decay-steps, then --min-lr. It starts at the options'
// schedule_start: 0, or the step where a resumed run began a new schedule (--warmup or
// --decay-steps given with --resume).
#ifndef CHARGPT_SCHEDULE_H
#define CHARGPT_SCHEDULE_H

#include "run_state.h"

// The learning rate of the step that follows `step` steps done:
//   step - start < warmup:   lr * (step - start + 1) / (warmup + 1)
//   step >= decay_steps:     min_lr
//   otherwise:               min_lr + (lr - min_lr) * (1 + cos(pi * ratio)) / 2, ratio the
//                            share of the decay done, (step - start - warmup) / (decay_steps - start - warmup)
float learning_rate(const TrainOptions *o, long step);

#endif
