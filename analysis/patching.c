#include "patching.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// The clean run's outputs and streams, and the hooks of a patched run.
typedef struct {
    float *heads;     // (L, t, A) every head's output at every position
    float *streams;   // (L + 1, t, C) the residual stream entering each block and ln_f
    unsigned char *at;  // (t) the one position a stream is patched at
    ActivationEdit *head_edits;      // the model's own, then the patch's
    ActivationEdit *residual_edits;  // the same
    ForwardHooks hooks;
} CleanRecord;

static size_t record_floats(const GPTConfig *c, int t) {
    return (size_t)t * ((size_t)c->n_layer * c->n_head * c->head_size + (size_t)(c->n_layer + 1) * c->n_embd);
}

double patching_bytes(const GPTConfig *c, int t) {
    return (double)record_floats(c, t) * sizeof(float) +
           ((double)c->n_layer * c->n_head + (double)(c->n_layer + 1) * t) * sizeof(double) + t;
}

// The last position's most likely token (the first of equal logits) of the last forward.
static int last_top(const GPT *model, int t) {
    const int V = model->config.vocab_size;
    const float *z = model->acts.logits + (size_t)(t - 1) * V;
    int best = 0;
    for (int v = 1; v < V; v++)
        if (z[v] > z[best]) best = v;
    return best;
}

// logit(a) - logit(b) at the last position of the last forward
static double last_difference(const GPT *model, int t, int a, int b) {
    const float *z = model->acts.logits + (size_t)(t - 1) * model->config.vocab_size;
    return (double)z[a] - z[b];
}

// Copies the clean run's activations into r.
static void record_clean(CleanRecord *r, const GPT *model, int t) {
    const GPTConfig *c = &model->config;
    const size_t A = (size_t)c->n_head * c->head_size, C = c->n_embd;
    for (int l = 0; l < c->n_layer; l++)
        memcpy(r->heads + (size_t)l * t * A, gpt_attention_output(model, l), (size_t)t * A * sizeof(float));
    for (int l = 0; l <= c->n_layer; l++)
        memcpy(r->streams + (size_t)l * t * C, gpt_residual_stream(model, l), (size_t)t * C * sizeof(float));
}

// The corrupted run with the hooks r holds; returns the share of the difference it restores.
static double patched_share(Patching *p, CleanRecord *r, GPT *model, const int *corrupted, int t) {
    model->hooks = &r->hooks;
    gpt_forward(model, corrupted, NULL, 1, t, NULL);
    double m = last_difference(model, t, p->answer_clean, p->answer_corrupted);
    return (m - p->metric_corrupted) / (p->metric_clean - p->metric_corrupted);
}

// Every head's output, then every position of every stream, patched in turn.
static void patch_each(Patching *p, CleanRecord *r, GPT *model, const int *corrupted, PatchingProgress progress,
                       void *context) {
    const GPTConfig *c = &model->config;
    const int L = c->n_layer, H = c->n_head, hs = c->head_size, A = H * hs, C = c->n_embd, t = p->t;
    const long total = (long)L * H + (long)(L + 1) * t;
    long done = 0;
    ActivationEdit *head = &r->head_edits[r->hooks.n_heads], *stream = &r->residual_edits[r->hooks.n_residual];
    r->hooks.n_heads++;
    for (int l = 0; l < L; l++)
        for (int h = 0; h < H; h++) {
            *head = (ActivationEdit){.layer = l, .head = h, .rows = r->heads + (size_t)l * t * A + (size_t)h * hs, .ld = A};
            p->heads[l * H + h] = patched_share(p, r, model, corrupted, t);
            if (progress) progress(context, ++done, total);
        }
    r->hooks.n_heads--;
    r->hooks.n_residual++;
    for (int l = 0; l <= L; l++)
        for (int i = 0; i < t; i++) {
            memset(r->at, 0, (size_t)t);
            r->at[i] = 1;
            *stream = (ActivationEdit){.layer = l, .rows = r->streams + (size_t)l * t * C, .ld = C, .positions = r->at};
            p->residual[(size_t)l * t + i] = patched_share(p, r, model, corrupted, t);
            if (progress) progress(context, ++done, total);
        }
    r->hooks.n_residual--;
}

int patching_run(Patching *p, GPT *model, const int *clean, const int *corrupted, int t, PatchingProgress progress,
                 void *context, char err[ERR_LEN]) {
    const GPTConfig *c = &model->config;
    const int L = c->n_layer, H = c->n_head;
    const ForwardHooks *given = model->hooks, none = {0};
    if (!given) given = &none;
    *p = (Patching){.n_layer = L, .n_head = H, .t = t};
    size_t doubles = (size_t)L * H + (size_t)(L + 1) * t;
    p->memory = malloc(doubles * sizeof(double) + record_floats(c, t) * sizeof(float) + (size_t)t);
    CleanRecord r = {0};
    r.head_edits = malloc(((size_t)given->n_heads + 1) * sizeof(ActivationEdit));
    r.residual_edits = malloc(((size_t)given->n_residual + 1) * sizeof(ActivationEdit));
    int rc = -1;
    snprintf(err, ERR_LEN, "out of memory for activation patching");
    if (p->memory && r.head_edits && r.residual_edits) {
        p->heads = p->memory;
        p->residual = p->heads + (size_t)L * H;
        r.heads = (float *)(p->residual + (size_t)(L + 1) * t);
        r.streams = r.heads + (size_t)L * t * H * c->head_size;
        r.at = (unsigned char *)(r.streams + (size_t)(L + 1) * t * c->n_embd);
        if (given->n_heads) memcpy(r.head_edits, given->heads, (size_t)given->n_heads * sizeof(ActivationEdit));
        if (given->n_residual) memcpy(r.residual_edits, given->residual, (size_t)given->n_residual * sizeof(ActivationEdit));
        r.hooks = (ForwardHooks){r.head_edits, given->n_heads, r.residual_edits, given->n_residual};
        gpt_forward(model, clean, NULL, 1, t, NULL);
        record_clean(&r, model, t);
        p->answer_clean = last_top(model, t);
        gpt_forward(model, corrupted, NULL, 1, t, NULL);
        p->answer_corrupted = last_top(model, t);
        p->metric_corrupted = last_difference(model, t, p->answer_clean, p->answer_corrupted);
        p->metric_clean = p->metric_corrupted;
        if (p->answer_clean != p->answer_corrupted) {  // the clean run once more, for its difference
            gpt_forward(model, clean, NULL, 1, t, NULL);
            p->metric_clean = last_difference(model, t, p->answer_clean, p->answer_corrupted);
        }
        if (p->answer_clean == p->answer_corrupted || !(p->metric_clean > p->metric_corrupted)) {
            snprintf(err, ERR_LEN, "the clean and the corrupted text make the same character the most likely "
                     "after their last (or tie): patching needs two texts whose predictions differ (change a "
                     "character the prediction depends on)");
            rc = -2;
        } else {
            patch_each(p, &r, model, corrupted, progress, context);
            rc = 0;
        }
    }
    model->hooks = given == &none ? NULL : given;
    free(r.head_edits);
    free(r.residual_edits);
    if (rc != 0) patching_free(p);
    return rc;
}

void patching_free(Patching *p) {
    free(p->memory);
    p->memory = NULL;
}
