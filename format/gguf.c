#include "gguf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/utf8.h"
#include "../model/layers.h"
#include "atomic_file.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "GGUF's numbers are written as they lie in memory");

#define TENSORS_PER_LAYER 12
#define TENSORS_OUTSIDE_LAYERS 5  // token_embd, position_embd or output, output_norm's two
#define MAX_KEY_VALUES 20

// A key/value: a scalar, or an array of strings or of int32.
typedef struct {
    const char *key;
    GgufType type;
    union {
        uint32_t u32;
        float f32;
        uint8_t boolean;
        const char *string;
    };
    GgufType item_type;  // GGUF_TYPE_ARRAY: GGUF_TYPE_STRING (items: const char *const *) or GGUF_TYPE_INT32
    uint64_t count;
    const void *items;
} KeyValue;

// A tensor: ne[0] floats a row, rows in the order row_order gives (NULL: as they lie), from
// data (NULL: zeros). A 1-D tensor's rows are its elements.
typedef struct {
    char name[48];
    int ndim;
    uint64_t ne[2];
    const float *data;
    const int *row_order;
} Tensor;

// What a file holds, made before it is written.
typedef struct {
    KeyValue kv[MAX_KEY_VALUES];
    int n_kv;
    Tensor *tensors;
    int n_tensors;
    char (*token_text)[GGUF_TOKEN_TEXT_MAX];  // (V)
    const char **tokens;                      // (V) pointers into token_text
    int32_t *token_types;                     // (V)
    int *qkv_order;                           // (3A) gguf_qkv_row of each row
} Contents;

// ---------------------------------------------------------------------------------------
// what chargpt's model is in GGUF's terms

int gguf_check_config(const GPTConfig *c, char err[ERR_LEN]) {
    if (c->n_head * c->head_size != c->n_embd) {
        snprintf(err, ERR_LEN, "its %d heads of %d (%d wide together) do not split n_embd %d: llama.cpp's %s "
                 "architecture takes q, k and v of n_embd each (ONNX carries such a model: --export FILE.onnx)",
                 c->n_head, c->head_size, c->n_head * c->head_size, c->n_embd, gguf_architecture(c));
        return -1;
    }
    return 0;
}

double gguf_export_memory(const GPTConfig *c) {
    double tensors = (double)c->n_layer * TENSORS_PER_LAYER + TENSORS_OUTSIDE_LAYERS;
    double per_token = GGUF_TOKEN_TEXT_MAX + sizeof(char *) + sizeof(int32_t);
    return tensors * sizeof(Tensor) + per_token * c->vocab_size + 3.0 * c->n_head * c->head_size * sizeof(int);
}

const char *gguf_architecture(const GPTConfig *c) { return c->position == POSITION_ROPE ? "gptneox" : "gpt2"; }

void gguf_token_text(uint32_t cp, char text[GGUF_TOKEN_TEXT_MAX]) {
    if (cp == '\\') strcpy(text, "\\\\");
    else if (cp == '\t') strcpy(text, "\\t");
    else if (cp == '\n') strcpy(text, "\\n");
    else if (cp == '\r') strcpy(text, "\\r");
    else if (cp < 0x20 || cp == 0x7f) snprintf(text, GGUF_TOKEN_TEXT_MAX, "\\x%02x", (unsigned)cp);
    else text[utf8_encode(cp, text)] = '\0';
}

int gguf_qkv_row(const GPTConfig *c, int r) {
    int hs = c->head_size, A = c->n_head * hs;
    if (c->position != POSITION_ROPE || r >= 2 * A) return r;  // learned positions; the values
    int head = r / hs, j = r % hs, half = hs / 2;
    return head * hs + (j < half ? 2 * j : 2 * (j - half) + 1);
}

static void add_u32(Contents *f, const char *key, uint32_t v) { f->kv[f->n_kv++] = (KeyValue){.key = key, .type = GGUF_TYPE_UINT32, .u32 = v}; }
static void add_f32(Contents *f, const char *key, float v) { f->kv[f->n_kv++] = (KeyValue){.key = key, .type = GGUF_TYPE_FLOAT32, .f32 = v}; }
static void add_bool(Contents *f, const char *key, int v) { f->kv[f->n_kv++] = (KeyValue){.key = key, .type = GGUF_TYPE_BOOL, .boolean = (uint8_t)v}; }
static void add_string(Contents *f, const char *key, const char *v) { f->kv[f->n_kv++] = (KeyValue){.key = key, .type = GGUF_TYPE_STRING, .string = v}; }
static void add_array(Contents *f, const char *key, GgufType item_type, uint64_t count, const void *items) {
    f->kv[f->n_kv++] = (KeyValue){.key = key, .type = GGUF_TYPE_ARRAY, .item_type = item_type, .count = count, .items = items};
}

// The key/values: the architecture and its hyperparameters (keys "<architecture>.<name>"), the
// run's name, and the tokens. keys holds the architecture's key strings.
static void add_key_values(Contents *f, const GPTConfig *c, const Vocab *vocab, const char *name, char keys[][64]) {
    const char *arch = gguf_architecture(c);
    add_string(f, "general.architecture", arch);
    add_string(f, "general.name", name);
    add_u32(f, "general.file_type", GGUF_FILE_TYPE_ALL_F32);
    const char *names[] = {"context_length", "embedding_length", "feed_forward_length", "block_count",
                           "attention.head_count", "attention.layer_norm_epsilon", "rope.dimension_count",
                           "rope.freq_base", "use_parallel_residual"};
    for (int i = 0; i < 9; i++) snprintf(keys[i], 64, "%s.%s", arch, names[i]);
    add_u32(f, keys[0], (uint32_t)c->block_size);
    add_u32(f, keys[1], (uint32_t)c->n_embd);
    add_u32(f, keys[2], (uint32_t)(4 * c->n_embd));
    add_u32(f, keys[3], (uint32_t)c->n_layer);
    add_u32(f, keys[4], (uint32_t)c->n_head);
    add_f32(f, keys[5], LAYERNORM_EPS);
    if (c->position == POSITION_ROPE) {
        add_u32(f, keys[6], (uint32_t)c->head_size);
        add_f32(f, keys[7], (float)ROPE_BASE);
        add_bool(f, keys[8], 0);
    }
    add_string(f, "tokenizer.ggml.model", "rwkv");
    add_array(f, "tokenizer.ggml.tokens", GGUF_TYPE_STRING, (uint64_t)vocab->size, f->tokens);
    add_array(f, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, (uint64_t)vocab->size, f->token_types);
    if (vocab->unknown) add_u32(f, "tokenizer.ggml.unknown_token_id", (uint32_t)vocab_index(vocab, VOCAB_UNKNOWN_CHAR));
}

static Tensor *add_tensor(Contents *f, const char *name, int layer, const float *data, uint64_t ne0, uint64_t ne1) {
    Tensor *t = &f->tensors[f->n_tensors++];
    *t = (Tensor){.ndim = ne1 ? 2 : 1, .ne = {ne0, ne1}, .data = data, .row_order = NULL};
    if (layer >= 0) snprintf(t->name, sizeof(t->name), "blk.%d.%s", layer, name);
    else snprintf(t->name, sizeof(t->name), "%s", name);
    return t;
}

// The tensors under llama.cpp's names: a [rows, cols] weight of chargpt's is GGUF's [cols, rows].
static void add_tensors(Contents *f, const GPT *model) {
    const GPTConfig *c = &model->config;
    const ParameterTensors *p = &model->params;
    uint64_t V = (uint64_t)c->vocab_size, C = (uint64_t)c->n_embd, T = (uint64_t)c->block_size;
    add_tensor(f, "token_embd.weight", -1, p->wte, C, V);
    if (c->position == POSITION_LEARNED) add_tensor(f, "position_embd.weight", -1, p->wpe, C, T);
    for (int l = 0; l < c->n_layer; l++) {
        BlockParams b = gpt_layer_params(p, c, l);
        add_tensor(f, "attn_norm.weight", l, b.ln1w, C, 0);
        add_tensor(f, "attn_norm.bias", l, b.ln1b, C, 0);
        add_tensor(f, "attn_qkv.weight", l, b.qkvw, C, 3 * C)->row_order = f->qkv_order;
        add_tensor(f, "attn_qkv.bias", l, b.qkvb, 3 * C, 0)->row_order = f->qkv_order;  // NULL data: zeros
        add_tensor(f, "attn_output.weight", l, b.attprojw, C, C);
        add_tensor(f, "attn_output.bias", l, b.attprojb, C, 0);
        add_tensor(f, "ffn_norm.weight", l, b.ln2w, C, 0);
        add_tensor(f, "ffn_norm.bias", l, b.ln2b, C, 0);
        add_tensor(f, "ffn_up.weight", l, b.fcw, C, 4 * C);
        add_tensor(f, "ffn_up.bias", l, b.fcb, 4 * C, 0);
        add_tensor(f, "ffn_down.weight", l, b.fcprojw, 4 * C, C);
        add_tensor(f, "ffn_down.bias", l, b.fcprojb, C, 0);
    }
    add_tensor(f, "output_norm.weight", -1, p->lnfw, C, 0);
    add_tensor(f, "output_norm.bias", -1, p->lnfb, C, 0);
    if (c->position == POSITION_ROPE) add_tensor(f, "output.weight", -1, p->wte, C, V);
}

static void contents_free(Contents *f) {
    free(f->tensors);
    free(f->token_text);
    free(f->tokens);
    free(f->token_types);
    free(f->qkv_order);
}

static int contents_make(Contents *f, const GPT *model, const Vocab *vocab, const char *name, char keys[][64]) {
    const GPTConfig *c = &model->config;
    int V = vocab->size, rows = 3 * c->n_head * c->head_size;
    memset(f, 0, sizeof(*f));
    f->tensors = calloc((size_t)c->n_layer * TENSORS_PER_LAYER + TENSORS_OUTSIDE_LAYERS, sizeof(Tensor));
    f->token_text = calloc((size_t)V, sizeof(*f->token_text));
    f->tokens = calloc((size_t)V, sizeof(*f->tokens));
    f->token_types = calloc((size_t)V, sizeof(*f->token_types));
    f->qkv_order = calloc((size_t)rows, sizeof(int));
    if (!f->tensors || !f->token_text || !f->tokens || !f->token_types || !f->qkv_order) return -1;
    for (int i = 0; i < V; i++) {
        gguf_token_text(vocab->chars[i], f->token_text[i]);
        f->tokens[i] = f->token_text[i];
        f->token_types[i] = GGUF_TOKEN_TYPE_NORMAL;
    }
    for (int r = 0; r < rows; r++) f->qkv_order[r] = gguf_qkv_row(c, r);
    add_key_values(f, c, vocab, name, keys);
    add_tensors(f, model);
    return 0;
}

// ---------------------------------------------------------------------------------------
// writing

typedef struct {
    FILE *fp;
    uint64_t written;  // bytes so far
} Writer;

static void put(Writer *w, const void *bytes, size_t n) {
    fwrite(bytes, 1, n, w->fp);  // a failed write is found when the file is committed (ferror)
    w->written += n;
}
static void put_u32(Writer *w, uint32_t v) { put(w, &v, sizeof(v)); }
static void put_u64(Writer *w, uint64_t v) { put(w, &v, sizeof(v)); }
static void put_string(Writer *w, const char *s) {
    put_u64(w, strlen(s));
    put(w, s, strlen(s));
}

// Zeros up to the next multiple of GGUF_ALIGNMENT.
static void pad(Writer *w) {
    static const uint8_t zeros[GGUF_ALIGNMENT];
    put(w, zeros, (size_t)(-w->written % GGUF_ALIGNMENT));
}

static void put_key_value(Writer *w, const KeyValue *kv) {
    put_string(w, kv->key);
    put_u32(w, kv->type);
    switch (kv->type) {
        case GGUF_TYPE_UINT32: put_u32(w, kv->u32); break;
        case GGUF_TYPE_FLOAT32: put(w, &kv->f32, sizeof(float)); break;
        case GGUF_TYPE_BOOL: put(w, &kv->boolean, 1); break;
        case GGUF_TYPE_STRING: put_string(w, kv->string); break;
        default:  // GGUF_TYPE_ARRAY
            put_u32(w, kv->item_type);
            put_u64(w, kv->count);
            for (uint64_t i = 0; i < kv->count; i++)
                if (kv->item_type == GGUF_TYPE_STRING) put_string(w, ((const char *const *)kv->items)[i]);
                else put(w, (const int32_t *)kv->items + i, sizeof(int32_t));
    }
}

static uint64_t tensor_bytes(const Tensor *t) { return t->ne[0] * (t->ndim == 2 ? t->ne[1] : 1) * sizeof(float); }

static uint64_t padded(uint64_t bytes) { return (bytes + GGUF_ALIGNMENT - 1) / GGUF_ALIGNMENT * GGUF_ALIGNMENT; }

static void put_tensor_data(Writer *w, const Tensor *t) {
    static const float zeros[256];
    uint64_t rows = t->ndim == 2 ? t->ne[1] : t->ne[0], cols = t->ndim == 2 ? t->ne[0] : 1;
    if (!t->data) {
        for (uint64_t left = rows * cols; left > 0;) {
            size_t n = left < 256 ? (size_t)left : 256;
            put(w, zeros, n * sizeof(float));
            left -= n;
        }
    } else if (!t->row_order) {
        put(w, t->data, (size_t)(rows * cols * sizeof(float)));
    } else {
        for (uint64_t r = 0; r < rows; r++) put(w, t->data + (size_t)t->row_order[r] * cols, (size_t)cols * sizeof(float));
    }
    pad(w);
}

static void put_file(Writer *w, const Contents *f) {
    put(w, GGUF_MAGIC, 4);
    put_u32(w, GGUF_VERSION);
    put_u64(w, (uint64_t)f->n_tensors);
    put_u64(w, (uint64_t)f->n_kv);
    for (int i = 0; i < f->n_kv; i++) put_key_value(w, &f->kv[i]);
    uint64_t offset = 0;
    for (int i = 0; i < f->n_tensors; i++) {
        const Tensor *t = &f->tensors[i];
        put_string(w, t->name);
        put_u32(w, (uint32_t)t->ndim);
        for (int d = 0; d < t->ndim; d++) put_u64(w, t->ne[d]);
        put_u32(w, GGUF_TENSOR_F32);
        put_u64(w, offset);
        offset += padded(tensor_bytes(t));
    }
    pad(w);
    for (int i = 0; i < f->n_tensors; i++) put_tensor_data(w, &f->tensors[i]);
}

int gguf_export(const char *path, const GPT *model, const Vocab *vocab, const char *name, int replace,
                GgufSummary *summary, char err[ERR_LEN]) {
    const GPTConfig *c = &model->config;
    if (gguf_check_config(c, err) != 0) return -1;
    Contents f;
    char keys[9][64];
    if (contents_make(&f, model, vocab, name, keys) != 0) {
        contents_free(&f);
        snprintf(err, ERR_LEN, "%s: out of memory for the tokens", path);
        return -1;
    }
    AtomicFile file;
    int rc = atomic_file_open(&file, path, err);
    if (rc == 0) {
        Writer w = {file.fp, 0};
        put_file(&w, &f);
        rc = replace ? atomic_file_commit(&file, err) : atomic_file_commit_new(&file, err);
        *summary = (GgufSummary){gguf_architecture(c), !c->qkv_bias, (double)w.written};
    }
    contents_free(&f);
    return rc;
}
