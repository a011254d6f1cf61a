// Tests of the whole model: float forward/backward against the double reference, the
// reference's gradient against finite differences, causality, learning a short string,
// determinism (also of train_step on any number of threads), the thread tuner, dropout
// masks and initialisation; the size of AdamW's last update worked back from its moments, and
// a view on a model's weights.
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../analysis/head_importance.h"
#include "../common/platform.h"
#include "../common/rng.h"
#include "../kernels/parallel.h"
#include "../model/adamw.h"
#include "../model/gpt.h"
#include "../model/layers.h"
#include "../model/train_step.h"
#include "reference.h"
#include "test.h"

#define FD_STEP 1e-5
#define FD_TOL 1e-6      // reference gradient vs finite differences of the reference loss
#define MODEL_TOL 1e-4   // float model vs double reference

static double max2(double a, double b) { return a > b ? a : b; }

static void report(const char *what, double err) { printf("    %-56s max rel err %.2e\n", what, err); }

// Builds a model with activations for batch B; records a failed check on error.
static int build_model(GPT *model, const GPTConfig *config, int B) {
    char err[ERR_LEN];
    if (!CHECK(gpt_build(model, config, 1, err) == 0, "gpt_build: %s", err)) return -1;
    if (!CHECK(gpt_alloc_activations(model, B, err) == 0, "gpt_alloc_activations: %s", err)) {
        gpt_free(model);
        return -1;
    }
    return 0;
}

// The initial weights plus uniform noise in [-amp, amp] on every parameter, so biases and
// LayerNorm parameters are not trivially 0 and 1.
static void randomize_params(GPT *model, uint64_t seed, float amp) {
    gpt_init_weights(model, seed);
    Rng rng;
    rng_seed(&rng, seed ^ 0xABCDEFull);
    for (size_t i = 0; i < model->num_parameters; i++)
        model->params_memory[i] += amp * (2.0f * rng_uniform(&rng) - 1.0f);
}

static void random_tokens(int *tokens, int n, int V, Rng *rng) {
    for (int i = 0; i < n; i++) tokens[i] = (int)rng_below(rng, V);
}

// Fills every activation with NaN, so a forward that leaves part of what it reports unwritten
// or a backward that reads something the forward did not write shows up.
static void poison_activations(GPT *model) {
    memset(model->acts_memory, 0xff, model->num_activations * sizeof(float));
}

// attention weights of layer l, (B, H, t, t), inside the activations sized for batch_size
static const float *layer_att(const GPT *model, int l) {
    const GPTConfig *c = &model->config;
    return model->acts.att + (size_t)l * model->batch_size * c->n_head * c->block_size * c->block_size;
}

// ---------------------------------------------------------------------------------------
// layout

// nanoGPT's state_dict for a config, written out here independently of the model's table:
// the names in order and their shapes (cols 0: a vector).
typedef struct {
    char name[64];
    int rows, cols;
} NamedShape;

static int nanogpt_tensors(const GPTConfig *c, NamedShape *out) {
    int C = c->n_embd, A = c->n_head * c->head_size, n = 0;
    const struct { const char *name; int rows, cols; } block[] = {
        {"ln_1.weight", C, 0},     {"ln_1.bias", C, 0},     {"attn.c_attn.weight", 3 * A, C}, {"attn.c_attn.bias", 3 * A, 0},
        {"attn.c_proj.weight", C, A}, {"attn.c_proj.bias", C, 0}, {"ln_2.weight", C, 0},   {"ln_2.bias", C, 0},
        {"mlp.c_fc.weight", 4 * C, C}, {"mlp.c_fc.bias", 4 * C, 0}, {"mlp.c_proj.weight", C, 4 * C}, {"mlp.c_proj.bias", C, 0},
    };
    out[n++] = (NamedShape){"transformer.wte.weight", c->vocab_size, C};
    out[n++] = (NamedShape){"transformer.wpe.weight", c->block_size, C};
    for (int l = 0; l < c->n_layer; l++)
        for (int k = 0; k < 12; k++) {
            if (k == 3 && !c->qkv_bias) continue;
            snprintf(out[n].name, sizeof(out[n].name), "transformer.h.%d.%s", l, block[k].name);
            out[n].rows = block[k].rows, out[n].cols = block[k].cols;
            n++;
        }
    out[n++] = (NamedShape){"transformer.ln_f.weight", C, 0};
    out[n++] = (NamedShape){"transformer.ln_f.bias", C, 0};
    return n;
}

// The offset of the named tensor in the parameters (-1: no such tensor).
static long tensor_offset(const GPTConfig *c, const char *name) {
    for (int i = 0; i < gpt_num_tensors(c); i++) {
        TensorInfo info;
        gpt_tensor_info(c, i, &info);
        if (strcmp(info.name, name) == 0) return (long)info.offset;
    }
    return -1;
}

// The parameter table's names and shapes are nanoGPT's; the named tensors cover every
// parameter once; and the fields of ParameterTensors and of each layer's BlockParams point
// where the table says those tensors are, in the parameters and in the gradients.
TEST(model_param_layout) {
    GPTConfig configs[2] = {{11, 8, 2, 3, 8, 5, 1, 0.0f, POSITION_LEARNED}, {7, 5, 3, 2, 12, 4, 0, 0.1f, POSITION_LEARNED}};
    static const char *const block_names[12] = {"ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias",
                                                "attn.c_proj.weight", "attn.c_proj.bias", "ln_2.weight", "ln_2.bias",
                                                "mlp.c_fc.weight", "mlp.c_fc.bias", "mlp.c_proj.weight", "mlp.c_proj.bias"};
    for (int k = 0; k < 2; k++) {
        const GPTConfig *c = &configs[k];
        GPT model;
        if (build_model(&model, c, 2) != 0) return;
        NamedShape want[64];
        int count = gpt_num_tensors(c), want_count = nanogpt_tensors(c, want), bad = 0;
        CHECK(count == want_count, "%d named tensors, nanoGPT has %d", count, want_count);
        unsigned char *covered = calloc(model.num_parameters, 1);
        for (int i = 0; i < count && i < want_count; i++) {
            TensorInfo info;
            gpt_tensor_info(c, i, &info);
            int rows = info.shape[0], cols = info.ndim == 2 ? info.shape[1] : 0;
            size_t shape_size = (size_t)rows * (cols ? cols : 1);
            CHECK(strcmp(info.name, want[i].name) == 0 && rows == want[i].rows && cols == want[i].cols,
                  "tensor %d: %s (%d, %d), nanoGPT's is %s (%d, %d)", i, info.name, rows, cols, want[i].name,
                  want[i].rows, want[i].cols);
            CHECK(info.size == shape_size && info.offset + info.size <= model.num_parameters,
                  "tensor %d (%s): offset %zu size %zu", i, info.name, info.offset, info.size);
            for (size_t j = info.offset; j < info.offset + info.size && j < model.num_parameters; j++) covered[j]++;
        }
        for (size_t j = 0; j < model.num_parameters; j++) bad += covered[j] != 1;
        CHECK(bad == 0, "%d parameters are covered by no or several named tensors", bad);
        free(covered);
        // the struct's fields where the table puts their tensors
        const ParameterTensors *p = &model.params, *g = &model.grads;
        const struct { const char *name; const float *param, *grad; } whole[] = {
            {"transformer.wte.weight", p->wte, g->wte},   {"transformer.wpe.weight", p->wpe, g->wpe},
            {"transformer.ln_f.weight", p->lnfw, g->lnfw}, {"transformer.ln_f.bias", p->lnfb, g->lnfb}};
        for (int i = 0; i < 4; i++) {
            long o = tensor_offset(c, whole[i].name);
            CHECK(o >= 0 && whole[i].param == model.params_memory + o && whole[i].grad == model.grads_memory + o,
                  "%s: the field is not at its offset %ld", whole[i].name, o);
        }
        for (int l = 0; l < c->n_layer; l++) {
            BlockParams lp = gpt_layer_params(p, c, l), lg = gpt_layer_params(g, c, l);
            const float *const *params = (const float *const *)&lp, *const *grads = (const float *const *)&lg;
            for (int f = 0; f < 12; f++) {
                char name[64];
                snprintf(name, sizeof(name), "transformer.h.%d.%s", l, block_names[f]);
                long o = tensor_offset(c, name);
                int ok = o < 0 ? params[f] == NULL && grads[f] == NULL
                               : params[f] == model.params_memory + o && grads[f] == model.grads_memory + o;
                CHECK(ok, "layer %d's %s is not at %ld", l, block_names[f], o);
            }
        }
        gpt_free(&model);
    }
}

// Marks the n floats at p in covered (the activations' memory, n_all floats); 0 when p is not
// inside it.
static int cover(unsigned char *covered, const float *base, size_t n_all, const float *p, size_t n) {
    if (p < base || p + n > base + n_all) return 0;
    for (size_t j = 0; j < n; j++) covered[p - base + j]++;
    return 1;
}

// Each activation where the model's table puts it, its shape written out here independently:
// every layer's view (gpt_layer_activations) and the tensors shared by the layers cover the
// activations' memory once, and the residual stream entering block l is block l - 1's output.
TEST(model_activation_layout) {
    GPTConfig c = {11, 8, 3, 2, 12, 5, 1, 0.0f, POSITION_LEARNED};
    const int B = 2;
    GPT model;
    if (build_model(&model, &c, B) != 0) return;
    const size_t N = (size_t)B * c.block_size, C = c.n_embd, A = (size_t)c.n_head * c.head_size, V = c.vocab_size;
    const float *base = model.acts_memory;
    unsigned char *covered = calloc(model.num_activations, 1);
    int outside = 0;
    const ActivationTensors *a = &model.acts;
    const struct { const float *p; size_t n; } shared[] = {
        {a->encoded, N * C}, {a->lnf, N * C}, {a->lnf_mean, N}, {a->lnf_rstd, N},
        {a->logits, N * V},  {a->probs, N * V}, {a->losses, N},
    };
    for (size_t i = 0; i < sizeof(shared) / sizeof(shared[0]); i++)
        outside += !cover(covered, base, model.num_activations, shared[i].p, shared[i].n);
    for (int l = 0; l < c.n_layer; l++) {
        ActivationTensors v = gpt_layer_activations(&model, l);
        const struct { const float *p; size_t n; } layer[] = {
            {v.ln1, N * C},  {v.ln1_mean, N}, {v.ln1_rstd, N}, {v.qkv, N * 3 * A}, {v.atty, N * A},
            {v.att, (size_t)B * c.n_head * c.block_size * c.block_size}, {v.residual2, N * C},
            {v.ln2, N * C},  {v.ln2_mean, N}, {v.ln2_rstd, N}, {v.fch, N * 4 * C}, {v.gelu, N * 4 * C},
            {v.residual3, N * C},
        };
        for (size_t i = 0; i < sizeof(layer) / sizeof(layer[0]); i++)
            outside += !cover(covered, base, model.num_activations, layer[i].p, layer[i].n);
        CHECK(v.encoded == a->encoded && v.logits == a->logits, "layer %d's view moves a tensor shared by the layers", l);
        CHECK(gpt_residual_stream(&model, l + 1) == v.residual3 && gpt_attention_weights(&model, l) == v.att &&
              gpt_qkv(&model, l) == v.qkv && gpt_attention_output(&model, l) == v.atty,
              "layer %d: the accessors do not read its view", l);
    }
    CHECK(gpt_residual_stream(&model, 0) == a->encoded, "the residual stream entering block 0 is not the embeddings");
    size_t bad = 0;
    for (size_t j = 0; j < model.num_activations; j++) bad += covered[j] != 1;
    CHECK(outside == 0 && bad == 0, "%d tensors outside the activations, %zu of %zu floats covered by no or several",
          outside, bad, model.num_activations);
    free(covered);
    gpt_free(&model);
}

// ---------------------------------------------------------------------------------------
// (a) float model vs the double reference

typedef struct {
    GPTConfig config;
    int B_alloc, B, t, training;
} ModelCase;

static const ModelCase model_cases[] = {
    // V  T  L  H  C  hs bias dropout position
    {{11, 8, 2, 2, 8, 4, 1, 0.0f, POSITION_LEARNED}, 3, 3, 7, 0},      // t < T, B*t = 21 odd
    {{13, 8, 2, 3, 8, 5, 0, 0.0f, POSITION_LEARNED}, 2, 2, 8, 0},      // no qkv bias, hs != C/H (A = 15)
    {{11, 9, 3, 2, 12, 7, 1, 0.2f, POSITION_LEARNED}, 4, 3, 5, 1},     // dropout 0.2 training, fewer rows than allocated
    {{11, 9, 3, 2, 12, 7, 1, 0.2f, POSITION_LEARNED}, 3, 3, 5, 0},     // same with dropout configured but eval
    {{7, 4, 1, 1, 8, 8, 0, 0.2f, POSITION_LEARNED}, 4, 4, 1, 1},       // t = 1
    {{65, 32, 2, 4, 32, 8, 1, 0.1f, POSITION_LEARNED}, 2, 2, 31, 1},   // a realistic small model
    // RoPE: no position table, q and k turned
    {{11, 8, 2, 2, 8, 4, 1, 0.0f, POSITION_ROPE}, 3, 3, 7, 0},
    {{13, 9, 3, 3, 12, 6, 0, 0.2f, POSITION_ROPE}, 4, 3, 9, 1},    // dropout, no qkv bias, hs != C/H
    {{65, 32, 2, 4, 32, 8, 1, 0.1f, POSITION_ROPE}, 2, 2, 31, 1},
};

// The worst relative errors of the float model against the reference over the cases.
typedef struct {
    double loss, logits, att, grad;
} ModelErrors;

// Hooks (model/gpt.h) for a model of config c and passes of B sequences of t: KNOCK_OUT zeroes
// head l mod H of each layer l; EDITS makes an edit of every other kind: head H - 1 of layer 0
// replaced by given rows at the even positions, head 0 of the last layer by one row at every
// position (a mean), the stream entering block 0 replaced at the odd positions, the one entering
// block L / 2 zeroed at the even ones, the one the final LayerNorm reads replaced at the odd ones.
typedef enum { NO_HOOKS, KNOCK_OUT, EDITS } HookKind;
static const char *const hook_kind_names[] = {"no hooks", "heads knocked out", "edits of every kind"};
typedef struct {
    ActivationEdit heads[64], residual[3];
    ForwardHooks hooks;
    unsigned char even[64], odd[64];  // (t) position flags
    float *rows;                      // the replacing rows
} TestHooks;

static const ForwardHooks *test_hooks(TestHooks *th, HookKind kind, const GPTConfig *c, int B, int t) {
    const int L = c->n_layer, H = c->n_head, hs = c->head_size, C = c->n_embd;
    const size_t N = (size_t)B * t;
    memset(th, 0, sizeof(*th));
    if (kind == NO_HOOKS) return NULL;
    th->hooks.heads = th->heads;
    th->hooks.residual = th->residual;
    if (kind == KNOCK_OUT) {
        for (int l = 0; l < L; l++) th->heads[th->hooks.n_heads++] = (ActivationEdit){.layer = l, .head = l % H};
        return &th->hooks;
    }
    for (int i = 0; i < t; i++) th->even[i] = i % 2 == 0, th->odd[i] = i % 2 == 1;
    th->rows = malloc((N * hs + hs + 2 * N * C) * sizeof(float));
    fill_uniform(th->rows, N * hs + hs + 2 * N * C, 77);
    float *head_rows = th->rows, *mean = head_rows + N * hs, *stream0 = mean + hs, *stream_last = stream0 + N * C;
    th->heads[0] = (ActivationEdit){.layer = 0, .head = H - 1, .rows = head_rows, .ld = hs, .positions = th->even};
    th->heads[1] = (ActivationEdit){.layer = L - 1, .head = 0, .rows = mean, .ld = 0};
    th->residual[0] = (ActivationEdit){.layer = 0, .rows = stream0, .ld = C, .positions = th->odd};
    th->residual[1] = (ActivationEdit){.layer = L / 2, .positions = th->even};
    th->residual[2] = (ActivationEdit){.layer = L, .rows = stream_last, .ld = C, .positions = th->odd};
    th->hooks.n_heads = 2;
    th->hooks.n_residual = 3;
    return &th->hooks;
}

// Case k's float forward and backward against the reference's, both with hooks of that kind;
// returns the reference's loss.
static double compare_with_reference(const ModelCase *mc, size_t k, HookKind kind, ModelErrors *worst) {
    const GPTConfig *c = &mc->config;
    GPT model;
    if (build_model(&model, c, mc->B_alloc) != 0) return NAN;
    randomize_params(&model, 10 + k, 0.2f);
    TestHooks th;
    model.hooks = test_hooks(&th, kind, c, mc->B, mc->t);
    const char *knocks = hook_kind_names[kind];
    const ForwardPass pass = {.training = mc->training, .dropout_seed = 1234 + k};
    int B = mc->B, t = mc->t, N = B * t, L = c->n_layer, H = c->n_head;
    int *inputs = malloc(N * sizeof(int)), *targets = malloc(N * sizeof(int));
    Rng rng;
    rng_seed(&rng, 50 + k);
    random_tokens(inputs, N, c->vocab_size, &rng);
    random_tokens(targets, N, c->vocab_size, &rng);

    poison_activations(&model);
    gpt_forward(&model, inputs, targets, B, t, &pass);
    // junk in the gradients: gpt_zero_grad clears it, then gpt_backward adds into 0
    for (size_t i = 0; i < model.num_parameters; i++) model.grads_memory[i] = 1e3f;
    gpt_zero_grad(&model);
    gpt_backward(&model);

    size_t P = model.num_parameters;
    double *params = malloc(P * sizeof(double)), *grads = malloc(P * sizeof(double));
    double *logits = malloc((size_t)N * c->vocab_size * sizeof(double));
    size_t att_size = (size_t)B * H * t * t;
    double *att = malloc(L * att_size * sizeof(double));
    ref_to_double(params, model.params_memory, P);
    double loss = ref_gpt_forward_backward(&model, params, inputs, targets, B, t, mc->training, pass.dropout_seed,
                                           logits, att, grads);

    double e_loss = fabs(model.mean_loss - loss) / fabs(loss);
    double e_logits = rel_error_fd(model.acts.logits, logits, (size_t)N * c->vocab_size);
    double e_att = 0.0;
    for (int l = 0; l < L; l++) e_att = max2(e_att, rel_error_fd(layer_att(&model, l), att + l * att_size, att_size));
    CHECK(e_loss <= MODEL_TOL, "case %zu, %s: loss %.9g, reference %.9g", k, knocks, model.mean_loss, loss);
    CHECK(e_logits <= MODEL_TOL && e_att <= MODEL_TOL, "case %zu, %s: logits err %.3g, att err %.3g", k, knocks,
          e_logits, e_att);
    for (int i = 0; i < gpt_num_tensors(c); i++) {
        TensorInfo info;
        gpt_tensor_info(c, i, &info);
        double e = rel_error_fd(model.grads_memory + info.offset, grads + info.offset, info.size);
        CHECK(e <= MODEL_TOL, "case %zu, %s: gradient of %s err %.3g", k, knocks, info.name, e);
        worst->grad = max2(worst->grad, e);
    }
    worst->loss = max2(worst->loss, e_loss);
    worst->logits = max2(worst->logits, e_logits);
    worst->att = max2(worst->att, e_att);
    free(inputs); free(targets); free(params); free(grads); free(logits); free(att); free(th.rows);
    gpt_free(&model);
    return loss;
}

// Every case, then again with one head of each layer knocked out (head l mod H of layer l),
// and with an edit of every other kind (test_hooks): the reference makes the same edits, and
// its loss is not the whole model's.
TEST(model_matches_reference) {
    ModelErrors worst = {0};
    for (size_t k = 0; k < sizeof(model_cases) / sizeof(model_cases[0]); k++) {
        double whole = compare_with_reference(&model_cases[k], k, NO_HOOKS, &worst);
        for (HookKind kind = KNOCK_OUT; kind <= EDITS; kind++) {
            double hooked = compare_with_reference(&model_cases[k], k, kind, &worst);
            CHECK(fabs(hooked - whole) > 1e-6 * fabs(whole), "case %zu: %s left the loss at %.9g", k,
                  hook_kind_names[kind], whole);
        }
    }
    report("model loss vs reference", worst.loss);
    report("model logits vs reference", worst.logits);
    report("model attention weights vs reference", worst.att);
    report("model gradients vs reference (worst tensor)", worst.grad);
}

// Each head's importance (analysis/head_importance.h) is the reference's loss with that head
// knocked out (as well as the one the model already knocks out) less its loss without, in bits;
// the model is left knocking out what it did.
TEST(model_head_importance_matches_reference) {
    const ModelCase *mc = &model_cases[5];  // 2 layers x 4 heads
    const GPTConfig *c = &mc->config;
    const int L = c->n_layer, H = c->n_head, t = 20;
    GPT model;
    if (build_model(&model, c, 1) != 0) return;
    randomize_params(&model, 7, 0.2f);
    const ActivationEdit knocked[2] = {{.layer = 0, .head = 2}};  // the model's: layer 0's head 2
    const ForwardHooks given = {.heads = knocked, .n_heads = 1};
    model.hooks = &given;
    int tokens[21];
    Rng rng;
    rng_seed(&rng, 8);
    random_tokens(tokens, t + 1, c->vocab_size, &rng);
    float importance[8];
    char err[ERR_LEN];
    if (!CHECK(head_importance(&model, tokens, t, importance, err) == 0, "%s", err)) return;
    CHECK(model.hooks == &given && given.n_heads == 1, "head_importance left the model other hooks");
    double *params = malloc(model.num_parameters * sizeof(double)), worst = 0.0;
    ref_to_double(params, model.params_memory, model.num_parameters);
    double base = ref_gpt_forward_backward(&model, params, tokens, tokens + 1, 1, t, 0, 0, NULL, NULL, NULL);
    ActivationEdit edits[2] = {knocked[0]};
    const ForwardHooks both = {.heads = edits, .n_heads = 2};
    model.hooks = &both;
    for (int i = 0; i < L * H; i++) {
        edits[1] = (ActivationEdit){.layer = i / H, .head = i % H};
        double want = (ref_gpt_forward_backward(&model, params, tokens, tokens + 1, 1, t, 0, 0, NULL, NULL, NULL) - base) / M_LN2;
        CHECK(fabs(importance[i] - want) <= 1e-5 + 1e-4 * fabs(want), "head %d.%d: importance %.7f bits, reference %.7f",
              i / H, i % H, importance[i], want);
        worst = max2(worst, fabs(importance[i] - want));
    }
    double spread = 0.0;
    for (int i = 0; i < L * H; i++) spread = max2(spread, fabs(importance[i]));
    CHECK(importance[2] == 0.0f && spread > 1e-3, "importance: the knocked-out head's %g, the largest %g", importance[2],
          spread);
    report("head importance vs reference (abs, bits)", worst);
    free(params);
    gpt_free(&model);
}

// the dropout masks are a function of the step seed: another seed gives another loss
TEST(model_dropout_seed_matters) {
    const ModelCase *mc = &model_cases[2];
    GPT model;
    if (build_model(&model, &mc->config, mc->B_alloc) != 0) return;
    randomize_params(&model, 3, 0.2f);
    int N = mc->B * mc->t, inputs[64], targets[64];
    Rng rng;
    rng_seed(&rng, 4);
    random_tokens(inputs, N, mc->config.vocab_size, &rng);
    random_tokens(targets, N, mc->config.vocab_size, &rng);
    float losses[4];
    for (int r = 0; r < 4; r++) {
        const ForwardPass pass = {.training = r < 3, .dropout_seed = r == 1 ? 2 : 1};  // runs 0 and 2 use the same seed
        gpt_forward(&model, inputs, targets, mc->B, mc->t, &pass);
        losses[r] = model.mean_loss;
    }
    CHECK(losses[0] == losses[2], "same dropout seed, different loss: %.9g vs %.9g", losses[0], losses[2]);
    CHECK(losses[0] != losses[1], "dropout seeds 1 and 2 give the same loss %.9g", losses[0]);
    CHECK(losses[0] != losses[3], "training and eval give the same loss %.9g", losses[0]);
    gpt_free(&model);
}

typedef struct {
    const GPT *model;
    const int *inputs, *targets;
    int B, t, training;
    uint64_t seed;
    double *params;
} LossCase;

static double reference_loss(void *p) {
    LossCase *lc = p;
    return ref_gpt_forward_backward(lc->model, lc->params, lc->inputs, lc->targets, lc->B, lc->t,
                                    lc->training, lc->seed, NULL, NULL, NULL);
}

// The reference gradient against finite differences of the reference loss, with and without
// dropout (fixed masks), with hooks (test_hooks: heads knocked out, and an edit of every kind)
// when the model has a qkv bias; and the float model's gradient against the same finite
// differences: an edited row passes no gradient back.
TEST(model_reference_grad_fd) {
    double worst_ref = 0.0, worst_float = 0.0;
    for (int k = 0; k < 8; k++) {
        {
            int with_dropout = k & 1, qkv_bias = k >> 1 & 1;
            PositionEncoding position = k >> 2 ? POSITION_ROPE : POSITION_LEARNED;  // RoPE with hs 4: two pairs
            GPTConfig c = {5, 4, 2, 2, 4, position == POSITION_ROPE ? 4 : 3, qkv_bias, with_dropout ? 0.3f : 0.0f,
                           position};
            GPT model;
            if (build_model(&model, &c, 2) != 0) return;
            randomize_params(&model, 20 + qkv_bias, 0.3f);
            int B = 2, t = 3, inputs[6] = {0, 3, 1, 4, 4, 2}, targets[6] = {3, 1, 4, 2, 0, 0};
            TestHooks th;
            model.hooks = test_hooks(&th, qkv_bias ? (with_dropout ? EDITS : KNOCK_OUT) : NO_HOOKS, &c, B, t);
            const ForwardPass pass = {.training = with_dropout, .dropout_seed = 99};
            size_t P = model.num_parameters;
            double *params = malloc(P * sizeof(double)), *grads = malloc(P * sizeof(double));
            double *fd = malloc(P * sizeof(double));
            ref_to_double(params, model.params_memory, P);
            LossCase lc = {&model, inputs, targets, B, t, with_dropout, pass.dropout_seed, params};
            double loss = ref_gpt_forward_backward(&model, params, inputs, targets, B, t, with_dropout,
                                                   pass.dropout_seed, NULL, NULL, grads);
            if (with_dropout) {
                lc.training = 0;
                double eval_loss = reference_loss(&lc);
                lc.training = 1;
                CHECK(eval_loss != loss, "dropout changed nothing in the reference");
            }
            ref_finite_diff(reference_loss, &lc, params, P, FD_STEP, fd);
            gpt_forward(&model, inputs, targets, B, t, &pass);
            gpt_zero_grad(&model);
            gpt_backward(&model);
            for (int i = 0; i < gpt_num_tensors(&c); i++) {
                TensorInfo info;
                gpt_tensor_info(&c, i, &info);
                size_t o = info.offset, n = info.size;
                double e_ref = rel_error_dd(grads + o, fd + o, n);
                double e_float = rel_error_fd(model.grads_memory + o, fd + o, n);
                CHECK(e_ref <= FD_TOL, "dropout %d bias %d %s: reference gradient of %s vs finite diff %.3g",
                      with_dropout, qkv_bias, position_name(position), info.name, e_ref);
                CHECK(e_float <= MODEL_TOL, "dropout %d bias %d %s: float gradient of %s vs finite diff %.3g",
                      with_dropout, qkv_bias, position_name(position), info.name, e_float);
                worst_ref = max2(worst_ref, e_ref);
                worst_float = max2(worst_float, e_float);
            }
            free(params); free(grads); free(fd); free(th.rows);
            gpt_free(&model);
        }
    }
    report("reference model gradient vs finite diff (worst tensor)", worst_ref);
    report("float model gradient vs finite diff (worst tensor)", worst_float);
}

// ---------------------------------------------------------------------------------------
// (b) causality

// Checks every attention row of the last forward: weight 1 on itself at position 0, rows
// summing to 1, exact zeros above the diagonal. Returns the worst row-sum error.
static double check_attention_rows(const GPT *model, int B, int t) {
    const GPTConfig *c = &model->config;
    double worst = 0.0;
    int first_is_one = 1, zeros_above = 1;
    for (int l = 0; l < c->n_layer; l++) {
        const float *att = layer_att(model, l);
        for (int bh = 0; bh < B * c->n_head; bh++) {
            const float *a = att + (size_t)bh * t * t;
            first_is_one &= a[0] == 1.0f;
            for (int i = 0; i < t; i++) {
                double sum = 0.0;
                for (int j = 0; j < t; j++) {
                    sum += a[i * t + j];
                    if (j > i) zeros_above &= a[i * t + j] == 0.0f;
                }
                worst = max2(worst, fabs(sum - 1.0));
            }
        }
    }
    CHECK(first_is_one, "position 0 does not put weight exactly 1.0f on itself");
    CHECK(zeros_above, "attention weights above the diagonal are not exactly 0");
    CHECK(worst <= 1e-5, "an attention row sums to 1 +- %.3g", worst);
    return worst;
}

TEST(model_causality) {
    GPTConfig c = {13, 8, 2, 3, 12, 5, 1, 0.2f, POSITION_LEARNED};
    int B = 2, t = 8, N = B * t, V = c.vocab_size;
    GPT model;
    if (build_model(&model, &c, B) != 0) return;
    randomize_params(&model, 7, 0.2f);
    float *logits = malloc((size_t)N * V * sizeof(float));
    int inputs[16], changed[16];
    Rng rng;
    rng_seed(&rng, 8);
    random_tokens(inputs, N, V, &rng);
    double worst_sum = 0.0;
    for (int training = 0; training < 2; training++) {
        const ForwardPass pass = {.training = training, .dropout_seed = 5};
        poison_activations(&model);
        gpt_forward(&model, inputs, NULL, B, t, &pass);
        worst_sum = max2(worst_sum, check_attention_rows(&model, B, t));
        memcpy(logits, model.acts.logits, (size_t)N * V * sizeof(float));
        for (int p = 0; p < t - 1; p++) {
            // change every token after position p
            memcpy(changed, inputs, sizeof(inputs));
            for (int b = 0; b < B; b++)
                for (int i = p + 1; i < t; i++) changed[b * t + i] = (inputs[b * t + i] + 1 + i) % V;
            poison_activations(&model);
            gpt_forward(&model, changed, NULL, B, t, &pass);
            worst_sum = max2(worst_sum, check_attention_rows(&model, B, t));
            for (int b = 0; b < B; b++) {
                const float *before = logits + (size_t)b * t * V, *after = model.acts.logits + (size_t)b * t * V;
                CHECK(memcmp(before, after, (size_t)(p + 1) * V * sizeof(float)) == 0,
                      "training %d: changing tokens after %d changed logits at or before it", training, p);
                CHECK(memcmp(before + (size_t)(p + 1) * V, after + (size_t)(p + 1) * V, V * sizeof(float)) != 0,
                      "training %d: changing token %d left its logits unchanged", training, p + 1);
            }
        }
    }
    printf("    attention row sums: max |sum - 1| = %.2e\n", worst_sum);
    free(logits);
    gpt_free(&model);
}

// ---------------------------------------------------------------------------------------
// (c) learning

TEST(model_learns_string) {
    const char *text = "hello world, hello chargpt! ";
    int period = (int)strlen(text);
    // vocabulary: the distinct characters
    char vocab[64];
    int V = 0, ids[64];
    for (int i = 0; i < period; i++) {
        int found = -1;
        for (int v = 0; v < V; v++) if (vocab[v] == text[i]) found = v;
        if (found < 0) { vocab[V] = text[i]; found = V++; }
        ids[i] = found;
    }
    // rows start at different phases whose first characters differ ('h', 'w', 'c', 'p'),
    // so the model must attend back to the first token to know where it is
    const int B = 4, t = 32, offsets[4] = {0, 6, 19, 24};
    int inputs[4 * 32], targets[4 * 32];
    for (int b = 0; b < B; b++) {
        for (int i = 0; i < t; i++) {
            inputs[b * t + i] = ids[(offsets[b] + i) % period];
            targets[b * t + i] = ids[(offsets[b] + i + 1) % period];
        }
    }
    GPTConfig c = {V, t, 2, 4, 32, 8, 0, 0.0f, POSITION_LEARNED};
    GPT model;
    if (build_model(&model, &c, B) != 0) return;
    gpt_init_weights(&model, 1);
    AdamW opt;
    char err[ERR_LEN];
    if (!CHECK(adamw_init(&opt, &model, 0.9f, 0.99f, 1e-8f, 0.0f, err) == 0, "adamw_init: %s", err)) return;
    float first = 0.0f, last = 0.0f;
    for (int step = 0; step < 300; step++) {
        gpt_forward(&model, inputs, targets, B, t, NULL);
        if (step == 0) first = model.mean_loss;
        last = model.mean_loss;
        gpt_zero_grad(&model);
        gpt_backward(&model);
        double norm;
        train_step_update(&model, &opt, grad_sum_of_squares(model.grads_memory, model.num_parameters), 1e-2f, 1.0f,
                          &norm);
    }
    gpt_forward(&model, inputs, targets, B, t, NULL);
    last = model.mean_loss;
    printf("    loss %.4f -> %.4f after 300 steps (V=%d)\n", first, last, V);
    CHECK(first > 2.0f, "initial loss %.4f, expected about log(%d) = %.2f", first, V, log(V));
    CHECK(last < 0.05f, "loss after 300 steps %.4f, expected < 0.05", last);
    adamw_free(&opt);
    gpt_free(&model);
}

// ---------------------------------------------------------------------------------------
// (d) determinism

// How train_steps runs a step: the separate calls (forward, zero, backward, update), or
// train_step on the whole batch, or train_step cut into micro-batches where
// train_step_micro_sequences says so, their views keeping the weights packed (as they do)
// or not.
enum { BY_CALLS, BY_TRAIN_STEP, BY_MICRO_BATCHES, BY_MICRO_BATCHES_UNPACKED };

typedef struct {
    GPTConfig config;
    int B, t;                          // sequences of t tokens a step (B * t <= 256)
    uint64_t tokens_seed;              // the random tokens
    uint64_t weights_seed;             // gpt_init_weights
    uint64_t dropout_seed;             // the first step's; each step after it one more
    float clip;                        // the gradients' largest norm
} TrainCase;

// `steps` training steps with dropout of tc's model on `threads` threads, run as `how` says;
// returns the parameters (allocated; NULL when the set-up failed), their count in *n, and in
// *grads (allocated) the last step's gradients when grads is not NULL.
static float *train_steps(const TrainCase *tc, int steps, int threads, int how, size_t *n, float **grads) {
    const GPTConfig *c = &tc->config;
    int B = tc->B, t = tc->t, inputs[256], targets[256];
    Rng rng;
    rng_seed(&rng, tc->tokens_seed);
    GPT model;
    char err[ERR_LEN];
    if (build_model(&model, c, B) != 0) return NULL;
    gpt_init_weights(&model, tc->weights_seed);
    int sequences = train_step_micro_sequences(c, PRECISION_FP32, B);
    AdamW opt;
    int micro = how == BY_MICRO_BATCHES || how == BY_MICRO_BATCHES_UNPACKED;
    if (!CHECK(!micro || gpt_alloc_micro_batches(&model, B, sequences, err) == 0, "micro-batches: %s", err) ||
        !CHECK(adamw_init(&opt, &model, 0.9f, 0.99f, 1e-8f, 0.1f, err) == 0, "adamw_init: %s", err)) {
        gpt_free(&model);
        return NULL;
    }
    for (int j = 0; how == BY_MICRO_BATCHES_UNPACKED && j < model.micro->threads; j++) {
        model.micro->views[j].pack_weights = 0;
        CHECK(gpt_set_precision(&model.micro->views[j], PRECISION_FP32, err) == 0, "a view's workspace: %s", err);
    }
    int saved = omp_get_max_threads();
    omp_set_num_threads(threads);
    for (int step = 0; step < steps; step++) {
        random_tokens(inputs, B * t, c->vocab_size, &rng);
        random_tokens(targets, B * t, c->vocab_size, &rng);
        const ForwardPass pass = {.training = 1, .dropout_seed = tc->dropout_seed + step};
        if (how != BY_CALLS) {
            train_step(&model, &opt, inputs, targets, B, t, pass.dropout_seed, 1e-2f, tc->clip);
            continue;
        }
        gpt_forward(&model, inputs, targets, B, t, &pass);
        gpt_zero_grad(&model);
        gpt_backward(&model);
        double norm;
        train_step_update(&model, &opt, grad_sum_of_squares(model.grads_memory, model.num_parameters), 1e-2f,
                          tc->clip, &norm);
    }
    omp_set_num_threads(saved);
    // not vacuous: each view that ran took a micro-batch of `sequences`
    if (micro) CHECK(model.micro && model.micro->views[0].cur_B == sequences, "the micro-batches did not run");
    *n = model.num_parameters;
    float *params = malloc(*n * sizeof(float));
    memcpy(params, model.params_memory, *n * sizeof(float));
    if (grads) {
        *grads = malloc(*n * sizeof(float));
        memcpy(*grads, model.grads_memory, *n * sizeof(float));
    }
    adamw_free(&opt);
    gpt_free(&model);
    return params;
}

// a model of 3 sequences of 8 tokens, whole batches
static const TrainCase determinism_case = {{13, 8, 2, 2, 16, 8, 1, 0.1f, POSITION_LEARNED}, 3, 8, 77, 1, 100, 1.0f};

TEST(model_determinism) {
    size_t n = 0;
    TrainCase init2 = determinism_case, dropout2 = determinism_case;
    init2.weights_seed = 2, dropout2.dropout_seed = 200;
    float *a = train_steps(&determinism_case, 5, 2, BY_CALLS, &n, NULL);
    float *b = train_steps(&determinism_case, 5, 2, BY_CALLS, &n, NULL);
    float *other_init = train_steps(&init2, 5, 2, BY_CALLS, &n, NULL);
    float *other_dropout = train_steps(&dropout2, 5, 2, BY_CALLS, &n, NULL);
    // kernels.h and layers.c promise the same bits for any thread count
    float *one_thread = train_steps(&determinism_case, 5, 1, BY_CALLS, &n, NULL);
    if (!a || !b || !other_init || !other_dropout || !one_thread) return;
    CHECK(memcmp(a, b, n * sizeof(float)) == 0, "two runs with the same seeds differ");
    CHECK(memcmp(a, other_init, n * sizeof(float)) != 0, "another init seed gives the same weights");
    CHECK(memcmp(a, other_dropout, n * sizeof(float)) != 0, "another dropout seed gives the same weights");
    CHECK(memcmp(a, one_thread, n * sizeof(float)) == 0, "1 and 2 threads give different weights");
    printf("    5 AdamW steps with dropout: same seeds and 1 vs 2 threads bit-identical\n");
    free(a); free(b); free(other_init); free(other_dropout); free(one_thread);
}

// A model large enough that its passes, matrix products and optimizer run in parallel: 4
// sequences of 16 tokens a step (too few to cut into micro-batches)
static const TrainCase team_case = {{13, 16, 2, 2, 64, 32, 1, 0.1f, POSITION_LEARNED}, 4, 16, 78, 5, 300, 1.0f};

// train_step (one parallel region a step, its team size chosen by the tuner) gives the
// same bits as the separate calls, on 1, 2 and 3 threads
TEST(model_train_step_same_bits) {
    size_t n = 0;
    float *calls = train_steps(&team_case, 12, 2, BY_CALLS, &n, NULL);
    float *one = train_steps(&team_case, 12, 1, BY_TRAIN_STEP, &n, NULL);
    float *two = train_steps(&team_case, 12, 2, BY_TRAIN_STEP, &n, NULL);
    float *three = train_steps(&team_case, 12, 3, BY_TRAIN_STEP, &n, NULL);
    if (!calls || !one || !two || !three) return;
    CHECK(memcmp(calls, two, n * sizeof(float)) == 0, "train_step differs from the separate calls");
    CHECK(memcmp(one, two, n * sizeof(float)) == 0, "train_step: 1 and 2 threads differ");
    CHECK(memcmp(one, three, n * sizeof(float)) == 0, "train_step: 1 and 3 threads differ");
    printf("    12 steps with dropout, %zu parameters: train_step on 1, 2, 3 threads and the separate calls bit-identical\n", n);
    free(calls); free(one); free(two); free(three);
}

// 16 sequences of 16 rows at n_embd 16: micro-batches of 4 sequences (the fewest giving 4C
// rows), no clipping
static const TrainCase micro_case = {{13, 16, 2, 2, 16, 8, 1, 0.1f, POSITION_LEARNED}, 16, 16, 80, 6, 400, 1e9f};

// A step cut into micro-batches: the same bits on 1, 2 and 3 threads and with the views'
// weights packed by each product (not once a step), and gradients within rounding of the
// whole batch's (another order of sums, so not its bits); where the cut is made
TEST(model_train_step_micro_batches) {
    GPTConfig lesson = {65, 64, 2, 4, 64, 16, 1, 0.0f, POSITION_LEARNED}, tiny = lesson, small = lesson;
    tiny.n_embd = 128, tiny.head_size = 32;
    small.block_size = 256, small.n_layer = 6, small.n_head = 6, small.n_embd = 384, small.head_size = 64;
    CHECK(train_step_micro_sequences(&lesson, PRECISION_FP32, 32) == 4, "the lesson's 32 sequences: not 8 x 4");
    CHECK(train_step_micro_sequences(&lesson, PRECISION_BF16, 32) == 32, "bf16: cut into micro-batches");
    CHECK(train_step_micro_sequences(&tiny, PRECISION_FP32, 12) == 12, "tiny's 12 sequences: cut");
    CHECK(train_step_micro_sequences(&small, PRECISION_FP32, 8) == 8, "small's 8 sequences: cut");
    CHECK(train_step_micro_sequences(&micro_case.config, PRECISION_FP32, micro_case.B) == 4,
          "the test's 16 sequences of 16 rows at n_embd 16: not micro-batches of 4");
    size_t n = 0;
    float *g[5] = {0};
    float *one = train_steps(&micro_case, 4, 1, BY_MICRO_BATCHES, &n, &g[0]);
    float *two = train_steps(&micro_case, 4, 2, BY_MICRO_BATCHES, &n, &g[1]);
    float *three = train_steps(&micro_case, 4, 3, BY_MICRO_BATCHES, &n, &g[2]);
    float *first = train_steps(&micro_case, 1, 2, BY_MICRO_BATCHES, &n, &g[3]);
    float *first_whole = train_steps(&micro_case, 1, 2, BY_TRAIN_STEP, &n, &g[4]);
    float *unpacked = train_steps(&micro_case, 4, 2, BY_MICRO_BATCHES_UNPACKED, &n, NULL);
    if (one && two && three && first && first_whole && unpacked) {
        CHECK(memcmp(one, two, n * sizeof(float)) == 0, "micro-batches: 1 and 2 threads differ");
        CHECK(memcmp(one, three, n * sizeof(float)) == 0, "micro-batches: 1 and 3 threads differ");
        // the views' packed weights, packed again at each step: the bits of products that pack them
        CHECK(memcmp(two, unpacked, n * sizeof(float)) == 0, "micro-batches: the views' packed weights change the bits");
        double e = rel_error_ff(g[3], g[4], n);
        printf("    4 micro-batches of 4 sequences, %zu parameters: 1, 2, 3 threads and views without packed weights "
               "bit-identical; one step's gradients rel err %.2e from the whole batch's\n",
               n, e);
        CHECK(e <= 1e-5, "micro-batches' gradients differ from the whole batch's by %.3e (relative)", e);
    }
    free(one), free(two), free(three), free(first), free(first_whole), free(unpacked);
    for (int i = 0; i < 5; i++) free(g[i]);
}

// The tuner against made-up sample times: it keeps the fastest count, tries the others only
// now and then, and follows a change of conditions. Returns the share of the samples taken on
// `want` threads; *time_share gets the share of the time they took.
static double tuner_share_at(ThreadTuner *t, const double *secs_of_count, int samples, int want, int *last,
                             double *time_share) {
    int at_want = 0;
    double time_at_want = 0.0, time = 0.0;
    for (int p = 0; p < samples; p++) {
        int threads = tuner_next(t);
        at_want += threads == want;
        time += secs_of_count[threads];
        if (threads == want) time_at_want += secs_of_count[threads];
        tuner_record(t, secs_of_count[threads]);
        *last = threads;
    }
    if (time_share) *time_share = time_at_want / time;
    return (double)at_want / samples;
}

TEST(model_thread_tuner) {
    // seconds a sample takes on 1 or 2 threads: another process beside it slows the team of
    // two (each thread waits for its preempted partner), not the single thread; for a short
    // pass (a generated character) many times over
    const double idle[3] = {0, 2.0, 1.1}, shared[3] = {0, 2.0, 2.6}, short_shared[3] = {0, 2.0, 180.0};
    const double four_cores[5] = {0, 4.0, 2.2, 1.5, 1.7};  // best with 3 of 4 threads
    ThreadTuner t;
    int last;
    double shares[5] = {0}, time_on_two;
    tuner_init(&t, 2, 2);
    shares[0] = tuner_share_at(&t, idle, 1000, 2, &last, NULL);
    CHECK(shares[0] >= 0.98 && last == 2, "cores to itself: %.1f%% of samples on 2 threads, last on %d",
          100 * shares[0], last);
    shares[1] = tuner_share_at(&t, shared, 1000, 1, &last, NULL);
    CHECK(shares[1] >= 0.95 && last == 1, "shared cores: %.1f%% of samples on 1 thread, last on %d",
          100 * shares[1], last);
    shares[2] = tuner_share_at(&t, idle, 1000, 2, &last, NULL);
    CHECK(shares[2] >= 0.8 && last == 2, "cores free again: %.1f%% of samples on 2 threads, last on %d",
          100 * shares[2], last);
    tuner_init(&t, 4, 4);
    shares[3] = tuner_share_at(&t, four_cores, 1000, 3, &last, NULL);
    CHECK(shares[3] >= 0.9 && last == 3, "4 cores, best with 3 threads: %.1f%% of samples on 3, last on %d",
          100 * shares[3], last);
    // a short pass starts alone; beside a busy process a team takes 90 times as long, and its
    // trials take a bounded share of the time
    tuner_init(&t, 2, 1);
    shares[4] = tuner_share_at(&t, short_shared, 10000, 1, &last, NULL);
    tuner_share_at(&t, short_shared, 10000, 2, &last, &time_on_two);
    CHECK(shares[4] >= 0.99 && last == 1 && time_on_two <= 2 * TUNER_TRIAL_COST,
          "short passes beside a busy process: %.2f%% of samples on 1 thread, %.1f%% of the time on 2, last on %d",
          100 * shares[4], 100 * time_on_two, last);
    tuner_init(&t, 2, 1);
    double found = tuner_share_at(&t, idle, 1000, 2, &last, NULL);
    CHECK(found >= 0.95 && last == 2, "short passes, cores free: %.1f%% of samples on 2 threads, last on %d",
          100 * found, last);
    // a long pass whose first run alone took 2.0 and whose team takes 1.1: that run was a
    // trial of one thread, lost by 1.8x, so one thread is next tried after about 0.8 /
    // TUNER_TRIAL_COST samples (and by twice that), not after the 8 of a start with nothing known
    int wait = (int)((idle[1] / idle[2] - 1.0) / TUNER_TRIAL_COST);
    tuner_init(&t, 2, 2);
    double unknown_early = tuner_share_at(&t, idle, wait - 1, 1, &last, NULL);
    tuner_init(&t, 2, 2);
    t.alone = idle[1];
    double known_early = tuner_share_at(&t, idle, wait - 1, 1, &last, NULL);
    double known_later = tuner_share_at(&t, idle, wait + 1, 1, &last, NULL);
    CHECK(known_early == 0.0 && known_later > 0.0 && unknown_early > 0.0,
          "one thread's share of samples 1 to %d: %.1f%% after a first pass alone (want 0), %.1f%% without "
          "(want more); of samples %d to %d after it: %.1f%% (want more than 0)",
          wait - 1, 100 * known_early, 100 * unknown_early, wait, 2 * wait, 100 * known_later);
    tuner_init(&t, 1, 1);
    double one = tuner_share_at(&t, idle, 100, 1, &last, NULL);
    CHECK(one == 1.0, "one thread allowed: %.1f%% of samples on 1", 100 * one);
    printf("    samples on the fastest count: idle %.1f%%, shared %.1f%%, idle again %.1f%%, 4 cores %.1f%%, "
           "short passes beside a busy process %.2f%% (%.1f%% of the time on 2 threads), short passes alone %.1f%%; "
           "1 thread tried in samples %d to %d after a first pass alone (%.1f%% of them), before %d without\n",
           100 * shares[0], 100 * shares[1], 100 * shares[2], 100 * shares[3], 100 * shares[4], 100 * time_on_two,
           100 * found, wait, 2 * wait, 100 * known_later, wait);
}

// team_tasks_begin / team_task_next (parallel.h): every task of the lists is taken once, by
// teams of 1 to 4 threads; a thread takes its own range first, in order; and the tasks of a
// thread that has not started yet are taken by the others, from the back.
#define TASKS_TEST_MAX 64
TEST(model_team_tasks_each_taken_once) {
    const int counts[TEAM_TASK_LISTS] = {37, 5}, total = 42;
    _Static_assert(TEAM_TASK_LISTS == 2, "the test's lists");
    for (int team = 1; team <= 4; team++) {
        int taken[TASKS_TEST_MAX] = {0}, out_of_order = 0;
#pragma omp parallel num_threads(team)
        {
            team_tasks_begin(counts, 2);
            int me = omp_get_thread_num(), n = omp_get_num_threads(), task, first_take = 1;
            int own_first = (int)((long)counts[0] * me / n), own_end = (int)((long)counts[0] * (me + 1) / n);
            while ((task = team_task_next()) >= 0) {
                if (task < total) {
#pragma omp atomic
                    taken[task]++;
                }
                // the owner takes its range from the front: its first task in the range is the first
                if (first_take && task >= own_first && task < own_end && task != own_first) {
#pragma omp atomic
                    out_of_order++;
                }
                first_take = 0;
            }
            team_barrier();
        }
        int wrong = 0;
        for (int t = 0; t < TASKS_TEST_MAX; t++) wrong += taken[t] != (t < total);
        CHECK(wrong == 0, "a team of %d: %d of %d tasks not taken exactly once", team, wrong, total);
        CHECK(out_of_order == 0, "a team of %d: %d threads began their own range past its first task", team,
              out_of_order);
    }
    // thread 1 starts only once thread 0 has found no task left: thread 0 took all, its own
    // range (list 0's first half, then list 1's) in order, then thread 1's from the back
    int order[TASKS_TEST_MAX], taken0 = 0, taken1 = 0, team_of = 0;
    volatile int done = 0;
#pragma omp parallel num_threads(2)
    {
        if (omp_get_thread_num() == 0) team_of = omp_get_num_threads();
        team_tasks_begin(counts, 2);
        if (omp_get_num_threads() == 2 && omp_get_thread_num() == 1) {
            while (!done) {
#pragma omp flush
            }
            while (team_task_next() >= 0) taken1++;
        } else if (omp_get_thread_num() == 0) {
            int task;
            while ((task = team_task_next()) >= 0 && taken0 < TASKS_TEST_MAX) order[taken0++] = task;
#pragma omp flush
            done = 1;
#pragma omp flush
        }
        team_barrier();
    }
    const int want[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 37, 38,      // its own
                        41, 40, 39, 36, 35, 34, 33, 32, 31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18};
    if (team_of < 2) {  // no threads (WebAssembly): a team of one takes them in order
        for (int i = 0; i < taken0; i++) CHECK(order[i] == i, "a team of one took task %d at %d", order[i], i);
        CHECK(taken0 == total, "a team of one took %d of %d tasks", taken0, total);
        printf("    no team of two here: the order across threads left out\n");
        return;
    }
    int same = taken0 == total;
    for (int i = 0; same && i < total; i++) same = order[i] == want[i];
    CHECK(same && taken1 == 0, "thread 0 took %d tasks (want 42, its own in order, then the rest from the back), "
          "thread 1 %d (want 0)", taken0, taken1);
}

// A short pass's trial of a larger team waits while the system says no processor is idle
// (a /proc/loadavg of the test's own under $CHARGPT_TEST_SYSTEM_ROOT), and takes place, and
// wins, once one is. Passes not marked short try the team whatever the system says.
TEST(model_thread_tuner_waits_for_an_idle_processor) {
    if (platform_idle_cpus() < 0 || platform_cpu_count() < 2) {
        test_skip("a system that counts its idle processors (Linux), with two or more");
        return;
    }
    const double idle[3] = {0, 2.0, 1.1};  // seconds a sample takes on 1 or 2 threads
    char root[256];
    test_fresh_dir(root, sizeof(root), "tests/tmp", "tuner_root");
    char dir[300], loadavg[320];
    snprintf(dir, sizeof(dir), "%s/proc", root);
    snprintf(loadavg, sizeof(loadavg), "%s/loadavg", dir);
    test_make_dir(dir);
    const char *busy = "2.00 2.00 2.00 4000000/4000100 1\n", *free_cpu = "1.00 1.00 1.00 1/100 1\n";
    test_write_file(loadavg, busy, strlen(busy));
    test_set_env("CHARGPT_TEST_SYSTEM_ROOT", root);
    ThreadTuner t;
    int last_busy, last_free, last_long;
    tuner_init(&t, 2, 1);
    t.short_pass = 1;
    double on_two_busy = tuner_share_at(&t, idle, 2000, 2, &last_busy, NULL);
    test_write_file(loadavg, free_cpu, strlen(free_cpu));
    double on_two_free = tuner_share_at(&t, idle, 1000, 2, &last_free, NULL);
    test_write_file(loadavg, busy, strlen(busy));
    tuner_init(&t, 2, 1);  // not short: a pass long enough to gain beside a busy process
    double on_two_long = tuner_share_at(&t, idle, 1000, 2, &last_long, NULL);
    test_set_env("CHARGPT_TEST_SYSTEM_ROOT", NULL);
    CHECK(on_two_busy == 0.0 && last_busy == 1, "no processor idle: %.1f%% of 2000 samples on 2 threads (want 0)",
          100 * on_two_busy);
    CHECK(on_two_free >= 0.8 && last_free == 2, "one idle: %.1f%% of 1000 samples on 2 threads, last on %d",
          100 * on_two_free, last_free);
    CHECK(on_two_long >= 0.95 && last_long == 2, "a long pass, none idle: %.1f%% on 2 threads, last on %d",
          100 * on_two_long, last_long);
}

// ---------------------------------------------------------------------------------------
// (e) dropout masks

TEST(model_dropout_mask) {
    const int n = 1 << 20;
    const float p = 0.3f, scale = 1.0f / (1.0f - p);
    Rng rng;
    rng_seed(&rng, 9);
    float *inp = malloc(n * sizeof(float)), *out = malloc(n * sizeof(float));
    float *again = malloc(n * sizeof(float)), *other = malloc(n * sizeof(float));
    float *dinp = calloc(n, sizeof(float));
    for (int i = 0; i < n; i++) inp[i] = 0.5f + rng_uniform(&rng);  // never 0
    Dropout drop = {p, dropout_key(42, 1, DROPOUT_ATTN_RESIDUAL), 0};
    Dropout drop2 = {p, dropout_key(42, 1, DROPOUT_MLP_RESIDUAL), 0};
    dropout_forward(out, inp, n, &drop);
    dropout_forward(again, inp, n, &drop);
    dropout_forward(other, inp, n, &drop2);
    dropout_backward(dinp, inp, n, &drop);
    long dropped = 0, wrong_value = 0, wrong_mask = 0, masks_differ = 0;
    for (int i = 0; i < n; i++) {
        int keep = dropout_keep(drop.key, (uint64_t)i, p);
        dropped += out[i] == 0.0f;
        wrong_mask += (out[i] != 0.0f) != keep;
        if (out[i] != 0.0f) wrong_value += out[i] != inp[i] * scale;
        masks_differ += (out[i] == 0.0f) != (other[i] == 0.0f);
    }
    double frac = (double)dropped / n, differ = (double)masks_differ / n;
    printf("    dropped fraction %.4f (p = 0.3); other key's mask differs at %.4f (expect 0.42)\n", frac, differ);
    CHECK(fabs(frac - 0.3) <= 0.01, "dropped fraction %.4f, expected 0.3 +- 0.01", frac);
    CHECK(wrong_value == 0, "%ld kept values are not exactly x / (1 - p)", wrong_value);
    CHECK(wrong_mask == 0, "%ld elements disagree with dropout_keep", wrong_mask);
    CHECK(memcmp(out, again, n * sizeof(float)) == 0, "the same key gave another mask");
    CHECK(fabs(differ - 0.42) <= 0.01, "another key's mask differs at %.4f of elements", differ);
    CHECK(memcmp(dinp, out, n * sizeof(float)) == 0, "dropout_backward does not use the forward's mask");
    // keys of different steps, layers and sites are all distinct
    uint64_t keys[4 * 3 * 3];
    int m = 0, distinct = 1;
    for (uint64_t s = 0; s < 4; s++)
        for (int l = 0; l < 3; l++)
            for (int site = 0; site < 3; site++) keys[m++] = dropout_key(s, l, site);
    for (int i = 0; i < m; i++)
        for (int j = i + 1; j < m; j++) distinct &= keys[i] != keys[j];
    CHECK(distinct, "dropout_key collides across steps, layers or sites");
    free(inp); free(out); free(again); free(other); free(dinp);
}

// ---------------------------------------------------------------------------------------
// (f) initialisation

TEST(model_init_weights) {
    GPTConfig c = {64, 64, 2, 4, 64, 16, 1, 0.0f, POSITION_LEARNED};
    GPT model;
    if (build_model(&model, &c, 1) != 0) return;
    gpt_init_weights(&model, 42);
    // nanoGPT's initialisation, by name: LayerNorm weights 1, biases 0, the residual
    // projections N(0, 0.02/sqrt(2L)), the other matrices and the embeddings N(0, 0.02)
    double proj_std = 0.02 / sqrt(2.0 * c.n_layer), worst_std = 0.0;
    int normals = 0;
    for (int i = 0; i < gpt_num_tensors(&c); i++) {
        TensorInfo info;
        gpt_tensor_info(&c, i, &info);
        const float *p = model.params_memory + info.offset;
        size_t n = info.size;
        int is_bias = strstr(info.name, ".bias") != NULL, is_ln = strstr(info.name, "ln_") != NULL;
        if (is_bias || is_ln) {
            float want = is_bias ? 0.0f : 1.0f;
            int exact = 1;
            for (size_t j = 0; j < n; j++) exact &= p[j] == want;
            CHECK(exact, "%s is not exactly %g", info.name, want);
            continue;
        }
        double want_std = strstr(info.name, "c_proj.weight") ? proj_std : 0.02, sum = 0.0, sumsq = 0.0;
        for (size_t j = 0; j < n; j++) sum += p[j];
        double mean = sum / n;
        for (size_t j = 0; j < n; j++) sumsq += (p[j] - mean) * (p[j] - mean);
        double std = sqrt(sumsq / n), rel = fabs(std / want_std - 1.0);
        worst_std = max2(worst_std, rel);
        normals++;
        CHECK(rel <= 0.05, "%s: std %.5f, expected %.5f", info.name, std, want_std);
        // the mean of n samples has std sigma/sqrt(n); allow 5 of those
        CHECK(fabs(mean) <= 5.0 * want_std / sqrt((double)n), "%s: mean %.3g", info.name, mean);
    }
    printf("    init std: worst relative deviation %.3f over %d tensors\n", worst_std, normals);
    // same seed: same bits (even over garbage); another seed: other weights
    size_t bytes = model.num_parameters * sizeof(float);
    float *first = malloc(bytes);
    memcpy(first, model.params_memory, bytes);
    memset(model.params_memory, 0x7f, bytes);
    gpt_init_weights(&model, 42);
    CHECK(memcmp(first, model.params_memory, bytes) == 0, "the same seed gave other weights");
    gpt_init_weights(&model, 43);
    size_t same = 0;
    size_t wte = (size_t)c.vocab_size * c.n_embd, wte_at = (size_t)(model.params.wte - model.params_memory);
    for (size_t i = 0; i < wte; i++) same += first[wte_at + i] == model.params.wte[i];
    CHECK(same == 0, "seeds 42 and 43 share %zu of %zu wte values", same, wte);
    free(first);
    gpt_free(&model);
}

// The parts of a batch (gradient accumulation's micro-batches, a process's rows) computed one
// after the other with their ForwardPass's batch_offset and batch_rows, their backwards adding into the same
// gradients, give the whole batch's gradient and loss: dropout masks follow the global row
// and each part's loss gradient is scaled by 1 / (the whole batch's tokens).
TEST(model_batch_parts_sum_to_the_batch) {
    GPTConfig c = {13, 8, 2, 2, 16, 8, 1, 0.2f, POSITION_LEARNED};
    enum { B = 5, t = 8 };
    int inputs[B * t], targets[B * t];
    Rng rng;
    rng_seed(&rng, 91);
    random_tokens(inputs, B * t, c.vocab_size, &rng);
    random_tokens(targets, B * t, c.vocab_size, &rng);
    GPT model;
    if (build_model(&model, &c, B) != 0) return;
    gpt_init_weights(&model, 3);
    const ForwardPass pass = {.training = 1, .dropout_seed = 17};
    size_t P = model.num_parameters;
    float *whole = malloc(P * sizeof(float));
    gpt_forward(&model, inputs, targets, B, t, &pass);
    double whole_loss = model.loss_sum;
    gpt_zero_grad(&model);
    gpt_backward(&model);
    memcpy(whole, model.grads_memory, P * sizeof(float));

    // uneven parts: rows [0, 2), [2, 3), [3, 5); then the same parts all numbered from row 0
    static const int first[] = {0, 2, 3, 5};
    for (int numbered = 1; numbered >= 0; numbered--) {
        double loss = 0.0;
        gpt_zero_grad(&model);
        for (int k = 0; k < 3; k++) {
            const ForwardPass part = {.training = 1, .dropout_seed = pass.dropout_seed,
                                      .batch_offset = numbered ? first[k] : 0, .batch_rows = B};
            int rows = first[k + 1] - first[k];
            gpt_forward(&model, inputs + first[k] * t, targets + first[k] * t, rows, t, &part);
            gpt_backward(&model);
            loss += model.loss_sum;
        }
        double e = rel_error_ff(model.grads_memory, whole, P);
        if (numbered) {
            printf("    3 parts of a batch of 5 with dropout 0.2: gradients rel err %.2e, loss sum %.9g vs %.9g\n", e,
                   loss, whole_loss);
            CHECK(e <= 1e-5, "the parts' summed gradients differ from the batch's by %.3e (relative)", e);
            CHECK(fabs(loss - whole_loss) <= 1e-5 * fabs(whole_loss), "the parts' losses sum to %.9g, the batch's to %.9g",
                  loss, whole_loss);
        } else {
            // not vacuous: parts that all draw row 0's dropout masks are another computation
            CHECK(e > 1e-3, "parts numbered from row 0 give the batch's gradients too (rel err %.3e)", e);
        }
    }
    free(whole);
    gpt_free(&model);
}

TEST(model_adamw_last_update_size) {
    GPTConfig c = {9, 8, 2, 2, 16, 8, 1, 0.0f, POSITION_LEARNED};
    GPT m;
    AdamW opt;
    char err[ERR_LEN];
    if (!CHECK(gpt_build(&m, &c, 1, err) == 0 && adamw_init(&opt, &m, 0.9f, 0.99f, 1e-8f, 0.1f, err) == 0, "%s", err))
        return;
    gpt_init_weights(&m, 3);
    float *before = malloc(m.num_parameters * sizeof(float));
    CHECK(adamw_last_update_sum_of_squares(&opt, m.params_memory, 1e-3f, 0, m.num_parameters) == 0.0,
          "an update before the first step");
    for (int step = 0; step < 3; step++) {
        fill_uniform(m.grads_memory, m.num_parameters, 11 + step);
        memcpy(before, m.params_memory, m.num_parameters * sizeof(float));
        float lr = 1e-2f * (step + 1);
        adamw_update(&opt, m.params_memory, m.grads_memory, lr);
        for (int i = 0; i < gpt_num_tensors(&c); i++) {
            TensorInfo info;
            gpt_tensor_info(&c, i, &info);
            double actual = 0.0;
            for (size_t k = info.offset; k < info.offset + info.size; k++)
                actual += ((double)before[k] - m.params_memory[k]) * ((double)before[k] - m.params_memory[k]);
            double worked = adamw_last_update_sum_of_squares(&opt, m.params_memory, lr, info.offset, info.size);
            CHECK(fabs(sqrt(worked) - sqrt(actual)) <= 1e-4 * sqrt(actual) + 1e-9, "step %d, %s: |update| %g, the "
                  "parameters moved %g", step, info.name, sqrt(worked), sqrt(actual));
        }
    }
    // an optimizer of a shard sees its part of a range only
    AdamW shard;
    if (CHECK(adamw_init_range(&shard, &m, 100, 50, 0.9f, 0.99f, 1e-8f, 0.1f, err) == 0, "%s", err)) {
        adamw_update(&shard, m.params_memory + 100, m.grads_memory + 100, 1e-2f);
        double all = adamw_last_update_sum_of_squares(&shard, m.params_memory + 100, 1e-2f, 0, m.num_parameters);
        double part = adamw_last_update_sum_of_squares(&shard, m.params_memory + 100, 1e-2f, 120, 10);
        double rest = adamw_last_update_sum_of_squares(&shard, m.params_memory + 100, 1e-2f, 0, 120) +
                      adamw_last_update_sum_of_squares(&shard, m.params_memory + 100, 1e-2f, 130, 1000);
        CHECK(all > 0 && fabs(all - part - rest) < 1e-12 * all + 1e-18, "the shard's ranges: %g != %g + %g", all, part,
              rest);
        adamw_free(&shard);
    }
    CHECK(grad_clipped(2.0, 1.0f) && !grad_clipped(1.0, 1.0f) && !grad_clipped(5.0, 0.0f),
          "grad_clipped's rule is not grad_clip's");
    free(before);
    adamw_free(&opt);
    gpt_free(&m);
}

// A view (gpt_view) computes with the model's weights, as they are at each call, in
// activations of its own, and freeing it leaves the model's weights.
TEST(model_view_shares_the_weights) {
    GPTConfig c = {11, 16, 2, 2, 24, 12, 1, 0.0f, POSITION_LEARNED};
    GPT model, view;
    int tokens[10];
    Rng rng;
    rng_seed(&rng, 3);
    random_tokens(tokens, 10, 11, &rng);
    if (build_model(&model, &c, 1) != 0) return;
    randomize_params(&model, 7, 0.5f);
    gpt_forward(&model, tokens, NULL, 1, 10, NULL);
    gpt_view(&view, &model);
    char err[ERR_LEN];
    if (!CHECK(gpt_alloc_activations(&view, 1, err) == 0, "%s", err)) return;
    gpt_forward(&view, tokens, NULL, 1, 10, NULL);
    CHECK(memcmp(view.acts.logits, model.acts.logits, 10 * 11 * sizeof(float)) == 0,
          "the view's logits differ from the model's");
    model.params.wte[0] += 1.0f;  // read at each call, never copied
    CHECK(view.params.wte == model.params.wte && view.grads_memory == NULL && view.precision == PRECISION_FP32,
          "the view holds a copy of the weights, gradients, or another precision");
    gpt_free(&view);
    gpt_forward(&model, tokens, NULL, 1, 10, NULL);  // the model's weights are still its own (ASan)
    CHECK(model.params.wte[0] == model.params_memory[0], "freeing the view changed the model's weights");
    gpt_free(&model);
}
