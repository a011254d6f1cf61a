#include "decoder.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/finite.h"
#include "window.h"

int decoder_init(Decoder *d, GPT *model, const int *prompt, long prompt_len, long max_new,
                 const DecoderConfig *config, char err[ERR_LEN]) {
    memset(d, 0, sizeof(*d));
    const int N = config->num_samples, V = model->config.vocab_size;
    d->config = *config;
    if (kvcache_init(&d->cache, model, N, err) != 0) return -1;
    d->capacity = prompt_len + max_new;
    d->text = malloc((size_t)N * d->capacity * sizeof(int));
    d->rngs = malloc((size_t)N * sizeof(Rng));
    d->next = malloc((size_t)N * sizeof(int));
    d->probs = malloc((size_t)V * sizeof(float));
    d->order = malloc((size_t)V * sizeof(int));
    if (!d->text || !d->rngs || !d->next || !d->probs || !d->order) {
        snprintf(err, ERR_LEN, "out of memory for %d sample%s of %ld characters", N, N == 1 ? "" : "s", d->capacity);
        decoder_free(d);
        return -1;
    }
    for (int s = 0; s < N; s++) {
        memcpy(d->text + s * d->capacity, prompt, (size_t)prompt_len * sizeof(int));
        rng_seed(&d->rngs[s], config->seed + (uint64_t)s);
    }
    d->len = prompt_len;
    d->start = window_start(prompt_len, model->config.block_size);
    return 0;
}

void decoder_free(Decoder *d) {
    kvcache_free(&d->cache);
    free(d->text);
    free(d->rngs);
    free(d->next);
    free(d->probs);
    free(d->order);
    memset(d, 0, sizeof(*d));
}

const int *decoder_text(const Decoder *d, int s) { return d->text + s * d->capacity; }

// The logits for character len: the prompt's window prefilled once for every sample; then,
// when the window moved on (unless by one character in a cache that rolls) or without the
// cache, every sample's window prefilled; else one cached step over the characters just drawn.
static const float *run_model(Decoder *d) {
    const int T = d->cache.model->config.block_size;
    if (!d->logits) return kvcache_prefill(&d->cache, d->text + d->start, 0, (int)(d->len - d->start));
    long start = window_advance(d->start, d->len, T, d->config.stride);
    int rolled = start == d->start + 1 && kvcache_rolls(&d->cache);
    if (rolled) d->start = start;
    if ((start != d->start && !rolled) || !d->config.use_cache) {
        d->start = start;
        return kvcache_prefill(&d->cache, d->text + start, d->capacity, (int)(d->len - start));
    }
    return kvcache_step(&d->cache, d->next);
}

const int *decoder_step(Decoder *d, char err[ERR_LEN]) {
    const int V = d->cache.model->config.vocab_size;
    d->logits = run_model(d);
    long bad = first_nonfinite(d->logits, (size_t)d->config.num_samples * V);
    if (bad >= 0) {
        snprintf(err, ERR_LEN, "the model's logits for the character at position %ld of sample %ld are not finite "
                 "(%g for token %ld): its weights overflow float", d->len, bad / V + 1, d->logits[bad], bad % V);
        return NULL;
    }
    for (int s = 0; s < d->config.num_samples; s++) {
        d->next[s] = sample_token(d->logits + (size_t)s * V, V, &d->config.sampler, &d->rngs[s], d->probs, d->order);
        d->text[s * d->capacity + d->len] = d->next[s];
    }
    d->len++;
    return d->next;
}
