// attention_predictions: the model's next-character distribution at each position, kept
// as the surprisal of the character that came next and the few most likely characters.
#include <math.h>
#include <string.h>

#include "attention_export.h"

void attention_prediction(const float *z, int V, int next, const uint32_t *vocab_chars, AttentionPrediction *p) {
    int k = V < ATTENTION_TOP_K ? V : ATTENTION_TOP_K;
    // log p(v) = z_v - log sum_u exp(z_u), the largest z taken out to stay in range
    double max = z[0];
    for (int v = 1; v < V; v++)
        if (z[v] > max) max = z[v];
    double sum = 0.0;
    for (int v = 0; v < V; v++) sum += exp(z[v] - max);
    double log_norm = max + log(sum);

    // the k largest logits, by insertion into a list kept sorted; a tie does not move
    // past an earlier entry, so lower token ids come first
    int top[ATTENTION_TOP_K], n = 0;
    for (int v = 0; v < V; v++) {
        if (n == k && !(z[v] > z[top[k - 1]])) continue;
        int at = n < k ? n++ : k - 1;
        while (at > 0 && z[v] > z[top[at - 1]]) {
            top[at] = top[at - 1];
            at--;
        }
        top[at] = v;
    }

    memset(p, 0, sizeof(*p));
    p->surprisal = next >= 0 ? (float)((log_norm - z[next]) / M_LN2) : NAN;
    p->k = k;
    for (int r = 0; r < k; r++) {
        p->top_char[r] = vocab_chars[top[r]];
        p->top_prob[r] = (float)exp(z[top[r]] - log_norm);
    }
}

void attention_predictions(const float *logits, const int *tokens, int t, int V,
                           const uint32_t *vocab_chars, AttentionPrediction *pred) {
    for (int i = 0; i < t; i++)
        attention_prediction(logits + (size_t)i * V, V, i + 1 < t ? tokens[i + 1] : -1, vocab_chars, pred + i);
}
