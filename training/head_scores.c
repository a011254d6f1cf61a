#include "head_scores.h"

#include <math.h>
#include <stdlib.h>

#include "../model/rng.h"

// The "mul" score of a detection pattern given as a predicate on (query, key).
typedef int (*Marked)(const int *tokens, int i, int j);

static double mul_score(const float *att, const int *tokens, int t, Marked marked) {
    double hit = 0.0, all = 0.0;
    for (int i = 0; i < t; i++)
        for (int j = 0; j <= i; j++) {
            double w = att[(size_t)i * t + j];
            all += w;
            if (marked(tokens, i, j)) hit += w;
        }
    return all > 0.0 ? hit / all : 0.0;
}

static int previous_token(const int *tokens, int i, int j) { return j == i - 1; }

static int after_earlier_occurrence(const int *tokens, int i, int j) {
    return j >= 1 && j - 1 < i && tokens[j - 1] == tokens[i];
}

double head_score_previous_token(const float *att, int t) { return mul_score(att, NULL, t, previous_token); }

double head_score_induction(const float *att, const int *tokens, int t) {
    return mul_score(att, tokens, t, after_earlier_occurrence);
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
