// The timeline's probe, on rank 0: what the model does with a fixed passage at each
// evaluation (the probe, with the head scores), the samples it writes, and the run's probe
// file (probe.bin) and timeline page (timeline.html) that keep them, with one call at each
// place of the run:
//   run_probe_prepare  before anything in --out changes: what is probed (a new run's, from
//                      the options; a resumed run's, from its probe file's header), so that
//                      a bad --probe or --sample-prompt is refused while nothing is changed;
//   run_probe_open     once the run starts: the probe file made anew (a new run, --init-from)
//                      or continued (--resume: the records after the checkpoint's step, and
//                      any torn tail, are cut, so that the timeline goes on without a
//                      duplicate or a gap; none starts anew; a damaged one, or one whose run
//                      cannot be told, is moved aside first; another run's needs --force);
//   run_probe_step     after each step, before its checkpoint is saved (so that a record
//                      the checkpoint's step has is never lost to a kill, and one it lacks is
//                      cut on resume): the probe at an evaluation, the sample at an
//                      evaluation or every --sample-every steps, appended as one record;
//   run_probe_page     after the step's report: timeline.html rewritten, atomically.
// A write that fails is reported once and ends the probing, never the training.
#ifndef CHARGPT_PROBE_H
#define CHARGPT_PROBE_H

#include <stdint.h>
#include <stdio.h>

#include "../data/batch.h"
#include "../data/vocab.h"
#include "../format/probe_file.h"
#include "../model/gpt.h"
#include "../viewer/logit_lens.h"
#include "run_log.h"
#include "run_state.h"

// ----------------------------------------------------------------------------
// head scores
//
// What each attention head does, measured on its attention pattern over a sequence the
// way TransformerLens's head detector measures it (transformer_lens/head_detector.py:
// detect_head with its default error_measure "mul", exclude_bos and exclude_current_token
// off): a detection pattern D (t, t) of ones and zeros marks the query-key pairs a head of
// that kind attends to, and the head's score is
//     sum over i, j of A[i][j] D[i][j]  /  sum over i, j of A[i][j],
// the share of the head's attention that falls on those pairs, counted over every query
// position i and every key j <= i. Each row of A sums to 1, so the denominator is t and a
// query row with no marked key (the first position, or in the first half of a repeated
// sequence) counts as 0: on a run repeated twice a perfect induction head scores 1/2, a
// perfect previous-token head (t - 1) / t.
//
//   previous-token:  D[i][i-1] = 1 (get_previous_token_head_detection_pattern)
//   induction:       D[i][j] = 1 for 1 <= j <= i when token j - 1 equals token i and j - 1 < i:
//                    the position right after each earlier occurrence of the query's own
//                    token (get_induction_head_detection_pattern: the duplicate-token pattern
//                    shifted one key to the right, first column 0, lower triangle kept)
//
// The attention entropy of a head is the mean over its query rows of -sum_j A[i][j] log2
// A[i][j], in bits: 0 when every query looks at one key, log2(i + 1) for a uniform row i.

// att: one head's (t, t) weights, row i holding keys 0..i (0 above the diagonal).
double head_score_previous_token(const float *att, int t);
// tokens: the t tokens the head read.
double head_score_induction(const float *att, const int *tokens, int t);
double head_attention_entropy(const float *att, int t);

// The length of the run that head_repeated_sequence repeats for a block of block_size:
// min(HEAD_REPEAT_RUN, block_size / 2); 0 when block_size < 2 (no repeated run fits).
#define HEAD_REPEAT_RUN 32
int head_repeat_run(int block_size);
// tokens (2 n): n tokens drawn from a generator seeded with seed, then the same n again.
// The n are distinct when the vocabulary has that many (so that the induction pattern marks
// exactly one key per query of the second half), else drawn with replacement.
void head_repeated_sequence(int *tokens, int n, int vocab_size, uint64_t seed);

// ----------------------------------------------------------------------------
// the probe
//
// The probe: at each evaluation, a fixed passage and a repeated random sequence run through
// the model as it is at that step, and what it does with them is recorded (format/probe_file.h):
//   - every layer and head's attention on both;
//   - each character of the passage: its surprisal and the five most likely characters;
//   - the logit lens over the passage (viewer/logit_lens.h);
//   - each head's previous-token score and attention entropy on the passage, and its induction
//     score on the repeated sequence (head scores, below).
// It runs on a view of the training model (gpt_view: the same weights, activations of its own,
// fp32 whatever the run's precision), so the training's activations are untouched and the
// probe of a bf16 run measures the weights a checkpoint keeps.
//
// What is probed is fixed when a run starts and kept in the probe file's header:
//   passage   --probe FILE (its first block_size + 1 characters), else block_size + 1
//             characters of the validation split from the start of its first whole line;
//   repeated  head_repeat_run(block_size) characters drawn from the vocabulary with the run's
//             seed, twice;
//   prompt    of the samples (below): --sample-prompt, else the passage's first
//             line (up to and with its newline, at most PROBE_PROMPT_MAX characters).

#define PROBE_PROMPT_MAX 64        // characters of the default prompt
#define PROBE_FILE_MAX_CHARS (1 << 20)  // a --probe file may hold at most this many characters

typedef struct {
    const char *probe_path;     // --probe FILE, or NULL
    const char *sample_prompt;  // --sample-prompt TEXT, or NULL
    int sample_chars;           // --sample-chars (0: no samples)
    uint64_t seed;              // the run's: the repeated sequence's and the samples'
    float temperature;          // the samples' (./generate's default)
    int keep_cr;                // --keep-cr: a --probe file's CR characters are kept, as the corpus's
} ProbeSetup;

// Fills h (allocating its arrays) for a new run of a model of config c on vocab: what is
// probed, from setup and the dataset, and the parameter groups (training/step.h: update_groups); run_id and
// grad_clip are left for the caller.
// Returns 0; -1 with err for bad data (a --probe file that cannot be read, is not UTF-8 or
// holds fewer than 2 characters); -2 with err for bad usage (a character the vocabulary
// lacks, a --sample-prompt longer than the block).
int probe_header_make(ProbeHeader *h, const ProbeSetup *setup, const GPTConfig *c, const Vocab *vocab,
                      const Dataset *ds, char err[ERR_LEN]);

typedef struct {
    const ProbeHeader *header;
    GPT view;           // the model's weights, with activations for one sequence
    LogitLens lens;
    int *next;          // (t) the passage's next tokens
} Probe;

// Sets up the probe of model (its weights, read at each probe_measure). Returns 0, or -1
// with err when memory runs out.
int probe_init(Probe *p, GPT *model, const ProbeHeader *header, char err[ERR_LEN]);
void probe_free(Probe *p);
// The memory probe_init and a probe file's records take beside training, in bytes, for a
// model of config c and the sizes of h.
double probe_memory(const GPTConfig *c, const ProbeHeader *h);

// Runs the passage and the repeated sequence through the model and fills the probe's part of
// rec (its scores and heavy part) and PROBE_HAS_PROBE in its flags. Returns 0, or -1 with err
// when the model's logits are not finite.
int probe_measure(Probe *p, ProbeRecord *rec, char err[ERR_LEN]);

// ----------------------------------------------------------------------------
// the sample
//
// The sample a run writes as it trains: at each evaluation (or every --sample-every steps),
// --sample-chars characters after a fixed prompt, drawn with the same seed every time, so
// that what changes from one sample to the next is the model alone. It is exactly the text
// ./generate prints for that step's checkpoint with the same prompt, seed and length
// (`./generate CKPT PROMPT -n S -s SEED`, temperature 0.8): the same decoding (generation/
// decoder.h) in fp32 on the same weights.

// Writes the header's sample_chars characters after its prompt (a newline when it has none,
// as ./generate starts an empty prompt; token 0 without one), decoded by view (gpt_view of
// the training model: its activations are reallocated for one sequence), into sample.
// Returns 0, or -1 with err when memory runs out or the model's logits are not finite.
int sample_write(GPT *view, const ProbeHeader *h, int newline, int32_t *sample, char err[ERR_LEN]);

// ----------------------------------------------------------------------------
// the run's probe file and timeline page

#define PROBE_FILE "probe.bin"
#define SAMPLE_TEMPERATURE 0.8f  // ./generate's default

typedef struct {
    int active;               // probing in this run (rank 0, without --no-probe)
    int resuming;             // a resumed run
    int continued;            // the header came from the directory's probe file (a resume)
    const char *set_aside;    // the directory's probe file is moved aside under this suffix, then
    char damage[ERR_LEN];     // started anew: what is wrong with it
    ProbeHeader header;
    ProbeFile file;
    Probe probe;
    ProbeRecord record;
    char path[1100];          // the probe file
    char page_path[1100];     // timeline.html
    int newline;              // the vocabulary's newline token, or -1
    long sample_every;
    int sampled;              // the last record has a sample not printed yet
    int failed;               // a write failed: the rest of the run writes no records
    double seconds;           // spent probing, sampling and writing the file and the page, in all;
    double probe_s, sample_s; // of which in the probe's passes and in the samples
    long probes, samples;     // evaluations probed, samples written
} RunProbe;

// Decides what a run probes. A new run (or --init-from) makes it from the options (probe_header_make);
// a resumed one (resumed_run_id: its checkpoint's train.run_id, "" when it has none; NULL for
// a new run) reads the header of its --out's probe file when that holds the same run (its
// train.run_id), else makes it anew. Nothing is written. Returns 0; -1 with err for bad data;
// -2 with err for bad usage (probe_header_make, or another run's probe file without --force).
int run_probe_prepare(RunProbe *rp, const TrainOptions *o, const GPTConfig *c, const Vocab *vocab,
                      const Dataset *ds, const char *resumed_run_id, char err[ERR_LEN]);
// The memory the probe takes beside training (0 when inactive).
double run_probe_memory(const RunProbe *rp, const GPTConfig *c);
// Opens the probe file for a run at `step` of model, writing what it did into message (or "").
// Returns 0, or -1 with err.
int run_probe_open(RunProbe *rp, GPT *model, long step, char *message, size_t size, char err[ERR_LEN]);

// One step's figures.
typedef struct {
    long step;
    int evaluated;            // an evaluation at this step (or the run's start, step 0)
    float train_loss, val_loss, lr, grad_norm, clipped;  // NAN where unknown
    const float *update_ratio;  // (groups), or NULL (unknown)
} RunProbeStep;
// Probes and samples what the step calls for and appends the record. Returns 0 (also when
// there was nothing to do or probing has ended), or -1 with err after a failure, which ends
// the probing.
int run_probe_step(RunProbe *rp, const RunProbeStep *s, char err[ERR_LEN]);
// Prints the sample the last record holds, once, indented, after a line naming its step.
void run_probe_print_sample(RunProbe *rp, FILE *fp);
// Rewrites timeline.html from the probe file and the loss history. Returns 0, or -1 with err.
int run_probe_page(RunProbe *rp, const LossHistory *losses, const char *title, char err[ERR_LEN]);
// What the probe cost, for the run's last lines: "the probe 31 ms, the sample 420 ms and the
// files 12 ms an evaluation".
void run_probe_describe_cost(const RunProbe *rp, char *text, size_t size);
void run_probe_free(RunProbe *rp);

#endif
