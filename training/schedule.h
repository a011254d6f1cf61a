// The run's schedule, what happens at which step: the learning rate of each step (and what it
// does over a run's steps, in words), the evaluations and saves of every N steps, and the steps
// at which the timeline's probe runs besides the evaluations. Computed from the options alone;
// the run's stages (training/run.h) act on them.
#ifndef CHARGPT_SCHEDULE_H
#define CHARGPT_SCHEDULE_H

#include <stddef.h>

#include "../common/errors.h"
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
// A new run's --warmup, a task's recipe's (training/options.h), and the most a fine-tuning
// run's is (schedule_fine_tune_warmup).
#define LR_DEFAULT_WARMUP 100
// The warm-up of a fine-tuning run (--init-from) when --warmup is not given: a tenth of its
// steps, at most LR_DEFAULT_WARMUP, so that it fits the run.
long schedule_fine_tune_warmup(long steps);

// ----------------------------------------------------------------------------
// the evaluations and saves

// Of the steps after `step` up to last_step, how many are multiples of every, or the last: the
// evaluations (or saves) left.
long events_left(long step, long last_step, long every);
// When the evaluations left after `step` (events_left of eval_every: each eval_batches
// batches of B x T characters, forwards alone) and the pass over final_chars characters of the
// validation split at the end will run more of the model than the training steps (each a
// forward and a backward of B x T characters, about three forwards' work): a warning that
// says how many times as much and what shortens it, in text, and 1; else 0.
int evaluation_warning(long step, long last_step, long eval_every, long eval_batches, int B, int T, long final_chars,
                       char *text, size_t size);

// ----------------------------------------------------------------------------
// when the probe runs
//
// At step 0, at every evaluation (every --eval-every steps and the last), and at the early steps
// of a schedule, where a run changes fastest: by default 10, 20, 50, 100, 200, 500, ... (1, 2
// and 5 times a power of ten) below --eval-every, at most three a decade. --probe-steps LIST
// sets them (steps separated by commas, increasing, at most PROBE_MAX_EARLY, none after the
// run's last); --probe-steps none leaves the evaluations' alone. An early probe is a probe and
// a sample like an evaluation's, without the validation loss.

#define PROBE_MAX_EARLY 32  // early steps a schedule may hold

typedef struct {
    long steps[PROBE_MAX_EARLY];  // increasing
    int n;
} ProbeSchedule;

// The schedule of --probe-steps's text (NULL or "": the default for eval_every) for a run whose
// last step is last_step. Returns 0, or -2 with err naming what cannot be kept.
int probe_schedule_make(ProbeSchedule *s, const char *text, long eval_every, long last_step, char err[ERR_LEN]);
// 1 when step is one of s's early steps.
int probe_schedule_has(const ProbeSchedule *s, long step);
// The early steps after `step`, up to last_step, that no evaluation probes (not a multiple of
// eval_every, nor the last): the probes the evaluations' count leaves out.
long probe_schedule_left(const ProbeSchedule *s, long step, long last_step, long eval_every);
// The probes to come of a run that starts after `step` (0 for a new run): "0, 10, 20, 50, 100,
// 200 and every 250" (step 0 only when from_start); resumed at step 150, "200 and every 250 from
// step 250", the early steps it has passed left out.
void probe_schedule_describe(const ProbeSchedule *s, int from_start, long step, long eval_every, char *text,
                             size_t size);

#endif
