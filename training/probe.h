// The probe: at each evaluation, a fixed passage and a repeated random sequence run through
// the model as it is at that step, and what it does with them is recorded (format/probe_file.h):
//   - every layer and head's attention on both;
//   - each character of the passage: its surprisal and the five most likely characters;
//   - the logit lens over the passage (viewer/logit_lens.h);
//   - each head's previous-token, first-character, word-start and last-space scores and
//     attention entropy on the passage, and its induction and same-character scores on the
//     repeated sequence
//     (head_scores.h);
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
//   prompt    of the samples (training/sample.h): --sample-prompt, else the passage's first
//             line (up to and with its newline, at most PROBE_PROMPT_MAX characters).
#ifndef CHARGPT_PROBE_H
#define CHARGPT_PROBE_H

#include "../data/batch.h"
#include "../data/vocab.h"
#include "../format/probe_file.h"
#include "../model/gpt.h"
#include "../viewer/logit_lens.h"

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
} ProbeSetup;

// Fills h (allocating its arrays) for a new run of a model of config c on vocab: what is
// probed, from setup and the dataset, and the parameter groups (update_ratio.h); run_id and
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
    int *word_start;    // (t) where each position's word starts in the passage (head_scores.h)
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

#endif
