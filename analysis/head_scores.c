#include "head_scores.h"

#include <math.h>
#include <stdlib.h>

#include "../common/rng.h"

const char *const head_pattern_names[HEAD_PATTERNS] = {
    "previous token", "induction", "first character", "same character", "word start", "last space",
};

// Each pattern as a predicate on (query i, key j <= i): 1 where D[i][j] = 1.
typedef int (*Marked)(const HeadText *x, int i, int j);

static int previous_token(const HeadText *x, int i, int j) { return j == i - 1; }

static int after_earlier_occurrence(const HeadText *x, int i, int j) {
    return j >= 1 && j - 1 < i && x->tokens[j - 1] == x->tokens[i];
}

static int first_character(const HeadText *x, int i, int j) { return j == 0; }

static int earlier_occurrence(const HeadText *x, int i, int j) { return j < i && x->tokens[j] == x->tokens[i]; }

static int word_start(const HeadText *x, int i, int j) { return j == x->word_start[i]; }

static int last_space(const HeadText *x, int i, int j) { return j == x->last_space[i]; }

static const Marked marks[HEAD_PATTERNS] = {
    [HEAD_PREVIOUS_TOKEN] = previous_token,
    [HEAD_INDUCTION] = after_earlier_occurrence,
    [HEAD_FIRST_CHARACTER] = first_character,
    [HEAD_SAME_CHARACTER] = earlier_occurrence,
    [HEAD_WORD_START] = word_start,
    [HEAD_LAST_SPACE] = last_space,
};

int head_is_space(uint32_t cp) {
    return cp == ' ' || (cp >= 0x09 && cp <= 0x0D) || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
           (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F ||
           cp == 0x3000;
}

void head_word_starts(const uint32_t *chars, int t, int *word_start, int *last_space) {
    int space = -1;  // the last whitespace before i
    for (int i = 0; i < t; i++) {
        int is_space = head_is_space(chars[i]);
        word_start[i] = is_space ? -1 : space + 1;
        last_space[i] = space;
        if (is_space) space = i;
    }
}

// The "mul" score: the share of the attention (every row's, att holding them) on marked pairs.
double head_score(HeadPattern pattern, const float *att, const HeadText *text) {
    double hit = 0.0, all = 0.0;
    for (int i = 0; i < text->t; i++)
        for (int j = 0; j <= i; j++) {
            double w = att[(size_t)i * text->t + j];
            all += w;
            if (marks[pattern](text, i, j)) hit += w;
        }
    return all > 0.0 ? hit / all : 0.0;
}

// Whether query i has a marked key. The keys are tried from both ends inwards (0, i, 1, i - 1,
// ...): every pattern's mark sits near one end (the first character, the previous token, the
// start of the query's word), so a block-sized text costs a few keys a row, not i.
static int row_marked(Marked marked, const HeadText *x, int i) {
    for (int lo = 0, hi = i; lo <= hi; lo++, hi--)
        if (marked(x, i, lo) || marked(x, i, hi)) return 1;
    return 0;
}

double head_pattern_reach(HeadPattern pattern, const HeadText *text) {
    int rows = 0;
    for (int i = 0; i < text->t; i++) rows += row_marked(marks[pattern], text, i);
    return text->t > 0 ? (double)rows / text->t : 0.0;
}

double head_pattern_chance(HeadPattern pattern, const HeadText *text) {
    double sum = 0.0;
    for (int i = 0; i < text->t; i++) {
        int marked = 0;
        for (int j = 0; j <= i; j++) marked += marks[pattern](text, i, j);
        sum += (double)marked / (i + 1);
    }
    return text->t > 0 ? sum / text->t : 0.0;
}

double head_attention_entropy(const float *att, int t) {
    double sum = 0.0;
    for (int i = 0; i < t; i++)
        for (int j = 0; j <= i; j++) {
            double w = att[(size_t)i * t + j];
            if (w > 0.0) sum -= w * log2(w);
        }
    return t > 0 ? sum / t : 0.0;
}

int head_label(const float *score, const float *reach, const float *chance, double *strength) {
    int best = -1;
    double best_share = 0.0;
    for (int p = 0; p < HEAD_PATTERNS; p++) {
        if (!isfinite(score[p]) || !(reach[p] > chance[p])) continue;
        double share = ((double)score[p] - chance[p]) / ((double)reach[p] - chance[p]);
        if (best < 0 || share > best_share) best = p, best_share = share;
    }
    if (best >= 0 && best_share < HEAD_LABEL_MIN) best = -1;
    *strength = best < 0 ? 0.0 : best_share;
    return best;
}

int head_repeat_run(int block_size) {
    return block_size / 2 < HEAD_REPEAT_RUN ? block_size / 2 : HEAD_REPEAT_RUN;
}

void head_repeated_sequence(int *tokens, int n, int vocab_size, uint64_t seed) {
    Rng rng;
    rng_seed(&rng, seed);
    for (int i = 0; i < n; i++) {
        int token, fresh;
        do {  // a token not drawn yet, while the vocabulary has enough of them
            token = (int)rng_below(&rng, (uint64_t)vocab_size);
            fresh = 1;
            for (int k = 0; k < i && n <= vocab_size; k++) fresh &= tokens[k] != token;
        } while (!fresh);
        tokens[i] = tokens[n + i] = token;
    }
}
