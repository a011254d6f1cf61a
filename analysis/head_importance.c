#include "head_importance.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

double head_importance_memory(int given_heads) { return (given_heads + 1.0) * sizeof(ActivationEdit); }

// Each head's importance with its output replaced by its mean (means (L, H, hs)), or zeroed
// (means NULL).
static int importance_by(GPT *model, const int *tokens, int t, const float *means, float *importance, char err[ERR_LEN]) {
    const int H = model->config.n_head, hs = model->config.head_size, heads = model->config.n_layer * H;
    const ForwardHooks *given = model->hooks;
    const int n_given = given ? given->n_heads : 0;
    // the model's own edits of heads' outputs, then one more: the head measured, knocked out
    // or replaced by its mean
    ActivationEdit *edits = malloc((n_given + 1) * sizeof(ActivationEdit));
    if (!edits) {
        snprintf(err, ERR_LEN, "out of memory for the heads' importance");
        return -1;
    }
    if (n_given > 0) memcpy(edits, given->heads, n_given * sizeof(ActivationEdit));
    ForwardHooks hooks = {edits, n_given + 1, given ? given->residual : NULL, given ? given->n_residual : 0};
    gpt_forward(model, tokens, tokens + 1, 1, t, NULL);
    const double whole = model->loss_sum / t;
    model->hooks = &hooks;
    for (int i = 0; i < heads; i++) {
        // rows NULL: zeros everywhere; a mean: its one row at every position (ld 0)
        edits[n_given] = (ActivationEdit){.layer = i / H, .head = i % H, .rows = means ? means + (size_t)i * hs : NULL};
        gpt_forward(model, tokens, tokens + 1, 1, t, NULL);
        importance[i] = (float)((model->loss_sum / t - whole) / M_LN2);
    }
    model->hooks = given;
    free(edits);
    return 0;
}

int head_importance(GPT *model, const int *tokens, int t, float *importance, char err[ERR_LEN]) {
    return importance_by(model, tokens, t, NULL, importance, err);
}

int head_importance_by_mean(GPT *model, const int *tokens, int t, const float *means, float *importance,
                            char err[ERR_LEN]) {
    return importance_by(model, tokens, t, means, importance, err);
}
