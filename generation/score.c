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

// The work of a scoring, in positions run through the model, and the report it goes to.
typedef struct {
    const ScoreReport *report;
    double total, done;
} Progress;

static void progress_add(Progress *p, double positions) {
    p->done += positions;
    if (p->report && p->report->progress) p->report->progress(p->report->context, p->done, p->total);
}

// count windows have run: their positions are done.
static void passes_done(Progress *p, const ScoredWindow *windows, int count) {
    double positions = 0.0;
    for (int b = 0; b < count; b++) positions += windows[b].t;
    progress_add(p, positions);
}

// Character `position`'s loss from logits (V), added to score and given to the sink.
static int add_loss(const GPT *model, long position, int token, float loss, const float *logits,
                    const ScoreReport *report, Score *score, char err[ERR_LEN]) {
    if (!isfinite(loss) || first_nonfinite(logits, (size_t)model->config.vocab_size) >= 0) {
        snprintf(err, ERR_LEN, "the model's loss on the character at position %ld is %g: its logits are "
                 "not finite (the weights overflow float)", position, loss);
        return -1;
    }
    score->sum_nats += loss;
    score->scored++;
    return report && report->sink ? report->sink(report->context, position, token, loss, logits, err) : 0;
}

// Runs count windows of one length through the forward pass and adds up their scored rows.
static int run_windows(GPT *model, const int *tokens, const ScoredWindow *windows, int count, int *inputs,
                       int *targets, const ScoreReport *report, Score *score, char err[ERR_LEN]) {
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
                         model->acts.logits + row * V, report, score, err) != 0)
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
static int score_rolling(GPT *model, const int *tokens, long n, const ScoreReport *report, Progress *progress,
                         Score *score, char err[ERR_LEN]) {
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
        rc = add_loss(model, p + 1, tokens[p + 1], loss, logits, report, score, err);
        progress_add(progress, 1.0);
    }
    free(probs);
    kvcache_free(&cache);
    return rc;
}

// The segment after `next` (the next character to score) of windows that start at *start:
// characters next..last, all predicted from one window, which it returns; *start moves to the
// window of the segment after it.
static ScoredWindow next_segment(long *start, long next, long end, int T, int stride) {
    long last = next;
    while (last + 1 < end && window_advance(*start, last + 1, T, stride) == *start) last++;
    ScoredWindow w = {*start, (int)(last - *start), (int)(next - 1 - *start)};
    *start = window_advance(*start, last + 1, T, stride);
    return w;
}

double score_work(const GPTConfig *config, long n, int stride, int use_cache) {
    const int T = config->block_size;
    long rolled_from = score_rolls(config, stride, use_cache) && n > T + 1 ? T + 1 : n;
    double positions = 0.0;
    for (long start = 0, next = 1; next < rolled_from;) {
        ScoredWindow w = next_segment(&start, next, rolled_from, T, stride);
        positions += w.t;
        next = w.start + w.t + 1;
    }
    return positions + (double)(n - rolled_from);  // a rolling cache's step: one position each
}

int score_tokens(GPT *model, const int *tokens, long n, int stride, int use_cache, const ScoreReport *report,
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
    Progress progress = {report, score_work(&model->config, n, stride, use_cache), 0.0};
    ScoredWindow batch[SCORE_BATCH];
    int count = 0;
    for (long start = 0, next = 1; rc == 0 && next < rolled_from;) {
        ScoredWindow w = next_segment(&start, next, rolled_from, T, stride);
        if (count > 0 && (count == SCORE_BATCH || batch[0].t != w.t)) {
            rc = run_windows(model, tokens, batch, count, inputs, targets, report, score, err);
            passes_done(&progress, batch, count);
            count = 0;
        }
        batch[count++] = w;
        next = w.start + w.t + 1;
    }
    if (rc == 0 && count > 0) {
        rc = run_windows(model, tokens, batch, count, inputs, targets, report, score, err);
        passes_done(&progress, batch, count);
    }
    free(inputs);
    free(targets);
    if (rc == 0 && rolled_from < n) rc = score_rolling(model, tokens, n, report, &progress, score, err);
    return rc;
}
