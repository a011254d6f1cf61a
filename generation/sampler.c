#include "sampler.h"

#include <math.h>
#include <stdlib.h>

int sample_argmax(const float *logits, int V) {
    int best = 0;
    for (int v = 1; v < V; v++)
        if (logits[v] > logits[best]) best = v;
    return best;
}

// qsort context: indices ordered by descending probability, then ascending index
static const float *sort_probs;
static int by_descending_prob(const void *a, const void *b) {
    int i = *(const int *)a, j = *(const int *)b;
    if (sort_probs[i] != sort_probs[j]) return sort_probs[i] > sort_probs[j] ? -1 : 1;
    return i - j;
}

void sampler_filter(float *probs, int *order, int V, int top_k, float top_p) {
    if ((top_k <= 0 || top_k >= V) && top_p >= 1.0f) return;
    for (int v = 0; v < V; v++) order[v] = v;
    sort_probs = probs;
    qsort(order, (size_t)V, sizeof(int), by_descending_prob);
    int keep = top_k > 0 && top_k < V ? top_k : V;
    if (top_p < 1.0f) {
        // mass of the kept top_k, so top_p applies to the renormalised distribution
        double total = 0.0;
        for (int r = 0; r < keep; r++) total += probs[order[r]];
        double mass = 0.0;
        int r = 0;
        while (r < keep) {
            mass += probs[order[r++]];
            // a relative tolerance so that float rounding of the probabilities does not
            // push an exact boundary (e.g. 0.3 + 0.3 against 0.6) past the next token
            if (mass >= top_p * total * (1.0 - 1e-6)) break;
        }
        keep = r;
    }
    double kept = 0.0;
    for (int r = 0; r < keep; r++) kept += probs[order[r]];
    for (int r = keep; r < V; r++) probs[order[r]] = 0.0f;
    for (int r = 0; r < keep; r++) probs[order[r]] = (float)(probs[order[r]] / kept);
}

int sample_token(const float *logits, int V, const SamplerConfig *config, Rng *rng, float *probs, int *order) {
    if (config->temperature <= 0.0f) return sample_argmax(logits, V);
    // softmax of logits / temperature, in double for the exponentials' range
    int best = sample_argmax(logits, V);
    double sum = 0.0;
    for (int v = 0; v < V; v++) {
        double p = exp((double)(logits[v] - logits[best]) / config->temperature);
        probs[v] = (float)p;
        sum += p;
    }
    for (int v = 0; v < V; v++) probs[v] = (float)(probs[v] / sum);
    sampler_filter(probs, order, V, config->top_k, config->top_p);
    // inverse CDF with a uniform draw; the last kept index catches rounding
    float u = rng_uniform(rng);
    float cdf = 0.0f;
    int last = best;
    for (int v = 0; v < V; v++) {
        if (probs[v] <= 0.0f) continue;
        cdf += probs[v];
        last = v;
        if (u < cdf) return v;
    }
    return last;
}
