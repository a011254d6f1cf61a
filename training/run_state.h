// The run's state and its checkpoints: the options and state of a run and how a checkpoint
// keeps them (train.* and state.* metadata), which run a checkpoint belongs to (its identity),
// saving the run's checkpoints, and what the processes of one run must share.
#ifndef CHARGPT_RUN_STATE_H
#define CHARGPT_RUN_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "../common/errors.h"
#include "../common/rng.h"
#include "../data/corpus_fingerprint.h"
#include "../data/encoding.h"
#include "../data/task.h"
#include "../data/vocab.h"
#include "../dist/dist.h"
#include "../format/checkpoint.h"
#include "../format/safetensors.h"
#include "../kernels/kernels.h"
#include "../model/adamw.h"
#include "../model/gpt.h"

typedef struct DataParallel DataParallel;  // training/data_parallel.h

// ----------------------------------------------------------------------------
// the run's identity
//
// Which run a checkpoint belongs to, so that --resume never writes one run's files over
// another's (training/out_dir.h).
//
// A run gets a random identity when it starts, a new run or --init-from alike: 16 hex digits
// kept as `train.run_id` in every checkpoint it saves and by every run that resumes one of
// them. Checkpoints from before train.run_id have none; a run resumed from one gets a new
// identity, and two checkpoints of which one lacks it are told apart by the corpus
// fingerprint (when both have one) and by every other entry of their metadata: the model's
// config and vocabulary, and every train.* option run_meta_write keeps, but for those that
// one run's checkpoints may hold with other values (run_state.c: may_differ): where the run
// stands (state.*, optimizer.step, crc32), what a resume may change (--steps, --eval-every,
// --save-every, --precision, the text's paths, --separator and --encoding, which the
// fingerprint covers) and the checkpoint's format version; the learning-rate schedule
// (warm-up, decay steps) is compared when both run it from the same step (a resume may start
// a new one there). An entry one of them lacks counts as what reading it gives (a key newer
// than the checkpoint: position_encoding "learned", the optional train.* options 0). Two
// runs that agree on all of that made the same steps, so taking them for one run loses
// nothing; an entry a later chargpt adds is compared without a word here. (same_run_check,
// below, compares the options of one run's processes, all of them.)

#define RUN_ID_LEN 17  // 16 hex digits and the NUL

typedef struct {
    char run_id[RUN_ID_LEN];                   // "" in checkpoints from before train.run_id
    char fingerprint[CORPUS_FINGERPRINT_LEN];  // "" before train.corpus_fingerprint
    long step;          // state.step
    SafeTensors header;  // the checkpoint's header: its metadata (run_identity_free frees it)
} RunIdentity;

// A new identity: 8 bytes of the system's random source (common/platform.h; else the clock and
// the process id, mixed).
void run_id_new(char id[RUN_ID_LEN]);
// 1 when text is an identity run_id_new could make (16 lowercase hex digits).
int run_id_valid(const char *text);

// Reads a checkpoint's identity from its header alone (the metadata; memory in proportion to
// the header, whatever the tensors weigh). The file must be a regular file. Returns 0, or -1
// with err (id then holds nothing to free).
int run_identity_read(const char *path, RunIdentity *id, char err[ERR_LEN]);
void run_identity_free(RunIdentity *id);
// 0 when a and b are checkpoints of the same run; else 1, with how b differs from a in why
// ("has train.run_id 0123456789abcdef, not ...", "was trained on another corpus (...)").
int run_identity_compare(const RunIdentity *a, const RunIdentity *b, char *why, size_t size);

// ----------------------------------------------------------------------------
// the run's options and state
//
// A training run's options and state, and how a checkpoint keeps them: `train.*` metadata
// entries for the options, `state.*` for where the run stands. Reading them back checks every
// field's range, so a checkpoint edited by hand or damaged cannot start a run with nonsense.

// Limits of the options, on the command line and in a checkpoint alike.
#define TRAIN_MAX_STEPS LONG_AT_MOST(1LL << 40)  // steps, warm-up, decay and every "every N"
#define TRAIN_MAX_BATCH_SIZE (1 << 20)
#define TRAIN_MAX_EVAL_BATCHES (1L << 30)
#define TRAIN_MAX_MIN_CHAR_COUNT LONG_AT_MOST(1000000000000000LL)
#define TRAIN_MAX_LR 10.0                  // lr, min_lr and weight decay
#define TRAIN_MAX_GRAD_CLIP 1e9

typedef struct {
    char data[1024];    // corpus: its paths (files, directories, "-"), one a line; "" with a task
    char task[TASK_NAME_MAX];  // --task: the text chargpt makes (data/task.h), or "": --data's
    char out[1024];     // directory for checkpoints and log.csv
    char resume[1024];  // checkpoint to continue, or ""
    char init_from[1024];  // checkpoint whose weights start a new run, or ""
    char corpus_fingerprint[CORPUS_FINGERPRINT_LEN];  // of the text trained on; "" unknown (older checkpoints)
    char run_id[RUN_ID_LEN];  // the run's identity (above); "" in older checkpoints
    char separator[1028];  // between the corpus's documents, as --separator takes it (escapes)
    TextEncoding encoding; // of the corpus's bytes
    int keep_cr;         // 1: CR characters are kept (corpus_load)
    long min_char_count; // characters rarer than this share the unknown token (<= 1: none)
    int grow_vocab;      // 1: --init-from's vocabulary grows by the corpus's new characters
    int skip_unknown;    // 1: characters outside the vocabulary of --init-from's checkpoint are dropped
    int force;           // 1: a run already in out is replaced
    int n_layer, n_head, n_embd, head_size, block_size, batch_size, qkv_bias;
    float dropout;
    PositionEncoding position;  // learned or rope (a checkpoint's position_encoding)
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
    // the timeline (training/probe.h), kept in the probe file rather than in checkpoints:
    char probe[1024];    // --probe FILE, or "": a stretch of the validation split
    const char *sample_prompt;  // --sample-prompt TEXT, or NULL: the probe passage's first line
    int sample_chars;    // --sample-chars (0: no samples)
    long sample_every;   // --sample-every N: a sample every N steps too (0: at evaluations only)
    char probe_steps[640];  // --probe-steps LIST: the early probes (training/probe.h), "" the default;
                            // room for the most it takes, PROBE_MAX_EARLY steps of 18 digits
    int no_probe;        // --no-probe: no probe file, samples or timeline
} TrainOptions;

typedef struct {
    long step;             // optimizer steps done
    Rng rng;               // batch sampler, after `step` batches
    double best_val_loss;  // INFINITY before the first evaluation
    double last_val_loss;  // NAN before the first evaluation
    long long tokens_seen;  // past 2^31 in a long run: wider than a long where that is 32 bits
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
// train.grow_vocab, train.task) are optional when read: absent, they take the value older
// runs had (0, "": unknown or none, the separator "\n", UTF-8). A task's run has an empty
// train.data.
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

// ----------------------------------------------------------------------------
// saving the run
//
// Saving a run: its checkpoints (ckpt.safetensors, best.safetensors) hold the model, the
// vocabulary, every parameter's AdamW moments and the run's options and state (above), so
// that --resume continues it exactly.

// Writes a checkpoint to each of paths[0], paths[1] that is not NULL, from rank 0, with the
// optimizer's moments gathered from every process first (ZeRO: training/data_parallel.h).
// Collective.
// Returns 0; EXIT_USAGE on every process when rank 0 has no memory to gather the moments;
// EXIT_DATA on rank 0 when a write fails; with err.
int run_checkpoint_save(const char *const paths[2], DataParallel *dp, GPT *model, const AdamW *opt,
                        const Vocab *vocab, const TrainOptions *o, const TrainState *s, char err[ERR_LEN]);

// ----------------------------------------------------------------------------
// the same run on every process
//
// What the processes of a data-parallel run must share, checked when they first meet (before
// any collective sized by the data and before anything is written): each one reads its own
// corpus and checkpoint and parses its own command line, and a difference would otherwise
// train a model no single run computes, or end in an MPI error or a hang. Compared, in this
// order (the first difference is the one described in full):
//   corpus       its fingerprint (length and CRC-32 of the text as cleaned): what is trained on
//   vocabulary   its size and the CRC-32 of its code points: the size of the embedding, so of
//                every collective of the parameters
//   checkpoint   --resume's step and CRC-32, --init-from's CRC-32: the weights, moments and
//                sampler state every process starts from
//   options      those that decide the parameters' shape (--n-layer, --n-head, --n-embd,
//                --head-size, --block-size, --no-qkv-bias), what a step computes (--dropout,
//                --seed, which draws every process's batches and dropout masks, --val-fraction,
//                --batch-size, --grad-accum, --precision), how every process updates its copy
//                or shard of the weights (--lr, --min-lr, --warmup, --decay-steps, the
//                schedule's start, --weight-decay, --grad-clip, AdamW's betas and eps), and
//                which collectives a run makes and when (--zero, --steps, --eval-every,
//                --eval-batches, --save-every, --final-val-chars).
// Not compared: what concerns one process or rank 0 alone (--data's paths, --out, --threads,
// --max-memory, --log-every, --mpi-timeout, --force) and what the corpus's fingerprint or the
// vocabulary already covers (the whole set of --data's texts with their --separator, read in
// their --encoding with --keep-cr; --skip-unknown drops the same characters from the same
// text; --min-char-count and --grow-vocab make the vocabulary, unknown token included).

#define SAME_RUN_MAX_FACTS 40

// This process's run: its options, its corpus's fingerprint, its vocabulary, and the
// checkpoint it starts from (o->resume's at step `step`, or o->init_from's; NULL for neither).
typedef struct {
    const TrainOptions *options;
    const char *corpus_fingerprint;
    const Vocab *vocab;
    const Checkpoint *checkpoint;
    long step;
} SameRun;

// Fills facts with what the processes must share, in the order above; returns their count.
int same_run_facts(const SameRun *run, DistFact facts[SAME_RUN_MAX_FACTS]);
// Compares this process's facts with every other's (dist_check_same). Returns 0, or -1 on
// every process with the same message naming the ranks and what differs. Collective.
int same_run_check(const SameRun *run, char err[ERR_LEN]);

#endif
