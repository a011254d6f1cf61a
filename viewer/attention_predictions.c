// attention_predictions: the model's next-character distribution at each position, kept
// as the surprisal of the character that came next and the few most likely characters.
#include <math.h>
#include <string.h>

#include "attention_export.h"

void attention_prediction(const float *z, int V, int next, const uint32_t *vocab_chars, AttentionPrediction *p) {
    int32_t top[ATTENTION_TOP_K], next_rank;
    float next_prob;
    memset(p, 0, sizeof(*p));
    // log p(next) and the k most likely, from the softmax in double precision (logit_lens.h)
    double log_p_next = logits_top(z, V, ATTENTION_TOP_K, next, top, p->top_prob, &next_prob, &next_rank);
    p->surprisal = (float)(-log_p_next / M_LN2);  // NaN where there is no next character
    p->k = V < ATTENTION_TOP_K ? V : ATTENTION_TOP_K;
    for (int r = 0; r < p->k; r++) p->top_char[r] = vocab_chars[top[r]];
}

void attention_predictions(const float *logits, const int *tokens, int t, int V,
                           const uint32_t *vocab_chars, AttentionPrediction *pred) {
    for (int i = 0; i < t; i++)
        attention_prediction(logits + (size_t)i * V, V, i + 1 < t ? tokens[i + 1] : -1, vocab_chars, pred + i);
}
