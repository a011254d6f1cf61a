// Choosing the next character from the model's logits: greedy, temperature, top-k, top-p.
#ifndef CHARGPT_SAMPLER_H
#define CHARGPT_SAMPLER_H

#include "../common/rng.h"

typedef struct {
    float temperature;  // 0: greedy argmax
    int top_k;          // keep the k most likely; 0: off
    float top_p;        // keep the smallest set whose probability reaches p; 1: off
} SamplerConfig;

// Index of the largest logit (the lowest index among ties).
int sample_argmax(const float *logits, int V);

// probs (V): a distribution. Zeroes every entry outside the top_k most likely (0 = all) and,
// of those, outside the smallest most-likely set whose mass reaches top_p (1 = all); the
// kept entries are renormalised to sum to 1. order (V) is scratch. Ties keep lower indices.
void sampler_filter(float *probs, int *order, int V, int top_k, float top_p);

// Samples a token from logits (V) under the config. probs and order (V) are scratch.
int sample_token(const float *logits, int V, const SamplerConfig *config, Rng *rng, float *probs, int *order);

#endif
