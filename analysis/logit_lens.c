#include "logit_lens.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


int logit_lens_init(LogitLens *lens, const GPTConfig *c, int t, char err[ERR_LEN]) {
    memset(lens, 0, sizeof(*lens));
    lens->rows = c->n_layer + 1;
    lens->t = t;
    lens->k = c->vocab_size < LOGIT_LENS_TOP ? c->vocab_size : LOGIT_LENS_TOP;
    lens->cells = calloc((size_t)lens->rows * t, sizeof(LensCell));
    lens->ln = malloc((size_t)t * c->n_embd * sizeof(float));
    lens->mean = malloc((size_t)t * sizeof(float));
    lens->rstd = malloc((size_t)t * sizeof(float));
    lens->logits = malloc((size_t)t * c->vocab_size * sizeof(float));
    if (!lens->cells || !lens->ln || !lens->mean || !lens->rstd || !lens->logits) {
        snprintf(err, ERR_LEN, "out of memory for the logit lens of %d positions", t);
        logit_lens_free(lens);
        return -1;
    }
    return 0;
}

void logit_lens_free(LogitLens *lens) {
    free(lens->cells);
    free(lens->ln);
    free(lens->mean);
    free(lens->rstd);
    free(lens->logits);
    memset(lens, 0, sizeof(*lens));
}

double logit_lens_bytes(const GPTConfig *c, int t) {
    return (double)(c->n_layer + 1) * t * sizeof(LensCell) +
           (double)t * (c->n_embd + 2.0 + c->vocab_size) * sizeof(float);
}

double logits_top(const float *z, int V, int k, int next, int32_t *top, float *top_prob, float *next_prob,
                  int32_t *next_rank) {
    double max = z[0];
    for (int v = 1; v < V; v++)
        if (z[v] > max) max = z[v];
    double sum = 0.0;
    for (int v = 0; v < V; v++) sum += exp(z[v] - max);
    double log_norm = max + log(sum);
    // the min(k, V) largest, kept sorted by insertion; a tie does not pass an earlier (lower) id
    int kept = V < k ? V : k, n = 0;
    for (int v = 0; v < V; v++) {
        if (n == kept && !(z[v] > z[top[kept - 1]])) continue;
        int at = n < kept ? n++ : kept - 1;
        while (at > 0 && z[v] > z[top[at - 1]]) {
            top[at] = top[at - 1];
            at--;
        }
        top[at] = v;
    }
    for (int r = 0; r < k; r++) {
        if (r >= kept) top[r] = -1;
        top_prob[r] = r < kept ? (float)exp(z[top[r]] - log_norm) : 0.0f;
    }
    *next_prob = NAN;
    *next_rank = 0;
    if (next < 0) return NAN;
    int rank = 1;  // the tokens ahead of it: larger logits, and equal ones of lower id
    for (int v = 0; v < V; v++) rank += z[v] > z[next] || (z[v] == z[next] && v < next);
    *next_prob = (float)exp(z[next] - log_norm);
    *next_rank = rank;
    return z[next] - log_norm;
}

void logit_lens_cell(const float *z, int V, int next, LensCell *cell) {
    logits_top(z, V, LOGIT_LENS_TOP, next, cell->top, cell->top_prob, &cell->next_prob, &cell->next_rank);
}

void logit_lens_compute(LogitLens *lens, GPT *model, const int *next) {
    const int t = lens->t, V = model->config.vocab_size;
    for (int r = 0; r < lens->rows; r++) {
        gpt_unembed(model, gpt_residual_stream(model, r), t, lens->ln, lens->mean, lens->rstd, lens->logits);
        for (int i = 0; i < t; i++)
            logit_lens_cell(lens->logits + (size_t)i * V, V, next[i], &lens->cells[(size_t)r * t + i]);
    }
}
