// The logit lens: what the model would predict if it stopped after a block. The residual
// stream after block l (and, first, the embeddings alone) goes through the final LayerNorm
// and the tied output head (model/gpt.h: gpt_unembed), as the last block's output does in the
// forward, and gives a distribution over
// the next character at every position. Its grid, rows = the embeddings and each block in
// turn, columns = positions, shows at which depth the model "knows" the next character; the
// last row is the model's own prediction.
#ifndef CHARGPT_LOGIT_LENS_H
#define CHARGPT_LOGIT_LENS_H

#include <stdint.h>

#include "../model/gpt.h"

#define LOGIT_LENS_TOP 3

// One row and position: the most likely next tokens, and the true next one's probability
// and rank (1: the most likely) where it is known.
typedef struct {
    int32_t top[LOGIT_LENS_TOP];  // token ids, most likely first (ties: lower id first)
    float top_prob[LOGIT_LENS_TOP];
    float next_prob;              // NAN where the next token is unknown
    int32_t next_rank;            // 0 where it is unknown
} LensCell;

typedef struct {
    int rows;         // n_layer + 1: row 0 the embeddings, row l + 1 after block l
    int t;            // positions
    int k;            // entries of top held: min(LOGIT_LENS_TOP, V)
    LensCell *cells;  // (rows, t)
    // scratch for one row: the final LayerNorm's output (t, C), its mean and rstd (t), and
    // the logits (t, V), which after logit_lens_compute hold the last row's
    float *ln, *mean, *rstd, *logits;
} LogitLens;

// Allocates a lens for t positions of a model of config c. Returns 0, or -1 with err.
int logit_lens_init(LogitLens *lens, const GPTConfig *c, int t, char err[ERR_LEN]);
void logit_lens_free(LogitLens *lens);
// The bytes logit_lens_init allocates.
double logit_lens_bytes(const GPTConfig *c, int t);

// Fills the lens from the model's last forward (its residual streams), over one sequence of
// lens->t tokens (its first row of the batch); next (t) holds each position's next token, or
// -1 where it is unknown.
void logit_lens_compute(LogitLens *lens, GPT *model, const int *next);

// From logits z (V): the k most likely tokens (top, ties: lower id first; -1 past V) with
// their probabilities, and the probability and rank (1: the most likely; ties: lower id
// first) of token `next`; returns ln p(next). next -1 (unknown): *next_prob NAN, *next_rank 0,
// and NAN returned. Probabilities are a softmax in double precision.
double logits_top(const float *z, int V, int k, int next, int32_t *top, float *top_prob, float *next_prob,
                  int32_t *next_rank);
// One lens cell from one row's logits z (V), logits_top with k = LOGIT_LENS_TOP.
void logit_lens_cell(const float *z, int V, int next, LensCell *cell);

#endif
