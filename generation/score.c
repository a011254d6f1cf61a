#include "score.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/finite.h"
#include "../model/layers.h"
#include "inference.h"
#include "window.h"

// A window [start, start + t) whose rows [first_row, t) score characters start + first_row + 1
// to start + t.
typedef struct {
    long start;
    int t;
    int first_row;
} ScoredWindow;

// Character `position`'s loss from logits (V), added to score and given to the sink.
static int add_loss(const GPT *model, long position, int token, float loss, const float *logits, ScoreSink sink,
                    void *context, Score *score, char err[ERR_LEN]) {
    if (!isfinite(loss) || first_nonfinite(logits, (size_t)model->config.vocab_size) >= 0) {
        snprintf(err, ERR_LEN, "the model's loss on the character at position %ld is %g: its logits are "
                 "not finite (the weights overflow float)", position, loss);
        return -1;
    }
    score->sum_nats += loss;
    score->scored++;
    return sink ? sink(context, position, token, loss, logits, err) : 0;
}

// Runs count windows of one length through the forward pass and adds up their scored rows.
static int run_windows(GPT *model, const int *tokens, const ScoredWindow *windows, int count, int *inputs,
                       int *targets, ScoreSink sink, void *context, Score *score, char err[ERR_LEN]) {
    const int t = windows[0].t, V = model->config.vocab_size;
    for (int b = 0; b < count; b++) {
        memcpy(inputs + (size_t)b * t, tokens + windows[b].start, (size_t)t * sizeof(int));
        memcpy(targets + (size_t)b * t, tokens + windows[b].start + 1, (size_t)t * sizeof(int));
    }
    gpt_forward(model, inputs, targets, count, t, NULL);
    for (int b = 0; b < count; b++) {
        for (int r = windows[b].first_row; r < t; r++) {
            size_t row = (size_t)b * t + r;
            if (add_loss(model, windows[b].start + r + 1, targets[row], model->acts.losses[row],
                         model->acts.logits + row * V, sink, context, score, err) != 0)
                return -1;
        }
    }
    return 0;
}

int score_rolls(const GPTConfig *config, int stride, int use_cache) {
    return config->position == POSITION_ROPE && stride == 1 && use_cache;
}

// Characters [T + 1, n) of a text whose first T + 1 are scored: the window [0, T) prefilled
// into a rolling cache, then character p + 1 predicted by a cached step over character p.
static int score_rolling(GPT *model, const int *tokens, long n, ScoreSink sink, void *context, Score *score,
                         char err[ERR_LEN]) {
    const int T = model->config.block_size, V = model->config.vocab_size;
    KVCache cache;
    if (kvcache_init(&cache, model, 1, err) != 0) return -1;
    float *probs = malloc((size_t)V * sizeof(float)), loss;
    int rc = 0;
    if (!probs) {
        snprintf(err, ERR_LEN, "out of memory for the probabilities of %d characters", V);
        rc = -1;
    }
    if (rc == 0) kvcache_prefill(&cache, tokens, 0, T);
    for (long p = T; rc == 0 && p + 1 < n; p++) {
        const float *logits = kvcache_step(&cache, tokens + p);
        crossentropy_forward(&loss, probs, logits, tokens + p + 1, 1, V);
        rc = add_loss(model, p + 1, tokens[p + 1], loss, logits, sink, context, score, err);
    }
    free(probs);
    kvcache_free(&cache);
    return rc;
}

int score_tokens(GPT *model, const int *tokens, long n, int stride, int use_cache, ScoreSink sink, void *context,
                 Score *score, char err[ERR_LEN]) {
    const int T = model->config.block_size;
    memset(score, 0, sizeof(*score));
    // a rolling cache takes over after the first window
    long rolled_from = score_rolls(&model->config, stride, use_cache) && n > T + 1 ? T + 1 : n;
    if (gpt_alloc_activations(model, SCORE_BATCH, err) != 0) return -1;
    int *inputs = malloc((size_t)SCORE_BATCH * T * sizeof(int));
    int *targets = malloc((size_t)SCORE_BATCH * T * sizeof(int));
    int rc = 0;
    if (!inputs || !targets) {
        snprintf(err, ERR_LEN, "out of memory for %d windows of %d characters", SCORE_BATCH, T);
        rc = -1;
    }
    ScoredWindow batch[SCORE_BATCH];
    int count = 0;
    long start = 0, next = 1;  // the window's start, and the next character to score
    while (rc == 0 && next < rolled_from) {
        // the segment: characters next..last, all predicted from windows that start at `start`
        long last = next;
        while (last + 1 < rolled_from && window_advance(start, last + 1, T, stride) == start) last++;
        ScoredWindow w = {start, (int)(last - start), (int)(next - 1 - start)};
        if (count > 0 && (count == SCORE_BATCH || batch[0].t != w.t)) {
            rc = run_windows(model, tokens, batch, count, inputs, targets, sink, context, score, err);
            count = 0;
        }
        batch[count++] = w;
        start = window_advance(start, last + 1, T, stride);
        next = last + 1;
    }
    if (rc == 0 && count > 0) rc = run_windows(model, tokens, batch, count, inputs, targets, sink, context, score, err);
    free(inputs);
    free(targets);
    if (rc == 0 && rolled_from < n) rc = score_rolling(model, tokens, n, sink, context, score, err);
    return rc;
}
