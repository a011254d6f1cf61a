#include "inference.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../kernels/kernels.h"
#include "../kernels/parallel.h"

int kvcache_init(KVCache *cache, GPT *model, int num_samples, char err[ERR_LEN]) {
    memset(cache, 0, sizeof(*cache));
    const GPTConfig *c = &model->config;
    if (num_samples < 1) {
        snprintf(err, ERR_LEN, "the number of samples must be at least 1 (got %d)", num_samples);
        return -1;
    }
    if (gpt_alloc_activations(model, gpt_generation_batch(c, num_samples), err) != 0) return -1;
    double floats = gpt_generation_floats(c, num_samples);
    // sizes no machine has are refused before they are converted to size_t
    cache->memory = floats * sizeof(float) <= 0x1p60 ? calloc((size_t)floats, sizeof(float)) : NULL;
    if (!cache->memory) {
        snprintf(err, ERR_LEN, "out of memory for the key/value cache of %d sample%s", num_samples,
                 num_samples == 1 ? "" : "s");
        return -1;
    }
    cache->kv = cache->memory;
    cache->logits = cache->memory + (size_t)gpt_kv_cache_floats(c, num_samples);
    cache->floats = (size_t)floats;
    cache->num_samples = num_samples;
    cache->model = model;
    return 0;
}

void kvcache_free(KVCache *cache) {
    free(cache->memory);
    memset(cache, 0, sizeof(*cache));
}

// Sample `from`'s cached keys and values of positions [0, n) copied to sample `to`.
static void copy_sample(const KVCache *cache, int from, int to, int n) {
    const GPTConfig *c = &cache->model->config;
    size_t bytes = (size_t)c->n_head * c->head_size * sizeof(float);
    for (int l = 0; l < c->n_layer; l++) {
        KVRows src = gpt_kv_cache_rows(c, cache->kv, cache->num_samples, l, from);
        KVRows dst = gpt_kv_cache_rows(c, cache->kv, cache->num_samples, l, to);
        for (int j = 0; j < n; j++) {
            memcpy(dst.k + j * dst.ld, src.k + j * src.ld, bytes);
            memcpy(dst.v + j * dst.ld, src.v + j * src.ld, bytes);
        }
    }
}

const float *kvcache_prefill(KVCache *cache, const int *windows, long spacing, int n) {
    GPT *m = cache->model;
    size_t V = m->config.vocab_size;
    for (int s = 0; s < cache->num_samples; s++) {
        if (s > 0 && spacing == 0) {  // the same window: sample 0's keys, values and logits
            copy_sample(cache, 0, s, n);
            memcpy(cache->logits + s * V, cache->logits, V * sizeof(float));
            continue;
        }
        ForwardPass pass = {.kv_cache = cache->kv, .kv_sequences = cache->num_samples, .first_sequence = s};
        gpt_forward(m, windows + s * spacing, NULL, 1, n, &pass);
        memcpy(cache->logits + s * V, m->acts.logits + (n - 1) * V, V * sizeof(float));
    }
    cache->len = n;
    return cache->logits;
}

const float *kvcache_step(KVCache *cache, const int *tokens) {
    GPT *m = cache->model;
    const int N = cache->num_samples;
    ForwardPass pass = {.kv_cache = cache->kv, .kv_sequences = N, .pos0 = cache->len};
    kernels_rows_alone(m->kernels, 1);
#pragma omp parallel num_threads(tuner_start(&cache->tuner, cache, N))
    gpt_forward(m, tokens, NULL, N, 1, &pass);
    tuner_stop(&cache->tuner, N);
    kernels_rows_alone(m->kernels, 0);
    cache->len++;
    return m->acts.logits;
}

int kvcache_rolls(const KVCache *cache) { return cache->model->config.position == POSITION_ROPE; }
