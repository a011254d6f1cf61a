// Decoding: N samples of one prompt generated together, a character per sample per step,
// with the window policy of window.h. Sample i draws from a generator seeded with seed + i,
// and every sample gets the bits it would get decoded alone (inference.h), so sample i is
// the text that one sample with seed + i gives.
#ifndef CHARGPT_DECODER_H
#define CHARGPT_DECODER_H

#include <stdint.h>

#include "../common/rng.h"
#include "../model/gpt.h"
#include "inference.h"
#include "sampler.h"

typedef struct {
    int num_samples;        // N
    int stride;             // how the window moves on past block_size (window.h)
    int use_cache;          // 0: prefill the whole window for every character
    SamplerConfig sampler;
    uint64_t seed;          // sample i uses seed + i
} DecoderConfig;

typedef struct {
    DecoderConfig config;
    KVCache cache;
    long capacity;          // characters each sample's text can hold
    int *text;              // (N, capacity) each sample's prompt and characters so far
    long len;               // characters in every sample's text
    long start;             // the window: text[start, len)
    const float *logits;    // (N, V) the predictions for character len; NULL: not yet run
    Rng *rngs;              // (N)
    int *next;              // (N) the characters the last step drew
    float *probs;           // (V) sampler scratch
    int *order;             // (V)
} Decoder;

// Sets up N samples of prompt (prompt_len >= 1 tokens) with room for max_new characters
// more, and the model's cache. Returns 0, or -1 with err when memory runs out.
int decoder_init(Decoder *d, GPT *model, const int *prompt, long prompt_len, long max_new,
                 const DecoderConfig *config, char err[ERR_LEN]);
void decoder_free(Decoder *d);

// Runs the model over what the last step drew (the prompt at the first call), then draws the
// next character of every sample and appends it. Returns them (N), valid until the next call;
// or NULL with err when a sample's logits are not finite (weights that overflow float).
const int *decoder_step(Decoder *d, char err[ERR_LEN]);

// Sample s's text, d->len characters.
const int *decoder_text(const Decoder *d, int s);

#endif
