#include "inference.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../kernels/kernels.h"
#include "../kernels/parallel.h"
#include "../model/layers.h"

int kvcache_init(KVCache *cache, GPT *model, int num_samples, char err[ERR_LEN]) {
    memset(cache, 0, sizeof(*cache));
    const GPTConfig *c = &model->config;
    if (num_samples < 1) {
        snprintf(err, ERR_LEN, "the number of samples must be at least 1 (got %d)", num_samples);
        return -1;
    }
    if (gpt_alloc_activations(model, 1, err) != 0) return -1;
    size_t N = num_samples, L = c->n_layer, T = c->block_size, C = c->n_embd, V = c->vocab_size;
    size_t A = (size_t)c->n_head * c->head_size, H = c->n_head;
    size_t sizes[] = {N * L * T * A, N * L * T * A, N * C, N * C, N, N, N * 3 * A, N * A, N * C, N * 4 * C, N * V, N * H * T};
    float **fields[] = {&cache->keys, &cache->values, &cache->x, &cache->ln, &cache->ln_mean, &cache->ln_rstd,
                        &cache->qkv, &cache->atty, &cache->branch, &cache->fch, &cache->logits, &cache->att};
    size_t total = 0;
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) total += sizes[i];
    cache->memory = calloc(total, sizeof(float));
    if (!cache->memory) {
        snprintf(err, ERR_LEN, "out of memory for the key/value cache of %d sample%s", num_samples,
                 num_samples == 1 ? "" : "s");
        return -1;
    }
    float *p = cache->memory;
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        *fields[i] = p;
        p += sizes[i];
    }
    cache->floats = total;
    cache->num_samples = num_samples;
    cache->model = model;
    return 0;
}

void kvcache_free(KVCache *cache) {
    free(cache->memory);
    memset(cache, 0, sizeof(*cache));
}

// Sample s's cached keys or values of layer l: (T, A).
static float *sample_layer(const KVCache *cache, float *base, int s, int l) {
    const GPTConfig *c = &cache->model->config;
    size_t T = c->block_size, A = (size_t)c->n_head * c->head_size;
    return base + ((size_t)s * c->n_layer + l) * T * A;
}

const float *kvcache_prefill(KVCache *cache, const int *windows, long spacing, int n) {
    GPT *m = cache->model;
    const GPTConfig *c = &m->config;
    size_t T = c->block_size, A = (size_t)c->n_head * c->head_size, V = c->vocab_size;
    for (int s = 0; s < cache->num_samples; s++) {
        if (s > 0 && spacing == 0) {
            // the same window: sample 0's keys, values and logits
            for (int l = 0; l < c->n_layer; l++) {
                memcpy(sample_layer(cache, cache->keys, s, l), sample_layer(cache, cache->keys, 0, l), n * A * sizeof(float));
                memcpy(sample_layer(cache, cache->values, s, l), sample_layer(cache, cache->values, 0, l),
                       n * A * sizeof(float));
            }
            memcpy(cache->logits + s * V, cache->logits, V * sizeof(float));
            continue;
        }
        gpt_forward(m, windows + s * spacing, NULL, 1, n, NULL);
        // the batched pass kept every layer's packed qkv (n, 3A): copy out k and v
        for (int l = 0; l < c->n_layer; l++) {
            const float *qkv = m->acts.qkv + l * T * 3 * A;
            float *keys = sample_layer(cache, cache->keys, s, l), *values = sample_layer(cache, cache->values, s, l);
            for (int i = 0; i < n; i++) {
                memcpy(keys + i * A, qkv + i * 3 * A + A, A * sizeof(float));
                memcpy(values + i * A, qkv + i * 3 * A + 2 * A, A * sizeof(float));
            }
        }
        memcpy(cache->logits + s * V, m->acts.logits + (n - 1) * V, V * sizeof(float));
    }
    cache->len = n;
    return cache->logits;
}

// One query of every sample against n cached positions, every head:
// out (N, A) = sum_j softmax_j(q.k_j/sqrt(hs)) v_j. A team function: the (sample, head)
// pairs are split over the team, each with its row of att (N, H, T).
static void attention_queries(const KVCache *cache, int l, int n) {
    const GPTConfig *c = &cache->model->config;
    const int N = cache->num_samples, H = c->n_head, hs = c->head_size, A = H * hs, T = c->block_size;
    const float scale = 1.0f / sqrtf((float)hs);
#pragma omp for collapse(2) schedule(static) nowait
    for (int s = 0; s < N; s++) {
        for (int h = 0; h < H; h++) {
            const float *keys = sample_layer(cache, cache->keys, s, l) + h * hs;
            const float *values = sample_layer(cache, cache->values, s, l) + h * hs;
            const float *qh = cache->qkv + (size_t)s * 3 * A + h * hs;
            float *w = cache->att + ((size_t)s * H + h) * T;
            for (int j = 0; j < n; j++) {
                const float *k = keys + (size_t)j * A;
                float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
                for (int d = 0; d < hs; d++) dot += qh[d] * k[d];
                w[j] = dot;
            }
            softmax_row(w, n, scale);
            float *o = cache->atty + (size_t)s * A + h * hs;
            for (int d = 0; d < hs; d++) o[d] = 0.0f;
            for (int j = 0; j < n; j++) {
                const float *v = values + (size_t)j * A;
#pragma omp simd
                for (int d = 0; d < hs; d++) o[d] += w[j] * v[d];
            }
        }
    }
    team_barrier();
}

// x += branch, (n); a team function
static void add_into(float *x, const float *branch, int n) {
#pragma omp for simd schedule(static) nowait
    for (int i = 0; i < n; i++) x[i] += branch[i];
    team_barrier();
}

// One position of every sample through the blocks; a team function.
static void step_team(KVCache *cache, const int *tokens) {
    GPT *m = cache->model;
    const GPTConfig *c = &m->config;
    const ParameterTensors *p = &m->params;
    const int N = cache->num_samples, C = c->n_embd, V = c->vocab_size, H = c->n_head, hs = c->head_size;
    const int A = H * hs, pos = cache->len;
    float *x = cache->x, *ln = cache->ln, *qkv = cache->qkv, *atty = cache->atty, *branch = cache->branch;
    float *fch = cache->fch, *mean = cache->ln_mean, *rstd = cache->ln_rstd;
#pragma omp for collapse(2) schedule(static) nowait
    for (int s = 0; s < N; s++)
        for (int i = 0; i < C; i++) x[s * C + i] = p->wte[(size_t)tokens[s] * C + i] + p->wpe[(size_t)pos * C + i];
    team_barrier();
    for (int l = 0; l < c->n_layer; l++) {
        BlockParams lp = gpt_layer_params(p, c, l);
        // x + attn(ln_1(x)), with each sample's k and v at this position appended to its cache
        layernorm_forward(ln, mean, rstd, x, lp.ln1w, lp.ln1b, N, C);
        linear_forward_rows(m->kernels, qkv, ln, lp.qkvw, lp.qkvb, N, C, 3 * A);
#pragma omp for schedule(static) nowait
        for (int s = 0; s < N; s++) {
            const float *q = qkv + (size_t)s * 3 * A;
            memcpy(sample_layer(cache, cache->keys, s, l) + (size_t)pos * A, q + A, A * sizeof(float));
            memcpy(sample_layer(cache, cache->values, s, l) + (size_t)pos * A, q + 2 * A, A * sizeof(float));
        }
        team_barrier();
        attention_queries(cache, l, pos + 1);
        linear_forward_rows(m->kernels, branch, atty, lp.attprojw, lp.attprojb, N, A, C);
        add_into(x, branch, N * C);
        // x + mlp(ln_2(x))
        layernorm_forward(ln, mean, rstd, x, lp.ln2w, lp.ln2b, N, C);
        linear_forward_rows(m->kernels, fch, ln, lp.fcw, lp.fcb, N, C, 4 * C);
        gelu_forward(fch, fch, N * 4 * C);
        linear_forward_rows(m->kernels, branch, fch, lp.fcprojw, lp.fcprojb, N, 4 * C, C);
        add_into(x, branch, N * C);
    }
    layernorm_forward(ln, mean, rstd, x, p->lnfw, p->lnfb, N, C);
    linear_forward_rows(m->kernels, cache->logits, ln, p->wte, NULL, N, C, V);
}

const float *kvcache_step(KVCache *cache, const int *tokens) {
#pragma omp parallel num_threads(tuner_start(&cache->tuner, cache, cache->num_samples))
    step_team(cache, tokens);
    tuner_stop(&cache->tuner, cache->num_samples);
    cache->len++;
    return cache->logits;
}
