#include "attention_record.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/finite.h"
#include "../viewer/attention_export.h"

int attention_record(GPT *model, const Vocab *vocab, const int *text, long len, const char *const *paths, int n,
                     int replace, int *written, char err[ERR_LEN]) {
    const GPTConfig *c = &model->config;
    int t = len < c->block_size ? (int)len : c->block_size;
    const int *window = text + len - t;
    *written = 0;
    gpt_forward(model, window, NULL, 1, t, NULL);
    long bad = first_nonfinite(model->acts.logits, (size_t)t * c->vocab_size);
    if (bad >= 0) {
        snprintf(err, ERR_LEN, "--attention: the model's logits at position %ld of the text are not finite (%g for "
                 "token %ld): its weights overflow float", bad / c->vocab_size, model->acts.logits[bad],
                 bad % c->vocab_size);
        return EXIT_DATA;
    }
    size_t per_layer = (size_t)c->n_head * t * t;
    float *att = malloc((size_t)c->n_layer * per_layer * sizeof(float));
    uint32_t *chars = malloc((size_t)t * sizeof(uint32_t));
    AttentionPrediction *pred = malloc((size_t)t * sizeof(AttentionPrediction));
    int *next = malloc((size_t)t * sizeof(int));
    LogitLens lens = {0};
    int rc = -1;
    snprintf(err, ERR_LEN, "out of memory for the attention weights");
    if (att && chars && pred && next && logit_lens_init(&lens, c, t, err) == 0) {
        for (int l = 0; l < c->n_layer; l++)
            memcpy(att + l * per_layer, gpt_attention_weights(model, l), per_layer * sizeof(float));
        for (int i = 0; i < t; i++) chars[i] = vocab->chars[window[i]];
        attention_predictions(model->acts.logits, window, t, c->vocab_size, vocab->chars, pred);
        for (int i = 0; i < t; i++) next[i] = i + 1 < t ? window[i + 1] : -1;
        logit_lens_compute(&lens, model, next);
        AttentionLens shown = {lens.rows, lens.cells, vocab->chars};
        rc = 0;
        for (int i = 0; i < n && rc == 0; i++)
            if ((rc = attention_export(paths[i], chars, t, c->n_layer, c->n_head, att, pred, &shown, replace,
                                     err)) == 0)
                (*written)++;
    }
    free(att);
    free(chars);
    free(pred);
    free(next);
    logit_lens_free(&lens);
    return rc == 0 ? 0 : rc == -2 ? EXIT_USAGE : EXIT_DATA;
}
