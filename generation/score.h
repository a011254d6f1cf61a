// Scoring a text: the model's loss on each character given the characters before it, read
// with the window policy of window.h, so a text scores as generation would read it.
//
// The first character is context only; every later one is scored. The characters predicted
// from the same window start form a segment, and one forward pass over the window, up to the
// segment's last character, gives all of the segment's predictions (causal attention: a
// position sees nothing after it). Windows of equal length run SCORE_BATCH at a time.
// Losses are the training forward pass's cross-entropy, summed in double in text order.
//
// With stride = block_size the windows are consecutive and do not overlap: [0, T), [T, 2T),
// ..., each scoring all its positions. That is the whole-split pass of the training program
// (training/evaluation.h: validation_pass), which therefore gives the same loss on the same text.
#ifndef CHARGPT_SCORE_H
#define CHARGPT_SCORE_H

#include "../model/gpt.h"

#define SCORE_BATCH 8  // windows per forward pass

typedef struct {
    long scored;      // characters scored
    double sum_nats;  // their summed loss, -ln p
} Score;

// Called for each scored character in text order: its position, its token, its loss in nats
// and the logits (V) it was predicted from. Returns 0, or -1 with err to stop scoring.
typedef int (*ScoreSink)(void *context, long position, int token, float loss, const float *logits,
                         char err[ERR_LEN]);

// Scores tokens (n >= 2) with stride (1 <= stride <= block_size). Allocates the model's
// activations for SCORE_BATCH sequences (GPT_PLAN_FORWARD). sink may be NULL. Returns 0, or -1
// with err when memory runs out, the sink stops it, or a character's loss or logits are not
// finite (before the sink sees it).
int score_tokens(GPT *model, const int *tokens, long n, int stride, ScoreSink sink, void *context, Score *score,
                 char err[ERR_LEN]);

#endif
