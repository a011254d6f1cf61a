// Tests of the attention math the inspector shows (generation/attention_record.h,
// viewer/attention_export.h): the queries, keys, values and head outputs it records from the
// forward equal the double-precision reference's (tests/reference.h) layer by layer; the
// scores q.k / sqrt(hs) computed from them as the page computes them, through the causal mask
// and the softmax, give the reference's weights; the page holds the forward's floats exactly;
// the heads' labels are head_scores.h's; and text never leaves the data as script.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/utf8.h"
#include "../format/json.h"
#include "../generation/attention_record.h"
#include "../model/gpt.h"
#include "reference.h"
#include "../analysis/head_scores.h"
#include "test.h"

#define TMP "tests/tmp"

// A model of 2 layers x 3 heads of 5 (A = 15, n_embd 12), its attention sharpened (the query
// and key weights scaled up, so that the weights are far from uniform), over a vocabulary of
// the characters of text.
typedef struct {
    GPT model;
    Vocab vocab;
    int tokens[64];
    int t;
} MathCase;

static int math_case(MathCase *m, const char *text) {
    uint32_t chars[64];
    size_t bad;
    char err[ERR_LEN];
    m->t = (int)utf8_decode((const unsigned char *)text, strlen(text), chars, &bad);
    if (!CHECK(m->t > 1 && vocab_build(&m->vocab, chars, (size_t)m->t, err) == 0, "vocabulary: %s", err)) return -1;
    for (int i = 0; i < m->t; i++) m->tokens[i] = vocab_index(&m->vocab, chars[i]);
    GPTConfig c = {m->vocab.size, 48, 2, 3, 12, 5, 1, 0.0f, POSITION_LEARNED};
    if (!CHECK(gpt_build(&m->model, &c, 0, err) == 0 && gpt_alloc_activations(&m->model, 1, err) == 0, "%s", err))
        return -1;
    gpt_init_weights(&m->model, 7);
    for (int l = 0; l < c.n_layer; l++) {
        BlockParams p = gpt_layer_params(&m->model.params, &c, l);
        for (size_t k = 0; k < (size_t)2 * 15 * 12; k++) p.qkvw[k] *= 40.0f;  // the query and key rows
        for (size_t k = 0; k < 3 * 15; k++) p.qkvb[k] = 0.05f * (float)((k * 7) % 11) - 0.25f;
    }
    return 0;
}

static void math_case_free(MathCase *m) {
    gpt_free(&m->model);
    vocab_free(&m->vocab);
}

// The numbers of a nested JSON array, depth first, into out (at most max); returns how many.
static size_t flatten(const JsonNode *n, double *out, size_t max) {
    if (n->type == JSON_NUMBER) {
        if (max) out[0] = json_number(n);
        return 1;
    }
    size_t got = 0;
    if (n->type != JSON_ARRAY) return 0;
    const JsonNode *e = json_first(n);
    for (uint32_t i = 0; i < n->count; i++, e = json_next(e))
        got += flatten(e, out + (got < max ? got : max), got < max ? max - got : 0);
    return got;
}

// The .json's field `name` flattened into a new array of exactly want numbers, or NULL.
static double *field(const JsonDoc *doc, const char *name, size_t want) {
    const JsonNode *n = json_object_get(doc, doc->nodes, name);
    double *out = malloc((want + 1) * sizeof(double));
    size_t got = n ? flatten(n, out, want) : 0;
    if (!CHECK(got == want, "\"%s\" holds %zu numbers, want %zu", name, got, want)) {
        free(out);
        return NULL;
    }
    return out;
}

// The largest |a - b| over n, relative to the largest |b|.
static double rel_diff(const double *a, const double *b, size_t n) {
    double worst = 0.0, scale = 0.0;
    for (size_t i = 0; i < n; i++) scale = fmax(scale, fabs(b[i]));
    for (size_t i = 0; i < n; i++) worst = fmax(worst, fabs(a[i] - b[i]));
    return scale > 0.0 ? worst / scale : worst;
}

// Layer l in double from the float model's residual stream before it: ln_1, the qkv rows
// (t, 3A), the attention weights (H, t, t) and the heads' outputs (t, A), as reference.h does them.
static void reference_layer(const GPT *model, int l, int t, double *qkv, double *att, double *out) {
    const GPTConfig *c = &model->config;
    const int C = c->n_embd, A = c->n_head * c->head_size;
    BlockParams p = gpt_layer_params(&model->params, c, l);
    double *x = malloc((size_t)t * C * sizeof(double)), *ln = malloc((size_t)t * C * sizeof(double));
    double *w = malloc((size_t)3 * A * C * sizeof(double)), *b = malloc((size_t)3 * A * sizeof(double));
    double *lw = malloc((size_t)C * sizeof(double)), *lb = malloc((size_t)C * sizeof(double));
    double mean[64], rstd[64];
    ref_to_double(x, gpt_residual_stream(model, l), (size_t)t * C);
    ref_to_double(lw, p.ln1w, C);
    ref_to_double(lb, p.ln1b, C);
    ref_to_double(w, p.qkvw, (size_t)3 * A * C);
    ref_to_double(b, p.qkvb, (size_t)3 * A);
    ref_layernorm_forward(ln, mean, rstd, x, lw, lb, t, C);
    ref_matmul_forward(qkv, ln, w, b, t, C, 3 * A);
    ref_attention_forward(out, att, qkv, 1, t, c->n_head, c->head_size, NULL);
    free(x), free(ln), free(w), free(b), free(lw), free(lb);
}

// The recorded .json against the reference, layer by layer: q, k and v (each [L][H][t][hs]),
// the heads' outputs, the weights; and the page's math (softmax of q.k / sqrt(hs) over the keys
// at or before the query, then the sum of the weighted values) on the recorded floats against the
// reference's weights and outputs.
TEST(attention_math_matches_reference) {
    MathCase m;
    const char *text = "the cat sat on the mat; the cat ran.";
    if (math_case(&m, text) != 0) return;
    const GPTConfig *c = &m.model.config;
    const int L = c->n_layer, H = c->n_head, hs = c->head_size, A = H * hs, t = m.t;
    test_make_dir(TMP);
    const char *path = TMP "/attention_math.json";
    const char *paths[1] = {path};
    char err[ERR_LEN];
    int written;
    if (!CHECK(attention_record(&m.model, &m.vocab, m.tokens, t, NULL, paths, 1, 1, &written, err) == 0, "%s", err)) {
        math_case_free(&m);
        return;
    }
    size_t len;
    char *json = test_read_file(path, &len);
    JsonDoc doc;
    if (!CHECK(json && json_parse(json, len, 1 << 22, &doc, err) == 0, "%s: %s", path, err)) return;
    size_t per_layer = (size_t)H * t * hs;
    double *q = field(&doc, "query", L * per_layer), *k = field(&doc, "key", L * per_layer);
    double *v = field(&doc, "value", L * per_layer), *o = field(&doc, "head_output", L * per_layer);
    double *w = field(&doc, "attention", (size_t)L * H * t * t);
    double *ref_qkv = malloc((size_t)t * 3 * A * sizeof(double)), *ref_att = malloc((size_t)H * t * t * sizeof(double));
    double *ref_out = malloc((size_t)t * A * sizeof(double)), *got = malloc((size_t)t * 3 * A * sizeof(double));
    double *want = malloc((size_t)t * 3 * A * sizeof(double));
    double worst_vectors = 0.0, worst_weights = 0.0, worst_page = 0.0, worst_page_out = 0.0;
    for (int l = 0; q && k && v && o && w && l < L; l++) {
        reference_layer(&m.model, l, t, ref_qkv, ref_att, ref_out);
        // q, k, v and the outputs as [H][t][hs] against the reference's rows
        const double *recorded[4] = {q + l * per_layer, k + l * per_layer, v + l * per_layer, o + l * per_layer};
        for (int which = 0; which < 4; which++) {
            for (int h = 0; h < H; h++)
                for (int i = 0; i < t; i++)
                    for (int d = 0; d < hs; d++) {
                        size_t at = ((size_t)h * t + i) * hs + d;
                        got[at] = recorded[which][at];
                        want[at] = which < 3 ? ref_qkv[(size_t)i * 3 * A + which * A + h * hs + d]
                                             : ref_out[(size_t)i * A + h * hs + d];
                    }
            worst_vectors = fmax(worst_vectors, rel_diff(got, want, per_layer));
        }
        worst_weights = fmax(worst_weights, rel_diff(w + (size_t)l * H * t * t, ref_att, (size_t)H * t * t));
        // the page's math on the recorded floats
        for (int h = 0; h < H; h++)
            for (int i = 0; i < t; i++) {
                const double *qi = recorded[0] + ((size_t)h * t + i) * hs;
                double scores[64], max = -INFINITY, sum = 0.0, out[16] = {0};
                for (int j = 0; j <= i; j++) {
                    const double *kj = recorded[1] + ((size_t)h * t + j) * hs;
                    double dot = 0.0;
                    for (int d = 0; d < hs; d++) dot += qi[d] * kj[d];
                    scores[j] = dot / sqrt((double)hs);
                    max = fmax(max, scores[j]);
                }
                for (int j = 0; j <= i; j++) sum += scores[j] = exp(scores[j] - max);
                for (int j = 0; j < t; j++) {
                    double weight = j <= i ? scores[j] / sum : 0.0;  // the causal mask: 0 past the query
                    worst_page = fmax(worst_page, fabs(weight - ref_att[((size_t)h * t + i) * t + j]));
                    if (j <= i)
                        for (int d = 0; d < hs; d++) out[d] += weight * recorded[2][((size_t)h * t + j) * hs + d];
                }
                for (int d = 0; d < hs; d++)
                    worst_page_out = fmax(worst_page_out, fabs(out[d] - ref_out[(size_t)i * A + h * hs + d]));
            }
    }
    CHECK(worst_vectors < 1e-5, "q, k, v or the outputs differ from the reference's by %.3g (relative)", worst_vectors);
    CHECK(worst_weights < 1e-5, "the recorded weights differ from the reference's by %.3g", worst_weights);
    CHECK(worst_page < 1e-5 && worst_page_out < 1e-4, "the page's math differs from the reference: weights by %.3g, "
          "outputs by %.3g", worst_page, worst_page_out);
    // the attention is not near uniform, so that the checks above can fail: some weight of the
    // last layer's heads exceeds 0.5 away from the first key
    int sharp = 0;
    for (size_t i = 0; w && i < (size_t)H * t * t; i++) sharp |= i % t != 0 && w[(size_t)(L - 1) * H * t * t + i] > 0.5;
    CHECK(sharp, "the test's attention is too flat to test anything");
    // the whole model in double gives the same weights as the recorded ones
    size_t P = m.model.num_parameters;
    double *params = malloc(P * sizeof(double)), *all = malloc((size_t)L * H * t * t * sizeof(double));
    ref_to_double(params, m.model.params_memory, P);
    int targets[64];
    for (int i = 0; i < t; i++) targets[i] = m.tokens[(i + 1) % t];
    ref_gpt_forward_backward(&m.model, params, m.tokens, targets, 1, t, 0, 0, NULL, all, NULL);
    if (w) CHECK(rel_diff(w, all, (size_t)L * H * t * t) < 1e-5, "the weights differ from the whole reference model's");
    free(params), free(all);
    free(q), free(k), free(v), free(o), free(w);
    free(ref_qkv), free(ref_att), free(ref_out), free(got), free(want);
    json_free(&doc);
    free(json);
    math_case_free(&m);
}

// Decodes base64 text into out (at most max bytes); returns the bytes decoded, or -1.
static long base64_decode(const char *text, unsigned char *out, size_t max) {
    static const char digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t n = strlen(text), got = 0;
    if (n % 4) return -1;
    for (size_t i = 0; i < n; i += 4) {
        uint32_t v = 0;
        int pad = 0;
        for (int k = 0; k < 4; k++) {
            const char *at = text[i + k] == '=' ? NULL : strchr(digits, text[i + k]);
            if (!at && text[i + k] != '=') return -1;
            pad += !at;
            v = v << 6 | (uint32_t)(at ? at - digits : 0);
        }
        for (int k = 0; k < 3 - pad; k++) {
            if (got == max) return -1;
            out[got++] = (unsigned char)(v >> (16 - 8 * k));
        }
    }
    return (long)got;
}

// 1 when the base64 string n holds exactly the count floats at want (little-endian).
static int same_floats(const JsonDoc *doc, const JsonNode *n, const float *want, size_t count) {
    unsigned char *bytes = malloc(4 * count + 4);
    long got = n && n->type == JSON_STRING ? base64_decode(json_string(doc, n), bytes, 4 * count + 4) : -1;
    int same = got == (long)(4 * count);
    for (size_t i = 0; same && i < count; i++) {
        uint32_t u = bytes[4 * i] | (uint32_t)bytes[4 * i + 1] << 8 | (uint32_t)bytes[4 * i + 2] << 16 |
                     (uint32_t)bytes[4 * i + 3] << 24;
        float f;
        memcpy(&f, &u, 4);
        same = memcmp(&f, &want[i], 4) == 0;
    }
    free(bytes);
    return same;
}

// The page's data (an .html written by attention_record): each layer's queries, keys, values and
// head outputs are the forward's floats, bit for bit; each head's label and scores are those
// head_scores.h gives its weights, and it has each head's importance; a text that tries to end the data's <script> stays inside it.
TEST(attention_math_page_holds_the_forward) {
    MathCase m;
    if (math_case(&m, "a</script><script>x=1</script> b") != 0) return;
    const GPTConfig *c = &m.model.config;
    const int L = c->n_layer, H = c->n_head, A = H * c->head_size, t = m.t;
    test_make_dir(TMP);
    const char *path = TMP "/attention_math.html";
    const char *paths[1] = {path};
    char err[ERR_LEN];
    int written;
    if (!CHECK(attention_record(&m.model, &m.vocab, m.tokens, t, NULL, paths, 1, 1, &written, err) == 0, "%s", err)) {
        math_case_free(&m);
        return;
    }
    size_t len;
    char *page = test_read_file(path, &len);
    const char *open = "<script type=\"application/json\" id=\"attention-data\">";
    char *start = page ? strstr(page, open) : NULL, *end = start ? strstr(start, "</script>") : NULL;
    JsonDoc doc;
    if (!CHECK(end, "no data in %s", path) ||
        !CHECK(json_parse(start + strlen(open), (size_t)(end - start - strlen(open)), 1 << 20, &doc, err) == 0, "%s", err)) {
        free(page);
        math_case_free(&m);
        return;
    }
    *end = '\0';
    CHECK(!strchr(start + strlen(open), '<'), "a raw < in the page's data");
    CHECK(strstr(end + 1, "alert") == NULL && strstr(end + 1, "x=1") == NULL, "the text appears outside the data");
    // the forward over the text once more: the heads' importance ran forwards with heads knocked out after it
    gpt_forward(&m.model, m.tokens, NULL, 1, t, NULL);
    const JsonNode *qkv = json_object_get(&doc, doc.nodes, "qkv"), *out = json_object_get(&doc, doc.nodes, "out");
    const JsonNode *hs = json_object_get(&doc, doc.nodes, "head_size");
    CHECK(hs && json_number(hs) == c->head_size && qkv && qkv->count == (uint32_t)L && out && out->count == (uint32_t)L,
          "head_size, qkv or out missing or of the wrong size");
    const JsonNode *q = qkv ? json_first(qkv) : NULL, *o = out ? json_first(out) : NULL;
    for (int l = 0; q && o && l < L; l++, q = json_next(q), o = json_next(o)) {
        CHECK(same_floats(&doc, q, gpt_qkv(&m.model, l), (size_t)t * 3 * A), "layer %d: qkv is not the forward's", l);
        CHECK(same_floats(&doc, o, gpt_attention_output(&m.model, l), (size_t)t * A), "layer %d: out is not the forward's", l);
    }
    // the labels: head_scores.h's on the forward's weights
    const JsonNode *heads = json_object_get(&doc, doc.nodes, "heads");
    const JsonNode *labels = heads ? json_object_get(&doc, heads, "label") : NULL;
    const JsonNode *scores = heads ? json_object_get(&doc, heads, "scores") : NULL;
    const JsonNode *importance = heads ? json_object_get(&doc, heads, "importance") : NULL;
    CHECK(importance && importance->count == (uint32_t)(L * H), "the heads' importance missing");
    uint32_t chars[64];
    int word_start[64], last_space[64];
    for (int i = 0; i < t; i++) chars[i] = m.vocab.chars[m.tokens[i]];
    head_word_starts(chars, t, word_start, last_space);
    HeadText text = {m.tokens, word_start, last_space, t};
    float reach[HEAD_PATTERNS], chance[HEAD_PATTERNS], s[HEAD_PATTERNS];
    for (int p = 0; p < HEAD_PATTERNS; p++) {
        reach[p] = (float)head_pattern_reach((HeadPattern)p, &text);
        chance[p] = (float)head_pattern_chance((HeadPattern)p, &text);
    }
    if (CHECK(labels && labels->count == (uint32_t)(L * H) && scores && scores->count == (uint32_t)(L * H * HEAD_PATTERNS),
              "the heads' labels or scores missing")) {
        const JsonNode *label = json_first(labels), *score = json_first(scores);
        for (int index = 0; index < L * H; index++, label = json_next(label)) {
            const float *att = gpt_attention_weights(&m.model, index / H) + (size_t)(index % H) * t * t;
            for (int p = 0; p < HEAD_PATTERNS; p++, score = json_next(score)) {
                s[p] = (float)head_score((HeadPattern)p, att, &text);
                CHECK(fabs(json_number(score) - s[p]) <= 5e-5, "head %d, pattern %d: score %g, want %g", index, p,
                      json_number(score), s[p]);
            }
            double strength;
            CHECK(json_number(label) == head_label(s, reach, chance, &strength), "head %d: label %g", index,
                  json_number(label));
        }
    }
    json_free(&doc);
    free(page);
    math_case_free(&m);
}
