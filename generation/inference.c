#include "inference.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../model/fastmath.h"
#include "../model/layers.h"
#include "../model/matmul.h"
#include "../model/parallel.h"

int kvcache_init(KVCache *cache, GPT *model, char err[ERR_LEN]) {
    memset(cache, 0, sizeof(*cache));
    const GPTConfig *c = &model->config;
    if (gpt_alloc_activations(model, 1, err) != 0) return -1;
    size_t L = c->n_layer, T = c->block_size, C = c->n_embd, V = c->vocab_size;
    size_t A = (size_t)c->n_head * c->head_size;
    size_t H = c->n_head;
    size_t sizes[] = {L * T * A, L * T * A, C, C, 3 * A, A, C, 4 * C, H * T, V};
    size_t total = 0;
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) total += sizes[i];
    cache->memory = calloc(total, sizeof(float));
    if (!cache->memory) {
        snprintf(err, ERR_LEN, "out of memory for the key/value cache");
        return -1;
    }
    float **fields[] = {&cache->keys, &cache->values, &cache->x, &cache->ln, &cache->qkv, &cache->atty,
                        &cache->branch, &cache->fch, &cache->att, &cache->logits};
    float *p = cache->memory;
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        *fields[i] = p;
        p += sizes[i];
    }
    cache->model = model;
    return 0;
}

void kvcache_free(KVCache *cache) {
    free(cache->memory);
    memset(cache, 0, sizeof(*cache));
}

const float *kvcache_prefill(KVCache *cache, const int *tokens, int n) {
    GPT *m = cache->model;
    const GPTConfig *c = &m->config;
    size_t T = c->block_size, A = (size_t)c->n_head * c->head_size;
    m->training = 0;
    gpt_forward(m, tokens, NULL, 1, n);
    // the batched pass kept every layer's packed qkv (n, 3A): copy out k and v
    for (int l = 0; l < c->n_layer; l++) {
        const float *qkv = m->acts.qkv + (size_t)l * T * 3 * A;
        for (int i = 0; i < n; i++) {
            memcpy(cache->keys + ((size_t)l * T + i) * A, qkv + (size_t)i * 3 * A + A, A * sizeof(float));
            memcpy(cache->values + ((size_t)l * T + i) * A, qkv + (size_t)i * 3 * A + 2 * A, A * sizeof(float));
        }
    }
    cache->len = n;
    return m->acts.logits + (size_t)(n - 1) * c->vocab_size;
}

// One query against n cached positions, every head: out (A) = sum_j softmax_j(q.k_j/sqrt(hs)) v_j.
// A team function: the heads are split over the team, each with its row of att (H, n).
static void attention_query(float *out, float *att, const float *q, const float *keys,
                            const float *values, int n, int H, int hs, int T) {
    const int A = H * hs;
    const float scale = 1.0f / sqrtf((float)hs);
#pragma omp for schedule(static) nowait
    for (int h = 0; h < H; h++) {
        const float *qh = q + h * hs;
        float *w = att + (size_t)h * T;
        float maxval = -INFINITY;
        for (int j = 0; j < n; j++) {
            const float *k = keys + (size_t)j * A + h * hs;
            float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
            for (int d = 0; d < hs; d++) dot += qh[d] * k[d];
            w[j] = dot * scale;
            if (w[j] > maxval) maxval = w[j];
        }
        float sum = 0.0f;
        for (int j = 0; j < n; j++) {
            w[j] = exp_fast(w[j] - maxval);
            sum += w[j];
        }
        float inv = 1.0f / sum;
        float *o = out + h * hs;
        for (int d = 0; d < hs; d++) o[d] = 0.0f;
        for (int j = 0; j < n; j++) {
            const float *v = values + (size_t)j * A + h * hs;
            float wj = w[j] * inv;
#pragma omp simd
            for (int d = 0; d < hs; d++) o[d] += wj * v[d];
        }
    }
    team_barrier();
}

// x += branch, (C); a team function
static void add_into(float *x, const float *branch, int C) {
#pragma omp for simd schedule(static) nowait
    for (int i = 0; i < C; i++) x[i] += branch[i];
    team_barrier();
}

// One position through the blocks; a team function.
static void step_team(KVCache *cache, int token) {
    GPT *m = cache->model;
    const GPTConfig *c = &m->config;
    const ParameterTensors *p = &m->params;
    const int C = c->n_embd, V = c->vocab_size, H = c->n_head, hs = c->head_size, A = H * hs;
    const size_t T = c->block_size;
    const int pos = cache->len;
    float mean, rstd;
#pragma omp for simd schedule(static) nowait
    for (int i = 0; i < C; i++) cache->x[i] = p->wte[(size_t)token * C + i] + p->wpe[(size_t)pos * C + i];
    team_barrier();
    for (int l = 0; l < c->n_layer; l++) {
        const float *qkvb = c->qkv_bias ? p->qkvb + (size_t)l * 3 * A : NULL;
        float *keys = cache->keys + (size_t)l * T * A, *values = cache->values + (size_t)l * T * A;
        // x + attn(ln_1(x)), with this position's k and v appended to the cache
        layernorm_forward(cache->ln, &mean, &rstd, cache->x, p->ln1w + (size_t)l * C, p->ln1b + (size_t)l * C, 1, C);
        matmul_forward(cache->qkv, cache->ln, p->qkvw + (size_t)l * 3 * A * C, qkvb, 1, C, 3 * A);
        if (omp_get_thread_num() == 0) {
            memcpy(keys + (size_t)pos * A, cache->qkv + A, A * sizeof(float));
            memcpy(values + (size_t)pos * A, cache->qkv + 2 * A, A * sizeof(float));
        }
        team_barrier();
        attention_query(cache->atty, cache->att, cache->qkv, keys, values, pos + 1, H, hs, (int)T);
        matmul_forward(cache->branch, cache->atty, p->attprojw + (size_t)l * C * A, p->attprojb + (size_t)l * C, 1, A, C);
        add_into(cache->x, cache->branch, C);
        // x + mlp(ln_2(x))
        layernorm_forward(cache->ln, &mean, &rstd, cache->x, p->ln2w + (size_t)l * C, p->ln2b + (size_t)l * C, 1, C);
        matmul_forward(cache->fch, cache->ln, p->fcw + (size_t)l * 4 * C * C, p->fcb + (size_t)l * 4 * C, 1, C, 4 * C);
        gelu_forward(cache->fch, cache->fch, 4 * C);
        matmul_forward(cache->branch, cache->fch, p->fcprojw + (size_t)l * C * 4 * C, p->fcprojb + (size_t)l * C, 1, 4 * C, C);
        add_into(cache->x, cache->branch, C);
    }
    layernorm_forward(cache->ln, &mean, &rstd, cache->x, p->lnfw, p->lnfb, 1, C);
    matmul_forward(cache->logits, cache->ln, p->wte, NULL, 1, C, V);
}

// the team size of the steps of the current generation
static ThreadTuner tuner;

const float *kvcache_step(KVCache *cache, int token) {
#pragma omp parallel num_threads(tuner_start(&tuner, cache, 0))
    step_team(cache, token);
    tuner_stop(&tuner, 1.0);
    cache->len++;
    return cache->logits;
}
