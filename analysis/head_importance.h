// How much each attention head matters to the model's predictions on a text: the loss change
// when that head alone is knocked out (its output zeroed before the projection: a hook of the
// model's forward, model/gpt.h's ForwardHooks), in bits per character. A head the rest of the
// model can do without scores near 0; a head the model relies on (an induction head on a
// repeated text) scores high. It can be below 0: a head can hurt the prediction of one text.
#ifndef CHARGPT_HEAD_IMPORTANCE_H
#define CHARGPT_HEAD_IMPORTANCE_H

#include "../model/gpt.h"

// importance (L, H): for each head, the mean loss in bits per character of tokens[1..t] read
// from tokens[0..t) with that head knocked out on top of the model's own hooks, less the loss
// with its hooks alone (0 for a head they knock out already). 1 + L*H forwards of one sequence
// of t tokens (t <= block_size; the model's activations hold at least one): they leave the
// last one's activations, and the model's hooks as they were. Returns 0, or -1 with err when
// memory runs out.
int head_importance(GPT *model, const int *tokens, int t, float *importance, char err[ERR_LEN]);
// The same with each head replaced by its mean output (means (L, H, hs): analysis/head_means.h)
// instead of knocked out: ablation by the mean.
int head_importance_by_mean(GPT *model, const int *tokens, int t, const float *means, float *importance,
                            char err[ERR_LEN]);
// The memory head_importance allocates for a model whose hooks edit given_heads heads' outputs.
double head_importance_memory(int given_heads);

#endif
