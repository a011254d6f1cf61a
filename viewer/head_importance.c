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
