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
// The patterns (HeadPattern), each D[i][j] = 1 for j <= i where:
//   previous token   j = i - 1 (get_previous_token_head_detection_pattern)
//   induction        1 <= j and token j - 1 equals token i, j - 1 < i: the position right after
//                    each earlier occurrence of the query's own token
//                    (get_induction_head_detection_pattern: the duplicate-token pattern
//                    shifted one key to the right, first column 0, lower triangle kept)
//   first character  j = 0: the first position, where many heads park attention they do not
//                    use (an "attention sink")
//   same character   j < i and token j equals token i: every earlier occurrence of the query's
//                    own token (get_duplicate_token_head_detection_pattern)
//   word start       j = the first character of the query's word (the position after the last
//                    whitespace at or before i); no key for a whitespace query
//   last space       j = the last whitespace before the query (for a character of a word, the
//                    space before the word): the word boundary many character models read
//
// A head's label is its strongest pattern: the one whose score goes furthest from its chance,
// the score of an untrained head that spreads each query's attention evenly over its keys, to
// its reach, the score a head following the pattern perfectly would get on the same text (the
// share of query rows that have a marked key: 1/2 for induction on a run repeated twice,
// (t - 1) / t for the previous token): (score - chance) / (reach - chance). So patterns that
// cannot reach 1 compete fairly, and an untrained head, whatever its scores, has no label.
//
// The attention entropy of a head is the mean over its query rows of -sum_j A[i][j] log2
// A[i][j], in bits: 0 when every query looks at one key, log2(i + 1) for a uniform row i.
#ifndef CHARGPT_HEAD_SCORES_H
#define CHARGPT_HEAD_SCORES_H

#include <stdint.h>

typedef enum {
    HEAD_PREVIOUS_TOKEN,
    HEAD_INDUCTION,
    HEAD_FIRST_CHARACTER,
    HEAD_SAME_CHARACTER,
    HEAD_WORD_START,
    HEAD_LAST_SPACE,
    HEAD_PATTERNS
} HeadPattern;

// The patterns' names, as the pages show them: "previous token", "induction", ...
extern const char *const head_pattern_names[HEAD_PATTERNS];

// The text a head read: its t tokens and, for the word-start and last-space patterns, where each
// position's word starts and its last space (head_word_starts; NULL when not needed).
typedef struct {
    const int *tokens;
    const int *word_start;
    const int *last_space;
    int t;
} HeadText;

// For each position of a text of code points chars (t): word_start (t), the position of the
// first character of its word (after the last whitespace before it), or -1 for whitespace;
// last_space (t), the position of the last whitespace before it, or -1 when there is none.
void head_word_starts(const uint32_t *chars, int t, int *word_start, int *last_space);
// 1 for the whitespace characters of Unicode (space, tab, newline, CR, no-break space, ...).
int head_is_space(uint32_t cp);

// att: one head's (t, t) weights over text, row i holding keys 0..i (0 above the diagonal).
double head_score(HeadPattern pattern, const float *att, const HeadText *text);
// The score of a head that follows the pattern perfectly on text: the share of its query rows
// that have a marked key.
double head_pattern_reach(HeadPattern pattern, const HeadText *text);
// The score of a head that spreads each query's attention evenly over its keys (1 / (i + 1) on
// each of row i's), as an untrained model's heads do: the share of it the pattern's keys get by
// chance.
double head_pattern_chance(HeadPattern pattern, const HeadText *text);
double head_attention_entropy(const float *att, int t);

// The head's label from its scores and the patterns' reaches and chances (HEAD_PATTERNS each):
// the pattern with the largest (score - chance) / (reach - chance) (scores that are not finite,
// and patterns whose reach is not above their chance, left out), that share in *strength; -1
// (and *strength 0) when none is left or the largest is below HEAD_LABEL_MIN: a head that
// attends hardly otherwise than an untrained one has no pattern to name.
int head_label(const float *score, const float *reach, const float *chance, double *strength);
#define HEAD_LABEL_MIN 0.05
// A label counts as clear from this strength on: the head puts at least this share of the
// attention its pattern could take on it (below, the page shows the label as weak).
#define HEAD_LABEL_CLEAR 0.25

// The length of the run that head_repeated_sequence repeats for a block of block_size:
// min(HEAD_REPEAT_RUN, block_size / 2); 0 when block_size < 2 (no repeated run fits).
#define HEAD_REPEAT_RUN 32
int head_repeat_run(int block_size);
// tokens (2 n): n tokens drawn from a generator seeded with seed, then the same n again.
// The n are distinct when the vocabulary has that many (so that the induction pattern marks
// exactly one key per query of the second half), else drawn with replacement.
void head_repeated_sequence(int *tokens, int n, int vocab_size, uint64_t seed);

#endif
