#include "update_ratios.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../dist/dist.h"

// The group of tensor `index` (gpt_tensor_info's numbering): its name without the layer's
// "transformer.h.<i>." prefix, looked up in or added to names (count so far).
static int group_of(const GPTConfig *c, int index, char names[][PROBE_GROUP_NAME], int *count) {
    TensorInfo info;
    gpt_tensor_info(c, index, &info);
    const char *name = info.name;
    if (strncmp(name, "transformer.h.", 14) == 0) {
        const char *dot = strchr(name + 14, '.');
        if (dot) name = dot + 1;
    }
    for (int g = 0; g < *count; g++)
        if (strcmp(names[g], name) == 0) return g;
    if (*count == PROBE_MAX_GROUPS) return PROBE_MAX_GROUPS - 1;
    snprintf(names[*count], PROBE_GROUP_NAME, "%s", name);
    return (*count)++;
}

int update_groups(const GPTConfig *c, char names[][PROBE_GROUP_NAME]) {
    int count = 0;
    for (int i = 0; i < gpt_num_tensors(c); i++) group_of(c, i, names, &count);
    return count;
}

void update_ratios(const DataParallel *dp, const GPT *model, const AdamW *opt, float lr, float *ratios) {
    const GPTConfig *c = &model->config;
    char names[PROBE_MAX_GROUPS][PROBE_GROUP_NAME];
    double updates[PROBE_MAX_GROUPS] = {0}, weights[PROBE_MAX_GROUPS] = {0};
    int count = 0;
    const float *params = model->params_memory + opt->first;  // indexed as the optimizer's
    for (int i = 0; i < gpt_num_tensors(c); i++) {
        TensorInfo info;
        gpt_tensor_info(c, i, &info);
        int g = group_of(c, i, names, &count);
        updates[g] += adamw_last_update_sum_of_squares(opt, params, lr, info.offset, info.size);
        const float *w = model->params_memory + info.offset;
        for (size_t k = 0; k < info.size; k++) weights[g] += (double)w[k] * w[k];
    }
    if (dp->zero) dist_sum_doubles(updates, count);  // each process has its shard's
    for (int g = 0; g < count; g++) ratios[g] = weights[g] > 0.0 ? (float)(sqrt(updates[g]) / sqrt(weights[g])) : NAN;
}
