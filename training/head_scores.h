// What each attention head does, measured on its attention pattern over a sequence the
// way TransformerLens's head detector measures it (transformer_lens/head_detector.py:
// detect_head with its default error_measure "mul", exclude_bos and exclude_current_token
// off): a detection pattern D (t, t) of ones and zeros marks the query-key pairs a head of
// that kind attends to, and the head's score is
//     sum over i, j of A[i][j] D[i][j]  /  sum over i, j of A[i][j],
// the share of the head's attention that falls on those pairs, counted over every query
// position i and every key j <= i. Each row of A sums to 1, so the denominator is t and a
// query row with no marked key (the first position, or in the first half of a repeated
// sequence) counts as 0: on a run repeated twice a perfect induction head scores 1/2, a
// perfect previous-token head (t - 1) / t.
//
//   previous-token:  D[i][i-1] = 1 (get_previous_token_head_detection_pattern)
//   induction:       D[i][j] = 1 for 1 <= j <= i when token j - 1 equals token i and j - 1 < i:
//                    the position right after each earlier occurrence of the query's own
//                    token (get_induction_head_detection_pattern: the duplicate-token pattern
//                    shifted one key to the right, first column 0, lower triangle kept)
//
// The attention entropy of a head is the mean over its query rows of -sum_j A[i][j] log2
// A[i][j], in bits: 0 when every query looks at one key, log2(i + 1) for a uniform row i.
#ifndef CHARGPT_HEAD_SCORES_H
#define CHARGPT_HEAD_SCORES_H

#include <stdint.h>

// att: one head's (t, t) weights, row i holding keys 0..i (0 above the diagonal).
double head_score_previous_token(const float *att, int t);
// tokens: the t tokens the head read.
double head_score_induction(const float *att, const int *tokens, int t);
double head_attention_entropy(const float *att, int t);

// The length of the run that head_repeated_sequence repeats for a block of block_size:
// min(HEAD_REPEAT_RUN, block_size / 2); 0 when block_size < 2 (no repeated run fits).
#define HEAD_REPEAT_RUN 32
int head_repeat_run(int block_size);
// tokens (2 n): n tokens drawn from a generator seeded with seed, then the same n again.
// The n are distinct when the vocabulary has that many (so that the induction pattern marks
// exactly one key per query of the second half), else drawn with replacement.
void head_repeated_sequence(int *tokens, int n, int vocab_size, uint64_t seed);

#endif
