#include "attribution.h"

#include <stdio.h>
#include <stdlib.h>

static size_t attribution_doubles(const GPTConfig *c, int t) {
    return (size_t)t * (2 + 2 * (size_t)ATTRIBUTION_PARTS(c)) + 4 * (size_t)c->n_embd;
}

double logit_attribution_bytes(const GPTConfig *c, int t) {
    return (double)attribution_doubles(c, t) * sizeof(double) + 2.0 * t * sizeof(int) + t;
}

int logit_attribution_init(LogitAttribution *a, const GPTConfig *c, int t, char err[ERR_LEN]) {
    *a = (LogitAttribution){.t = t, .parts = ATTRIBUTION_PARTS(c)};
    a->memory = malloc(attribution_doubles(c, t) * sizeof(double) + 2 * (size_t)t * sizeof(int) + (size_t)t);
    if (!a->memory) {
        snprintf(err, ERR_LEN, "out of memory for the logit attribution");
        return -1;
    }
    double *d = a->memory;
    a->logit = d, d += t;
    a->difference = d, d += t;
    a->logit_parts = d, d += (size_t)t * a->parts;
    a->difference_parts = d, d += (size_t)t * a->parts;
    a->work = d, d += 4 * (size_t)c->n_embd;
    a->target = (int *)d;
    a->rival = a->target + t;
    a->next_known = (unsigned char *)(a->rival + t);
    return 0;
}

void logit_attribution_free(LogitAttribution *a) {
    free(a->memory);
    a->memory = NULL;
}

// The largest logit's token (the first of equal ones), other than `skip` (-1: none).
static int top_token(const float *z, int V, int skip) {
    int best = -1;
    for (int v = 0; v < V; v++)
        if (v != skip && (best < 0 || z[v] > z[best])) best = v;
    return best;
}

// What a part p (C) of the residual stream adds to the logit along direction d (C, the
// LayerNorm's scale times an unembedding column, or a difference of two), the LayerNorm's
// 1/std frozen at rstd and sum_d the sum of d's entries: rstd (p - mean(p)) . d.
static double part_along(const double *p, const double *d, double sum_d, double rstd, int C) {
    double dot = 0.0, mean = 0.0;
    for (int c = 0; c < C; c++) dot += p[c] * d[c], mean += p[c];
    return rstd * (dot - mean / C * sum_d);
}

// The parts of the residual stream at position i, each along the two directions (logit and
// difference) into out[0][k] and out[1][k]; part (2C) is scratch.
static void split_position(const GPT *model, int i, const double *dirs[2], const double sums[2], double rstd,
                           double *part, double *out[2]) {
    const GPTConfig *c = &model->config;
    const int C = c->n_embd, L = c->n_layer, H = c->n_head, hs = c->head_size, A = H * hs;
    const float *embedded = gpt_residual_stream(model, 0) + (size_t)i * C;
    int k = 0;
    for (int ch = 0; ch < C; ch++) part[ch] = embedded[ch];
    for (int w = 0; w < 2; w++) out[w][k] = part_along(part, dirs[w], sums[w], rstd, C);
    k++;
    // biases: each layer's c_proj bias through the frozen LayerNorm, and ln_f's bias itself
    double bias[2] = {0.0, 0.0};
    for (int l = 0; l < L; l++) {
        BlockParams p = gpt_layer_params(&model->params, c, l);
        const float *y = gpt_attention_output(model, l) + (size_t)i * A;
        const float *before = gpt_residual_stream(model, l) + (size_t)i * C;
        const float *after = gpt_residual_stream(model, l + 1) + (size_t)i * C;
        // the MLP's output: what the block added, less its attention's heads and bias
        double *mlp = part + C;
        for (int ch = 0; ch < C; ch++) mlp[ch] = (double)after[ch] - before[ch] - p.attprojb[ch];
        for (int h = 0; h < H; h++, k++) {
            for (int ch = 0; ch < C; ch++) {
                const float *w = p.attprojw + (size_t)ch * A + h * hs;
                double s = 0.0;
                for (int j = 0; j < hs; j++) s += (double)w[j] * y[h * hs + j];
                part[ch] = s;
                mlp[ch] -= s;
            }
            for (int w = 0; w < 2; w++) out[w][k] = part_along(part, dirs[w], sums[w], rstd, C);
        }
        for (int w = 0; w < 2; w++) out[w][1 + L * H + l] = part_along(mlp, dirs[w], sums[w], rstd, C);
        for (int ch = 0; ch < C; ch++) part[ch] = p.attprojb[ch];
        for (int w = 0; w < 2; w++) bias[w] += part_along(part, dirs[w], sums[w], rstd, C);
    }
    for (int w = 0; w < 2; w++) out[w][1 + L * H + L] = bias[w];
}

void logit_attribution_compute(LogitAttribution *a, const GPT *model, const int *next) {
    const GPTConfig *c = &model->config;
    const int C = c->n_embd, V = c->vocab_size;
    const ParameterTensors *p = &model->params;
    double *logit_dir = a->work, *diff_dir = a->work + C, *parts = a->work + 2 * C;
    for (int i = 0; i < a->t; i++) {
        const float *z = model->acts.logits + (size_t)i * V;
        int y = next[i] >= 0 ? next[i] : top_token(z, V, -1), r = top_token(z, V, y);
        a->target[i] = y;
        a->next_known[i] = next[i] >= 0;
        a->rival[i] = r;
        a->logit[i] = z[y];
        a->difference[i] = r >= 0 ? (double)z[y] - z[r] : 0.0;
        double sums[2] = {0.0, 0.0}, bias[2] = {0.0, 0.0};
        for (int ch = 0; ch < C; ch++) {
            double u = p->wte[(size_t)y * C + ch], v = r >= 0 ? p->wte[(size_t)r * C + ch] : u;
            logit_dir[ch] = p->lnfw[ch] * u;
            diff_dir[ch] = p->lnfw[ch] * (u - v);
            sums[0] += logit_dir[ch], sums[1] += diff_dir[ch];
            bias[0] += p->lnfb[ch] * u, bias[1] += p->lnfb[ch] * (u - v);
        }
        const double *directions[2] = {logit_dir, diff_dir};
        double *out[2] = {a->logit_parts + (size_t)i * a->parts, a->difference_parts + (size_t)i * a->parts};
        split_position(model, i, directions, sums, model->acts.lnf_rstd[i], parts, out);
        for (int w = 0; w < 2; w++) out[w][a->parts - 1] += bias[w];
    }
}
