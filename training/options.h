// The run's options beyond reading them from the command line (train.c): the table of
// ./train's options, its --help, which options may be given together (and again when
// resuming), the memory limit they set, and each task's recipe (train --task: the defaults
// the other options override). How a run takes its options from its checkpoint
// when it resumes or fine-tunes is the set_up_options stage (training/run.h).
#ifndef CHARGPT_OPTIONS_H
#define CHARGPT_OPTIONS_H

#include <getopt.h>
#include <stdio.h>

#include "../common/errors.h"
#include "run_state.h"

enum {
    OPT_DATA = 256, OPT_OUT, OPT_RESUME, OPT_N_LAYER, OPT_N_HEAD, OPT_N_EMBD, OPT_HEAD_SIZE,
    OPT_BLOCK_SIZE, OPT_BATCH_SIZE, OPT_DROPOUT, OPT_NO_QKV_BIAS, OPT_POS, OPT_STEPS, OPT_LR, OPT_MIN_LR,
    OPT_WARMUP, OPT_DECAY_STEPS, OPT_WEIGHT_DECAY, OPT_GRAD_CLIP, OPT_EVAL_EVERY, OPT_EVAL_BATCHES,
    OPT_SAVE_EVERY, OPT_LOG_EVERY, OPT_SEED, OPT_THREADS, OPT_VAL_FRACTION, OPT_GRAD_ACCUM, OPT_ZERO,
    OPT_MAX_MEMORY, OPT_INIT_FROM, OPT_SKIP_UNKNOWN, OPT_KEEP_CR, OPT_FORCE, OPT_PRECISION, OPT_MPI_TIMEOUT,
    OPT_SEPARATOR, OPT_ENCODING, OPT_MIN_CHAR_COUNT, OPT_GROW_VOCAB, OPT_FINAL_VAL_CHARS,
    OPT_PROBE, OPT_SAMPLE_PROMPT, OPT_SAMPLE_CHARS, OPT_SAMPLE_EVERY, OPT_NO_PROBE, OPT_PROBE_STEPS, OPT_TASK,
    OPT_COUNT
};

// ./train's options, for getopt_long (-h, --help: 'h').
extern const struct option train_long_options[];

// Which options were given on the command line (to check what --resume allows).
typedef struct {
    int given[OPT_COUNT];
} GivenOptions;

// --help, with the defaults d.
void train_usage(FILE *f, const TrainOptions *d);
// What the options given allow together, checked before anything touches the disk. Returns
// 0, or EXIT_USAGE with err.
int options_check_given(const GivenOptions *given, char err[ERR_LEN]);

// Sets o's model, schedule, evaluation and output options to the task's recipe, and o->task:
// options chosen so that the task's mechanism forms within minutes on a 2-core laptop (the
// measurements behind them are in options.c).
void task_recipe(Task task, TrainOptions *o);

#endif
