// A training run's options and state, and how a checkpoint keeps them: `train.*` metadata
// entries for the options, `state.*` for where the run stands. Reading them back checks every
// field's range, so a checkpoint edited by hand or damaged cannot start a run with nonsense.
#ifndef CHARGPT_RUN_STATE_H
#define CHARGPT_RUN_STATE_H

#include <stdint.h>

#include "../data/corpus_fingerprint.h"
#include "../data/encoding.h"
#include "../format/checkpoint.h"
#include "../kernels/kernels.h"
#include "../model/rng.h"
#include "run_identity.h"

// Limits of the options, on the command line and in a checkpoint alike.
#define TRAIN_MAX_STEPS (1L << 40)         // steps, warm-up, decay and every "every N"
#define TRAIN_MAX_BATCH_SIZE (1 << 20)
#define TRAIN_MAX_EVAL_BATCHES (1L << 30)
#define TRAIN_MAX_LR 10.0                  // lr, min_lr and weight decay
#define TRAIN_MAX_GRAD_CLIP 1e9

typedef struct {
    char data[1024];    // corpus: its paths (files, directories, "-"), one a line
    char out[1024];     // directory for checkpoints and log.csv
    char resume[1024];  // checkpoint to continue, or ""
    char init_from[1024];  // checkpoint whose weights start a new run, or ""
    char corpus_fingerprint[CORPUS_FINGERPRINT_LEN];  // of the text trained on; "" unknown (older checkpoints)
    char run_id[RUN_ID_LEN];  // the run's identity (run_identity.h); "" in older checkpoints
    char separator[1028];  // between the corpus's documents, as --separator takes it (escapes)
    TextEncoding encoding; // of the corpus's bytes
    int keep_cr;         // 1: CR characters are kept (corpus_load)
    long min_char_count; // characters rarer than this share the unknown token (<= 1: none)
    int grow_vocab;      // 1: --init-from's vocabulary grows by the corpus's new characters
    int skip_unknown;    // 1: characters outside the vocabulary of --init-from's checkpoint are dropped
    int force;           // 1: a run already in out is replaced
    int n_layer, n_head, n_embd, head_size, block_size, batch_size, qkv_bias;
    float dropout;
    long steps, decay_steps, warmup;
    long schedule_start;  // step where the learning-rate schedule starts (0, or a resume's new schedule)
    float lr, min_lr, weight_decay, grad_clip, val_fraction;
    float beta1, beta2, eps;
    long eval_every, eval_batches, save_every, log_every;
    uint64_t seed;
    int threads;         // 0: OpenMP's default
    // how a step is computed, not what it computes, so not kept in checkpoints either:
    int grad_accum;      // micro-batches per optimizer step
    int zero;            // 1: optimizer state sharded over the processes (ZeRO stage 1)
    double max_memory;   // bytes a run may plan to use; 0: the machine's available memory
    Precision precision; // of the matrix products (train.precision; fp32 when a checkpoint has none)
    double mpi_timeout;  // seconds a collective may wait for the other processes; 0: no limit
    long final_val_chars;  // the whole-validation pass scores at most this many characters (-1: all)
    // the timeline (training/run_probe.h), kept in the probe file rather than in checkpoints:
    char probe[1024];    // --probe FILE, or "": a stretch of the validation split
    const char *sample_prompt;  // --sample-prompt TEXT, or NULL: the probe passage's first line
    int sample_chars;    // --sample-chars (0: no samples)
    long sample_every;   // --sample-every N: a sample every N steps too (0: at evaluations only)
    int no_probe;        // --no-probe: no probe file, samples or timeline
} TrainOptions;

typedef struct {
    long step;             // optimizer steps done
    Rng rng;               // batch sampler, after `step` batches
    double best_val_loss;  // INFINITY before the first evaluation
    double last_val_loss;  // NAN before the first evaluation
    long tokens_seen;
    double elapsed_s;
} TrainState;

// The train.* and state.* metadata entries of a checkpoint, with room for their text.
#define RUN_META_MAX 40
typedef struct {
    StMeta entries[RUN_META_MAX];
    char keys[RUN_META_MAX][32];
    char values[RUN_META_MAX][1100];
    int count;
} RunMeta;

// Fills meta from the options that shape the run (not out, resume, force, threads,
// max_memory or final_val_chars) and the state. Keys added after the first checkpoints
// (train.keep_cr, train.skip_unknown, train.schedule_start, train.corpus_fingerprint,
// train.init_from, train.run_id, train.separator, train.encoding, train.min_char_count,
// train.grow_vocab) are optional when read: absent, they take the value older runs had (0,
// "": unknown, the separator "\n", UTF-8).
void run_meta_write(RunMeta *meta, const TrainOptions *o, const TrainState *s);
// Checks that the paths run_meta_write keeps (train.data: --data's, train.init_from) are
// UTF-8, as a checkpoint's JSON header must be: a file name that is not (a legal name on
// Linux, from an older encoding) is refused before the run starts, not at its first save.
// Returns 0, or -1 with err naming the option. (Stored escaped instead, the name would need
// an escape convention that every reader of train.data undoes, and older chargpt would look
// for the escaped name; a link or a rename with a UTF-8 name does the same.)
int run_meta_check_paths(const TrainOptions *o, char err[ERR_LEN]);
// Reads back what run_meta_write stored, and the model options from the checkpoint's config.
// Every field is checked: present, a number of the right kind, within the limits the command
// line has (train.min_lr at most train.lr, state.step at most train.steps). Returns 0, or -1
// with a message naming the checkpoint and the field.
int run_meta_read(const Checkpoint *ck, TrainOptions *o, TrainState *s, char err[ERR_LEN]);

#endif
