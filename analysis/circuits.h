// Circuits read from the weights alone, no text: what each attention head would do to any
// input, as Elhage et al.'s "A Mathematical Framework for Transformer Circuits" (Anthropic,
// 2021) reads them and TransformerLens computes them. Conventions (x W, a row vector times a
// matrix): head h of layer l has W_Q, W_K, W_V (C x hs: the columns of c_attn's weight that
// make its queries, keys and values) and W_O (hs x C: its columns of c_proj's weight); the
// unembedding is W_U = W_E^T (C x V, the tied head), W_E the token embedding (V x C), W_pos
// the position embedding (T x C). Biases are left out and nothing is centred.
//
//   OV circuit      W_E diag(g1) W_V W_O diag(gf) W_U (V x V): row a, what attending to
//                   character a adds to each character's logit; g1 the layer's ln_1 scale, gf
//                   ln_f's (ov_raw: TransformerLens's W_E W_V W_O W_U with fold_ln's scales).
//                   ov reads it from the extended embedding instead of W_E: each character's
//                   embedding plus the mean of W_pos's rows, passed through the MLPs of the
//                   layers below the head (each after its ln_2, the attention left out), then
//                   through the head's own ln_1 whole (scale and bias); times W_V W_O diag(gf)
//                   W_U. In a model with MLPs the raw circuit can say the opposite of what the
//                   head does: the first MLP rewrites the tokens the later heads read.
//   copying score   sum of the circuit's eigenvalues / sum of their moduli: 1 when every
//                   eigenvalue is positive (attending to a character raises its own logit),
//                   -1 when every one is negative. The V x V circuit is P Q, P = X W_V (V x hs)
//                   and Q = W_O W_U (hs x V); P Q and Q P have the same non-zero eigenvalues, so
//                   the smaller of the two is the one solved (analysis/eigen.h).
//   diagonal share  the share of characters a whose own logit is the largest of row a (ties
//                   counted as not).
//   QK circuits     over characters, W_E diag(g1) W_Q (W_E diag(g1) W_K)^T (V x V, raw): the
//                   score q.k a query of character a gives a key of character b; over
//                   positions, W_pos diag(g1) W_Q (W_pos diag(g1) W_K)^T (T x T, raw): the score
//                   of query position i for key position j. Neither divided by sqrt(hs). Their
//                   extended forms read the rows as the head sees them instead: the characters'
//                   extended embedding above, and each position's embedding plus the mean of
//                   W_E's rows passed the same way, times the unscaled W_Q and W_K. The raw
//                   positional circuit is faint (W_pos's rows are small beside a LayerNorm's
//                   output); the extended one shows layer 0's previous-token heads, whose
//                   queries at i score key i - 1 highest. A RoPE model (no W_pos) has no
//                   positional circuit, and its character circuits are those of a query and
//                   key at the same position.
//   composition     how much head B of a later layer reads what head A writes: with W_A = A's
//                   diag(g1) W_V W_O (C x C),
//                       score = |W_A W_B|_F / (|W_A|_F |W_B|_F),
//                   W_B = B's diag(g1) W_Q (diag(g1) W_K)^T (Q-composition: A's output read by
//                   B's queries), its transpose (K-composition: by B's keys) or B's diag(g1) W_V
//                   W_O (V-composition), each layer's own g1. The baseline is the mean score of
//                   the same product for random matrices of the same shapes, (C x hs)(hs x C)
//                   each, entries N(0, 1), drawn from a seeded generator. Scores of a weak
//                   instrument: a pair that matters may score near the baseline (patching,
//                   analysis/patching.h, tells).
#ifndef CHARGPT_CIRCUITS_H
#define CHARGPT_CIRCUITS_H

#include <stdint.h>

#include "../model/gpt.h"

// Random pairs the composition baseline averages over.
#define COMPOSITION_BASELINE_SAMPLES 200

typedef struct {
    int n_layer, n_head, vocab_size;  // L, H, V
    int positions;                    // T, the rows of W_pos; 0 for a RoPE model (no qk_positions)
    float *ov;                        // (L, H, V, V) from the extended embedding
    float *ov_raw;                    // (L, H, V, V) from W_E
    double *ov_copying_score;         // (L, H) of ov (NaN for a circuit of 0)
    double *ov_copying_score_raw;     // (L, H) of ov_raw
    double *ov_diagonal_share;        // (L, H) of ov
    double *ov_diagonal_share_raw;    // (L, H) of ov_raw
    float *qk_positions;              // (L, H, T, T) from the extended embeddings; NULL for RoPE
    float *qk_positions_raw;          // (L, H, T, T) from W_pos; NULL for RoPE
    float *qk_characters;             // (L, H, V, V) from the extended embeddings
    float *qk_characters_raw;         // (L, H, V, V) from W_E
    // (L, H, L, H): [l1][h1][l2][h2] the score of head (l1, h1) into head (l2, h2), 0 unless l2 > l1
    double *composition_q, *composition_k, *composition_v;
    double composition_baseline;
    uint64_t baseline_seed;
    void *memory;
} Circuits;

// The bytes circuits_compute allocates for a model of config c, those it keeps and those it
// frees before it returns.
double circuits_bytes(const GPTConfig *c);

// Computes every circuit of model's weights, the composition baseline from seed. Returns 0,
// or -1 with err when memory runs out or an eigenvalue solve fails.
int circuits_compute(Circuits *out, const GPT *model, uint64_t seed, char err[ERR_LEN]);
void circuits_free(Circuits *c);

// The parts the tests check on their own:
// sum re / sum |re + i im| over n eigenvalues (NaN when all are 0).
double copying_score(const double *re, const double *im, int n);
// The copying score of the V x V matrix P Q, P (V x r), Q (r x V), both row-major, solving the
// smaller of P Q and Q P. Returns 0, or -1 when memory runs out or the solve fails.
int product_copying_score(const double *p, const double *q, int V, int r, double *score);
// |A1 A2 B1 B2|_F / (|A1 A2|_F |B1 B2|_F) for A1, B1 (C x r) and A2, B2 (r x C), row-major,
// without forming a C x C matrix: from r x r products (|X|_F^2 = tr(X^T X)); NaN when a norm
// is 0. Returns 0, or -1 when memory runs out.
int composition_score(const double *a1, const double *a2, const double *b1, const double *b2, int C, int r,
                      double *score);
// The mean composition score of `samples` random pairs of (C x r)(r x C) products, entries
// N(0, 1) from a generator seeded with seed (rng.h), drawn A1, A2, B1, B2 in turn, each row by
// row. Returns 0, or -1 when memory runs out.
int composition_baseline(int C, int r, int samples, uint64_t seed, double *mean);

#endif
