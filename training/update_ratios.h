// The update-to-weight ratio of each parameter group: |what the last AdamW step subtracted|
// / |the weights|, L2 norms over the group. A learning rate that is too high shows as ratios
// far above 1e-3, one that is too low far below (Karpathy's rule of thumb for Adam). The
// groups are the model's kinds of tensor (gpt.c's table: transformer.wte.weight,
// attn.c_attn.weight, ...), each over all layers. The timeline's probe records them at each
// probed step (training/probe.h).
#ifndef CHARGPT_UPDATE_RATIOS_H
#define CHARGPT_UPDATE_RATIOS_H

#include "../format/probe_file.h"
#include "../model/adamw.h"
#include "../model/gpt.h"
#include "data_parallel.h"

// The groups of a model of config c: how many (at most PROBE_MAX_GROUPS), their names.
int update_groups(const GPTConfig *c, char names[][PROBE_GROUP_NAME]);
// ratios (update_groups of them) after the step that used learning rate lr; NAN for a group
// whose weights are all 0. Collective: every process calls it after the same step (with ZeRO
// each holds the moments of its shard, and the groups' sums are added over the processes).
void update_ratios(const DataParallel *dp, const GPT *model, const AdamW *opt, float lr, float *ratios);

#endif
