// Ablation by the mean: a head's output replaced by its mean over a reference text, as the
// literature prefers to zeroing it (a head's output is rarely near 0; its mean is what the
// rest of the model is used to seeing when the head says nothing in particular). The text is
// cut into windows of block_size tokens, each run through the model from its start (the last
// window holds the rest); a head's mean is over every position of every window, taken on the
// model as it is, without its hooks (knocked-out heads, other means).
#ifndef CHARGPT_HEAD_MEANS_H
#define CHARGPT_HEAD_MEANS_H

#include "../model/gpt.h"

// means (L, H, hs): every head's mean output over tokens (len >= 1; the model's activations
// hold batch_size sequences, run at a time). Returns 0, or -1 with err when memory runs out or
// len < 1.
// It leaves the last window's activations.
int head_means(GPT *model, const int *tokens, long len, float *means, char err[ERR_LEN]);

// The edits (model/gpt.h's hooks) that replace each head flagged in flags (L, H) by its mean,
// one row at every position: writes them to edits (room for L H) and returns how many.
int head_means_edits(const GPTConfig *c, const float *means, const unsigned char *flags, ActivationEdit *edits);

#endif
