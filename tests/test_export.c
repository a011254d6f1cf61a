// Tests of ./generate --export (generation/export.h) and --logits: each file written is read
// back by the readers of tests/export_readers.h and every key, tensor, initializer and node
// compared with the model of the checkpoint; a model a format cannot carry, a path that cannot
// be written, a file there without --force and a write cut short each give a message, a
// non-zero exit and no file; --logits gives the model's own logits.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>

#include "../common/utf8.h"
#include "../format/checkpoint.h"
#include "../format/json.h"
#include "../model/layers.h"
#include "../common/rng.h"
#include "export_readers.h"
#include "test.h"

#define WORK_DIR "tests/tmp/export"
#define LOG WORK_DIR "/run.log"
#define TIMEOUT_S 120.0
#define LOGITS_TOL 1e-5  // --logits against a forward pass here (the threads may split sums otherwise)

// Control characters, the characters a token's text escapes, and characters of 2, 3 and 4
// bytes of UTF-8; U+FFFD is the unknown token of the models that have one.
static const uint32_t VOCAB[] = {0x01, '\t', '\n', ' ', '"', '\\', 'a', 'b', 'c', 'd', 'e', 0x7f, 0xe9, 0x20ac, 0xfffd,
                                 0x1f600};
#define VOCAB_SIZE ((int)(sizeof(VOCAB) / sizeof(VOCAB[0])))

static const GPTConfig LEARNED = {.vocab_size = VOCAB_SIZE, .block_size = 8, .n_layer = 2, .n_head = 2, .n_embd = 12,
                                  .head_size = 6, .qkv_bias = 1, .position = POSITION_LEARNED};

static GPTConfig variant(int qkv_bias, PositionEncoding position, int head_size) {
    GPTConfig c = LEARNED;
    c.qkv_bias = qkv_bias, c.position = position, c.head_size = head_size;
    return c;
}

static TestRun generate(const char *const *args) { return test_run_program("generate", NULL, LOG, TIMEOUT_S, args); }
#define GENERATE(...) generate((const char *[]){__VA_ARGS__, NULL})

// Saves a model of config c as WORK_DIR/<name>.safetensors (its weights drawn, plus noise so
// that no bias is 0 and no LayerNorm weight 1; with a run id and step when run_id is given),
// and loads it back into model as ./generate does. Returns 0, or -1 (a failed check).
static int save_model(const char *name, const GPTConfig *c, int unknown, const char *run_id, GPT *model, char path[256]) {
    char err[ERR_LEN];
    test_make_dir("tests/tmp");
    test_make_dir(WORK_DIR);
    snprintf(path, 256, WORK_DIR "/%s.safetensors", name);
    GPT made;
    if (!CHECK(gpt_build(&made, c, 0, err) == 0, "%s", err)) return -1;
    gpt_init_weights(&made, 7);
    Rng rng;
    rng_seed(&rng, 11);
    for (size_t i = 0; i < made.num_parameters; i++) made.params_memory[i] += 0.3f * (2.0f * rng_uniform(&rng) - 1.0f);
    StMeta meta[2] = {{"train.run_id", (char *)run_id}, {"state.step", "42"}};
    int rc = checkpoint_save(path, &made, &(Vocab){(uint32_t *)VOCAB, VOCAB_SIZE, unknown}, NULL, meta,
                             run_id ? 2 : 0, err);
    gpt_free(&made);
    if (!CHECK(rc == 0, "checkpoint_save: %s", err)) return -1;
    Checkpoint ck;
    if (!CHECK(checkpoint_open(path, &ck, err) == 0, "%s", err)) return -1;
    rc = checkpoint_load_model(&ck, model, 0, err);
    checkpoint_close(&ck);
    return CHECK(rc == 0, "%s", err) ? 0 : -1;
}

// The file at path, whole, or NULL (a failed check).
static uint8_t *read_whole(const char *path, size_t *len) {
    uint8_t *bytes = (uint8_t *)test_read_file(path, len);
    CHECK(bytes != NULL, "cannot read %s", path);
    return bytes;
}

// How many names in dir contain part (the temporary files a write leaves are "<name>.tmp.").
static int count_names(const char *dir, const char *part) {
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d)) != NULL;) n += strstr(e->d_name, part) != NULL;
    if (d) closedir(d);
    return n;
}

// A token's text as llama.cpp's RWKV tokenizer reads it: \t \n \r, \x and two lowercase hex
// digits, \ before any other byte that byte; the rest as it is. Returns the bytes.
static size_t rwkv_unescape(const char *text, size_t len, char *out) {
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        char c = text[i];
        if (c == '\\' && i + 1 < len) {
            c = text[++i];
            if (c == 'x' && i + 2 < len) {
                const char *hex = "0123456789abcdef";
                const char *hi = memchr(hex, text[i + 1], 16), *lo = memchr(hex, text[i + 2], 16);
                c = hi && lo ? (char)((hi - hex) * 16 + (lo - hex)) : '?';
                i += 2;
            } else {
                c = c == 't' ? '\t' : c == 'n' ? '\n' : c == 'r' ? '\r' : c;
            }
        }
        out[n++] = c;
    }
    return n;
}

// ---------------------------------------------------------------------------------------
// GGUF

// The row of c_attn that row r of a gptneox file holds: a head's query and key rows in the
// order 0, 2, 4, ..., 1, 3, 5, ... (llama.cpp's NeoX rotation pairs x[i] with x[i + hs/2]).
static int neox_row(const GPTConfig *c, int r) {
    int hs = c->head_size;
    if (c->position != POSITION_ROPE || r >= 2 * c->n_head * hs) return r;
    int j = r % hs;
    return r - j + (j < hs / 2 ? 2 * j : 2 * (j - hs / 2) + 1);
}

static void check_u32(const GgufFile *f, const char *key, uint32_t want) {
    const GgufEntry *e = gguf_entry(f, key);
    if (!CHECK(e && e->type == 4, "GGUF key %s: missing or not a u32", key)) return;
    uint32_t got;
    memcpy(&got, e->value, 4);
    CHECK(got == want, "GGUF %s = %u, want %u", key, got, want);
}

static void check_string(const GgufFile *f, const char *key, const char *want) {
    const GgufEntry *e = gguf_entry(f, key);
    if (!CHECK(e && e->type == 8, "GGUF key %s: missing or not a string", key)) return;
    uint64_t len;
    const char *got = gguf_string_at(e->value, &len);
    CHECK(len == strlen(want) && memcmp(got, want, len) == 0, "GGUF %s = '%.*s', want '%s'", key, (int)len, got, want);
}

// The keys of a file of config c with vocabulary size V: each checked, and no other.
static void check_gguf_keys(const GgufFile *f, const GPTConfig *c, int unknown, const char *name) {
    const char *arch = c->position == POSITION_ROPE ? "gptneox" : "gpt2";
    char key[96];
    int want_keys = 12 + (c->position == POSITION_ROPE ? 3 : 0) + unknown;
    CHECK(f->n_kv == (uint64_t)want_keys, "GGUF: %d keys, want %d", (int)f->n_kv, want_keys);
    check_string(f, "general.architecture", arch);
    check_string(f, "general.name", name);
    check_u32(f, "general.file_type", 0);
    const char *names[] = {"context_length", "embedding_length", "feed_forward_length", "block_count",
                           "attention.head_count"};
    const uint32_t values[] = {(uint32_t)c->block_size, (uint32_t)c->n_embd, 4u * c->n_embd, (uint32_t)c->n_layer,
                               (uint32_t)c->n_head};
    for (int i = 0; i < 5; i++) check_u32(f, (snprintf(key, sizeof(key), "%s.%s", arch, names[i]), key), values[i]);
    snprintf(key, sizeof(key), "%s.attention.layer_norm_epsilon", arch);
    const GgufEntry *e = gguf_entry(f, key);
    float eps = 0;
    if (CHECK(e && e->type == 6, "GGUF %s: missing or not f32", key)) memcpy(&eps, e->value, 4);
    CHECK(eps == 1e-5f, "GGUF %s = %g", key, eps);
    if (c->position == POSITION_ROPE) {
        check_u32(f, (snprintf(key, sizeof(key), "%s.rope.dimension_count", arch), key), (uint32_t)c->head_size);
        e = gguf_entry(f, (snprintf(key, sizeof(key), "%s.rope.freq_base", arch), key));
        float base = 0;
        if (CHECK(e && e->type == 6, "GGUF %s", key)) memcpy(&base, e->value, 4);
        CHECK(base == 10000.0f, "GGUF %s = %g", key, base);
        e = gguf_entry(f, (snprintf(key, sizeof(key), "%s.use_parallel_residual", arch), key));
        CHECK(e && e->type == 7 && e->value[0] == 0, "GGUF %s: missing, not a bool or true", key);
    }
    check_string(f, "tokenizer.ggml.model", "rwkv");
    if (unknown) check_u32(f, "tokenizer.ggml.unknown_token_id", 14);
    const GgufEntry *tokens = gguf_entry(f, "tokenizer.ggml.tokens"), *types = gguf_entry(f, "tokenizer.ggml.token_type");
    if (!CHECK(tokens && tokens->type == 9 && tokens->item_type == 8 && tokens->count == VOCAB_SIZE,
               "GGUF tokenizer.ggml.tokens: not an array of %d strings", VOCAB_SIZE) ||
        !CHECK(types && types->type == 9 && types->item_type == 5 && types->count == VOCAB_SIZE,
               "GGUF tokenizer.ggml.token_type: not an array of %d int32", VOCAB_SIZE))
        return;
    for (int i = 0; i < VOCAB_SIZE; i++) {
        uint64_t len;
        const char *text = gguf_string_item(tokens, (uint64_t)i, &len);
        char bytes[16], want[4];
        size_t n = len < 8 ? rwkv_unescape(text, (size_t)len, bytes) : 0;
        int want_n = utf8_encode(VOCAB[i], want);
        CHECK(n == (size_t)want_n && memcmp(bytes, want, n) == 0, "token %d reads as %zu bytes, not U+%04X", i, n,
              (unsigned)VOCAB[i]);
        int32_t type;
        memcpy(&type, types->value + 4 * i, 4);
        CHECK(type == 1, "token %d of type %d, not normal (1)", i, type);
    }
}

typedef struct {
    char name[64];
    const float *data;  // NULL: zeros
    uint64_t ne0, ne1;  // ne1 0: 1-D
    int qkv;            // rows in neox_row's order
} WantTensor;

static int want_gguf_tensors(const GPT *m, WantTensor *w) {
    const GPTConfig *c = &m->config;
    const ParameterTensors *p = &m->params;
    uint64_t V = (uint64_t)c->vocab_size, C = (uint64_t)c->n_embd;
    int n = 0;
    w[n++] = (WantTensor){"token_embd.weight", p->wte, C, V, 0};
    if (c->position == POSITION_LEARNED) w[n++] = (WantTensor){"position_embd.weight", p->wpe, C, (uint64_t)c->block_size, 0};
    for (int l = 0; l < c->n_layer; l++) {
        BlockParams b = gpt_layer_params(p, c, l);
        const struct { const char *name; const float *data; uint64_t ne0, ne1; int qkv; } layer[12] = {
            {"attn_norm.weight", b.ln1w, C, 0, 0}, {"attn_norm.bias", b.ln1b, C, 0, 0},
            {"attn_qkv.weight", b.qkvw, C, 3 * C, 1}, {"attn_qkv.bias", b.qkvb, 3 * C, 0, 1},
            {"attn_output.weight", b.attprojw, C, C, 0}, {"attn_output.bias", b.attprojb, C, 0, 0},
            {"ffn_norm.weight", b.ln2w, C, 0, 0}, {"ffn_norm.bias", b.ln2b, C, 0, 0},
            {"ffn_up.weight", b.fcw, C, 4 * C, 0}, {"ffn_up.bias", b.fcb, 4 * C, 0, 0},
            {"ffn_down.weight", b.fcprojw, 4 * C, C, 0}, {"ffn_down.bias", b.fcprojb, C, 0, 0}};
        for (int k = 0; k < 12; k++) {
            w[n] = (WantTensor){"", layer[k].data, layer[k].ne0, layer[k].ne1, layer[k].qkv};
            snprintf(w[n++].name, 64, "blk.%d.%s", l, layer[k].name);
        }
    }
    w[n++] = (WantTensor){"output_norm.weight", p->lnfw, C, 0, 0};
    w[n++] = (WantTensor){"output_norm.bias", p->lnfb, C, 0, 0};
    if (c->position == POSITION_ROPE) w[n++] = (WantTensor){"output.weight", p->wte, C, V, 0};
    return n;
}

// Every tensor of the file: its name, shape, type and place, and its floats, the model's.
static void check_gguf_tensors(const GgufFile *f, const uint8_t *bytes, size_t len, const GPT *m) {
    WantTensor want[64];
    int n = want_gguf_tensors(m, want);
    if (!CHECK(f->n_tensors == (uint64_t)n, "GGUF: %d tensors, want %d", (int)f->n_tensors, n)) return;
    size_t data = (f->data_start + 31) / 32 * 32;
    CHECK(memcmp(bytes + f->data_start, (const uint8_t[32]){0}, data - f->data_start) == 0, "padding not zeros");
    uint64_t offset = 0;
    for (int i = 0; i < n; i++) {
        const GgufTensorInfo *t = &f->tensors[i];
        const WantTensor *w = &want[i];
        uint64_t rows = w->ne1 ? w->ne1 : w->ne0, cols = w->ne1 ? w->ne0 : 1;
        int shape_ok = t->ndim == (w->ne1 ? 2u : 1u) && t->ne[0] == w->ne0 && (!w->ne1 || t->ne[1] == w->ne1);
        if (!CHECK(strcmp(t->name, w->name) == 0 && shape_ok && t->type == 0 && t->offset == offset,
                   "GGUF tensor %d: %s [%d dims: %llu, %llu] type %u at %llu, want %s [%llu, %llu] F32 at %llu", i,
                   t->name, (int)t->ndim, (unsigned long long)t->ne[0], (unsigned long long)t->ne[1], t->type,
                   (unsigned long long)t->offset, w->name, (unsigned long long)w->ne0, (unsigned long long)w->ne1,
                   (unsigned long long)offset))
            return;
        if (!CHECK(data + offset + rows * cols * 4 <= len, "GGUF tensor %s runs past the file", t->name)) return;
        const uint8_t *got = bytes + data + offset;
        long bad = -1;
        for (uint64_t r = 0; r < rows && bad < 0; r++) {
            uint64_t from = w->qkv ? (uint64_t)neox_row(&m->config, (int)r) : r;
            for (uint64_t k = 0; k < cols && bad < 0; k++) {
                float v;
                memcpy(&v, got + (r * cols + k) * 4, 4);
                float expected = w->data ? w->data[from * cols + k] : 0.0f;
                if (memcmp(&v, &expected, 4) != 0) bad = (long)(r * cols + k);
            }
        }
        CHECK(bad < 0, "GGUF tensor %s: float %ld is not the model's", t->name, bad);
        offset += (rows * cols * 4 + 31) / 32 * 32;
    }
    CHECK(data + offset == len, "GGUF: the file is %zu bytes, its tensors end at %llu", len,
          (unsigned long long)(data + offset));
}

static void check_gguf_file(const char *path, const GPT *m, int unknown, const char *name) {
    size_t len;
    uint8_t *bytes = read_whole(path, &len);
    GgufFile f;
    char why[256];
    if (bytes && CHECK(gguf_read(bytes, len, &f, why) == 0, "%s: %s", path, why)) {
        CHECK(f.version == 3, "%s: GGUF version %u", path, f.version);
        check_gguf_keys(&f, &m->config, unknown, name);
        check_gguf_tensors(&f, bytes, len, m);
    }
    gguf_read_free(&f);
    free(bytes);
}

TEST(export_gguf_reads_back) {
    const struct { const char *name; GPTConfig config; int unknown; const char *run_id, *model_name, *arch; } cases[] = {
        {"learned", LEARNED, 1, "0123456789abcdef", "chargpt run 0123456789abcdef step 42", "gpt2"},
        {"rope", variant(1, POSITION_ROPE, 6), 0, NULL, "chargpt rope.safetensors", "gptneox"},
        {"no_bias", variant(0, POSITION_LEARNED, 6), 0, NULL, "chargpt no_bias.safetensors", "gpt2"},
    };
    for (int i = 0; i < 3; i++) {
        GPT model;
        char ckpt[256], out[300], line[128];
        if (save_model(cases[i].name, &cases[i].config, cases[i].unknown, cases[i].run_id, &model, ckpt) != 0) return;
        snprintf(out, sizeof(out), WORK_DIR "/%s.gguf", cases[i].name);
        remove(out);
        TestRun r = GENERATE(ckpt, "--export", out);
        snprintf(line, sizeof(line), "GGUF version 3, llama.cpp architecture %s,", cases[i].arch);
        if (test_exit_status(&r, 0, cases[i].name) && test_output_has(&r, line, cases[i].name)) {
            if (!cases[i].config.qkv_bias) test_output_has(&r, "c_attn's bias written as zeros", cases[i].name);
            check_gguf_file(out, &model, cases[i].unknown, cases[i].model_name);
        }
        test_run_free(&r);
        gpt_free(&model);
    }
}

// ---------------------------------------------------------------------------------------
// ONNX

#define MAX_NAMES 4096

typedef struct {
    const char *names[MAX_NAMES];
    size_t lens[MAX_NAMES];
    int n;
} NameSet;

static int has_name(const NameSet *s, const uint8_t *name, size_t len) {
    for (int i = 0; i < s->n; i++)
        if (s->lens[i] == len && memcmp(s->names[i], name, len) == 0) return 1;
    return 0;
}

static void add_name(NameSet *s, const uint8_t *name, size_t len) {
    if (s->n < MAX_NAMES) s->names[s->n] = (const char *)name, s->lens[s->n++] = len;
}

// The fields of a message numbered `field`, one after another: *p at the next; 0 at the end.
static int next_field(const uint8_t **p, const uint8_t *end, int field, ProtoField *f) {
    int rc;
    while ((rc = proto_read_field(p, end, f)) == 1)
        if (f->field == field) return 1;
    CHECK(rc == 0, "ONNX: bytes that are not a protobuf field");
    return 0;
}

static int field_is(const ProtoField *f, const char *text) { return f->len == strlen(text) && memcmp(f->data, text, f->len) == 0; }

// The value of a message's first field numbered `field` (a varint's, or bytes'): 1, or 0 when none.
static int first_field(const uint8_t *data, size_t len, int field, ProtoField *f) {
    const uint8_t *p = data;
    return next_field(&p, data + len, field, f);
}

// An initializer (TensorProto): its name, data type, dims and raw data.
typedef struct {
    ProtoField name, raw;
    int64_t type, dims[4];
    int ndim;
} Initializer;

static void read_initializer(const ProtoField *f, Initializer *t) {
    memset(t, 0, sizeof(*t));
    const uint8_t *p = f->data, *end = f->data + f->len;
    ProtoField x;
    while (proto_read_field(&p, end, &x) == 1) {
        if (x.field == 1 && t->ndim < 4) t->dims[t->ndim++] = (int64_t)x.varint;
        if (x.field == 2) t->type = (int64_t)x.varint;
        if (x.field == 8) t->name = x;
        if (x.field == 9) t->raw = x;
    }
}

// Checks each parameter's initializer (and RoPE's angles) against the model's floats.
static void check_initializers(const Initializer *inits, int n, const GPT *m) {
    const GPTConfig *c = &m->config;
    for (int i = 0; i < gpt_num_tensors(c); i++) {
        TensorInfo info;
        gpt_tensor_info(c, i, &info);
        const Initializer *t = NULL;
        for (int k = 0; k < n && !t; k++)
            if (field_is(&inits[k].name, info.name)) t = &inits[k];
        if (!CHECK(t, "ONNX: no initializer %s", info.name)) continue;
        int shape_ok = t->ndim == info.ndim && t->dims[0] == info.shape[0] && (info.ndim < 2 || t->dims[1] == info.shape[1]);
        CHECK(t->type == 1 && shape_ok, "ONNX initializer %s: type %d, %d dims", info.name, (int)t->type, t->ndim);
        CHECK(t->raw.len == info.size * 4 && memcmp(t->raw.data, m->params_memory + info.offset, t->raw.len) == 0,
              "ONNX initializer %s: its data is not the model's", info.name);
    }
    int T = c->block_size, hs = c->head_size;
    for (int which = 0; which < 2; which++) {
        const Initializer *t = NULL;
        for (int k = 0; k < n && !t; k++)
            if (field_is(&inits[k].name, which ? "rope.sin" : "rope.cos")) t = &inits[k];
        if (c->position != POSITION_ROPE) {
            CHECK(!t, "ONNX: RoPE's angles in a model of learned positions");
            continue;
        }
        if (!CHECK(t && t->ndim == 3 && t->dims[0] == T && t->dims[1] == hs / 2 && t->dims[2] == 1 &&
                   t->raw.len == (size_t)T * hs / 2 * 4, "ONNX: rope.%s missing or not [%d, %d, 1]", which ? "sin" : "cos", T, hs / 2))
            continue;
        double worst = 0;
        for (int p = 0; p < T; p++)
            for (int k = 0; k < hs / 2; k++) {
                float v;
                memcpy(&v, t->raw.data + ((size_t)p * hs / 2 + k) * 4, 4);
                double angle = p * pow(10000.0, -2.0 * k / hs);
                worst = fmax(worst, fabs(v - (which ? sin(angle) : cos(angle))));
            }
        CHECK(worst < 1e-7, "ONNX rope.%s differs from the angles by %g", which ? "sin" : "cos", worst);
    }
}

// The graph's nodes, in order, read only what is defined before them: the input, an
// initializer or an earlier node's output; each output is new; the op types are opset 17's
// that the writer documents; "logits" is made. Returns the number of nodes.
static int check_nodes(const uint8_t *graph, size_t len, NameSet *defined) {
    static const char *const ops[] = {"Shape", "Concat", "ConstantOfShape", "Trilu", "Cast", "Gather", "Slice", "Add",
                                      "Sub", "Mul", "Reshape", "LayerNormalization", "Gemm", "Transpose", "Split",
                                      "MatMul", "Where", "Softmax", "Tanh"};
    const uint8_t *p = graph;
    ProtoField node;
    int nodes = 0;
    while (next_field(&p, graph + len, 1, &node)) {
        nodes++;
        const uint8_t *q = node.data;
        ProtoField x, op = {0};
        while (proto_read_field(&q, node.data + node.len, &x) == 1) {
            if (x.field == 1 && x.len > 0)
                CHECK(has_name(defined, x.data, x.len), "ONNX node %d reads '%.*s' before it is made", nodes,
                      (int)x.len, x.data);
            if (x.field == 4) op = x;
        }
        int known = 0;
        for (size_t k = 0; k < sizeof(ops) / sizeof(ops[0]); k++) known |= field_is(&op, ops[k]);
        CHECK(known, "ONNX node %d: op '%.*s' is not one of the writer's", nodes, (int)op.len, op.data);
        for (q = node.data; next_field(&q, node.data + node.len, 2, &x);) {
            CHECK(!has_name(defined, x.data, x.len), "ONNX: '%.*s' made twice", (int)x.len, x.data);
            add_name(defined, x.data, x.len);
        }
    }
    CHECK(has_name(defined, (const uint8_t *)"logits", 6), "ONNX: no node makes logits");
    return nodes;
}

// A graph input or output (ValueInfoProto): its name, element type and dimensions ("batch",
// "sequence" or a number) written into text, e.g. "input_ids 7 [batch, sequence]".
static void describe_value(const ProtoField *value, char *text, size_t n) {
    ProtoField name = {0}, type = {0}, tensor = {0}, elem = {0}, shape = {0}, dim;
    first_field(value->data, value->len, 1, &name);
    first_field(value->data, value->len, 2, &type);
    first_field(type.data, type.len, 1, &tensor);
    first_field(tensor.data, tensor.len, 1, &elem);
    first_field(tensor.data, tensor.len, 2, &shape);
    int at = snprintf(text, n, "%.*s %d [", (int)name.len, name.data, (int)elem.varint);
    const uint8_t *p = shape.data;
    for (int i = 0; shape.data && next_field(&p, shape.data + shape.len, 1, &dim) && at < (int)n - 40; i++) {
        ProtoField v;
        const uint8_t *q = dim.data;
        if (proto_read_field(&q, dim.data + dim.len, &v) != 1) break;
        if (v.field == 2) at += snprintf(text + at, n - at, "%s%.*s", i ? ", " : "", (int)v.len, v.data);
        else at += snprintf(text + at, n - at, "%s%d", i ? ", " : "", (int)v.varint);
    }
    snprintf(text + at, n - at, "]");
}

// The metadata: vocab (the characters' code points), vocab_unknown, block_size,
// position_encoding and name, and no other key.
static void check_metadata(const uint8_t *model, size_t len, const GPTConfig *c, int unknown, const char *name) {
    char block[16], unknown_text[16];
    snprintf(block, sizeof(block), "%d", c->block_size);
    snprintf(unknown_text, sizeof(unknown_text), "%u", 0xfffdu);
    const char *keys[] = {"vocab", "block_size", "position_encoding", "name", "vocab_unknown"};
    const char *values[] = {NULL, block, position_name(c->position), name, unknown_text};
    int seen[5] = {0};
    const uint8_t *p = model;
    ProtoField entry;
    while (next_field(&p, model + len, 14, &entry)) {
        ProtoField key = {0}, value = {0};
        first_field(entry.data, entry.len, 1, &key);
        first_field(entry.data, entry.len, 2, &value);
        int k = 0;
        while (k < 5 && !field_is(&key, keys[k])) k++;
        if (!CHECK(k < 4 + unknown, "ONNX metadata key '%.*s' unexpected", (int)key.len, key.data)) continue;
        seen[k]++;
        if (values[k]) {
            CHECK(field_is(&value, values[k]), "ONNX metadata %s = '%.*s', want '%s'", keys[k], (int)value.len,
                  value.data, values[k]);
            continue;
        }
        JsonDoc doc;
        char err[ERR_LEN];
        if (!CHECK(json_parse((const char *)value.data, value.len, 1000, &doc, err) == 0, "vocab: %s", err)) continue;
        const JsonNode *list = doc.nodes;
        int ok = list->type == JSON_ARRAY && list->count == VOCAB_SIZE;
        const JsonNode *item = ok ? json_first(list) : NULL;
        for (int i = 0; ok && i < VOCAB_SIZE; i++, item = json_next(item)) ok = json_number(item) == VOCAB[i];
        CHECK(ok, "ONNX metadata vocab '%.*s' is not the vocabulary", (int)value.len, value.data);
        json_free(&doc);
    }
    for (int k = 0; k < 4 + unknown; k++) CHECK(seen[k] == 1, "ONNX metadata %s seen %d times", keys[k], seen[k]);
}

static void check_onnx_file(const char *path, const GPT *m, int unknown, const char *name) {
    size_t len;
    uint8_t *bytes = read_whole(path, &len);
    if (!bytes) return;
    const GPTConfig *c = &m->config;
    ProtoField ir = {0}, opset = {0}, version = {0}, domain = {0}, producer = {0}, graph = {0};
    CHECK(first_field(bytes, len, 1, &ir) && ir.varint == 8, "ONNX ir_version %d, want 8", (int)ir.varint);
    CHECK(first_field(bytes, len, 8, &opset) && first_field(opset.data, opset.len, 2, &version) && version.varint == 17 &&
          (!first_field(opset.data, opset.len, 1, &domain) || domain.len == 0), "ONNX: not opset 17 of the default domain");
    CHECK(first_field(bytes, len, 2, &producer) && field_is(&producer, "chargpt"), "ONNX producer_name");
    check_metadata(bytes, len, c, unknown, name);
    if (!CHECK(first_field(bytes, len, 7, &graph), "ONNX: no graph")) {
        free(bytes);
        return;
    }
    static NameSet defined;
    defined.n = 0;
    add_name(&defined, (const uint8_t *)"input_ids", 9);
    Initializer *inits = calloc(MAX_NAMES, sizeof(Initializer));
    int n = 0;
    const uint8_t *p = graph.data;
    for (ProtoField f; n < MAX_NAMES && next_field(&p, graph.data + graph.len, 5, &f); n++) {
        read_initializer(&f, &inits[n]);
        add_name(&defined, inits[n].name.data, inits[n].name.len);
    }
    check_initializers(inits, n, m);
    CHECK(check_nodes(graph.data, graph.len, &defined) > 0, "ONNX: no nodes");
    char text[256], want[256];
    ProtoField value;
    p = graph.data;
    int inputs = 0, outputs = 0;
    while (next_field(&p, graph.data + graph.len, 11, &value)) {
        describe_value(&value, text, sizeof(text));
        CHECK(strcmp(text, "input_ids 7 [batch, sequence]") == 0 && !inputs++, "ONNX graph input %s", text);
    }
    snprintf(want, sizeof(want), "logits 1 [batch, sequence, %d]", c->vocab_size);
    for (p = graph.data; next_field(&p, graph.data + graph.len, 12, &value);) {
        describe_value(&value, text, sizeof(text));
        CHECK(strcmp(text, want) == 0 && !outputs++, "ONNX graph output %s, want %s", text, want);
    }
    CHECK(inputs == 1 && outputs == 1, "ONNX: %d inputs and %d outputs, want 1 and 1", inputs, outputs);
    free(inits);
    free(bytes);
}

TEST(export_onnx_reads_back) {
    const struct { const char *name; GPTConfig config; int unknown; } cases[] = {
        {"learned", LEARNED, 1},
        {"rope", variant(1, POSITION_ROPE, 6), 0},
        {"no_bias", variant(0, POSITION_LEARNED, 6), 0},
        {"wide_heads", variant(0, POSITION_ROPE, 8), 0},  // A = 16 != C = 12
    };
    for (int i = 0; i < 4; i++) {
        GPT model;
        char ckpt[256], out[300], name[128];
        if (save_model(cases[i].name, &cases[i].config, cases[i].unknown, NULL, &model, ckpt) != 0) return;
        snprintf(out, sizeof(out), WORK_DIR "/%s.onnx", cases[i].name);
        snprintf(name, sizeof(name), "chargpt %s.safetensors", cases[i].name);
        remove(out);
        TestRun r = GENERATE(ckpt, "--export", out);
        if (test_exit_status(&r, 0, cases[i].name) && test_output_has(&r, "ONNX IR version 8, opset 17", cases[i].name))
            check_onnx_file(out, &model, cases[i].unknown, name);
        test_run_free(&r);
        gpt_free(&model);
    }
}

// ---------------------------------------------------------------------------------------
// refusals

TEST(export_refusals_leave_nothing) {
    GPT model;
    char ckpt[256], wide[256];
    GPTConfig wide_config = variant(1, POSITION_LEARNED, 5);  // A = 10 != C = 12
    if (save_model("refused", &LEARNED, 0, NULL, &model, ckpt) != 0) return;
    gpt_free(&model);
    if (save_model("refused_wide", &wide_config, 0, NULL, &model, wide) != 0) return;
    gpt_free(&model);
    const char *gguf = WORK_DIR "/refused.gguf", *onnx = WORK_DIR "/refused.onnx";
    remove(gguf);
    remove(onnx);

    // a model GGUF cannot carry: the other file is not written either
    TestRun r = GENERATE(wide, "--export", onnx, "--export", gguf);
    if (test_exit_status(&r, 1, "heads that do not split n_embd"))
        test_output_has(&r, "cannot be written as GGUF: its 2 heads of 5 (10 wide together) do not split n_embd 12",
                        "heads that do not split n_embd");
    test_run_free(&r);
    CHECK(!test_file_exists(gguf) && !test_file_exists(onnx), "a refused export left a file");

    // usage: an unknown extension, a prompt or a sampling option, --timeline
    const char *const *usage[] = {
        (const char *[]){ckpt, "--export", WORK_DIR "/refused.bin", NULL},
        (const char *[]){ckpt, "--export", gguf, "ab", NULL},
        (const char *[]){ckpt, "--export", gguf, "-n", "5", NULL},
        (const char *[]){ckpt, "--export", gguf, "--logits", WORK_DIR "/l.json", NULL},
        (const char *[]){"--timeline", WORK_DIR, "--export", gguf, NULL},
    };
    const char *messages[] = {"unknown model format", "it takes only --force and --max-memory, not 'ab'",
                              "not '-n'", "not '--logits'", "not '--export'"};
    for (int i = 0; i < 5; i++) {
        r = generate(usage[i]);
        if (test_exit_status(&r, 2, messages[i])) test_output_has(&r, messages[i], messages[i]);
        test_run_free(&r);
    }

    // a file there: refused without --force, replaced with it
    test_write_file(gguf, "kept", 4);
    r = GENERATE(ckpt, "--export", gguf);
    if (test_exit_status(&r, 2, "an existing file")) test_output_has(&r, "exists: give --force to replace it", "exists");
    test_run_free(&r);
    size_t len;
    char *kept = test_read_file(gguf, &len);
    CHECK(kept && len == 4 && memcmp(kept, "kept", 4) == 0, "the existing file changed");
    free(kept);
    r = GENERATE(ckpt, "--export", gguf, "--force");
    test_exit_status(&r, 0, "--force");
    test_run_free(&r);
    kept = test_read_file(gguf, &len);
    CHECK(kept && len > 4 && memcmp(kept, "GGUF", 4) == 0, "--force did not replace the file");
    free(kept);

    // paths that cannot be written: in no directory, a directory, where no one writes
    test_make_dir(WORK_DIR "/x.onnx");
    const char *dirs[] = {WORK_DIR "/no_such_dir", WORK_DIR, "/proc"}, *names[] = {"m.gguf", "x.onnx", "m.onnx"};
    const char *why[] = {"cannot read the directory", "is a directory", "cannot create a temporary file"};
    for (int i = 0; i < 3; i++) {
        if (i == 2 && !test_system_has(TEST_PROC_DIR)) continue;
        char path[256];
        snprintf(path, sizeof(path), "%s/%s", dirs[i], names[i]);
        r = GENERATE(ckpt, "--export", path);
        if (test_exit_status(&r, 1, path)) test_output_has(&r, why[i], path);
        test_run_free(&r);
    }

    // a write cut short (a file-size limit): no file, no temporary file
    remove(onnx);
    if (test_system_has(TEST_FILE_SIZE_LIMIT)) {
        const char *argv[] = {test_program("generate"), ckpt, "--export", onnx, NULL};
        r = test_run(argv, NULL, LOG, 4096, TIMEOUT_S);
        if (test_exit_status(&r, 1, "a file-size limit")) test_output_has(&r, "File too large", "a file-size limit");
        test_run_free(&r);
        CHECK(!test_file_exists(onnx), "a write cut short left the file");
    }
    CHECK(count_names(WORK_DIR, ".tmp.") == 0, "a temporary file was left behind");
}

// ---------------------------------------------------------------------------------------
// --logits

TEST(generate_logits_json) {
    GPT model;
    char ckpt[256], err[ERR_LEN];
    if (save_model("logits", &LEARNED, 0, NULL, &model, ckpt) != 0) return;
    const char *path = WORK_DIR "/logits.json";
    remove(path);
    // 10 characters (of 1 to 4 bytes), past the block of 8: the last 8 are recorded
    TestRun r = GENERATE(ckpt, "-n", "0", "--logits", path, "--", "ab\\\n\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80" "cd");
    int ok = test_exit_status(&r, 0, "--logits") && test_output_has(&r, "logits of 8 characters written to", "--logits");
    test_run_free(&r);
    size_t len;
    char *text = ok ? test_read_file(path, &len) : NULL;
    JsonDoc doc = {0};
    if (!text || !CHECK(json_parse(text, len, 100000, &doc, err) == 0, "%s: %s", path, err)) {
        free(text);
        gpt_free(&model);
        return;
    }
    const int want[8] = {5, 2, 4, 12, 13, 15, 8, 9};  // \ \n " é € 😀 c d
    const JsonNode *tokens = json_object_get(&doc, doc.nodes, "tokens"), *chars = json_object_get(&doc, doc.nodes, "chars");
    const JsonNode *logits = json_object_get(&doc, doc.nodes, "logits");
    if (CHECK(tokens && chars && logits && tokens->count == 8 && chars->count == 8 && logits->count == 8,
              "--logits: not 8 tokens, chars and rows")) {
        const JsonNode *t = json_first(tokens), *ch = json_first(chars), *row = json_first(logits);
        CHECK(gpt_alloc_activations(&model, 1, err) == 0, "%s", err);
        gpt_forward(&model, want, NULL, 1, 8, NULL);
        double worst = 0;
        for (int i = 0; i < 8; i++, t = json_next(t), ch = json_next(ch), row = json_next(row)) {
            char bytes[4];
            int n = utf8_encode(VOCAB[want[i]], bytes);
            CHECK(json_number(t) == want[i], "--logits token %d is %g, want %d", i, json_number(t), want[i]);
            CHECK(ch->type == JSON_STRING && ch->count == (uint32_t)n && memcmp(json_string(&doc, ch), bytes, n) == 0,
                  "--logits char %d", i);
            if (!CHECK(row->type == JSON_ARRAY && row->count == VOCAB_SIZE, "--logits row %d", i)) break;
            const JsonNode *v = json_first(row);
            for (int k = 0; k < VOCAB_SIZE; k++, v = json_next(v))
                worst = fmax(worst, fabs(json_number(v) - model.acts.logits[i * VOCAB_SIZE + k]));
        }
        CHECK(worst < LOGITS_TOL, "--logits differ from a forward pass by %g", worst);
    }
    json_free(&doc);
    free(text);
    gpt_free(&model);
    r = GENERATE(ckpt, "--logits", WORK_DIR "/l.csv", "ab");
    if (test_exit_status(&r, 2, "--logits FILE.csv")) test_output_has(&r, "name a .json file", "--logits FILE.csv");
    test_run_free(&r);
    r = GENERATE(ckpt, "--logits", path, "--num-samples", "2", "ab");
    if (test_exit_status(&r, 2, "--logits with --num-samples")) test_output_has(&r, "records one text", "--num-samples");
    test_run_free(&r);
}
