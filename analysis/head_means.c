#include "head_means.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// Adds the outputs of every head at every position of the last forward (B sequences of t) to
// sums (L, H, hs).
static void add_outputs(double *sums, const GPT *model, int B, int t) {
    const GPTConfig *c = &model->config;
    const int H = c->n_head, hs = c->head_size, A = H * hs;
    for (int l = 0; l < c->n_layer; l++) {
        const float *y = gpt_attention_output(model, l);
        double *s = sums + (size_t)l * A;
        for (long n = 0; n < (long)B * t; n++)
            for (int k = 0; k < A; k++) s[k] += y[(size_t)n * A + k];
    }
}

int head_means(GPT *model, const int *tokens, long len, float *means, char err[ERR_LEN]) {
    const GPTConfig *c = &model->config;
    const int T = c->block_size, B = model->batch_size > 0 ? model->batch_size : 1;
    const size_t floats = (size_t)c->n_layer * c->n_head * c->head_size;
    if (len < 1) {
        snprintf(err, ERR_LEN, "no text to take the heads' means over");
        return -1;
    }
    double *sums = calloc(floats, sizeof(double));
    if (!sums) {
        snprintf(err, ERR_LEN, "out of memory for the heads' means");
        return -1;
    }
    const ForwardHooks *hooks = model->hooks;
    model->hooks = NULL;
    long whole = len / T;  // windows of T, B at a time, then the rest
    for (long w = 0; w < whole; w += B) {
        int n = whole - w < B ? (int)(whole - w) : B;
        gpt_forward(model, tokens + w * T, NULL, n, T, NULL);
        add_outputs(sums, model, n, T);
    }
    if (len % T) {
        gpt_forward(model, tokens + whole * T, NULL, 1, (int)(len % T), NULL);
        add_outputs(sums, model, 1, (int)(len % T));
    }
    model->hooks = hooks;
    for (size_t k = 0; k < floats; k++) means[k] = (float)(sums[k] / len);
    free(sums);
    return 0;
}

int head_means_edits(const GPTConfig *c, const float *means, const unsigned char *flags, ActivationEdit *edits) {
    int n = 0;
    for (int i = 0; i < c->n_layer * c->n_head; i++)
        if (flags[i])
            edits[n++] = (ActivationEdit){.layer = i / c->n_head, .head = i % c->n_head,
                                          .rows = means + (size_t)i * c->head_size, .ld = 0};
    return n;
}
