#include "onnx.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../model/layers.h"
#include "atomic_file.h"
#include "json.h"
#include "protobuf.h"

// onnx.proto's field numbers of what is written
enum { MODEL_IR_VERSION = 1, MODEL_PRODUCER_NAME = 2, MODEL_DOC_STRING = 6, MODEL_GRAPH = 7, MODEL_OPSET_IMPORT = 8,
       MODEL_METADATA_PROPS = 14 };
enum { OPSET_VERSION = 2 };
enum { ENTRY_KEY = 1, ENTRY_VALUE = 2 };
enum { GRAPH_NODE = 1, GRAPH_NAME = 2, GRAPH_INITIALIZER = 5, GRAPH_INPUT = 11, GRAPH_OUTPUT = 12 };
enum { NODE_INPUT = 1, NODE_OUTPUT = 2, NODE_NAME = 3, NODE_OP_TYPE = 4, NODE_ATTRIBUTE = 5 };
enum { ATTR_NAME = 1, ATTR_F = 2, ATTR_I = 3, ATTR_T = 5, ATTR_INTS = 8, ATTR_TYPE = 20 };
enum { ATTR_TYPE_FLOAT = 1, ATTR_TYPE_INT = 2, ATTR_TYPE_TENSOR = 4, ATTR_TYPE_INTS = 7 };
enum { TENSOR_DIMS = 1, TENSOR_DATA_TYPE = 2, TENSOR_NAME = 8, TENSOR_RAW_DATA = 9 };
enum { VALUE_NAME = 1, VALUE_TYPE = 2 };
enum { TYPE_TENSOR = 1, TENSOR_TYPE_ELEM_TYPE = 1, TENSOR_TYPE_SHAPE = 2, SHAPE_DIM = 1, DIM_VALUE = 1, DIM_PARAM = 2 };

#define NAME_LEN 96
#define IN(...) ((const char *const[]){__VA_ARGS__, NULL})
#define OUT IN

// The graph's fields but the parameters, which are streamed after them (onnx_export).
typedef struct {
    ProtoBuf fields;
    const GPTConfig *config;
} Graph;

// printf into a value's name.
static const char *name_of(char name[NAME_LEN], const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static const char *name_of(char name[NAME_LEN], const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, NAME_LEN, fmt, ap);
    va_end(ap);
    return name;
}

// ---------------------------------------------------------------------------------------
// messages

static void attr_int(ProtoBuf *attrs, const char *name, int64_t v) {
    ProtoBuf a = {0};
    proto_string(&a, ATTR_NAME, name);
    proto_int(&a, ATTR_TYPE, ATTR_TYPE_INT);
    proto_int(&a, ATTR_I, v);
    proto_message(attrs, NODE_ATTRIBUTE, &a);
    proto_buf_free(&a);
}

static void attr_float(ProtoBuf *attrs, const char *name, float v) {
    ProtoBuf a = {0};
    proto_string(&a, ATTR_NAME, name);
    proto_int(&a, ATTR_TYPE, ATTR_TYPE_FLOAT);
    proto_float(&a, ATTR_F, v);
    proto_message(attrs, NODE_ATTRIBUTE, &a);
    proto_buf_free(&a);
}

static void attr_ints(ProtoBuf *attrs, const char *name, const int64_t *v, int n) {
    ProtoBuf a = {0};
    proto_string(&a, ATTR_NAME, name);
    proto_int(&a, ATTR_TYPE, ATTR_TYPE_INTS);
    for (int i = 0; i < n; i++) proto_int(&a, ATTR_INTS, v[i]);
    proto_message(attrs, NODE_ATTRIBUTE, &a);
    proto_buf_free(&a);
}

// A TensorProto's fields before its data: its dims, data type and name.
static void tensor_header(ProtoBuf *t, const char *name, int type, const int64_t *dims, int ndim) {
    for (int i = 0; i < ndim; i++) proto_int(t, TENSOR_DIMS, dims[i]);
    proto_int(t, TENSOR_DATA_TYPE, type);
    proto_string(t, TENSOR_NAME, name);
}

static void attr_tensor_float(ProtoBuf *attrs, const char *name, float v) {
    ProtoBuf a = {0}, t = {0};
    tensor_header(&t, "value", ONNX_FLOAT, (const int64_t[]){1}, 1);
    proto_bytes(&t, TENSOR_RAW_DATA, &v, sizeof(v));
    proto_string(&a, ATTR_NAME, name);
    proto_int(&a, ATTR_TYPE, ATTR_TYPE_TENSOR);
    proto_message(&a, ATTR_T, &t);
    proto_message(attrs, NODE_ATTRIBUTE, &a);
    proto_buf_free(&t);
    proto_buf_free(&a);
}

// A node of op with inputs and outputs (NULL-terminated) and attributes (NodeProto fields,
// or NULL), named after its first output.
static void node(Graph *g, const char *op, const char *const *inputs, const char *const *outputs, const ProtoBuf *attrs) {
    ProtoBuf n = {0};
    for (const char *const *in = inputs; *in; in++) proto_string(&n, NODE_INPUT, *in);
    for (const char *const *out = outputs; *out; out++) proto_string(&n, NODE_OUTPUT, *out);
    proto_string(&n, NODE_NAME, outputs[0]);
    proto_string(&n, NODE_OP_TYPE, op);
    if (attrs) proto_append_fields(&n, attrs);
    proto_message(&g->fields, GRAPH_NODE, &n);
    proto_buf_free(&n);
}

// A node with one attribute, an int or a list of ints.
static void node_int(Graph *g, const char *op, const char *const *in, const char *const *out, const char *attr, int64_t v) {
    ProtoBuf a = {0};
    attr_int(&a, attr, v);
    node(g, op, in, out, &a);
    proto_buf_free(&a);
}

static void node_ints(Graph *g, const char *op, const char *const *in, const char *const *out, const char *attr,
                      const int64_t *v, int n) {
    ProtoBuf a = {0};
    attr_ints(&a, attr, v, n);
    node(g, op, in, out, &a);
    proto_buf_free(&a);
}

// An initializer held in the graph's fields (a constant, or RoPE's angles).
static void constant(Graph *g, const char *name, int type, const int64_t *dims, int ndim, const void *data, size_t bytes) {
    ProtoBuf t = {0};
    tensor_header(&t, name, type, dims, ndim);
    proto_bytes(&t, TENSOR_RAW_DATA, data, bytes);
    proto_message(&g->fields, GRAPH_INITIALIZER, &t);
    proto_buf_free(&t);
}

static void constant_ints(Graph *g, const char *name, const int64_t *v, int n) {
    constant(g, name, ONNX_INT64, (const int64_t[]){n}, 1, v, (size_t)n * sizeof(int64_t));
}

static void constant_scalar_int(Graph *g, const char *name, int64_t v) { constant(g, name, ONNX_INT64, NULL, 0, &v, sizeof(v)); }

static void constant_scalar(Graph *g, const char *name, float v) { constant(g, name, ONNX_FLOAT, NULL, 0, &v, sizeof(v)); }

// A graph input or output: a tensor of elem_type whose dimension i is dim_params[i] (a name:
// any size) or, where that is NULL, dim_values[i].
static void value_info(ProtoBuf *graph, int field, const char *name, int elem_type, const char *const *dim_params,
                       const int64_t *dim_values, int ndim) {
    ProtoBuf shape = {0}, tensor = {0}, type = {0}, value = {0};
    for (int i = 0; i < ndim; i++) {
        ProtoBuf dim = {0};
        if (dim_params[i]) proto_string(&dim, DIM_PARAM, dim_params[i]);
        else proto_int(&dim, DIM_VALUE, dim_values[i]);
        proto_message(&shape, SHAPE_DIM, &dim);
        proto_buf_free(&dim);
    }
    proto_int(&tensor, TENSOR_TYPE_ELEM_TYPE, elem_type);
    proto_message(&tensor, TENSOR_TYPE_SHAPE, &shape);
    proto_message(&type, TYPE_TENSOR, &tensor);
    proto_string(&value, VALUE_NAME, name);
    proto_message(&value, VALUE_TYPE, &type);
    proto_message(graph, field, &value);
    ProtoBuf *parts[] = {&shape, &tensor, &type, &value};
    for (int i = 0; i < 4; i++) proto_buf_free(parts[i]);
}

// ---------------------------------------------------------------------------------------
// the forward pass: B sequences of t tokens, N = B*t rows; shapes in comments

static void gemm(Graph *g, const char *x, const char *weight, const char *bias, const char *y) {
    if (bias) node_int(g, "Gemm", IN(x, weight, bias), OUT(y), "transB", 1);  // y = x weight^T + bias
    else node_int(g, "Gemm", IN(x, weight), OUT(y), "transB", 1);
}

static void layer_norm(Graph *g, const char *x, const char *prefix, const char *y) {
    char w[NAME_LEN], b[NAME_LEN];
    ProtoBuf a = {0};
    attr_int(&a, "axis", -1);
    attr_float(&a, "epsilon", LAYERNORM_EPS);
    node(g, "LayerNormalization", IN(x, name_of(w, "%s.weight", prefix), name_of(b, "%s.bias", prefix)), OUT(y), &a);
    proto_buf_free(&a);
}

// The constants, the shapes made from input_ids' and the causal mask, shared by every layer.
static void shapes_and_mask(Graph *g) {
    const GPTConfig *c = g->config;
    int A = c->n_head * c->head_size;
    constant_ints(g, "zero", (const int64_t[]){0}, 1);
    constant_ints(g, "rows_of_embedding", (const int64_t[]){-1, c->n_embd}, 2);
    constant_ints(g, "rows_of_heads", (const int64_t[]){-1, A}, 2);
    constant_ints(g, "qkv_split", (const int64_t[]){3, c->n_head, c->head_size}, 3);
    constant_ints(g, "vocabulary", (const int64_t[]){c->vocab_size}, 1);
    for (int i = 0; i < 3; i++) constant_scalar_int(g, (const char *[]){"q_index", "k_index", "v_index"}[i], i);
    constant_scalar(g, "attention_scale", 1.0f / sqrtf((float)c->head_size));
    constant_scalar(g, "minus_infinity", -INFINITY);
    node(g, "Shape", IN("input_ids"), OUT("batch_sequence"), NULL);            // [B, t]
    node_int(g, "Shape", IN("input_ids"), OUT("sequence"), "start", 1);          // [t]
    node_int(g, "Concat", IN("batch_sequence", "qkv_split"), OUT("qkv_shape"), "axis", 0);   // [B, t, 3, H, hs]
    node_int(g, "Concat", IN("batch_sequence", "vocabulary"), OUT("logits_shape"), "axis", 0);  // [B, t, V]
    // causal: (t, t), true at and below the diagonal: the keys a query attends to
    node_int(g, "Concat", IN("sequence", "sequence"), OUT("square"), "axis", 0);
    ProtoBuf one = {0};
    attr_tensor_float(&one, "value", 1.0f);
    node(g, "ConstantOfShape", IN("square"), OUT("ones"), &one);
    proto_buf_free(&one);
    node_int(g, "Trilu", IN("ones"), OUT("lower_triangle"), "upper", 0);
    node_int(g, "Cast", IN("lower_triangle"), OUT("causal"), "to", ONNX_BOOL);
}

// The token embedding plus the position embedding (learned) as rows: x (N, C).
static void embeddings(Graph *g, const char *x) {
    node_int(g, "Gather", IN("transformer.wte.weight", "input_ids"), OUT("token_embedding"), "axis", 0);  // (B, t, C)
    const char *sum = "token_embedding";
    if (g->config->position == POSITION_LEARNED) {
        node(g, "Slice", IN("transformer.wpe.weight", "zero", "sequence", "zero"), OUT("position_embedding"), NULL);
        node(g, "Add", IN("token_embedding", "position_embedding"), OUT("embedding"), NULL);  // (B, t, C)
        sum = "embedding";
    }
    node(g, "Reshape", IN(sum, "rows_of_embedding"), OUT(x), NULL);
}

// RoPE's angles of positions [0, block_size) as initializers rope.cos and rope.sin (T, hs/2, 1)
// and their first t rows rope_cos and rope_sin, and the shapes that pair a head's values.
static int rope_tables(Graph *g) {
    const GPTConfig *c = g->config;
    int T = c->block_size, hs = c->head_size, half = hs / 2;
    float *cs = malloc((size_t)T * hs * sizeof(float)), *table = malloc((size_t)T * half * sizeof(float));
    if (!cs || !table) {
        free(cs);
        free(table);
        return -1;
    }
    rope_angles(cs, 0, T, hs);
    for (int which = 0; which < 2; which++) {  // cos at [2i], sin at [2i + 1] of each row of cs
        for (int p = 0; p < T; p++)
            for (int i = 0; i < half; i++) table[p * half + i] = cs[(size_t)p * hs + 2 * i + which];
        constant(g, which ? "rope.sin" : "rope.cos", ONNX_FLOAT, (const int64_t[]){T, half, 1}, 3, table,
                 (size_t)T * half * sizeof(float));
    }
    free(cs);
    free(table);
    node(g, "Slice", IN("rope.cos", "zero", "sequence", "zero"), OUT("rope_cos"), NULL);  // (t, hs/2, 1)
    node(g, "Slice", IN("rope.sin", "zero", "sequence", "zero"), OUT("rope_sin"), NULL);
    constant_ints(g, "pairs", (const int64_t[]){0, 0, 0, -1, 2}, 5);
    constant_ints(g, "unpaired", (const int64_t[]){0, 0, 0, -1}, 4);
    return 0;
}

// RoPE on x (B, H, t, hs), into y: each pair (x[2i], x[2i+1]) turned by its position's angle.
static void rope(Graph *g, const char *x, const char *y) {
    char p[NAME_LEN], even[NAME_LEN], odd[NAME_LEN], t[4][NAME_LEN], r0[NAME_LEN], r1[NAME_LEN], joined[NAME_LEN];
    node(g, "Reshape", IN(x, "pairs"), OUT(name_of(p, "%s.pairs", y)), NULL);  // (B, H, t, hs/2, 2)
    node_int(g, "Split", IN(p), OUT(name_of(even, "%s.even", y), name_of(odd, "%s.odd", y)), "axis", -1);
    node(g, "Mul", IN(even, "rope_cos"), OUT(name_of(t[0], "%s.even_cos", y)), NULL);
    node(g, "Mul", IN(odd, "rope_sin"), OUT(name_of(t[1], "%s.odd_sin", y)), NULL);
    node(g, "Sub", IN(t[0], t[1]), OUT(name_of(r0, "%s.turned_even", y)), NULL);  // x0 cos - x1 sin
    node(g, "Mul", IN(even, "rope_sin"), OUT(name_of(t[2], "%s.even_sin", y)), NULL);
    node(g, "Mul", IN(odd, "rope_cos"), OUT(name_of(t[3], "%s.odd_cos", y)), NULL);
    node(g, "Add", IN(t[2], t[3]), OUT(name_of(r1, "%s.turned_odd", y)), NULL);   // x0 sin + x1 cos
    node_int(g, "Concat", IN(r0, r1), OUT(name_of(joined, "%s.turned_pairs", y)), "axis", -1);
    node(g, "Reshape", IN(joined, "unpaired"), OUT(y), NULL);
}

// Causal self-attention of layer l on x (N, C) into y (N, C): softmax(q k^T / sqrt(hs)) v per
// head, then c_proj.
static void attention(Graph *g, int l, const char *x, const char *y) {
    const GPTConfig *c = g->config;
    char pre[NAME_LEN], w[NAME_LEN], b[NAME_LEN], v[6][NAME_LEN], qkv[3][NAME_LEN], q[NAME_LEN], k[NAME_LEN];
    name_of(pre, "transformer.h.%d.attn", l);
    gemm(g, x, name_of(w, "%s.c_attn.weight", pre), c->qkv_bias ? name_of(b, "%s.c_attn.bias", pre) : NULL,
         name_of(v[0], "h.%d.qkv", l));                                                   // (N, 3A)
    node(g, "Reshape", IN(v[0], "qkv_shape"), OUT(name_of(v[1], "h.%d.qkv_split", l)), NULL);  // (B, t, 3, H, hs)
    node_ints(g, "Transpose", IN(v[1]), OUT(name_of(v[2], "h.%d.qkv_heads", l)), "perm",
              (const int64_t[]){2, 0, 3, 1, 4}, 5);                                         // (3, B, H, t, hs)
    const char *which[3] = {"q", "k", "v"};
    for (int i = 0; i < 3; i++)
        node_int(g, "Gather", IN(v[2], (const char *[]){"q_index", "k_index", "v_index"}[i]),
                 OUT(name_of(qkv[i], "h.%d.%s", l, which[i])), "axis", 0);                 // (B, H, t, hs)
    if (c->position == POSITION_ROPE) {
        rope(g, qkv[0], name_of(q, "h.%d.q_turned", l));
        rope(g, qkv[1], name_of(k, "h.%d.k_turned", l));
    } else {
        strcpy(q, qkv[0]);
        strcpy(k, qkv[1]);
    }
    node_ints(g, "Transpose", IN(k), OUT(name_of(v[3], "h.%d.k_transposed", l)), "perm", (const int64_t[]){0, 1, 3, 2}, 4);
    char scores[NAME_LEN], scaled[NAME_LEN], masked[NAME_LEN], weights[NAME_LEN], heads[NAME_LEN];
    node(g, "MatMul", IN(q, v[3]), OUT(name_of(scores, "h.%d.scores", l)), NULL);         // (B, H, t, t)
    node(g, "Mul", IN(scores, "attention_scale"), OUT(name_of(scaled, "h.%d.scaled_scores", l)), NULL);
    node(g, "Where", IN("causal", scaled, "minus_infinity"), OUT(name_of(masked, "h.%d.masked_scores", l)), NULL);
    node_int(g, "Softmax", IN(masked), OUT(name_of(weights, "h.%d.attention", l)), "axis", -1);
    node(g, "MatMul", IN(weights, qkv[2]), OUT(name_of(heads, "h.%d.heads", l)), NULL);   // (B, H, t, hs)
    node_ints(g, "Transpose", IN(heads), OUT(name_of(v[4], "h.%d.heads_by_position", l)), "perm",
              (const int64_t[]){0, 2, 1, 3}, 4);                                            // (B, t, H, hs)
    node(g, "Reshape", IN(v[4], "rows_of_heads"), OUT(name_of(v[5], "h.%d.heads_rows", l)), NULL);  // (N, A)
    gemm(g, v[5], name_of(w, "%s.c_proj.weight", pre), name_of(b, "%s.c_proj.bias", pre), y);
}

// GELU, tanh form, of x into y: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
static void gelu(Graph *g, int l, const char *x, const char *y) {
    char v[7][NAME_LEN];
    node(g, "Mul", IN(x, x), OUT(name_of(v[0], "h.%d.fc_squared", l)), NULL);
    node(g, "Mul", IN(v[0], x), OUT(name_of(v[1], "h.%d.fc_cubed", l)), NULL);
    node(g, "Mul", IN(v[1], "gelu_cubic"), OUT(name_of(v[2], "h.%d.gelu_cubic_term", l)), NULL);
    node(g, "Add", IN(x, v[2]), OUT(name_of(v[3], "h.%d.gelu_inner", l)), NULL);
    node(g, "Mul", IN(v[3], "gelu_scale"), OUT(name_of(v[4], "h.%d.gelu_scaled", l)), NULL);
    node(g, "Tanh", IN(v[4]), OUT(name_of(v[5], "h.%d.gelu_tanh", l)), NULL);
    node(g, "Add", IN(v[5], "one"), OUT(name_of(v[6], "h.%d.gelu_gate", l)), NULL);
    char half[NAME_LEN];
    node(g, "Mul", IN(x, "half"), OUT(name_of(half, "h.%d.fc_half", l)), NULL);
    node(g, "Mul", IN(half, v[6]), OUT(y), NULL);
}

// Block l: x + attention(ln_1(x)), then + mlp(ln_2(.)), from x into y (N, C).
static void block(Graph *g, int l, const char *x, const char *y) {
    char pre[NAME_LEN], w[NAME_LEN], b[NAME_LEN], v[7][NAME_LEN];
    layer_norm(g, x, name_of(pre, "transformer.h.%d.ln_1", l), name_of(v[0], "h.%d.ln_1", l));
    attention(g, l, v[0], name_of(v[1], "h.%d.attention_out", l));
    node(g, "Add", IN(x, v[1]), OUT(name_of(v[2], "h.%d.residual", l)), NULL);
    layer_norm(g, v[2], name_of(pre, "transformer.h.%d.ln_2", l), name_of(v[3], "h.%d.ln_2", l));
    name_of(pre, "transformer.h.%d.mlp", l);
    gemm(g, v[3], name_of(w, "%s.c_fc.weight", pre), name_of(b, "%s.c_fc.bias", pre), name_of(v[4], "h.%d.fc", l));
    gelu(g, l, v[4], name_of(v[5], "h.%d.gelu", l));
    gemm(g, v[5], name_of(w, "%s.c_proj.weight", pre), name_of(b, "%s.c_proj.bias", pre),
         name_of(v[6], "h.%d.mlp_out", l));
    node(g, "Add", IN(v[2], v[6]), OUT(y), NULL);
}

// The whole graph but the parameters' initializers: input_ids to logits.
static int build_graph(Graph *g) {
    const GPTConfig *c = g->config;
    proto_string(&g->fields, GRAPH_NAME, "chargpt");
    value_info(&g->fields, GRAPH_INPUT, "input_ids", ONNX_INT64, (const char *[]){"batch", "sequence"}, NULL, 2);
    value_info(&g->fields, GRAPH_OUTPUT, "logits", ONNX_FLOAT, (const char *[]){"batch", "sequence", NULL},
               (const int64_t[]){0, 0, c->vocab_size}, 3);
    shapes_and_mask(g);
    constant_scalar(g, "half", 0.5f);
    constant_scalar(g, "one", 1.0f);
    constant_scalar(g, "gelu_cubic", 0.044715f);
    constant_scalar(g, "gelu_scale", 0.7978845608028654f);  // sqrt(2/pi)
    if (c->position == POSITION_ROPE && rope_tables(g) != 0) return -1;
    char x[NAME_LEN], y[NAME_LEN];
    embeddings(g, name_of(x, "embedded"));
    for (int l = 0; l < c->n_layer; l++) {
        block(g, l, x, name_of(y, "h.%d.out", l));
        strcpy(x, y);
    }
    layer_norm(g, x, "transformer.ln_f", "ln_f");
    gemm(g, "ln_f", "transformer.wte.weight", NULL, "logits_rows");  // (N, V): the head tied to wte
    node(g, "Reshape", IN("logits_rows", "logits_shape"), OUT("logits"), NULL);
    return g->fields.failed ? -1 : 0;
}

// ---------------------------------------------------------------------------------------
// the model around the graph, and the file

static void metadata(ProtoBuf *model, const char *key, const char *value) {
    ProtoBuf e = {0};
    proto_string(&e, ENTRY_KEY, key);
    proto_string(&e, ENTRY_VALUE, value);
    proto_message(model, MODEL_METADATA_PROPS, &e);
    proto_buf_free(&e);
}

// The ModelProto's fields before its graph.
static void model_fields(ProtoBuf *m, const GPTConfig *c, const Vocab *vocab, const char *name) {
    proto_int(m, MODEL_IR_VERSION, ONNX_IR_VERSION);
    ProtoBuf opset = {0};
    proto_int(&opset, OPSET_VERSION, ONNX_OPSET);
    proto_message(m, MODEL_OPSET_IMPORT, &opset);
    proto_buf_free(&opset);
    proto_string(m, MODEL_PRODUCER_NAME, "chargpt");
    proto_string(m, MODEL_DOC_STRING, "A character-level GPT trained by chargpt: input_ids [batch, sequence] of at "
                 "most block_size tokens (metadata vocab: token i is the i-th code point) -> logits [batch, sequence, "
                 "vocab] of the next token at each position");
    JsonBuf list = {0};
    json_buf_append(&list, "[", 1);
    for (int i = 0; i < vocab->size; i++) json_buf_printf(&list, "%s%u", i ? "," : "", (unsigned)vocab->chars[i]);
    json_buf_append(&list, "]", 1);
    if (list.failed) m->failed = 1;
    else metadata(m, "vocab", list.data);
    json_buf_free(&list);
    char text[32];
    if (vocab->unknown) {
        snprintf(text, sizeof(text), "%u", VOCAB_UNKNOWN_CHAR);
        metadata(m, "vocab_unknown", text);
    }
    snprintf(text, sizeof(text), "%d", c->block_size);
    metadata(m, "block_size", text);
    metadata(m, "position_encoding", position_name(c->position));
    metadata(m, "name", name);
}

// A parameter's TensorProto before its data: its header and raw_data's key and length.
static void parameter_header(ProtoBuf *t, const TensorInfo *info) {
    int64_t dims[2] = {info->shape[0], info->shape[1]};
    tensor_header(t, info->name, ONNX_FLOAT, dims, info->ndim);
    proto_length_prefix(t, TENSOR_RAW_DATA, info->size * sizeof(float));
}

// The bytes of the graph's parameters as initializer fields.
static double parameters_bytes(const GPTConfig *c) {
    double bytes = 0;
    for (int i = 0; i < gpt_num_tensors(c); i++) {
        TensorInfo info;
        gpt_tensor_info(c, i, &info);
        ProtoBuf t = {0};
        parameter_header(&t, &info);
        double len = (double)t.len + (double)info.size * sizeof(float);
        bytes += 1 + (double)proto_varint_size((uint64_t)len) + len;
        proto_buf_free(&t);
    }
    return bytes;
}

// The bytes of the model's fields and the graph's but the parameters, at most: about 3 KiB a
// layer were written (215 nodes for 4 layers of RoPE), and RoPE's two tables.
static double graph_bytes_bound(const GPTConfig *c) {
    return (64 << 10) + (16 << 10) * (double)c->n_layer + (double)c->block_size * c->head_size * sizeof(float);
}

double onnx_export_memory(const GPTConfig *c) {
    // the growing buffer (up to twice what it holds), and RoPE's angles computed apart
    return 2.0 * graph_bytes_bound(c) + 2.0 * c->block_size * c->head_size * sizeof(float);
}

int onnx_check_config(const GPTConfig *c, char err[ERR_LEN]) {
    double bytes = parameters_bytes(c) + graph_bytes_bound(c);
    if (bytes > ONNX_MAX_BYTES) {
        char size[32];
        format_bytes(bytes, size, sizeof(size));
        snprintf(err, ERR_LEN, "its parameters take %s, more than the 2 GiB one ONNX file holds (protobuf's limit; "
                 "chargpt writes no external data file)", size);
        return -1;
    }
    return 0;
}

// Writes the model's fields, the graph's key and length, its fields, then each parameter.
static void write_file(FILE *fp, const ProtoBuf *model, const Graph *g, const GPT *m) {
    fwrite(model->data, 1, model->len, fp);  // a failed write is found when the file is committed
    fwrite(g->fields.data, 1, g->fields.len, fp);
    for (int i = 0; i < gpt_num_tensors(&m->config); i++) {
        TensorInfo info;
        gpt_tensor_info(&m->config, i, &info);
        ProtoBuf header = {0}, prefix = {0};
        parameter_header(&header, &info);
        proto_length_prefix(&prefix, GRAPH_INITIALIZER, header.len + info.size * sizeof(float));
        fwrite(prefix.data, 1, prefix.len, fp);
        fwrite(header.data, 1, header.len, fp);
        fwrite(m->params_memory + info.offset, sizeof(float), info.size, fp);
        proto_buf_free(&header);
        proto_buf_free(&prefix);
    }
}

int onnx_export(const char *path, const GPT *model, const Vocab *vocab, const char *name, int replace,
                OnnxSummary *summary, char err[ERR_LEN]) {
    const GPTConfig *c = &model->config;
    if (onnx_check_config(c, err) != 0) return -1;
    Graph g = {{0}, c};
    ProtoBuf m = {0};
    int rc = build_graph(&g);
    model_fields(&m, c, vocab, name);
    double graph_bytes = (double)g.fields.len + parameters_bytes(c);
    proto_length_prefix(&m, MODEL_GRAPH, (uint64_t)graph_bytes);
    if (rc != 0 || m.failed) {
        snprintf(err, ERR_LEN, "%s: out of memory for the graph", path);
        rc = -1;
    } else if ((double)m.len + graph_bytes > ONNX_MAX_BYTES) {
        snprintf(err, ERR_LEN, "%s: the model takes %.0f bytes, more than the 2 GiB one ONNX file holds", path,
                 (double)m.len + graph_bytes);
        rc = -1;
    }
    AtomicFile file;
    if (rc == 0) rc = atomic_file_open(&file, path, err);
    if (rc == 0) {
        write_file(file.fp, &m, &g, model);
        rc = replace ? atomic_file_commit(&file, err) : atomic_file_commit_new(&file, err);
        summary->bytes = (double)m.len + graph_bytes;
    }
    proto_buf_free(&g.fields);
    proto_buf_free(&m);
    return rc;
}
