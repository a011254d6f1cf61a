#include "score.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/clock.h"
#include "../common/finite.h"
#include "../common/platform.h"
#include "../data/corpus.h"
#include "../model/layers.h"
#include "inference.h"
#include "job.h"
#include "score_progress.h"
#include "surprisal_csv.h"
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
    // kept when the model has them (the page's inspector scores text after text: web/inspect.c)
    if (model->batch_size != SCORE_BATCH && gpt_alloc_activations(model, SCORE_BATCH, err) != 0) return -1;
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

// ----------------------------------------------------------------------------
// ./generate --score FILE: the job's stages (generation/job.h)

// --score: what each scored character does besides counting, its CSV row; and what the
// scoring shows on stderr as it goes (generation/score_progress.h).
typedef struct {
    SurprisalCsv *csv;  // or NULL
    long scored;        // characters scored so far
    double start;
    ScoreProgress progress;
} ScoreOutput;

static int on_scored(void *context, long position, int token, float loss, const float *logits, char err[ERR_LEN]) {
    ScoreOutput *out = context;
    out->scored++;
    return out->csv ? surprisal_csv_row(out->csv, position, token, loss, logits, err) : 0;
}

static void on_score_progress(void *context, double done, double total) {
    ScoreOutput *out = context;
    char text[512];
    score_progress_text(&out->progress, now_seconds() - out->start, done, total, out->scored, program_name(), text,
                        sizeof(text));
    fputs(text, stderr);
}

// The scored text's name for messages: its path, or standard input's name.
static const char *scored_text_name(const GenerateOptions *o) {
    return strcmp(o->score, "-") == 0 ? TEXT_STDIN_NAME : o->score;
}

int read_text_to_score(Job *j, char err[ERR_LEN]) {
    const GenerateOptions *o = &j->o;
    const GPTConfig *c = &j->ck.config;
    const char *name = scored_text_name(o);

    // the model's forward over SCORE_BATCH windows and their inputs and targets must fit; the
    // text may take what is left beside them and the checkpoint being read, 4 bytes a character
    // (its code points, then its tokens in their place), and is refused while it is read when
    // it holds more
    GPTMemoryPlan plan;
    gpt_memory_plan(c, SCORE_BATCH, GPT_PLAN_FORWARD, &plan);
    gpt_memory_plan_precision(&plan, c, SCORE_BATCH, GPT_PLAN_FORWARD, o->precision);
    plan.scratch += 2.0 * SCORE_BATCH * c->block_size * sizeof(int);
    if (score_rolls(c, o->stride, o->use_cache)) plan.generation = gpt_generation_floats(c, 1) * sizeof(float);
    int status = check_job_memory(j, &plan, c, "scoring a text", err);
    if (status != 0) return status;
    const char *source;
    double limit = j->memory_limit(o, &source);
    double held = gpt_memory_total(&plan) + (double)j->ck.file.file_len;
    size_t max_chars = limit > 0 ? corpus_max_chars(limit - held) : CORPUS_NO_LIMIT;
    Corpus scored;
    char pipe_into[1100], why[ERR_LEN];
    snprintf(pipe_into, sizeof(pipe_into), "%s %s --score -", program_invocation(), o->checkpoint);
    TextOptions read_as = {0, o->encoding, "scored text", pipe_into, NULL};
    int rc = strcmp(o->score, "-") == 0 ? corpus_read_as(stdin, name, &read_as, max_chars, &scored, why)
                                        : corpus_load_as(o->score, &read_as, max_chars, &scored, why);
    if (rc == -2) {
        char limit_text[32], model_text[32];
        format_bytes(limit, limit_text, sizeof(limit_text));
        format_bytes(held, model_text, sizeof(model_text));
        return error_status(err, EXIT_USAGE, "%s: scoring it, at 4 bytes a character, needs more than the %s %s (the "
                            "model and its checkpoint take %s of it)", why, limit_text, source, model_text);
    }
    if (rc != 0) return error_status(err, EXIT_DATA, "%s", why);
    // the text's memory becomes the prompt's tokens
    rc = prompt_from_chars(&j->prompt, &j->vocab, scored.text, (long)scored.len, o->skip_unknown, name, err);
    if (rc != 0) return EXIT_USAGE;
    prompt_warn_dropped(&j->prompt, name);
    const Prompt *text = &j->prompt;
    if (text->len < 2)
        return error_status(err, EXIT_DATA, "%s: %ld character%s to read: scoring needs at least 2 (the first is "
                            "context only)", name, text->len, text->len == 1 ? "" : "s");
    return 0;
}

int score_read_text(Job *j, char err[ERR_LEN]) {
    const GenerateOptions *o = &j->o;
    GPT *model = &j->model;
    const GPTConfig *c = &model->config;
    const Prompt *text = &j->prompt;
    const char *name = scored_text_name(o);
    SurprisalCsv csv;
    ScoreOutput out = {.csv = o->surprisal ? &csv : NULL, .start = now_seconds()};
    double fastest = score_work(c, text->len, c->block_size, 0) / score_work(c, text->len, o->stride, o->use_cache);
    int terminal = platform_is_terminal(STDERR_FILENO);
    score_progress_init(&out.progress, text->len - 1, terminal, omp_get_max_threads(), c->block_size, fastest);
    const ScoreReport report = {on_scored, on_score_progress, &out};
    if (o->surprisal && surprisal_csv_open(&csv, o->surprisal, j->vocab.chars, c->vocab_size, err) != 0)
        return EXIT_DATA;
    Score score;
    char why[ERR_LEN];
    int rc = score_tokens(model, text->tokens, text->len, o->stride, o->use_cache, &report, &score, why);
    if (terminal && out.progress.line_seconds >= 0.0) fprintf(stderr, "\r\033[K");
    if (rc != 0) return error_status(err, EXIT_DATA, "%s: %s", name, why);
    if (o->surprisal && (rc = surprisal_csv_commit(&csv, o->force, err)) != 0)
        return rc == ATOMIC_FILE_EXISTS ? EXIT_USAGE : EXIT_DATA;
    double nats = score.sum_nats / score.scored;
    printf("%s: %ld characters scored (block size %d, stride %d%s%s%s%s%s): %.6f nats/char, %.6f bits/char, perplexity "
           "%.4f\n", name, score.scored, c->block_size, o->stride,
           score_rolls(c, o->stride, o->use_cache) ? ", rolling cache" : "", o->ablate ? ", heads knocked out " : "",
           o->ablate ? o->ablate : "", o->ablate_mean ? ", heads replaced by their mean " : "",
           o->ablate_mean ? o->ablate_mean : "", nats, nats / M_LN2, exp(nats));
    if (j->flush_stdout(err) != 0) return EXIT_DATA;
    if (o->surprisal) fprintf(stderr, "surprisal of %ld characters written to %s\n", score.scored, o->surprisal);
    return 0;
}
