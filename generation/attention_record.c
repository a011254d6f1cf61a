#include "attention_record.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../analysis/attribution.h"
#include "../analysis/head_importance.h"
#include "../analysis/head_scores.h"
#include "../common/finite.h"
#include "../viewer/attention_export.h"
#include "job.h"

// What is recorded over a window of t characters, in one allocation.
typedef struct {
    float *att;        // (L, H, t, t)
    float *qkv;        // (L, t, 3A)
    float *out;        // (L, t, A)
    float *scores;     // (L, H, HEAD_PATTERNS)
    float *strength;   // (L, H)
    float *importance; // (L, H) bits per character (analysis/head_importance.h)
    float *importance_mean;  // (L, H) the same by the mean
    float reach[HEAD_PATTERNS], chance[HEAD_PATTERNS];
    int *label;        // (L, H)
    int *next;         // (t) each position's next token, -1 at the last
    int *word_start;   // (t)
    int *last_space;   // (t)
    uint32_t *chars;   // (t)
    AttentionPrediction *pred;  // (t)
    void *memory;
} Recording;

#define RECORDING_PARTS 13

// The sizes of Recording's arrays in bytes, in its order.
static void recording_sizes(const GPTConfig *c, int t, size_t sizes[RECORDING_PARTS]) {
    size_t heads = (size_t)c->n_layer * c->n_head, A = (size_t)c->n_head * c->head_size;
    size_t rows = (size_t)c->n_layer * t;
    size_t floats[7] = {heads * t * t, rows * 3 * A, rows * A, heads * HEAD_PATTERNS, heads, heads, heads};
    for (int k = 0; k < 7; k++) sizes[k] = floats[k] * sizeof(float);
    sizes[7] = heads * sizeof(int);
    for (int k = 8; k < 11; k++) sizes[k] = (size_t)t * sizeof(int);
    sizes[11] = (size_t)t * sizeof(uint32_t), sizes[12] = (size_t)t * sizeof(AttentionPrediction);
}

double attention_record_memory(const GPTConfig *c, int t) {
    size_t sizes[RECORDING_PARTS];
    recording_sizes(c, t, sizes);
    // the logit lens, the attribution, and head_importance's edits, beside at most every head
    // --ablate knocks out
    double bytes = logit_lens_bytes(c, t) + logit_attribution_bytes(c, t) + head_importance_memory(c->n_layer * c->n_head);
    for (int k = 0; k < RECORDING_PARTS; k++) bytes += (double)sizes[k] + 15;
    return bytes;
}

static int recording_alloc(Recording *r, const GPTConfig *c, int t) {
    size_t sizes[RECORDING_PARTS], at[RECORDING_PARTS + 1] = {0};  // each part 16-byte aligned
    recording_sizes(c, t, sizes);
    for (int k = 0; k < RECORDING_PARTS; k++) at[k + 1] = at[k] + (sizes[k] + 15) / 16 * 16;
    char *m = r->memory = malloc(at[RECORDING_PARTS]);
    if (!m) return -1;
    r->att = (float *)(m + at[0]), r->qkv = (float *)(m + at[1]), r->out = (float *)(m + at[2]);
    r->scores = (float *)(m + at[3]), r->strength = (float *)(m + at[4]), r->importance = (float *)(m + at[5]);
    r->importance_mean = (float *)(m + at[6]);
    r->label = (int *)(m + at[7]);
    r->next = (int *)(m + at[8]), r->word_start = (int *)(m + at[9]), r->last_space = (int *)(m + at[10]);
    r->chars = (uint32_t *)(m + at[11]), r->pred = (AttentionPrediction *)(m + at[12]);
    return 0;
}

// Copies the last forward's weights, vectors and outputs of every layer (its first sequence of t
// positions) into r.
static void copy_layers(Recording *r, const GPT *model, int t) {
    const GPTConfig *c = &model->config;
    size_t per_layer = (size_t)c->n_head * t * t, A = (size_t)c->n_head * c->head_size;
    for (int l = 0; l < c->n_layer; l++) {
        memcpy(r->att + l * per_layer, gpt_attention_weights(model, l), per_layer * sizeof(float));
        memcpy(r->qkv + l * t * 3 * A, gpt_qkv(model, l), (size_t)t * 3 * A * sizeof(float));
        memcpy(r->out + l * t * A, gpt_attention_output(model, l), (size_t)t * A * sizeof(float));
    }
}

// Each head's scores on the window, the patterns' reach and chance on it and each head's label.
static void score_heads(Recording *r, const GPTConfig *c, const int *window, int t) {
    HeadText text = {window, r->word_start, r->last_space, t};
    for (int p = 0; p < HEAD_PATTERNS; p++) {
        r->reach[p] = (float)head_pattern_reach((HeadPattern)p, &text);
        r->chance[p] = (float)head_pattern_chance((HeadPattern)p, &text);
    }
    for (int index = 0; index < c->n_layer * c->n_head; index++) {
        float *scores = r->scores + (size_t)index * HEAD_PATTERNS;
        for (int p = 0; p < HEAD_PATTERNS; p++)
            scores[p] = (float)head_score((HeadPattern)p, r->att + (size_t)index * t * t, &text);
        double strength;
        r->label[index] = head_label(scores, r->reach, r->chance, &strength);
        r->strength[index] = (float)strength;
    }
}

int attention_record(GPT *model, const Vocab *vocab, const int *text, long len, const AttentionExtras *extras,
                     const char *const *paths, int n, int replace, int *written, char err[ERR_LEN]) {
    static const AttentionExtras none = {0};
    if (!extras) extras = &none;
    const GPTConfig *c = &model->config;
    int t = len < c->block_size ? (int)len : c->block_size;
    const int *window = text + len - t;
    *written = 0;
    gpt_forward(model, window, NULL, 1, t, NULL);
    long bad = first_nonfinite(model->acts.logits, (size_t)t * c->vocab_size);
    if (bad >= 0) {
        snprintf(err, ERR_LEN, "--attention: the model's logits at position %ld of the text are not finite (%g for "
                 "token %ld): its weights overflow float", bad / c->vocab_size, model->acts.logits[bad],
                 bad % c->vocab_size);
        return EXIT_DATA;
    }
    Recording r;
    LogitLens lens = {0};
    LogitAttribution split = {0};
    int rc = -1;
    snprintf(err, ERR_LEN, "out of memory for the attention recorded");
    if (recording_alloc(&r, c, t) == 0 && logit_lens_init(&lens, c, t, err) == 0 &&
        logit_attribution_init(&split, c, t, err) == 0) {
        copy_layers(&r, model, t);
        for (int i = 0; i < t; i++) r.chars[i] = vocab->chars[window[i]];
        for (int i = 0; i < t; i++) r.next[i] = i + 1 < t ? window[i + 1] : -1;
        attention_predictions(model->acts.logits, window, t, c->vocab_size, vocab->chars, r.pred);
        logit_attribution_compute(&split, model, r.next);
        logit_lens_compute(&lens, model, r.next);
        head_word_starts(r.chars, t, r.word_start, r.last_space);
        score_heads(&r, c, window, t);
        // last: its forwards, each with one more head knocked out, overwrite the activations
        for (int i = 0; i < c->n_layer * c->n_head; i++) r.importance[i] = r.importance_mean[i] = NAN;
        int measured = extras->skip_importance || t < 2 ||
                       (head_importance(model, window, t - 1, r.importance, err) == 0 &&
                        (!extras->head_means || head_importance_by_mean(model, window, t - 1, extras->head_means,
                                                                        r.importance_mean, err) == 0));
        AttentionLens shown = {lens.rows, lens.cells, vocab->chars};
        AttentionVectors vectors = {c->head_size, r.qkv, r.out};
        AttentionHeads heads = {HEAD_PATTERNS, head_pattern_names, r.reach, r.chance, r.scores, r.label, r.strength,
                                HEAD_LABEL_CLEAR, r.importance, extras->head_means ? r.importance_mean : NULL,
                                extras->means_over};
        AttentionAttribution attribution = {&split, vocab->chars};
        AttentionPatching patching = {extras->patching, extras->corrupted, vocab->chars};
        Attention a = {r.chars, t, c->n_layer, c->n_head, r.att, r.pred, &shown, &vectors, &heads, &attribution,
                       extras->patching ? &patching : NULL};
        rc = measured ? 0 : -1;
        for (int i = 0; i < n && rc == 0; i++)
            if ((rc = attention_export(paths[i], &a, replace, err)) == 0) (*written)++;
    }
    free(r.memory);
    logit_lens_free(&lens);
    logit_attribution_free(&split);
    return rc == 0 ? 0 : rc == -2 ? EXIT_USAGE : EXIT_DATA;
}

// ----------------------------------------------------------------------------
// ./generate --attention: the job's stage (generation/job.h)

int record_attention(Job *j, const int *text, long len, const Patching *patching, char err[ERR_LEN]) {
    const GenerateOptions *o = &j->o;
    AttentionExtras extras = {.head_means = j->head_means, .means_over = j->reference_name, .patching = patching,
                             .corrupted = j->corrupted.tokens};
    int written, status = attention_record(&j->model, &j->vocab, text, len, &extras, o->attention, o->num_attention,
                                           o->force, &written, err);
    const GPTConfig *c = &j->model.config;
    int t = len < c->block_size ? (int)len : c->block_size;
    for (int i = 0; i < written; i++)
        fprintf(stderr, "attention of %d layers x %d heads over %d characters written to %s\n", c->n_layer, c->n_head,
                t, o->attention[i]);
    return status;
}
