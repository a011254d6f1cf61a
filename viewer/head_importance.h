// How much each attention head matters to the model's predictions on a text: the loss change
// when that head alone is knocked out (its output zeroed before the projection: GPT's
// knocked_out), in bits per character. A head the rest of the model can do without scores
// near 0; a head the model relies on (an induction head on a repeated text) scores high. It
// can be below 0: a head can hurt the prediction of one text.
#ifndef CHARGPT_HEAD_IMPORTANCE_H
#define CHARGPT_HEAD_IMPORTANCE_H

#include "../model/gpt.h"

// importance (L, H): for each head, the mean loss in bits per character of tokens[1..t] read
// from tokens[0..t) with that head knocked out as well as those the model already knocks out,
// less the loss without it (0 for a head already knocked out). 1 + L*H forwards of one
// sequence of t tokens (t <= block_size; the model's activations hold at least one): they
// leave the last one's activations. Returns 0, or -1 with err when memory runs out.
int head_importance(GPT *model, const int *tokens, int t, float *importance, char err[ERR_LEN]);
// The same with each head replaced by its mean (means (L, H, hs): analysis/head_means.h) instead
// of knocked out, the model's own hooks and knocked-out heads kept: 1 + L*H forwards (0 for a
// head the model already knocks out).
int head_importance_by_mean(GPT *model, const int *tokens, int t, const float *means, float *importance,
                            char err[ERR_LEN]);

#endif
