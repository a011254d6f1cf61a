// Generation with a key/value cache, for N samples decoded together. Each sample's window
// runs once through the model's forward pass (prefill), which leaves its keys and values in
// the cache; then each step runs one new position of every sample through the same forward
// as one batch of N rows, each row attending to the cached keys and values of its own
// sample (gpt_forward with ForwardPass's cache: model/gpt.h). A RoPE model's cache rolls on
// past block_size positions: a step there replaces the oldest position's keys and values, so
// the window is always the last block_size positions, at one position's cost.
//
// Every sample gets the same bits as it would decoded alone: a prefill runs one sample at a
// time, and a step's matrix products compute each row on its own (kernels_rows_alone).
#ifndef CHARGPT_INFERENCE_H
#define CHARGPT_INFERENCE_H

#include "../model/gpt.h"

typedef struct {
    GPT *model;       // activations allocated for a step of every sample (gpt_generation_batch)
    int num_samples;  // N
    float *kv;        // the keys and values of positions [0, len) of each sample (gpt_kv_cache_rows)
    int len;          // positions run since the prefill (past block_size: a rolling cache's)
    float *logits;    // (N, V) each sample's logits at its window's last position, after a prefill
    float *memory;    // kv, then logits
    size_t floats;    // the size of memory, gpt_generation_floats
    ThreadTuner tuner;  // the team size of the steps (parallel.h)
} KVCache;

// Allocates the cache for num_samples samples and the model's activations for their steps.
// Returns 0 or -1 with err.
int kvcache_init(KVCache *cache, GPT *model, int num_samples, char err[ERR_LEN]);
void kvcache_free(KVCache *cache);

// Forgets the cache and runs each sample's window of n tokens (n <= block_size) at positions
// [0, n), filling its cache: sample s reads windows + s * spacing; spacing 0 gives every
// sample the same window, which then runs once. Returns the logits (N, V) at the last
// position (valid until the next call).
const float *kvcache_prefill(KVCache *cache, const int *windows, long spacing, int n);

// Runs tokens (N), one per sample, at position len and appends their keys and values; len <
// block_size, or any len for a RoPE model (kvcache_rolls), whose cache then drops the oldest
// position's. Returns the logits (N, V) at that position (valid until the next call).
const float *kvcache_step(KVCache *cache, const int *tokens);

// 1 when the model's cache can roll on past block_size (RoPE), else 0.
int kvcache_rolls(const KVCache *cache);

#endif
