#include "head_importance.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int head_importance(GPT *model, const int *tokens, int t, float *importance, char err[ERR_LEN]) {
    const int heads = model->config.n_layer * model->config.n_head;
    const unsigned char *given = model->knocked_out;
    unsigned char *flags = calloc((size_t)heads, 1);
    if (!flags) {
        snprintf(err, ERR_LEN, "out of memory for the heads' importance");
        return -1;
    }
    if (given) memcpy(flags, given, (size_t)heads);
    gpt_forward(model, tokens, tokens + 1, 1, t, NULL);
    const double whole = model->loss_sum / t;
    model->knocked_out = flags;
    for (int i = 0; i < heads; i++) {
        if (flags[i]) {
            importance[i] = 0.0f;
            continue;
        }
        flags[i] = 1;
        gpt_forward(model, tokens, tokens + 1, 1, t, NULL);
        flags[i] = 0;
        importance[i] = (float)((model->loss_sum / t - whole) / M_LN2);
    }
    model->knocked_out = given;
    free(flags);
    return 0;
}

int head_importance_by_mean(GPT *model, const int *tokens, int t, const float *means, float *importance,
                            char err[ERR_LEN]) {
    const GPTConfig *c = &model->config;
    const int heads = c->n_layer * c->n_head;
    const ForwardHooks *given = model->hooks, none = {0};
    if (!given) given = &none;
    HeadHook *hooks = malloc(((size_t)given->n_heads + 1) * sizeof(HeadHook));
    if (!hooks) {
        snprintf(err, ERR_LEN, "out of memory for the heads' importance");
        return -1;
    }
    if (given->n_heads) memcpy(hooks, given->heads, (size_t)given->n_heads * sizeof(HeadHook));
    ForwardHooks with = {hooks, given->n_heads + 1, given->residuals, given->n_residuals};
    gpt_forward(model, tokens, tokens + 1, 1, t, NULL);
    const double whole = model->loss_sum / t;
    for (int i = 0; i < heads; i++) {
        if (model->knocked_out && model->knocked_out[i]) {
            importance[i] = 0.0f;
            continue;
        }
        hooks[given->n_heads] = (HeadHook){i / c->n_head, i % c->n_head, means + (size_t)i * c->head_size, 0};
        model->hooks = &with;
        gpt_forward(model, tokens, tokens + 1, 1, t, NULL);
        importance[i] = (float)((model->loss_sum / t - whole) / M_LN2);
    }
    model->hooks = given == &none ? NULL : given;
    free(hooks);
    return 0;
}
