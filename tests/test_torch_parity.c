// Whole-model parity with PyTorch: the logits, loss, every parameter gradient and three
// clipped AdamW steps of the C GPT against tests/fixtures/reference*.safetensors, which
// scripts/make_reference.py computes in float64 (see tests/fixtures/README.md). A float32
// evaluation agrees with those fixtures to about 5e-7, so the tolerance 1e-4 leaves room
// for a different summation order but not for a wrong formula.
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../model/adamw.h"
#include "../model/gpt.h"
#include "../model/train_step.h"
#include "../format/safetensors.h"
#include "test.h"

#define TORCH_TOL 1e-4
#define TORCH_FORMAT "chargpt-reference-1"
#define TORCH_NUM_FIXTURES 3

static const char *const torch_fixture_paths[TORCH_NUM_FIXTURES] = {
    "tests/fixtures/reference.safetensors",        // qkv bias, A != C, t < block_size, L = 2
    "tests/fixtures/reference_nobias.safetensors", // no qkv bias, t = block_size, L = 1
    "tests/fixtures/reference_rope.safetensors",   // RoPE: no wpe, q and k turned; t = block_size, L = 2
};

// A fixture read into memory and a model holding its weights, ready for its batch.
typedef struct {
    const char *path;
    const char *label;       // file name without directories, for messages
    SafeTensors st;
    GPT model;
    int B, t;                // the batch: B sequences of t tokens
    const int *tokens;       // (B, t)
    const int *targets;      // (B, t)
    float lr, beta1, beta2, eps, weight_decay, grad_clip;
    int adamw_steps;
} TorchFixture;

static void torch_release(TorchFixture *f) {
    gpt_free(&f->model);
    safetensors_free(&f->st);
}

// An integer metadata value in [0, 1e6]; records a failure and returns -1 when absent or
// malformed.
static int torch_meta_int(const TorchFixture *f, const char *key, int *out) {
    const char *s = safetensors_meta(&f->st, key);
    if (!CHECK(s != NULL, "%s: metadata has no \"%s\"", f->path, key)) return -1;
    char *end;
    long v = strtol(s, &end, 10);
    if (!CHECK(end != s && *end == '\0' && v >= 0 && v <= 1000000,
               "%s: metadata \"%s\" is \"%s\", not a small integer", f->path, key, s))
        return -1;
    *out = (int)v;
    return 0;
}

// A finite real metadata value; records a failure and returns -1 when absent or malformed.
static int torch_meta_float(const TorchFixture *f, const char *key, float *out) {
    const char *s = safetensors_meta(&f->st, key);
    if (!CHECK(s != NULL, "%s: metadata has no \"%s\"", f->path, key)) return -1;
    char *end;
    double v = strtod(s, &end);
    if (!CHECK(end != s && *end == '\0' && isfinite(v),
               "%s: metadata \"%s\" is \"%s\", not a number", f->path, key, s))
        return -1;
    *out = (float)v;
    return 0;
}

// The data of the tensor called name, which must have the given dtype and shape;
// NULL after recording a failure otherwise.
static const void *torch_tensor(const TorchFixture *f, const char *name, StDtype dtype,
                                int ndim, const int64_t *shape) {
    const StTensor *t = safetensors_find(&f->st, name);
    if (!CHECK(t != NULL, "%s: no tensor \"%s\"", f->path, name)) return NULL;
    int same = t->dtype == dtype && t->ndim == ndim;
    for (int d = 0; same && d < ndim; d++) same = t->shape[d] == shape[d];
    if (!CHECK(same, "%s: tensor \"%s\" has dtype %s and %d dims [%lld, %lld, ...], expected "
               "%s with %d dims [%lld, %lld, ...]", f->path, name,
               t->dtype == ST_F32 ? "F32" : "I32", t->ndim,
               (long long)(t->ndim > 0 ? t->shape[0] : 0), (long long)(t->ndim > 1 ? t->shape[1] : 0),
               dtype == ST_F32 ? "F32" : "I32", ndim,
               (long long)(ndim > 0 ? shape[0] : 0), (long long)(ndim > 1 ? shape[1] : 0)))
        return NULL;
    return safetensors_tensor_data(&f->st, t);
}

// The fixture tensor prefix + the parameter's name (prefix "", "grad." or "step3."), with
// the parameter's shape; NULL after recording a failure.
static const float *torch_param_tensor(const TorchFixture *f, const char *prefix,
                                       const TensorInfo *info) {
    char name[ST_MAX_NAME + 1];
    snprintf(name, sizeof(name), "%s%s", prefix, info->name);
    int64_t shape[2] = {info->shape[0], info->shape[1]};
    return torch_tensor(f, name, ST_F32, info->ndim, shape);
}

// 1 when name is a tensor of the fixture that is not a model parameter.
static int torch_is_extra(const char *name) {
    static const char *const extras[] = {"tokens", "targets", "logits", "loss",
                                         "step_losses", "grad_norms"};
    if (strncmp(name, "grad.", 5) == 0 || strncmp(name, "step3.", 6) == 0) return 1;
    for (size_t i = 0; i < sizeof(extras) / sizeof(extras[0]); i++)
        if (strcmp(name, extras[i]) == 0) return 1;
    return 0;
}

// Reads a fixture, builds the model its metadata describes (dropout 0), copies in every
// parameter by name and points at its batch. Returns 0, or -1 after recording a failure
// (f is then released).
static int torch_load(TorchFixture *f, const char *path) {
    memset(f, 0, sizeof(*f));
    f->path = path;
    const char *slash = strrchr(path, '/');
    f->label = slash ? slash + 1 : path;
    char err[ERR_LEN];
    if (!CHECK(safetensors_read(path, &f->st, err) == 0,
               "cannot read the committed PyTorch fixture (run the tests from the repository "
               "root; remake it with scripts/make_reference.py): %s", err))
        return -1;
    const char *format = safetensors_meta(&f->st, "format");
    if (!CHECK(format && strcmp(format, TORCH_FORMAT) == 0, "%s: metadata \"format\" is %s, "
               "expected \"%s\"", path, format ? format : "missing", TORCH_FORMAT))
        goto fail;

    GPTConfig c = {0};
    c.dropout = 0.0f;
    if (torch_meta_int(f, "vocab_size", &c.vocab_size) || torch_meta_int(f, "block_size", &c.block_size) ||
        torch_meta_int(f, "n_layer", &c.n_layer) || torch_meta_int(f, "n_head", &c.n_head) ||
        torch_meta_int(f, "n_embd", &c.n_embd) || torch_meta_int(f, "head_size", &c.head_size) ||
        torch_meta_int(f, "qkv_bias", &c.qkv_bias) || torch_meta_int(f, "batch_size", &f->B) ||
        torch_meta_int(f, "seq_len", &f->t) || torch_meta_int(f, "adamw_steps", &f->adamw_steps) ||
        torch_meta_float(f, "lr", &f->lr) || torch_meta_float(f, "beta1", &f->beta1) ||
        torch_meta_float(f, "beta2", &f->beta2) || torch_meta_float(f, "eps", &f->eps) ||
        torch_meta_float(f, "weight_decay", &f->weight_decay) ||
        torch_meta_float(f, "grad_clip", &f->grad_clip))
        goto fail;
    const char *position = safetensors_meta(&f->st, "position_encoding");  // absent: learned
    if (!CHECK(!position || position_parse(position, &c.position) == 0, "%s: position_encoding '%s'", path,
               position))
        goto fail;
    if (!CHECK(f->t >= 1 && f->t <= c.block_size, "%s: seq_len %d outside [1, block_size %d]",
               path, f->t, c.block_size))
        goto fail;
    if (!CHECK(gpt_build(&f->model, &c, 1, err) == 0, "%s: %s", path, err)) goto fail;
    if (!CHECK(gpt_alloc_activations(&f->model, f->B, err) == 0, "%s: %s", path, err)) goto fail;

    int count = gpt_num_tensors(&c);
    for (int i = 0; i < count; i++) {
        TensorInfo info;
        gpt_tensor_info(&c, i, &info);
        const float *w = torch_param_tensor(f, "", &info);
        if (!w) goto fail;
        if (!CHECK(info.offset + info.size <= f->model.num_parameters,
                   "%s: tensor %s ends at %zu, past the %zu parameters", path, info.name,
                   info.offset + info.size, f->model.num_parameters))
            goto fail;
        memcpy(f->model.params_memory + info.offset, w, info.size * sizeof(float));
    }
    // every parameter of the fixture must have been copied: none is unknown to the model
    int fixture_params = 0;
    for (int i = 0; i < f->st.num_tensors; i++) fixture_params += !torch_is_extra(f->st.tensors[i].name);
    if (!CHECK(fixture_params == count, "%s: %d parameter tensors, the model has %d", path,
               fixture_params, count))
        goto fail;

    int64_t batch_shape[2] = {f->B, f->t};
    f->tokens = torch_tensor(f, "tokens", ST_I32, 2, batch_shape);
    f->targets = torch_tensor(f, "targets", ST_I32, 2, batch_shape);
    if (!f->tokens || !f->targets) goto fail;
    for (int i = 0; i < f->B * f->t; i++) {
        if (!CHECK(f->tokens[i] >= 0 && f->tokens[i] < c.vocab_size && f->targets[i] >= 0 &&
                   f->targets[i] < c.vocab_size, "%s: token or target %d out of vocabulary", path, i))
            goto fail;
    }
    return 0;
fail:
    torch_release(f);
    return -1;
}

// |got - want| / |want| for one value (the max-norm relative error of a 1-element vector).
static double torch_rel_error_scalar(double got, double want) {
    return rel_error_dd(&got, &want, 1);
}

// Max-norm relative error of a c_attn bias (3A) over its query [0, A) and value [2A, 3A)
// slices only.
static double torch_rel_error_query_value(const float *got, const float *want, int A) {
    float *got_qv = malloc(2 * (size_t)A * sizeof(float));
    float *want_qv = malloc(2 * (size_t)A * sizeof(float));
    double e = INFINITY;
    if (CHECK(got_qv && want_qv, "out of memory")) {
        memcpy(got_qv, got, A * sizeof(float));
        memcpy(got_qv + A, got + 2 * A, A * sizeof(float));
        memcpy(want_qv, want, A * sizeof(float));
        memcpy(want_qv + A, want + 2 * A, A * sizeof(float));
        e = rel_error_ff(got_qv, want_qv, 2 * (size_t)A);
    }
    free(got_qv);
    free(want_qv);
    return e;
}

TEST(torch_forward_logits_and_loss) {
    for (int k = 0; k < TORCH_NUM_FIXTURES; k++) {
        TorchFixture f;
        if (torch_load(&f, torch_fixture_paths[k]) != 0) continue;
        int V = f.model.config.vocab_size;
        int64_t logits_shape[3] = {f.B, f.t, V}, loss_shape[1] = {1};
        const float *logits = torch_tensor(&f, "logits", ST_F32, 3, logits_shape);
        const float *loss = torch_tensor(&f, "loss", ST_F32, 1, loss_shape);
        if (logits && loss) {
            gpt_forward(&f.model, f.tokens, f.targets, f.B, f.t, NULL);
            // logits (B*t, V) in the model, (B, t, V) in the fixture: the same layout
            double e_logits = rel_error_ff(f.model.acts.logits, logits, (size_t)f.B * f.t * V);
            double e_loss = torch_rel_error_scalar(f.model.mean_loss, loss[0]);
            printf("    torch_logits %s: worst rel error %.1e\n", f.label, e_logits);
            printf("    torch_loss %s: rel error %.1e (loss %.6f, torch %.6f)\n", f.label, e_loss,
                   f.model.mean_loss, loss[0]);
            CHECK(e_logits <= TORCH_TOL, "%s: logits rel error %.2e > %.0e", f.label, e_logits, TORCH_TOL);
            CHECK(e_loss <= TORCH_TOL, "%s: loss %.7f, torch %.7f (rel error %.2e)", f.label,
                  f.model.mean_loss, loss[0], e_loss);
        }
        torch_release(&f);
    }
}

TEST(torch_backward_every_gradient) {
    for (int k = 0; k < TORCH_NUM_FIXTURES; k++) {
        TorchFixture f;
        if (torch_load(&f, torch_fixture_paths[k]) != 0) continue;
        gpt_forward(&f.model, f.tokens, f.targets, f.B, f.t, NULL);
        gpt_zero_grad(&f.model);
        gpt_backward(&f.model);
        double worst = 0.0;
        char worst_name[64] = "none";
        int count = gpt_num_tensors(&f.model.config);
        for (int i = 0; i < count; i++) {
            TensorInfo info;
            gpt_tensor_info(&f.model.config, i, &info);
            const float *want = torch_param_tensor(&f, "grad.", &info);
            if (!want) continue;
            double e = rel_error_ff(f.model.grads_memory + info.offset, want, info.size);
            CHECK(e <= TORCH_TOL, "%s: gradient of %s: rel error %.2e > %.0e", f.label, info.name,
                  e, TORCH_TOL);
            if (!(e <= worst)) {
                worst = e;
                snprintf(worst_name, sizeof(worst_name), "%s", info.name);
            }
        }
        printf("    torch_grads %s: worst rel error %.1e (%s), %d tensors\n", f.label, worst,
               worst_name, count);
        torch_release(&f);
    }
}

TEST(torch_adamw_three_steps) {
    for (int k = 0; k < TORCH_NUM_FIXTURES; k++) {
        TorchFixture f;
        if (torch_load(&f, torch_fixture_paths[k]) != 0) continue;
        int steps = f.adamw_steps;
        int64_t steps_shape[1] = {steps};
        const float *step_losses = torch_tensor(&f, "step_losses", ST_F32, 1, steps_shape);
        const float *grad_norms = torch_tensor(&f, "grad_norms", ST_F32, 1, steps_shape);
        AdamW opt;
        char err[ERR_LEN];
        if (!step_losses || !grad_norms ||
            !CHECK(adamw_init(&opt, &f.model, f.beta1, f.beta2, f.eps, f.weight_decay, err) == 0,
                   "%s: %s", f.label, err)) {
            torch_release(&f);
            continue;
        }
        GPT *m = &f.model;
        double worst_loss = 0.0, worst_norm = 0.0;
        for (int s = 0; s < steps; s++) {
            gpt_forward(m, f.tokens, f.targets, f.B, f.t, NULL);
            gpt_zero_grad(m);
            gpt_backward(m);
            double norm;  // the step's update, as ./train makes it
            train_step_update(m, &opt, grad_sum_of_squares(m->grads_memory, m->num_parameters), f.lr, f.grad_clip,
                              &norm);
            double e_norm = torch_rel_error_scalar(norm, grad_norms[s]);
            double e_loss = torch_rel_error_scalar(m->mean_loss, step_losses[s]);
            CHECK(e_norm <= TORCH_TOL, "%s: step %d gradient norm %.7f, torch %.7f (rel error %.2e)",
                  f.label, s + 1, norm, grad_norms[s], e_norm);
            CHECK(e_loss <= TORCH_TOL, "%s: step %d loss %.7f, torch %.7f (rel error %.2e)",
                  f.label, s + 1, m->mean_loss, step_losses[s], e_loss);
            worst_norm = fmax(worst_norm, e_norm);
            worst_loss = fmax(worst_loss, e_loss);
        }

        int A = m->config.n_head * m->config.head_size;
        double worst = 0.0, key_moved = 0.0;
        char worst_name[64] = "none";
        int count = gpt_num_tensors(&m->config);
        for (int i = 0; i < count; i++) {
            TensorInfo info;
            gpt_tensor_info(&m->config, i, &info);
            const float *want = torch_param_tensor(&f, "step3.", &info);
            const float *initial = torch_param_tensor(&f, "", &info);
            if (!want || !initial) continue;
            const float *got = m->params_memory + info.offset;
            double e;
            size_t len = strlen(info.name), suffix = strlen("attn.c_attn.bias");
            if (len >= suffix && strcmp(info.name + len - suffix, "attn.c_attn.bias") == 0) {
                // The key slice [A, 2A) of c_attn.bias has zero gradient in exact arithmetic
                // (one shift added to every key leaves each softmax unchanged), so both
                // sides update it from rounding noise that Adam divides by its own size:
                // there it is only bounded, by the largest move AdamW can make (about lr per
                // step, here allowed 3*lr per step). The query and value slices are compared.
                e = torch_rel_error_query_value(got, want, A);
                for (int j = A; j < 2 * A; j++) {
                    double moved = fabs((double)got[j] - initial[j]);
                    if (!(moved <= key_moved)) key_moved = moved;
                }
            } else {
                e = rel_error_ff(got, want, info.size);
            }
            CHECK(e <= TORCH_TOL, "%s: %s after %d AdamW steps: rel error %.2e > %.0e", f.label,
                  info.name, steps, e, TORCH_TOL);
            if (!(e <= worst)) {
                worst = e;
                snprintf(worst_name, sizeof(worst_name), "%s", info.name);
            }
        }
        double key_bound = 3.0 * f.lr * steps;
        CHECK(key_moved <= key_bound, "%s: the key slice of c_attn.bias moved by %.2e > %.2e",
              f.label, key_moved, key_bound);
        printf("    torch_adamw %s: step losses worst rel error %.1e, grad norms %.1e\n", f.label,
               worst_loss, worst_norm);
        printf("    torch_step3 %s: worst rel error %.1e (%s)", f.label, worst, worst_name);
        if (m->config.qkv_bias) printf("; key bias slice moved at most %.1e", key_moved);
        printf("\n");
        adamw_free(&opt);
        torch_release(&f);
    }
}

// The comparison is live: one weight moved by 1e-2 gives logits that fail the tolerance,
// and putting it back makes them pass again.
TEST(torch_perturbed_weight_is_detected) {
    TorchFixture f;
    if (torch_load(&f, torch_fixture_paths[0]) != 0) return;
    GPT *m = &f.model;
    int V = m->config.vocab_size;
    size_t n = (size_t)f.B * f.t * V;
    int64_t logits_shape[3] = {f.B, f.t, V};
    const float *logits = torch_tensor(&f, "logits", ST_F32, 3, logits_shape);
    TensorInfo info;
    int found = 0;
    for (int i = 0; i < gpt_num_tensors(&m->config) && !found; i++) {
        gpt_tensor_info(&m->config, i, &info);
        found = strcmp(info.name, "transformer.h.0.mlp.c_fc.weight") == 0;
    }
    if (logits && CHECK(found, "no tensor transformer.h.0.mlp.c_fc.weight")) {
        float *w = m->params_memory + info.offset;
        float saved = w[0];
        w[0] = saved + 1e-2f;
        gpt_forward(m, f.tokens, f.targets, f.B, f.t, NULL);
        double e_perturbed = rel_error_ff(m->acts.logits, logits, n);
        w[0] = saved;
        gpt_forward(m, f.tokens, f.targets, f.B, f.t, NULL);
        double e_restored = rel_error_ff(m->acts.logits, logits, n);
        printf("    torch_perturbed %s: logits rel error %.1e with c_fc.weight[0] + 1e-2, "
               "%.1e restored\n", f.label, e_perturbed, e_restored);
        CHECK(e_perturbed > TORCH_TOL, "perturbed weight not detected: rel error %.2e <= %.0e",
              e_perturbed, TORCH_TOL);
        CHECK(e_restored <= TORCH_TOL, "restored weight: rel error %.2e > %.0e", e_restored,
              TORCH_TOL);
    }
    torch_release(&f);
}
