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
// A write that fails is reported once and ends the probing, never the training. The run's
// stages make these calls (training/run_timeline.c; run_probe_open: training/out_dir.c);
// which steps are probed is training/schedule.h's.
#ifndef CHARGPT_PROBE_H
#define CHARGPT_PROBE_H

#include <stdint.h>
#include <stdio.h>

#include "../analysis/head_scores.h"
#include "../analysis/logit_lens.h"
#include "../data/batch.h"
#include "../data/vocab.h"
#include "../format/probe_file.h"
#include "../model/gpt.h"
#include "run_log.h"
#include "run_state.h"
#include "schedule.h"

// ----------------------------------------------------------------------------
// the probe
//
// The probe: at each evaluation, a fixed passage and a repeated random sequence run through
// the model as it is at that step, and what it does with them is recorded (format/probe_file.h):
//   - every layer and head's attention on both;
//   - each character of the passage: its surprisal and the five most likely characters;
//   - the logit lens over the passage (analysis/logit_lens.h);
//   - each head's previous-token, first-character, word-start and last-space scores and
//     attention entropy on the passage, and its induction and same-character scores on the
//     repeated sequence (analysis/head_scores.h);
//   - each head's importance: the passage's loss change when that head alone is knocked out
//     (analysis/head_importance.h: L*H more forwards of the passage);
//   - the queries, keys and values of every layer and head over the first positions of both
//     texts (format/probe_file.h: its vectors), at most PROBE_VECTOR_BYTES a record.
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
// the bytes of queries, keys and values a record may keep, half for each text: the whole of
// both texts of the default model (4 layers of 3 x 128 floats, 64 positions each: 768 KiB)
#define PROBE_VECTOR_BYTES (1 << 20)

typedef struct {
    const char *probe_path;     // --probe FILE, or NULL
    const char *sample_prompt;  // --sample-prompt TEXT, or NULL
    int sample_chars;           // --sample-chars (0: no samples)
    uint64_t seed;              // the run's: the repeated sequence's and the samples'
    float temperature;          // the samples' (./generate's default)
    int keep_cr;                // --keep-cr: a --probe file's CR characters are kept, as the corpus's
    TextEncoding encoding;      // --encoding: a --probe file's, as the corpus's
} ProbeSetup;

// Fills h (allocating its arrays) for a new run of a model of config c on vocab: what is
// probed, from setup and the dataset, and the parameter groups (training/update_ratios.h:
// update_groups); run_id and grad_clip are left for the caller.
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
    int *word_start;    // (t) where each position's word starts in the passage (analysis/head_scores.h)
    int *last_space;    // (t) the last whitespace before each position of the passage
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
    ProbeSchedule schedule;   // the early probes (on every process, active or not)
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
// What the probe will do in a run from `step` to last_step with an evaluation every eval_every
// steps (and step 0's probe when from_start), for the run's first lines: "probes at steps 0, 10,
// 20, 50, 100, 200 and every 250: 15 probes, about 12.7 MiB of probe.bin" ("" when inactive;
// with --sample-every, the samples between the probes are in the bytes).
void run_probe_plan(const RunProbe *rp, long step, long last_step, long eval_every, int from_start, char *text,
                    size_t size);
// Refuses (-2 with err) a plan whose probes (run_probe_plan's) would add more to the probe file
// in dir than the free_bytes its disk has; 0 when it fits or the probe is inactive.
int run_probe_check_disk(const RunProbe *rp, long step, long last_step, long eval_every, int from_start,
                         double free_bytes, const char *dir, char err[ERR_LEN]);
// Opens the probe file for a run at `step` of model, writing what it did into message (or "").
// Returns 0, or -1 with err.
int run_probe_open(RunProbe *rp, GPT *model, long step, char *message, size_t size, char err[ERR_LEN]);

// One step's figures.
typedef struct {
    long step;
    int probed;               // a probe at this step: an evaluation, the run's start (step 0) or
                              // an early step of the schedule
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
// files 12 ms a probe".
void run_probe_describe_cost(const RunProbe *rp, char *text, size_t size);
void run_probe_free(RunProbe *rp);

#endif
