// Generation with a key/value cache: the prompt runs once through the batched forward pass
// (prefill), then each new token runs one position through the blocks, attending to the
// cached keys and values of the positions before it.
#ifndef CHARGPT_INFERENCE_H
#define CHARGPT_INFERENCE_H

#include "../model/gpt.h"

typedef struct {
    GPT *model;   // activations allocated for batch 1
    float *keys;  // (L, T, A) cached keys of positions [0, len)
    float *values;// (L, T, A)
    int len;      // positions in the cache
    // one position's activations
    float *x;     // (C) residual stream
    float *ln;    // (C)
    float *qkv;   // (3A)
    float *atty;  // (A)
    float *branch;// (C)
    float *fch;   // (4C)
    float *att;   // (H, T) attention weights of each head
    float *logits;// (V)
    float *memory;
} KVCache;

// Allocates the cache and the model's activations for batch 1. Returns 0 or -1 with err.
int kvcache_init(KVCache *cache, GPT *model, char err[ERR_LEN]);
void kvcache_free(KVCache *cache);

// Forgets the cache and runs tokens [0, n) at positions [0, n), n <= block_size, filling
// it. Returns the logits (V) at the last position (valid until the next call).
const float *kvcache_prefill(KVCache *cache, const int *tokens, int n);

// Runs one token at position len (len < block_size) and appends its keys and values.
// Returns the logits (V) at that position (valid until the next call).
const float *kvcache_step(KVCache *cache, int token);

#endif
