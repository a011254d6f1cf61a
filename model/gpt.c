// The GPT: memory layout, initialisation, and the forward and backward passes that chain
// the layers of layers.c and attention.c and the linear layers of the kernels (kernels.h).
#include "gpt.h"

#include <limits.h>
#include <math.h>
#include <omp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/platform.h"
#include "../common/rng.h"
#include "../kernels/kernels.h"
#include "../kernels/parallel.h"
#include "layers.h"

#define ALIGNMENT 64

float *gpt_alloc_floats(size_t n) {
    size_t bytes = (n * sizeof(float) + ALIGNMENT - 1) / ALIGNMENT * ALIGNMENT;
    float *p = platform_aligned_alloc(ALIGNMENT, bytes ? bytes : ALIGNMENT);
    if (p) memset(p, 0, bytes);
    return p;
}

const char *position_name(PositionEncoding position) { return position == POSITION_ROPE ? "rope" : "learned"; }

int position_parse(const char *text, PositionEncoding *position) {
    if (strcmp(text, "learned") == 0) *position = POSITION_LEARNED;
    else if (strcmp(text, "rope") == 0) *position = POSITION_ROPE;
    else return -1;
    return 0;
}

int gpt_config_validate(const GPTConfig *c, char err[ERR_LEN]) {
    struct { const char *name; int value, min, max; } fields[] = {
        {"vocab_size", c->vocab_size, 1, 1 << 21},  {"block_size", c->block_size, 1, 1 << 16},
        {"n_layer", c->n_layer, 1, 1024},           {"n_head", c->n_head, 1, 1024},
        {"n_embd", c->n_embd, 1, 1 << 16},          {"head_size", c->head_size, 1, 1 << 16},
    };
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
        if (fields[i].value < fields[i].min || fields[i].value > fields[i].max) {
            snprintf(err, ERR_LEN, "%s must be between %d and %d (got %d)", fields[i].name,
                     fields[i].min, fields[i].max, fields[i].value);
            return -1;
        }
    }
    if ((long long)c->n_head * c->head_size > (1 << 16)) {
        snprintf(err, ERR_LEN, "n_head * head_size must be at most %d (got %lld)", 1 << 16,
                 (long long)c->n_head * c->head_size);
        return -1;
    }
    if (c->qkv_bias != 0 && c->qkv_bias != 1) {
        snprintf(err, ERR_LEN, "qkv_bias must be 0 or 1 (got %d)", c->qkv_bias);
        return -1;
    }
    if (c->position != POSITION_LEARNED && c->position != POSITION_ROPE) {
        snprintf(err, ERR_LEN, "the position encoding must be %s (got %d)", POSITION_ENCODING_NAMES, (int)c->position);
        return -1;
    }
    if (c->position == POSITION_ROPE && c->head_size % 2 != 0) {
        snprintf(err, ERR_LEN, "rope turns pairs of a head's channels: head_size must be even (got %d)", c->head_size);
        return -1;
    }
    if (!(c->dropout >= 0.0f && c->dropout < 1.0f)) {
        snprintf(err, ERR_LEN, "dropout must be in [0, 1) (got %g)", c->dropout);
        return -1;
    }
    return 0;
}

// ----------------------------------------------------------------------------
// the parameter table

// The parameter tensors in storage order, the order of ParameterTensors' fields: nanoGPT's
// name (for a tensor stacked over layers, the part after "transformer.h.<i>."), the shape of
// one layer's tensor (rows, cols; cols DIM_NONE for a vector), whether it is stacked over the
// layers, whether weight decay applies (matrices and embeddings), whether it is the weight of
// a linear layer (out = in @ weight^T: what the kernels keep in their own formats; wte is the
// output head too), and how it starts. Sizes, names, per-layer views and the kernels' list of
// weights all come from this table.
typedef enum { DIM_NONE, DIM_V, DIM_T, DIM_C, DIM_3A, DIM_A, DIM_4C, DIM_N, DIM_B, DIM_H } Dim;
typedef enum { INIT_NORMAL, INIT_RESIDUAL_PROJ, INIT_ZERO, INIT_ONE } Init;
static const struct {
    const char *name;
    Dim rows, cols;
    int per_layer, decay, linear;
    Init init;
} parameter_table[NUM_PARAMETER_TENSORS] = {
    //  name                        rows     cols      layer decay linear init
    {"transformer.wte.weight",     DIM_V,  DIM_C,    0,    1,    1,     INIT_NORMAL},
    {"transformer.wpe.weight",     DIM_T,  DIM_C,    0,    1,    0,     INIT_NORMAL},  // only learned positions
    {"ln_1.weight",                DIM_C,  DIM_NONE, 1,    0,    0,     INIT_ONE},
    {"ln_1.bias",                  DIM_C,  DIM_NONE, 1,    0,    0,     INIT_ZERO},
    {"attn.c_attn.weight",         DIM_3A, DIM_C,    1,    1,    1,     INIT_NORMAL},
    {"attn.c_attn.bias",           DIM_3A, DIM_NONE, 1,    0,    0,     INIT_ZERO},  // only with qkv_bias
    {"attn.c_proj.weight",         DIM_C,  DIM_A,    1,    1,    1,     INIT_RESIDUAL_PROJ},
    {"attn.c_proj.bias",           DIM_C,  DIM_NONE, 1,    0,    0,     INIT_ZERO},
    {"ln_2.weight",                DIM_C,  DIM_NONE, 1,    0,    0,     INIT_ONE},
    {"ln_2.bias",                  DIM_C,  DIM_NONE, 1,    0,    0,     INIT_ZERO},
    {"mlp.c_fc.weight",            DIM_4C, DIM_C,    1,    1,    1,     INIT_NORMAL},
    {"mlp.c_fc.bias",              DIM_4C, DIM_NONE, 1,    0,    0,     INIT_ZERO},
    {"mlp.c_proj.weight",          DIM_C,  DIM_4C,   1,    1,    1,     INIT_RESIDUAL_PROJ},
    {"mlp.c_proj.bias",            DIM_C,  DIM_NONE, 1,    0,    0,     INIT_ZERO},
    {"transformer.ln_f.weight",    DIM_C,  DIM_NONE, 0,    0,    0,     INIT_ONE},
    {"transformer.ln_f.bias",      DIM_C,  DIM_NONE, 0,    0,    0,     INIT_ZERO},
};
#define WPE 1       // the tensors a config may leave out: wpe (RoPE), c_attn's bias (qkv_bias 0)
#define QKV_BIAS 5

// The size of a dimension: of the parameters' (and of the activations' for B sequences: N =
// B*T rows, B, H; a parameter's size does not depend on B). DIM_NONE is 1.
static size_t dim(const GPTConfig *c, int B, Dim d) {
    size_t C = c->n_embd, A = (size_t)c->n_head * c->head_size;
    switch (d) {
        case DIM_V: return c->vocab_size;
        case DIM_T: return c->block_size;
        case DIM_C: return C;
        case DIM_3A: return 3 * A;
        case DIM_A: return A;
        case DIM_4C: return 4 * C;
        case DIM_N: return (size_t)B * c->block_size;
        case DIM_B: return B;
        case DIM_H: return c->n_head;
        default: return 1;
    }
}

// Whether the config has tensor f.
static int has_tensor(const GPTConfig *c, int f) {
    return (f != QKV_BIAS || c->qkv_bias) && (f != WPE || c->position == POSITION_LEARNED);
}

// Floats of one layer's tensor f (of the whole tensor when it is not stacked over layers).
static size_t tensor_floats(const GPTConfig *c, int f) {
    return has_tensor(c, f) ? dim(c, 0, parameter_table[f].rows) * dim(c, 0, parameter_table[f].cols) : 0;
}

// Sizes of the parameter tensors in ParameterTensors order, all layers together.
static void parameter_sizes(const GPTConfig *c, size_t sizes[NUM_PARAMETER_TENSORS]) {
    for (int f = 0; f < NUM_PARAMETER_TENSORS; f++)
        sizes[f] = tensor_floats(c, f) * (parameter_table[f].per_layer ? (size_t)c->n_layer : 1);
}

// Points the fields of a ParameterTensors (all float*, in order) into one block.
static void point_tensors(float **fields, float *memory, const size_t *sizes, int count) {
    for (int i = 0; i < count; i++) {
        fields[i] = memory;
        memory += sizes[i];
    }
}

int gpt_build(GPT *model, const GPTConfig *config, int with_gradients, char err[ERR_LEN]) {
    memset(model, 0, sizeof(*model));
    if (gpt_config_validate(config, err) != 0) return -1;
    model->config = *config;
    parameter_sizes(config, model->param_sizes);
    size_t total = 0;
    for (int i = 0; i < NUM_PARAMETER_TENSORS; i++) total += model->param_sizes[i];
    if (total > (size_t)LONG_MAX) {  // the kernels index with a long: 32 bits on Windows
        snprintf(err, ERR_LEN, "the model has %zu parameters, more than the %ld this system's kernels index", total,
                 LONG_MAX);
        return -1;
    }
    model->num_parameters = total;
    model->params_memory = gpt_alloc_floats(total);
    if (with_gradients) model->grads_memory = gpt_alloc_floats(total);
    if (!model->params_memory || (with_gradients && !model->grads_memory)) {
        snprintf(err, ERR_LEN, "out of memory for %zu parameters", total);
        gpt_free(model);
        return -1;
    }
    point_tensors((float **)&model->params, model->params_memory, model->param_sizes, NUM_PARAMETER_TENSORS);
    if (with_gradients)
        point_tensors((float **)&model->grads, model->grads_memory, model->param_sizes, NUM_PARAMETER_TENSORS);
    if (!has_tensor(config, WPE)) model->params.wpe = model->grads.wpe = NULL;
    model->mean_loss = -1.0f;
    return 0;
}

// ----------------------------------------------------------------------------
// the activation and scratch tables

// The activations in storage order, each a field of ActivationTensors (by its offset there):
// the shape of one layer's tensor for the B sequences of T tokens they are allocated for (N =
// B*T rows), and whether it is stacked over the layers (L, ...). Their sizes, their place in
// one allocation and a layer's view (gpt_layer_activations) all come from this table; the
// scratch table below is the same for ScratchTensors, none of it stacked.
typedef struct {
    size_t field;
    Dim shape[4];  // DIM_NONE past its last dimension
    int per_layer;
} BufferInfo;
#define ACTIVATION(name) offsetof(ActivationTensors, name)
static const BufferInfo activation_table[NUM_ACTIVATION_TENSORS] = {
    //  field                    shape                          layer
    {ACTIVATION(encoded),   {DIM_N, DIM_C},                    0},
    {ACTIVATION(ln1),       {DIM_N, DIM_C},                    1},
    {ACTIVATION(ln1_mean),  {DIM_N},                           1},
    {ACTIVATION(ln1_rstd),  {DIM_N},                           1},
    {ACTIVATION(qkv),       {DIM_N, DIM_3A},                   1},
    {ACTIVATION(atty),      {DIM_N, DIM_A},                    1},
    {ACTIVATION(att),       {DIM_B, DIM_H, DIM_T, DIM_T},      1},
    {ACTIVATION(residual2), {DIM_N, DIM_C},                    1},
    {ACTIVATION(ln2),       {DIM_N, DIM_C},                    1},
    {ACTIVATION(ln2_mean),  {DIM_N},                           1},
    {ACTIVATION(ln2_rstd),  {DIM_N},                           1},
    {ACTIVATION(fch),       {DIM_N, DIM_4C},                   1},
    {ACTIVATION(gelu),      {DIM_N, DIM_4C},                   1},
    {ACTIVATION(residual3), {DIM_N, DIM_C},                    1},
    {ACTIVATION(lnf),       {DIM_N, DIM_C},                    0},
    {ACTIVATION(lnf_mean),  {DIM_N},                           0},
    {ACTIVATION(lnf_rstd),  {DIM_N},                           0},
    {ACTIVATION(logits),    {DIM_N, DIM_V},                    0},
    {ACTIVATION(probs),     {DIM_N, DIM_V},                    0},
    {ACTIVATION(losses),    {DIM_N},                           0},
};
#define SCRATCH(name) offsetof(ScratchTensors, name)
static const BufferInfo scratch_table[NUM_SCRATCH_TENSORS] = {
    {SCRATCH(branch), {DIM_N, DIM_C}, 0},  {SCRATCH(dres), {DIM_N, DIM_C}, 0},
    {SCRATCH(dbranch), {DIM_N, DIM_C}, 0}, {SCRATCH(dln), {DIM_N, DIM_C}, 0},
    {SCRATCH(dqkv), {DIM_N, DIM_3A}, 0},   {SCRATCH(datty), {DIM_N, DIM_A}, 0},
    {SCRATCH(dfch), {DIM_N, DIM_4C}, 0},   {SCRATCH(dlogits), {DIM_N, DIM_V}, 0},
};

// Floats of one layer's tensor b (of the whole one when it is not stacked) for B sequences.
// Doubles, as in GPTMemoryPlan.
static double layer_floats(const GPTConfig *c, int B, const BufferInfo *b) {
    double n = 1.0;
    for (int k = 0; k < 4; k++) n *= (double)dim(c, B, b->shape[k]);
    return n;
}

// Floats of each tensor of a table (all layers together) for B sequences.
static void buffer_sizes(const GPTConfig *c, int B, const BufferInfo *table, int count, double *floats) {
    for (int i = 0; i < count; i++) floats[i] = layer_floats(c, B, &table[i]) * (table[i].per_layer ? c->n_layer : 1);
}

// The field of tensor b in tensors (an ActivationTensors or a ScratchTensors).
static float **buffer_field(void *tensors, const BufferInfo *b) { return (float **)((char *)tensors + b->field); }

// Points the fields of tensors into memory, one after the other in the table's order.
static void point_buffers(void *tensors, float *memory, const BufferInfo *table, int count, const size_t *sizes) {
    for (int i = 0; i < count; i++) {
        *buffer_field(tensors, &table[i]) = memory;
        memory += sizes[i];
    }
}

// The kernels' workspace for the model's precision and its activations' rows.
static int make_kernels(GPT *model, char err[ERR_LEN]) {
    const GPTConfig *c = &model->config;
    LinearWeights weights[KERNELS_MAX_GROUPS];
    int count = gpt_linear_weights(c, &model->params, weights);
    KernelsShape shape = {model->batch_size * c->block_size, c->block_size, c->head_size, 0, model->grads_memory != NULL,
                          model->pack_weights};
    kernels_free(model->kernels);
    model->kernels = kernels_new(model->precision, weights, count, &shape, err);
    return model->kernels ? 0 : -1;
}

// Frees the activations, the scratch and the batch's tokens (none allocated: batch_size 0).
static void free_activations(GPT *model) {
    platform_aligned_free(model->acts_memory);
    platform_aligned_free(model->scratch_memory);
    free(model->inputs);
    free(model->targets);
    free(model->rope);
    model->rope = NULL;
    model->acts_memory = model->scratch_memory = NULL;
    model->inputs = model->targets = NULL;
    model->batch_size = 0;
}

int gpt_alloc_activations(GPT *model, int B, char err[ERR_LEN]) {
    const GPTConfig *c = &model->config;
    if (B < 1) {
        snprintf(err, ERR_LEN, "batch size must be at least 1 (got %d)", B);
        return -1;
    }
    size_t T = c->block_size, N = (size_t)B * T;
    double act_floats[NUM_ACTIVATION_TENSORS], scratch_floats[NUM_SCRATCH_TENSORS], floats = 0.0;
    buffer_sizes(c, B, activation_table, NUM_ACTIVATION_TENSORS, act_floats);
    buffer_sizes(c, B, scratch_table, NUM_SCRATCH_TENSORS, scratch_floats);
    double largest = 0.0;
    for (int i = 0; i < NUM_ACTIVATION_TENSORS; i++) floats += act_floats[i], largest = fmax(largest, act_floats[i]);
    for (int i = 0; i < NUM_SCRATCH_TENSORS; i++) floats += scratch_floats[i], largest = fmax(largest, scratch_floats[i]);
    free_activations(model);
    if (largest > (double)LONG_MAX) {  // the kernels index a tensor with a long: 32 bits on Windows
        snprintf(err, ERR_LEN, "batch %d x %zu needs an activation of %.0f floats, more than the %ld this system's "
                 "kernels index", B, T, largest, LONG_MAX);
        return -1;
    }
    // sizes no machine has are refused before they are converted to size_t
    if (floats * sizeof(float) > 0x1p60) {
        snprintf(err, ERR_LEN, "out of memory for activations of batch %d x %zu", B, T);
        return -1;
    }
    size_t act_sizes[NUM_ACTIVATION_TENSORS], scratch_sizes[NUM_SCRATCH_TENSORS], num_acts = 0, num_scratch = 0;
    for (int i = 0; i < NUM_ACTIVATION_TENSORS; i++) num_acts += act_sizes[i] = (size_t)act_floats[i];
    for (int i = 0; i < NUM_SCRATCH_TENSORS; i++) num_scratch += scratch_sizes[i] = (size_t)scratch_floats[i];
    model->acts_memory = gpt_alloc_floats(num_acts);
    model->scratch_memory = gpt_alloc_floats(num_scratch);
    model->inputs = malloc(N * sizeof(int));
    model->targets = malloc(N * sizeof(int));
    if (c->position == POSITION_ROPE && (model->rope = gpt_alloc_floats((T + 1) * c->head_size)))
        rope_angles(model->rope, 0, (int)T, c->head_size);
    if (!model->acts_memory || !model->scratch_memory || !model->inputs || !model->targets ||
        (c->position == POSITION_ROPE && !model->rope)) {
        snprintf(err, ERR_LEN, "out of memory for activations of batch %d x %zu", B, T);
        free_activations(model);
        return -1;
    }
    model->num_activations = num_acts;
    model->batch_size = B;
    point_buffers(&model->acts, model->acts_memory, activation_table, NUM_ACTIVATION_TENSORS, act_sizes);
    point_buffers(&model->scratch, model->scratch_memory, scratch_table, NUM_SCRATCH_TENSORS, scratch_sizes);
    return make_kernels(model, err);
}

int gpt_set_precision(GPT *model, Precision precision, char err[ERR_LEN]) {
    model->precision = precision;
    return model->batch_size > 0 ? make_kernels(model, err) : 0;
}

void gpt_params_changed(GPT *model) {
    if (model->kernels) kernels_weights_changed(model->kernels);
}

// Bytes AdamW allocates per parameter: two float moments and a weight-decay byte (adamw_init).
#define OPTIMIZER_BYTES_PER_PARAMETER (2 * sizeof(float) + 1)

double gpt_kv_cache_floats(const GPTConfig *c, int samples) {
    return (double)c->n_layer * samples * c->block_size * 2.0 * c->n_head * c->head_size;
}

double gpt_generation_floats(const GPTConfig *c, int samples) {
    return gpt_kv_cache_floats(c, samples) + (double)samples * c->vocab_size;
}

KVRows gpt_kv_cache_rows(const GPTConfig *c, float *cache, int sequences, int l, int s) {
    size_t A = (size_t)c->n_head * c->head_size, T = c->block_size;
    float *k = cache + ((size_t)l * sequences + s) * T * 2 * A;
    return (KVRows){k, k + A, (long)(2 * A), (long)(T * 2 * A), 0};
}

int gpt_generation_batch(const GPTConfig *c, int samples) { return (samples + c->block_size - 1) / c->block_size; }

void gpt_memory_plan(const GPTConfig *c, int B, GPTPlanKind kind, GPTMemoryPlan *plan) {
    memset(plan, 0, sizeof(*plan));
    size_t sizes[NUM_PARAMETER_TENSORS];
    parameter_sizes(c, sizes);
    double params = 0.0;
    for (int i = 0; i < NUM_PARAMETER_TENSORS; i++) params += (double)sizes[i];
    int sequences = kind == GPT_PLAN_GENERATION ? gpt_generation_batch(c, B) : B;
    double act[NUM_ACTIVATION_TENSORS], scratch[NUM_SCRATCH_TENSORS];
    buffer_sizes(c, sequences, activation_table, NUM_ACTIVATION_TENSORS, act);
    buffer_sizes(c, sequences, scratch_table, NUM_SCRATCH_TENSORS, scratch);
    plan->parameters = params * sizeof(float);
    for (int i = 0; i < NUM_ACTIVATION_TENSORS; i++) plan->activations += act[i] * sizeof(float);
    for (int i = 0; i < NUM_SCRATCH_TENSORS; i++) plan->scratch += scratch[i] * sizeof(float);
    plan->scratch += 2.0 * sequences * c->block_size * sizeof(int);  // inputs and targets
    if (c->position == POSITION_ROPE) plan->scratch += (c->block_size + 1.0) * c->head_size * sizeof(float);
    if (kind == GPT_PLAN_TRAINING) {
        plan->gradients = params * sizeof(float);
        plan->optimizer = params * OPTIMIZER_BYTES_PER_PARAMETER;
    } else if (kind == GPT_PLAN_GENERATION) {
        plan->generation = gpt_generation_floats(c, B) * sizeof(float);
    }
}

// The kernels' workspace (kernels.h) of a model on `sequences` sequences.
static KernelsMemory plan_kernels(const GPTConfig *config, int sequences, GPTPlanKind kind, Precision precision,
                                  int pack_weights) {
    LinearWeights weights[KERNELS_MAX_GROUPS];
    int count = gpt_linear_weights(config, NULL, weights);
    KernelsShape shape = {sequences * config->block_size, config->block_size, config->head_size,
                          omp_get_max_threads(), kind == GPT_PLAN_TRAINING, pack_weights};
    return kernels_memory(precision, weights, count, &shape);
}

void gpt_memory_plan_precision(GPTMemoryPlan *plan, const GPTConfig *config, int B, GPTPlanKind kind,
                               Precision precision) {
    int sequences = kind == GPT_PLAN_GENERATION ? gpt_generation_batch(config, B) : B;
    KernelsMemory m = plan_kernels(config, sequences, kind, precision, 0);
    plan->weight_copies = m.weights;
    plan->activations += m.inputs;
    plan->scratch += m.work;
}

double gpt_memory_total(const GPTMemoryPlan *p) {
    return p->parameters + p->gradients + p->optimizer + p->activations + p->scratch + p->generation +
           p->weight_copies + p->probe + p->text;
}

void gpt_memory_describe(const GPTMemoryPlan *p, char *text, size_t n) {
    const struct { const char *name; double bytes; } parts[] = {
        {"parameters", p->parameters}, {"weight copies", p->weight_copies}, {"gradients", p->gradients},
        {"optimizer", p->optimizer},
        {"activations", p->activations}, {"scratch", p->scratch}, {"generation buffers", p->generation},
        {"probe", p->probe}, {"text", p->text},
    };
    char amount[32];
    format_bytes(gpt_memory_total(p), amount, sizeof(amount));
    size_t used = (size_t)snprintf(text, n, "%s (", amount);
    const char *sep = "";
    for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]) && used < n; i++) {
        if (parts[i].bytes <= 0.0) continue;
        format_bytes(parts[i].bytes, amount, sizeof(amount));
        used += (size_t)snprintf(text + used, n - used, "%s%s %s", sep, parts[i].name, amount);
        sep = ", ";
    }
    if (used < n) snprintf(text + used, n - used, ")");
}

void gpt_view_gradients(GPT *view, float *memory) {
    view->grads_memory = memory;
    point_tensors((float **)&view->grads, memory, view->param_sizes, NUM_PARAMETER_TENSORS);
    if (!has_tensor(&view->config, WPE)) view->grads.wpe = NULL;
}

// The views a step cut into `count` micro-batches needs: one for each thread that runs them.
static int micro_batch_views(int count) { return omp_get_max_threads() < count ? omp_get_max_threads() : count; }

static void free_micro_batches(MicroBatches *micro) {
    if (!micro) return;
    for (int j = 0; j < micro->threads; j++) gpt_free(&micro->views[j]);
    free(micro->views);
    platform_aligned_free(micro->gradients);
    free(micro->loss_sums);
    free(micro);
}

int gpt_alloc_micro_batches(GPT *model, int B, int sequences, char err[ERR_LEN]) {
    free_micro_batches(model->micro);
    model->micro = NULL;
    MicroBatches *micro = calloc(1, sizeof(*micro));
    if (!micro) return error_status(err, -1, "out of memory for the micro-batches of a step");
    micro->count = B / sequences;
    micro->sequences = sequences;
    micro->threads = micro_batch_views(micro->count);
    micro->views = calloc((size_t)micro->threads, sizeof(GPT));
    micro->gradients = gpt_alloc_floats((size_t)micro->count * model->num_parameters);
    micro->loss_sums = calloc((size_t)micro->count, sizeof(double));
    int failed = !micro->views || !micro->gradients || !micro->loss_sums;
    for (int j = 0; j < micro->threads && !failed; j++) {
        gpt_view(&micro->views[j], model);
        gpt_view_gradients(&micro->views[j], micro->gradients);  // before its workspace: a training one
        micro->views[j].pack_weights = 1;
        failed = gpt_alloc_activations(&micro->views[j], sequences, err) != 0;
    }
    if (failed) {
        free_micro_batches(micro);
        return error_status(err, -1, "out of memory for %d micro-batches of %d sequences", B / sequences, sequences);
    }
    model->micro = micro;
    return 0;
}

void gpt_memory_plan_micro_batches(GPTMemoryPlan *plan, const GPTConfig *config, int B, int sequences) {
    int count = B / sequences, threads = micro_batch_views(count);
    GPTMemoryPlan view;
    gpt_memory_plan(config, sequences, GPT_PLAN_FORWARD, &view);
    KernelsMemory kernels = plan_kernels(config, sequences, GPT_PLAN_TRAINING, PRECISION_FP32, 1);
    plan->gradients += count * view.parameters;
    plan->weight_copies += threads * kernels.weights;
    plan->activations += threads * (view.activations + kernels.inputs);
    plan->scratch += threads * (view.scratch + kernels.work);
}

void gpt_free(GPT *model) {
    if (!model->borrowed) platform_aligned_free(model->params_memory);
    if (!model->borrowed) platform_aligned_free(model->grads_memory);
    free_micro_batches(model->micro);
    free_activations(model);
    kernels_free(model->kernels);
    memset(model, 0, sizeof(*model));
}

void gpt_view(GPT *view, const GPT *model) {
    memset(view, 0, sizeof(*view));
    view->config = model->config;
    view->params = model->params;
    view->params_memory = model->params_memory;
    memcpy(view->param_sizes, model->param_sizes, sizeof(view->param_sizes));
    view->num_parameters = model->num_parameters;
    view->borrowed = 1;
    view->precision = PRECISION_FP32;
    view->mean_loss = -1.0f;
}

// ----------------------------------------------------------------------------
// tensors by name

// Tensors are numbered as in nanoGPT's state_dict: those not stacked over layers before the
// first stacked one (wte, wpe), then each layer's tensors in turn, then the rest (ln_f).
int gpt_num_tensors(const GPTConfig *config) {
    int count = 0;
    for (int f = 0; f < NUM_PARAMETER_TENSORS; f++)
        if (has_tensor(config, f)) count += parameter_table[f].per_layer ? config->n_layer : 1;
    return count;
}

// The table's row and the layer of tensor `index` in that order.
static void tensor_at(const GPTConfig *config, int index, int *field, int *layer) {
    int per_layer = 0, first_stacked = 0;  // first_stacked: the tensors before the first stacked one
    for (int f = 0; f < NUM_PARAMETER_TENSORS; f++) per_layer += parameter_table[f].per_layer && has_tensor(config, f);
    for (int f = 0; !parameter_table[f].per_layer; f++) first_stacked += has_tensor(config, f);
    int n = index, stacked = n >= first_stacked && n < first_stacked + config->n_layer * per_layer;
    *layer = 0;
    if (stacked) {
        *layer = (n - first_stacked) / per_layer;
        n = (n - first_stacked) % per_layer + first_stacked;
    } else if (n >= first_stacked) {
        n -= config->n_layer * per_layer - per_layer;
    }
    // the n-th tensor of the table that the config has
    for (*field = 0; !has_tensor(config, *field) || n-- > 0; (*field)++) {}
}

void gpt_tensor_info(const GPTConfig *config, int index, TensorInfo *info) {
    size_t sizes[NUM_PARAMETER_TENSORS];
    parameter_sizes(config, sizes);
    int field, layer;
    tensor_at(config, index, &field, &layer);
    size_t offset = 0;
    for (int f = 0; f < field; f++) offset += sizes[f];
    memset(info, 0, sizeof(*info));
    if (parameter_table[field].per_layer)
        snprintf(info->name, sizeof(info->name), "transformer.h.%d.%s", layer, parameter_table[field].name);
    else snprintf(info->name, sizeof(info->name), "%s", parameter_table[field].name);
    info->size = tensor_floats(config, field);
    info->offset = offset + (size_t)layer * info->size;
    info->shape[0] = (int)dim(config, 0, parameter_table[field].rows);
    info->shape[1] = parameter_table[field].cols == DIM_NONE ? 0 : (int)dim(config, 0, parameter_table[field].cols);
    info->ndim = info->shape[1] ? 2 : 1;
    info->decay = parameter_table[field].decay;
}

_Static_assert(sizeof(ParameterTensors) == NUM_PARAMETER_TENSORS * sizeof(float *) &&
                   sizeof(BlockParams) == 12 * sizeof(float *),
               "ParameterTensors has a field per row of the parameter table, BlockParams one per stacked row");

BlockParams gpt_layer_params(const ParameterTensors *p, const GPTConfig *c, int l) {
    BlockParams lp;
    float *const *tensors = (float *const *)p;
    float **views = (float **)&lp;
    int v = 0;
    for (int f = 0; f < NUM_PARAMETER_TENSORS; f++)
        if (parameter_table[f].per_layer) views[v++] = has_tensor(c, f) ? tensors[f] + (size_t)l * tensor_floats(c, f) : NULL;
    return lp;
}

int gpt_linear_weights(const GPTConfig *c, const ParameterTensors *p, LinearWeights weights[KERNELS_MAX_GROUPS]) {
    float *const *tensors = (float *const *)p;
    int n = 0;
    for (int f = 0; f < NUM_PARAMETER_TENSORS; f++)
        if (parameter_table[f].linear)
            weights[n++] = (LinearWeights){p ? tensors[f] : NULL, parameter_table[f].per_layer ? c->n_layer : 1,
                                           (int)dim(c, 0, parameter_table[f].rows), (int)dim(c, 0, parameter_table[f].cols)};
    return n;
}

// ----------------------------------------------------------------------------
// initialisation

void gpt_init_weights(GPT *model, uint64_t seed) {
    const GPTConfig *c = &model->config;
    Rng rng;
    rng_seed(&rng, seed);
    double proj_std = 0.02 / sqrt(2.0 * c->n_layer);
    int count = gpt_num_tensors(c);
    for (int i = 0; i < count; i++) {  // in nanoGPT's order, which fixes the draws of each tensor
        TensorInfo info;
        int field, layer;
        gpt_tensor_info(c, i, &info);
        tensor_at(c, i, &field, &layer);
        float *p = model->params_memory + info.offset;
        Init init = parameter_table[field].init;
        double std = init == INIT_RESIDUAL_PROJ ? proj_std : 0.02;
        for (size_t j = 0; j < info.size; j++)
            p[j] = init == INIT_ZERO ? 0.0f : init == INIT_ONE ? 1.0f : (float)(std * rng_normal(&rng));
    }
}

// ----------------------------------------------------------------------------
// forward and backward

ActivationTensors gpt_layer_activations(const GPT *model, int layer) {
    ActivationTensors view = model->acts;
    for (int i = 0; i < NUM_ACTIVATION_TENSORS; i++) {
        const BufferInfo *b = &activation_table[i];
        if (b->per_layer)
            *buffer_field(&view, b) += (size_t)layer * (size_t)layer_floats(&model->config, model->batch_size, b);
    }
    return view;
}

const float *gpt_attention_weights(const GPT *model, int layer) { return gpt_layer_activations(model, layer).att; }
const float *gpt_qkv(const GPT *model, int layer) { return gpt_layer_activations(model, layer).qkv; }
const float *gpt_attention_output(const GPT *model, int layer) { return gpt_layer_activations(model, layer).atty; }

// The residual stream entering block l (gpt_residual_stream), which the hooks may edit.
static float *residual_stream(const GPT *model, int l) {
    return l == 0 ? model->acts.encoded : gpt_layer_activations(model, l - 1).residual3;
}

const float *gpt_residual_stream(const GPT *model, int layer) { return residual_stream(model, layer); }

// The dropout of one site of layer l for a pass over sequences of t tokens; its elements are
// numbered from the batch's first row (batch_offset), so a part of a batch draws the part of
// the whole batch's mask that its rows have.
static Dropout layer_dropout(const GPT *m, const ForwardPass *pass, int l, int site, int t) {
    Dropout d = {0.0f, 0, 0};
    if (pass->training && m->config.dropout > 0.0f) {
        const GPTConfig *c = &m->config;
        // elements per sequence: (H, t, t) attention weights, or (t, C) of a residual branch
        uint64_t per_row = site == DROPOUT_ATTN_WEIGHTS ? (uint64_t)c->n_head * t * t : (uint64_t)t * c->n_embd;
        d.p = c->dropout;
        d.key = dropout_key(pass->dropout_seed, l, site);
        d.first = (uint64_t)pass->batch_offset * per_row;
    }
    return d;
}

// Whether a pass rolls a RoPE model's cache: one token past the block (ForwardPass).
static int rolls(const GPT *m, const ForwardPass *pass, int t) { return pass->pos0 + t > m->config.block_size; }

// The keys and values attention reads in layer l, whose qkv rows (B sequences of t) are
// given: those rows themselves, or in cached generation the cache's, where the pass's own go
// to their positions' rows (a rolling cache's: over the oldest).
static KVRows layer_keys_values(const GPT *m, const ForwardPass *pass, float *qkv, int l, int t) {
    if (pass->kv_cache) {
        KVRows kv = gpt_kv_cache_rows(&m->config, pass->kv_cache, pass->kv_sequences, l, pass->first_sequence);
        kv.store = pass->pos0 % m->config.block_size;
        return kv;
    }
    long A = (long)m->config.n_head * m->config.head_size;
    return (KVRows){qkv + A, qkv + 2 * A, 3 * A, t * 3 * A, 0};
}

// The cos and sin of the pass's positions (rope_angles): the table's rows from pos0, or for
// a rolling cache's step its row past the table, which gpt_forward fills.
static const float *pass_angles(const GPT *m, const ForwardPass *pass, int t) {
    const GPTConfig *c = &m->config;
    return m->rope + (size_t)(rolls(m, pass, t) ? c->block_size : pass->pos0) * c->head_size;
}

// ----------------------------------------------------------------------------
// hooks (ForwardHooks)

// Edit e of the rows of an activation (N = B*t rows from x, ld_x floats apart, `width` floats
// each): the chosen positions' rows replaced as e says, or zeroed when `zero` is 1 (the
// gradient of an edited row, in the backward). A team function.
static void edit_rows(float *x, long ld_x, int width, const ActivationEdit *e, int zero, int B, int t) {
#pragma omp for schedule(static) nowait
    for (int n = 0; n < B * t; n++) {
        if (e->positions && !e->positions[n % t]) continue;
        float *row = x + (size_t)n * ld_x;
        if (zero || !e->rows) memset(row, 0, (size_t)width * sizeof(float));
        else memcpy(row, e->rows + (size_t)n * e->ld, (size_t)width * sizeof(float));
    }
    team_barrier();
}

// The hooks' edits of block l's heads' outputs in atty (N, A), or of their gradient (zero 1).
static void edit_heads(const GPT *m, float *atty, int l, int zero, int B, int t) {
    const ForwardHooks *hooks = m->hooks;
    const int hs = m->config.head_size, A = m->config.n_head * hs;
    for (int i = 0; hooks && i < hooks->n_heads; i++)
        if (hooks->heads[i].layer == l)
            edit_rows(atty + (size_t)hooks->heads[i].head * hs, A, hs, &hooks->heads[i], zero, B, t);
}

// The hooks' edits of the residual stream entering block l (0..L) in x (N, C), or of its
// gradient (zero 1).
static void edit_residual(const GPT *m, float *x, int l, int zero, int B, int t) {
    const ForwardHooks *hooks = m->hooks;
    const int C = m->config.n_embd;
    for (int i = 0; hooks && i < hooks->n_residual; i++)
        if (hooks->residual[i].layer == l) edit_rows(x, C, C, &hooks->residual[i], zero, B, t);
}

// ----------------------------------------------------------------------------
// the passes

// Block l over the rows of B sequences of t tokens, x (N, C) its input: pre-LayerNorm
// attention (the hooks' edits of its heads' outputs made) and MLP, each added to the residual
// stream,
//   residual2 = x + dropout(c_proj(attention(c_attn(ln_1(x)))))
//   residual3 = residual2 + dropout(c_proj(gelu(c_fc(ln_2(residual2)))))
// keeping in the layer's activations what the backward reads. A team function.
static void block_forward(GPT *model, int l, const float *x, int B, int t, const ForwardPass *pass) {
    const GPTConfig *c = &model->config;
    const int C = c->n_embd, H = c->n_head, hs = c->head_size, A = H * hs, N = B * t;
    BlockParams p = gpt_layer_params(&model->params, c, l);
    ActivationTensors la = gpt_layer_activations(model, l);
    Kernels *k = model->kernels;
    float *branch = model->scratch.branch;
    Dropout drop_att = layer_dropout(model, pass, l, DROPOUT_ATTN_WEIGHTS, t);
    Dropout drop_res1 = layer_dropout(model, pass, l, DROPOUT_ATTN_RESIDUAL, t);
    Dropout drop_res2 = layer_dropout(model, pass, l, DROPOUT_MLP_RESIDUAL, t);
    // x + attn(ln_1(x))
    layernorm_forward(la.ln1, la.ln1_mean, la.ln1_rstd, x, p.ln1w, p.ln1b, N, C);
    linear_forward(k, la.qkv, la.ln1, p.qkvw, p.qkvb, N, C, 3 * A);
    if (c->position == POSITION_ROPE) rope_forward(la.qkv, pass_angles(model, pass, t), B, t, H, hs);
    KVRows kv = layer_keys_values(model, pass, la.qkv, l, t);
    // a rolling cache's step reads all T rows, as if after T - 1 earlier positions
    int keys_before = rolls(model, pass, t) ? c->block_size - 1 : pass->pos0;
    attention_forward(k, la.atty, la.att, la.qkv, &kv, B, keys_before, t, H, hs, &drop_att);
    edit_heads(model, la.atty, l, 0, B, t);
    linear_forward(k, branch, la.atty, p.attprojw, p.attprojb, N, A, C);
    dropout_forward(branch, branch, N * C, &drop_res1);
    residual_forward(la.residual2, x, branch, N * C);
    // x + mlp(ln_2(x))
    layernorm_forward(la.ln2, la.ln2_mean, la.ln2_rstd, la.residual2, p.ln2w, p.ln2b, N, C);
    linear_forward(k, la.fch, la.ln2, p.fcw, p.fcb, N, C, 4 * C);
    // with gradients to come, GELU's slope in place of fch, all of fch that its backward needs
    // (in place: the GELU exercises' ./train leaves fch as it was, for their gelu_backward:
    // tests/exercises/through/gelu.c)
    if (model->grads_memory) gelu_forward_slope(la.gelu, la.fch, la.fch, N * 4 * C);
    else gelu_forward(la.gelu, la.fch, N * 4 * C);
    linear_forward(k, branch, la.gelu, p.fcprojw, p.fcprojb, N, 4 * C, C);
    dropout_forward(branch, branch, N * C, &drop_res2);
    residual_forward(la.residual3, la.residual2, branch, N * C);
}

void gpt_unembed(const GPT *model, const float *x, int n, float *ln, float *mean, float *rstd, float *logits) {
    const GPTConfig *c = &model->config;
    layernorm_forward(ln, mean, rstd, x, model->params.lnfw, model->params.lnfb, n, c->n_embd);
    // the head is the token embedding itself (tied): logits = ln wte^T
    linear_forward(model->kernels, logits, ln, model->params.wte, NULL, n, c->n_embd, c->vocab_size);
}

// Passes of fewer multiply-adds than this (about N x parameters) run on the calling thread:
// for a token or two of generation's prefill, starting a team costs more than it saves.
#define PARALLEL_MIN_MACS (1L << 22)

void gpt_forward(GPT *model, const int *inputs, const int *targets, int B, int t, const ForwardPass *pass) {
    static const ForwardPass evaluation = {0};
    if (!pass) pass = &evaluation;
    if (!in_team() && (long)B * t * (long)model->num_parameters >= PARALLEL_MIN_MACS) {
        // called from serial code: a team of threads runs it
#pragma omp parallel num_threads(tuner_start(&model->forward_tuner, model, B))
        gpt_forward(model, inputs, targets, B, t, pass);
        tuner_stop(&model->forward_tuner, (double)B * t);
        return;
    }
    const GPTConfig *c = &model->config;
    const int C = c->n_embd, V = c->vocab_size, N = B * t;
    ActivationTensors *a = &model->acts;
    // the tokens are kept for the backward pass, which runs after the barriers below
#pragma omp for schedule(static) nowait
    for (int n = 0; n < N; n++) {
        model->inputs[n] = inputs[n];
        if (targets) model->targets[n] = targets[n];
    }
    // the tokens' embeddings, with learned positions' from pos0 on
    const float *wpe = model->params.wpe ? model->params.wpe + (size_t)pass->pos0 * C : NULL;
    encoder_forward(a->encoded, inputs, model->params.wte, wpe, B, t, C);
    if (c->position == POSITION_ROPE && rolls(model, pass, t)) {
        if (omp_get_thread_num() == 0) rope_angles(model->rope + (size_t)c->block_size * c->head_size, pass->pos0, 1, c->head_size);
        team_barrier();
    }
    // the blocks, each reading the residual stream that enters it as the hooks leave it
    for (int l = 0; l < c->n_layer; l++) {
        edit_residual(model, residual_stream(model, l), l, 0, B, t);
        block_forward(model, l, residual_stream(model, l), B, t, pass);
    }
    // the final LayerNorm and the head, then the loss
    float *residual = residual_stream(model, c->n_layer);
    edit_residual(model, residual, c->n_layer, 0, B, t);
    gpt_unembed(model, residual, N, a->lnf, a->lnf_mean, a->lnf_rstd, a->logits);
    if (targets) crossentropy_forward(a->losses, a->probs, a->logits, targets, N, V);
    else softmax_forward(a->probs, a->logits, N, V);
    if (omp_get_thread_num() == 0) {
        model->pass = *pass;
        model->cur_B = B;
        model->cur_t = t;
        model->mean_loss = -1.0f;
        model->loss_sum = 0.0;
        if (targets) {
            double sum = 0.0;
            for (int n = 0; n < N; n++) sum += a->losses[n];
            model->loss_sum = sum;
            model->mean_loss = (float)(sum / N);
        }
    }
    team_barrier();
}

// p[0, n) = 0; a team function.
#define ZERO_CHUNK 4096
static void zero_floats(float *p, size_t n) {
    long chunks = (long)((n + ZERO_CHUNK - 1) / ZERO_CHUNK);
#pragma omp for schedule(static) nowait
    for (long k = 0; k < chunks; k++) {
        size_t i0 = (size_t)k * ZERO_CHUNK;
        memset(p + i0, 0, (i0 + ZERO_CHUNK < n ? ZERO_CHUNK : n - i0) * sizeof(float));
    }
    team_barrier();
}

// Gradient of a residual branch's output: through its dropout, or dres itself without one.
static const float *branch_gradient(float *dbranch, const float *dres, int n, const Dropout *drop) {
    if (drop->p <= 0.0f) return dres;
    zero_floats(dbranch, n);
    dropout_backward(dbranch, dres, n, drop);
    return dbranch;
}

// The backward of block_forward (l), from the gradient of its output in scratch.dres, which
// becomes the gradient of its input; the layer's parameter gradients are added to. A team
// function.
static void block_backward(GPT *model, int l) {
    const GPTConfig *c = &model->config;
    const int C = c->n_embd, H = c->n_head, hs = c->head_size, A = H * hs;
    const int B = model->cur_B, t = model->cur_t, N = B * t;
    BlockParams p = gpt_layer_params(&model->params, c, l), dp = gpt_layer_params(&model->grads, c, l);
    ActivationTensors la = gpt_layer_activations(model, l);
    const float *residual_in = residual_stream(model, l);
    Kernels *k = model->kernels;
    ScratchTensors *s = &model->scratch;
    Dropout drop_att = layer_dropout(model, &model->pass, l, DROPOUT_ATTN_WEIGHTS, t);
    Dropout drop_res1 = layer_dropout(model, &model->pass, l, DROPOUT_ATTN_RESIDUAL, t);
    Dropout drop_res2 = layer_dropout(model, &model->pass, l, DROPOUT_MLP_RESIDUAL, t);

    // MLP branch: residual3 = residual2 + dropout(c_proj(gelu(c_fc(ln_2(residual2)))))
    const float *dbranch = branch_gradient(s->dbranch, s->dres, N * C, &drop_res2);
    // c_proj's backward reads its input, GELU's output, as the forward kept it, or the
    // kernels' own copy of it when they kept one (kernels.h)
    const float *gelu = linear_input_kept(k, p.fcprojw, N) ? NULL : la.gelu;
    // the kernels' backwards write their input's gradient (kernels.h): nothing to zero first
    linear_backward(k, s->dfch, dp.fcprojw, dp.fcprojb, dbranch, gelu, p.fcprojw, N, 4 * C, C);
    gelu_backward_slope(s->dfch, la.fch, s->dfch, N * 4 * C);  // in place: d(GELU out) -> d(fch)
    linear_backward(k, s->dln, dp.fcw, dp.fcb, s->dfch, la.ln2, p.fcw, N, C, 4 * C);
    layernorm_backward(s->dres, dp.ln2w, dp.ln2b, s->dln, la.residual2, p.ln2w, la.ln2_mean, la.ln2_rstd, N, C);

    // attention branch: residual2 = residual_in + dropout(c_proj(attn(ln_1(residual_in))))
    dbranch = branch_gradient(s->dbranch, s->dres, N * C, &drop_res1);
    linear_backward(k, s->datty, dp.attprojw, dp.attprojb, dbranch, la.atty, p.attprojw, N, A, C);
    edit_heads(model, s->datty, l, 1, B, t);
    zero_floats(s->dqkv, (size_t)N * 3 * A);
    attention_backward(k, s->dqkv, s->datty, la.qkv, la.att, B, t, H, hs, &drop_att);
    if (c->position == POSITION_ROPE) rope_backward(s->dqkv, model->rope, B, t, H, hs);
    linear_backward(k, s->dln, dp.qkvw, dp.qkvb, s->dqkv, la.ln1, p.qkvw, N, C, 3 * A);
    layernorm_backward(s->dres, dp.ln1w, dp.ln1b, s->dln, residual_in, p.ln1w, la.ln1_mean, la.ln1_rstd, N, C);
}

void gpt_backward(GPT *model) {
    if (!in_team()) {
        // called from serial code: a team runs it (of one thread for a small pass)
#pragma omp parallel if ((long)model->cur_B * model->cur_t * (long)model->num_parameters >= PARALLEL_MIN_MACS)
        gpt_backward(model);
        return;
    }
    const GPTConfig *c = &model->config;
    const int C = c->n_embd, V = c->vocab_size, B = model->cur_B, t = model->cur_t, N = B * t;
    // the loss is the mean over the tokens of the whole batch this forward is a part of
    const int batch_tokens = (model->pass.batch_rows > 0 ? model->pass.batch_rows : B) * t;
    ActivationTensors *a = &model->acts;
    ScratchTensors *s = &model->scratch;
    ParameterTensors *g = &model->grads;

    // loss -> logits -> final LayerNorm; dres carries the residual stream's gradient
    zero_floats(s->dlogits, (size_t)N * V);
    crossentropy_backward(s->dlogits, a->probs, model->targets, 1.0f / batch_tokens, N, V);
    linear_backward(model->kernels, s->dln, g->wte, NULL, s->dlogits, a->lnf, model->params.wte, N, C, V);
    zero_floats(s->dres, (size_t)N * C);
    const float *last_residual = residual_stream(model, c->n_layer);
    layernorm_backward(s->dres, g->lnfw, g->lnfb, s->dln, last_residual, model->params.lnfw, a->lnf_mean,
                       a->lnf_rstd, N, C);
    // the blocks, last to first, no gradient through a row of the stream the hooks replaced; then
    // the embeddings
    edit_residual(model, s->dres, c->n_layer, 1, B, t);
    for (int l = c->n_layer - 1; l >= 0; l--) {
        block_backward(model, l);
        edit_residual(model, s->dres, l, 1, B, t);
    }
    encoder_backward(g->wte, g->wpe, s->dres, model->inputs, B, t, C);
}

void gpt_zero_grad(GPT *model) { zero_floats(model->grads_memory, model->num_parameters); }
