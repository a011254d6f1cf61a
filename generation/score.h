// Scoring a text: the model's loss on each character given the characters before it, read
// with the window policy of window.h, so a text scores as generation would read it.
//
// The first character is context only; every later one is scored. The characters predicted
// from the same window start form a segment, and one forward pass over the window, up to the
// segment's last character, gives all of the segment's predictions (causal attention: a
// position sees nothing after it). Windows of equal length run SCORE_BATCH at a time.
// Losses are the training forward pass's cross-entropy, summed in double in text order.
//
// A RoPE model with stride 1 and its cache reads on past the block with a rolling cache
// (generation/inference.h): after the first window each character is one cached step, whose
// attention sees the last block_size positions in every layer (so a deeper layer's cached keys
// carry what their positions saw before the window: not exactly the full window's forward).
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

// What scoring tells its caller as it goes (a NULL field is not called): each scored character
// (sink), and after each forward pass the work done and the work in all (progress), counted in
// positions run through the model, as score_work counts them.
typedef struct {
    ScoreSink sink;
    void (*progress)(void *context, double done, double total);
    void *context;
} ScoreReport;

// Scores tokens (n >= 2) with stride (1 <= stride <= block_size); use_cache 1 lets a RoPE
// model with stride 1 roll its cache (score_rolls). Allocates the model's activations for
// SCORE_BATCH sequences (GPT_PLAN_FORWARD), and a rolling cache's for one sample
// (GPT_PLAN_GENERATION of 1). report may be NULL. Returns 0, or -1 with err when memory runs
// out, the sink stops it, or a character's loss or logits are not finite (before the sink
// sees it).
int score_tokens(GPT *model, const int *tokens, long n, int stride, int use_cache, const ScoreReport *report,
                 Score *score, char err[ERR_LEN]);

// The work of scoring n tokens so: the positions the forward passes run, a window of t
// positions counting t and a rolling cache's step 1. A pass's time is about proportional to
// its positions, so the share of this done is the share of the time spent.
double score_work(const GPTConfig *config, long n, int stride, int use_cache);

// 1 when score_tokens reads past the block with a rolling cache.
int score_rolls(const GPTConfig *config, int stride, int use_cache);

#endif
