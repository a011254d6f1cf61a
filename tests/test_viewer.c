// Tests of the attention viewer outputs (viewer/attention_export.h): each format is read
// back by a small independent reader here and compared with the weights written.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "../analysis/head_scores.h"
#include "../common/utf8.h"
#include "../viewer/attention_export.h"
#include "../viewer/attention_formats.h"
#include "test.h"

#define TMP_DIR "tests/tmp"

// ---------------------------------------------------------------------------------------
// synthetic attention

// Decodes a UTF-8 literal into code points; returns t.
static int text_chars(const char *text, uint32_t *chars) {
    size_t bad;
    return (int)utf8_decode((const unsigned char *)text, strlen(text), chars, &bad);
}

// Attention with recognisable patterns per head (previous character, first character,
// a decaying local window, the same character, the last whitespace), plus a little
// pseudo-random noise; each row is a softmax over keys 0..i, zeros above the diagonal.
// att: (L, H, t, t)
static void synthetic_attention(const uint32_t *chars, int t, int L, int H, float *att) {
    uint32_t state = 12345;
    double *logits = malloc((size_t)t * sizeof(double));
    for (int l = 0; l < L; l++) {
        for (int h = 0; h < H; h++) {
            float *head = att + ((size_t)l * H + h) * t * t;
            int pattern = (l * H + h) % 5;
            double sharpness = 1.0 + 0.5 * l;
            for (int i = 0; i < t; i++) {
                double max = -1e30;
                for (int j = 0; j <= i; j++) {
                    double x = 0.0;
                    if (pattern == 0) x = j == i - 1 ? 4.0 : 0.0;
                    if (pattern == 1) x = j == 0 ? 3.0 : -0.3 * (i - j);
                    if (pattern == 2) x = -0.6 * (i - j);
                    if (pattern == 3) x = chars[j] == chars[i] ? 3.0 : 0.0;
                    if (pattern == 4) x = (chars[j] == ' ' || chars[j] == '\n') ? 2.5 - 0.1 * (i - j) : 0.0;
                    state = state * 1664525u + 1013904223u;
                    x = sharpness * x + 0.5 * ((state >> 8) / 16777216.0);
                    logits[j] = x;
                    if (x > max) max = x;
                }
                double sum = 0.0;
                for (int j = 0; j <= i; j++) sum += logits[j] = exp(logits[j] - max);
                for (int j = 0; j < t; j++) head[(size_t)i * t + j] = j <= i ? (float)(logits[j] / sum) : 0.0f;
            }
        }
    }
    free(logits);
}

// attention_export of the weights, predictions and lens given (no vectors, no heads).
static int export_attention(const char *path, const uint32_t *chars, int t, int L, int H, const float *att,
                            const AttentionPrediction *pred, const AttentionLens *lens, int replace, char err[ERR_LEN]) {
    return attention_export(path, &(Attention){chars, t, L, H, att, pred, lens, NULL, NULL, NULL, NULL}, replace, err);
}

// A text exercising every escape: quote, backslash, newline, tab, CR, a control character,
// comma, '<', and 2-, 3- and 4-byte UTF-8.
static const char TRICKY_TEXT[] = "a\"b\\c\nd\te,f\r\x01<g\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80 ";

// ---------------------------------------------------------------------------------------
// number text

// viewer_append_float must write exactly what printf's %.9g writes: compares them on random bit
// patterns across the whole float range, on runs of consecutive floats at the edges of
// each decade (where the exponent and rounding carries change) and at the
// fixed/scientific switch, and on every float from 0.0999 to 0.1001.
static int float_text_matches(float x, size_t *bad) {
    char got[32], want[32];
    int n = viewer_append_float(got, x);
    got[n] = '\0';
    snprintf(want, sizeof(want), "%.9g", (double)x);
    if (x == 0.0f) strcpy(want, "0");  // zero (and -0) is written as 0
    if (strcmp(got, want) == 0) return 1;
    if ((*bad)++ < 5) CHECK(0, "%a: \"%s\", printf gives \"%s\"", (double)x, got, want);
    return 0;
}

TEST(viewer_float_text_matches_printf) {
    size_t bad = 0, tested = 0;
    uint32_t state = 7;
    for (int k = 0; k < 1000000; k++) {
        state = state * 1664525u + 1013904223u;
        uint32_t bits = state & 0x7FFFFFFFu;
        if ((bits >> 23) == 0xFF) continue;  // inf and NaN
        float x;
        memcpy(&x, &bits, 4);
        float_text_matches(k & 1 ? -x : x, &bad);
        tested++;
    }
    for (int e = -12; e <= 12; e++) {
        float edges[2] = {(float)pow(10.0, e), 9.9999999e-5f};
        for (int which = 0; which < 2; which++) {
            uint32_t bits;
            memcpy(&bits, &edges[which], 4);
            for (uint32_t d = bits - 2000; d <= bits + 2000; d++) {
                float x;
                memcpy(&x, &d, 4);
                float_text_matches(x, &bad);
                tested++;
            }
        }
    }
    float lo = 0.0999f, hi = 0.1001f;
    uint32_t b0, b1;
    memcpy(&b0, &lo, 4);
    memcpy(&b1, &hi, 4);
    for (uint32_t d = b0; d <= b1; d++) {
        float x;
        memcpy(&x, &d, 4);
        float_text_matches(x, &bad);
        tested++;
    }
    CHECK(bad == 0, "%zu of %zu floats differ from %%.9g", bad, tested);
}

// ---------------------------------------------------------------------------------------
// a minimal JSON reader: numbers and strings are collected in document order, and for
// arrays the length at each nesting depth (-1 when arrays at one depth differ)

typedef struct {
    const char *p;
    int ok;
    double *nums;      // every number (null as NaN)
    size_t n_nums, cap_nums;
    char **strings;    // every string, decoded to UTF-8
    size_t n_strings;
    int shape[8];      // array length per depth, 0 not seen yet, -1 inconsistent
} Json;

static void json_ws(Json *j) {
    while (*j->p == ' ' || *j->p == '\n' || *j->p == '\r' || *j->p == '\t') j->p++;
}

static char *json_string(Json *j) {
    if (*j->p != '"') { j->ok = 0; return NULL; }
    j->p++;
    char *out = malloc(strlen(j->p) + 1);
    size_t n = 0;
    while (j->ok && *j->p != '"') {
        unsigned char c = (unsigned char)*j->p++;
        if (c == '\0' || c < 0x20) { j->ok = 0; break; }  // raw control characters are invalid
        if (c != '\\') { out[n++] = (char)c; continue; }
        char e = *j->p++;
        switch (e) {
        case '"': out[n++] = '"'; break;
        case '\\': out[n++] = '\\'; break;
        case '/': out[n++] = '/'; break;
        case 'b': out[n++] = '\b'; break;
        case 'f': out[n++] = '\f'; break;
        case 'n': out[n++] = '\n'; break;
        case 'r': out[n++] = '\r'; break;
        case 't': out[n++] = '\t'; break;
        case 'u': {
            char hex[5] = {0};
            memcpy(hex, j->p, 4);
            j->p += 4;
            n += (size_t)utf8_encode((uint32_t)strtoul(hex, NULL, 16), out + n);
            break;
        }
        default: j->ok = 0;
        }
    }
    if (j->ok) j->p++;
    out[n] = '\0';
    return out;
}

static void json_push_number(Json *j, double x) {
    if (j->n_nums == j->cap_nums) {
        j->cap_nums = j->cap_nums ? 2 * j->cap_nums : 1024;
        j->nums = realloc(j->nums, j->cap_nums * sizeof(double));
    }
    j->nums[j->n_nums++] = x;
}

static void json_value(Json *j, int depth) {
    json_ws(j);
    if (!j->ok) return;
    if (*j->p == '[') {
        j->p++;
        int count = 0;
        json_ws(j);
        if (*j->p == ']') j->p++;
        else {
            while (j->ok) {
                json_value(j, depth + 1);
                count++;
                json_ws(j);
                if (*j->p == ',') { j->p++; continue; }
                if (*j->p == ']') { j->p++; break; }
                j->ok = 0;
            }
        }
        if (depth < 8) j->shape[depth] = j->shape[depth] == 0 || j->shape[depth] == count ? count : -1;
    } else if (*j->p == '"') {
        j->strings = realloc(j->strings, (j->n_strings + 1) * sizeof(char *));
        j->strings[j->n_strings++] = json_string(j);
    } else if (strncmp(j->p, "null", 4) == 0) {
        j->p += 4;
        json_push_number(j, NAN);
    } else {
        char *end;
        double x = strtod(j->p, &end);
        if (end == j->p) { j->ok = 0; return; }
        j->p = end;
        json_push_number(j, x);
    }
}

static void json_free(Json *j) {
    for (size_t i = 0; i < j->n_strings; i++) free(j->strings[i]);
    free(j->strings);
    free(j->nums);
}

// The top-level object of an exported .json: each field's value read as a Json.
typedef struct {
    Json tokens, attention, surprisal, predictions;
    int n_layer, n_head;
    int fields;  // how many fields were read
} JsonExport;

static void json_export_free(JsonExport *e) {
    json_free(&e->tokens);
    json_free(&e->attention);
    json_free(&e->surprisal);
    json_free(&e->predictions);
}

// Reads an exported .json into e (zeroed first); returns 1 when it is one valid object.
static int json_read_export(const char *text, JsonExport *e) {
    memset(e, 0, sizeof(*e));
    Json top = {.p = text, .ok = 1};
    json_ws(&top);
    if (*top.p++ != '{') return 0;
    while (top.ok) {
        json_ws(&top);
        char *key = json_string(&top);
        json_ws(&top);
        if (!top.ok || *top.p++ != ':') { free(key); return 0; }
        Json value = {.p = top.p, .ok = 1};
        json_value(&value, 0);
        top.p = value.p;
        top.ok = value.ok;
        e->fields++;
        Json *slot = strcmp(key, "tokens") == 0        ? &e->tokens
                     : strcmp(key, "attention") == 0   ? &e->attention
                     : strcmp(key, "surprisal") == 0   ? &e->surprisal
                     : strcmp(key, "predictions") == 0 ? &e->predictions
                                                       : NULL;
        if (slot) *slot = value;
        else {
            if (value.n_nums == 1 && strcmp(key, "n_layer") == 0) e->n_layer = (int)value.nums[0];
            if (value.n_nums == 1 && strcmp(key, "n_head") == 0) e->n_head = (int)value.nums[0];
            json_free(&value);
        }
        free(key);
        json_ws(&top);
        if (*top.p == ',') { top.p++; continue; }
        if (*top.p == '}') { top.p++; break; }
        top.ok = 0;
    }
    json_ws(&top);
    return top.ok && *top.p == '\0';
}

// tokens[i] must be the UTF-8 of chars[i]
static int tokens_match(const Json *tokens, const uint32_t *chars, int t) {
    if (!CHECK(tokens->ok && tokens->n_strings == (size_t)t, "tokens: %zu strings, want %d",
               tokens->n_strings, t))
        return 0;
    for (int i = 0; i < t; i++) {
        char want[5] = {0};
        utf8_encode(chars[i], want);
        if (!CHECK(strcmp(tokens->strings[i], want) == 0, "token %d is \"%s\", want \"%s\"", i,
                   tokens->strings[i], want))
            return 0;
    }
    return 1;
}

TEST(viewer_json_round_trip) {
    uint32_t chars[64];
    int t = text_chars(TRICKY_TEXT, chars), L = 2, H = 3;
    float *att = malloc((size_t)L * H * t * t * sizeof(float));
    synthetic_attention(chars, t, L, H, att);
    test_make_dir(TMP_DIR);
    const char *path = TMP_DIR "/viewer_test.json";
    char err[ERR_LEN];
    CHECK(export_attention(path, chars, t, L, H, att, NULL, NULL, 1, err) == 0, "export: %s", err);
    size_t len;
    char *text = test_read_file(path, &len);
    if (!CHECK(text, "cannot read %s", path)) return;
    // the escapes themselves, as text
    CHECK(strstr(text, "\"\\\"\""), "no escaped quote \"\\\"\"");
    CHECK(strstr(text, "\"\\\\\""), "no escaped backslash \"\\\\\"");
    CHECK(strstr(text, "\"\\n\""), "no escaped newline \"\\n\"");
    CHECK(strstr(text, "\"\\u0001\""), "no \\u0001 escape");
    CHECK(strstr(text, "\"\xF0\x9F\x98\x80\""), "non-ASCII is not raw UTF-8");

    JsonExport e;
    CHECK(json_read_export(text, &e), "not valid JSON");
    CHECK(e.fields == 4, "%d fields without predictions, want tokens, n_layer, n_head, attention", e.fields);
    Json attention = e.attention;
    tokens_match(&e.tokens, chars, t);
    CHECK(e.n_layer == L && e.n_head == H, "n_layer %d n_head %d, want %d %d", e.n_layer, e.n_head, L, H);
    CHECK(attention.shape[0] == L && attention.shape[1] == H && attention.shape[2] == t &&
              attention.shape[3] == t,
          "attention shape [%d][%d][%d][%d], want [%d][%d][%d][%d]", attention.shape[0],
          attention.shape[1], attention.shape[2], attention.shape[3], L, H, t, t);
    if (CHECK(attention.n_nums == (size_t)L * H * t * t, "%zu numbers", attention.n_nums)) {
        // every weight parses back to the same float; count the lower triangle
        size_t lower = 0, mismatches = 0, upper_nonzero = 0;
        for (size_t k = 0; k < attention.n_nums; k++) {
            int i = (int)(k / t % t), j = (int)(k % t);
            if ((float)attention.nums[k] != att[k]) mismatches++;
            if (j <= i) lower++;
            else if (attention.nums[k] != 0.0) upper_nonzero++;
        }
        CHECK(mismatches == 0, "%zu weights do not round-trip", mismatches);
        CHECK(lower == (size_t)L * H * t * (t + 1) / 2, "%zu lower-triangle weights", lower);
        CHECK(upper_nonzero == 0, "%zu nonzero weights above the diagonal", upper_nonzero);
    }
    json_export_free(&e);
    free(text);
    free(att);
}

// ---------------------------------------------------------------------------------------
// predictions

// softmax(z)[v] in long double, from the definition (no largest logit taken out)
static long double reference_prob(const float *z, int V, int v) {
    long double sum = 0.0L;
    for (int u = 0; u < V; u++) sum += expl((long double)z[u]);
    return expl((long double)z[v]) / sum;
}

TEST(viewer_predictions_from_logits) {
    enum { V = 7, T = 4 };
    const uint32_t vocab[V] = {'a', 'b', 'c', 'd', 'e', 'f', 0x1F600};
    const float logits[T][V] = {
        {0, 1, 2, 3, 4, 5, 6},            // increasing
        {1, 3, 3, 0, 3, -1, 2},           // a three-way tie for the top: lower ids first
        {200, -200, 0, 0, 0, 0, 0},       // p(b) = e^-400 is 0 as a float
        {0.5f, -2, 1, 0.25f, 3, 0, -1},   // the last position: no next character
    };
    const int tokens[T] = {2, 1, 1, 1};  // so each row's surprisal is of b
    const int want_top[T][5] = {{6, 5, 4, 3, 2}, {1, 2, 4, 6, 0}, {0, 2, 3, 4, 5}, {4, 2, 0, 3, 5}};
    AttentionPrediction pred[T];
    attention_predictions(&logits[0][0], tokens, T, V, vocab, pred);
    for (int i = 0; i < T; i++) {
        CHECK(pred[i].k == 5, "position %d: k = %d", i, pred[i].k);
        for (int r = 0; r < 5; r++) {
            long double want = reference_prob(logits[i], V, want_top[i][r]);
            CHECK(pred[i].top_char[r] == vocab[want_top[i][r]], "position %d, rank %d: U+%04X, want U+%04X", i, r,
                  pred[i].top_char[r], vocab[want_top[i][r]]);
            CHECK(fabsl(pred[i].top_prob[r] - want) <= 1e-7L, "position %d, rank %d: p %.9g, want %.9Lg", i, r,
                  (double)pred[i].top_prob[r], want);
        }
        if (i + 1 < T) {
            long double want = -log2l(reference_prob(logits[i], V, tokens[i + 1]));
            CHECK(fabsl(pred[i].surprisal - want) <= 1e-6L * (1.0L + want), "position %d: surprisal %.9g bits, want %.9Lg",
                  i, (double)pred[i].surprisal, want);
        }
    }
    CHECK(isfinite(pred[2].surprisal) && pred[2].surprisal > 577.0f, "e^-400: %g bits", (double)pred[2].surprisal);
    CHECK(isnan(pred[T - 1].surprisal), "the last position's surprisal is %g, not NaN", (double)pred[T - 1].surprisal);

    // fewer characters than ATTENTION_TOP_K
    AttentionPrediction small;
    const float z[2] = {0.0f, 1.0f};
    const int token[1] = {1};
    attention_predictions(z, token, 1, 2, vocab, &small);
    CHECK(small.k == 2 && small.top_char[0] == 'b' && small.top_char[1] == 'a' && isnan(small.surprisal),
          "two characters: k %d, top U+%04X U+%04X", small.k, small.top_char[0], small.top_char[1]);
}

// Predictions over the distinct characters of chars from pseudo-random logits that favour
// the character that comes next.
static void synthetic_predictions(const uint32_t *chars, int t, AttentionPrediction *pred) {
    uint32_t vocab[256];
    int V = 0, *tokens = malloc((size_t)t * sizeof(int));
    for (int i = 0; i < t; i++) {
        int v = 0;
        while (v < V && vocab[v] != chars[i]) v++;
        if (v == V) vocab[V++] = chars[i];
        tokens[i] = v;
    }
    float *logits = malloc((size_t)t * V * sizeof(float));
    uint32_t state = 99;
    for (int i = 0; i < t; i++) {
        for (int v = 0; v < V; v++) {
            state = state * 1664525u + 1013904223u;
            logits[(size_t)i * V + v] = 4.0f * (float)(state >> 8) / 16777216.0f;
        }
        if (i + 1 < t) logits[(size_t)i * V + tokens[i + 1]] += 2.0f;
    }
    attention_predictions(logits, tokens, t, V, vocab, pred);
    free(logits);
    free(tokens);
}

TEST(viewer_json_predictions) {
    uint32_t chars[64];
    int t = text_chars(TRICKY_TEXT, chars), L = 1, H = 2;
    float *att = malloc((size_t)L * H * t * t * sizeof(float));
    AttentionPrediction pred[64];
    synthetic_attention(chars, t, L, H, att);
    synthetic_predictions(chars, t, pred);
    test_make_dir(TMP_DIR);
    const char *path = TMP_DIR "/viewer_predictions.json";
    char err[ERR_LEN];
    CHECK(export_attention(path, chars, t, L, H, att, pred, NULL, 1, err) == 0, "export: %s", err);
    size_t len;
    char *text = test_read_file(path, &len);
    if (!CHECK(text, "cannot read %s", path)) return;
    JsonExport e;
    CHECK(json_read_export(text, &e), "not valid JSON");
    CHECK(e.fields == 6, "%d fields, want tokens, n_layer, n_head, attention, surprisal, predictions", e.fields);
    tokens_match(&e.tokens, chars, t);
    CHECK(e.attention.n_nums == (size_t)L * H * t * t, "%zu weights", e.attention.n_nums);
    // surprisal: t numbers, the last null, each the float written
    if (CHECK(e.surprisal.n_nums == (size_t)t && e.surprisal.shape[0] == t, "%zu surprisals", e.surprisal.n_nums)) {
        int bad = 0;
        for (int i = 0; i + 1 < t; i++) bad += (float)e.surprisal.nums[i] != pred[i].surprisal;
        CHECK(bad == 0, "%d surprisals differ from those written", bad);
        CHECK(isnan(e.surprisal.nums[t - 1]), "the last surprisal is not null");
    }
    // predictions: [t][5][character, probability]
    CHECK(e.predictions.shape[0] == t && e.predictions.shape[1] == 5 && e.predictions.shape[2] == 2,
          "predictions are [%d][%d][%d], want [%d][5][2]", e.predictions.shape[0], e.predictions.shape[1],
          e.predictions.shape[2], t);
    if (CHECK(e.predictions.n_strings == (size_t)t * 5 && e.predictions.n_nums == (size_t)t * 5,
              "%zu characters and %zu probabilities", e.predictions.n_strings, e.predictions.n_nums)) {
        int bad = 0;
        for (int i = 0; i < t; i++) {
            for (int r = 0; r < 5; r++) {
                char want[5] = {0};
                utf8_encode(pred[i].top_char[r], want);
                bad += strcmp(e.predictions.strings[i * 5 + r], want) != 0;
                bad += (float)e.predictions.nums[i * 5 + r] != pred[i].top_prob[r];
            }
        }
        CHECK(bad == 0, "%d predicted characters or probabilities differ from those written", bad);
    }
    json_export_free(&e);
    free(text);
    free(att);
}

// A made-up logit lens of rows x t cells over text chars (token i is chars[i]): the top three
// are positions i, i + 1, i + 2 (mod t); the next character's p 0.25 at rank 2, unknown at the
// last position.
static void synthetic_lens(LensCell *cells, int rows, int t) {
    for (int r = 0; r < rows; r++)
        for (int i = 0; i < t; i++) {
            LensCell *c = &cells[r * t + i];
            for (int k = 0; k < LOGIT_LENS_TOP; k++) c->top[k] = (i + k) % t, c->top_prob[k] = 0.5f / (k + 1) / (r + 1);
            c->next_prob = i + 1 < t ? 0.25f : NAN;
            c->next_rank = i + 1 < t ? 2 : 0;
        }
}

// ---------------------------------------------------------------------------------------
// CSV

// Reads one RFC 4180 record starting at *p into fields (each malloc'd); returns the number
// of fields, or -1 on a malformed quoted field. Moves *p past the record's newline.
static int csv_record(const char **p, char **fields, int max_fields) {
    int n = 0;
    const char *s = *p;
    for (;;) {
        char *field = malloc(strlen(s) + 1);
        size_t len = 0;
        if (*s == '"') {
            s++;
            for (;;) {
                if (*s == '\0') { free(field); return -1; }
                if (*s == '"' && s[1] == '"') { field[len++] = '"'; s += 2; continue; }
                if (*s == '"') { s++; break; }
                field[len++] = *s++;
            }
        } else {
            while (*s && *s != ',' && *s != '\n') field[len++] = *s++;
        }
        field[len] = '\0';
        if (n < max_fields) fields[n++] = field;
        else free(field);
        if (*s == ',') { s++; continue; }
        if (*s == '\n') s++;
        else if (*s != '\0') return -1;
        break;
    }
    *p = s;
    return n;
}

TEST(viewer_csv_rows) {
    uint32_t chars[64];
    int t = text_chars(TRICKY_TEXT, chars), L = 2, H = 3;
    float *att = malloc((size_t)L * H * t * t * sizeof(float));
    synthetic_attention(chars, t, L, H, att);
    test_make_dir(TMP_DIR);
    const char *path = TMP_DIR "/viewer_test.csv";
    char err[ERR_LEN];
    CHECK(export_attention(path, chars, t, L, H, att, NULL, NULL, 1, err) == 0, "export: %s", err);
    size_t len;
    char *text = test_read_file(path, &len);
    if (!CHECK(text, "cannot read %s", path)) return;
    CHECK(strstr(text, ",\",\",") && strstr(text, ",\"\"\"\",") && strstr(text, ",\"\n\",") &&
              strstr(text, ",\"\r\","),
          "comma, quote, LF or CR not quoted per RFC 4180");
    CHECK(strstr(text, ",\t,") && strstr(text, ",\xF0\x9F\x98\x80,"), "tab or UTF-8 not raw");

    const char *p = text;
    char *fields[8];
    int n = csv_record(&p, fields, 8);
    CHECK(n == 7 && strcmp(fields[0], "layer") == 0 && strcmp(fields[6], "weight") == 0, "bad header");
    for (int k = 0; k < n; k++) free(fields[k]);
    size_t rows = 0, bad = 0;
    for (int l = 0; l < L; l++) {
        for (int h = 0; h < H; h++) {
            for (int i = 0; i < t; i++) {
                for (int j = 0; j <= i; j++) {
                    n = csv_record(&p, fields, 8);
                    if (n != 7) { bad++; for (int k = 0; k < (n > 0 ? n : 0); k++) free(fields[k]); continue; }
                    rows++;
                    char qc[5] = {0}, kc[5] = {0};
                    utf8_encode(chars[i], qc);
                    utf8_encode(chars[j], kc);
                    float w = strtof(fields[6], NULL);
                    if (atoi(fields[0]) != l || atoi(fields[1]) != h || atoi(fields[2]) != i ||
                        atoi(fields[3]) != j || strcmp(fields[4], qc) != 0 ||
                        strcmp(fields[5], kc) != 0 || w != att[(((size_t)l * H + h) * t + i) * t + j])
                        bad++;
                    for (int k = 0; k < n; k++) free(fields[k]);
                }
            }
        }
    }
    CHECK(rows == (size_t)L * H * t * (t + 1) / 2, "%zu data rows, want %d", rows, L * H * t * (t + 1) / 2);
    CHECK(bad == 0, "%zu rows differ from the weights written", bad);
    CHECK(*p == '\0', "data after the last expected row");
    free(text);
    free(att);
}

// ---------------------------------------------------------------------------------------
// PNG

static uint32_t be32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

// Decodes an exported PNG: checks the signature, each chunk's CRC and IHDR (8-bit RGB),
// inflates the IDAT data, which must be exactly height * (1 + 3 * width) bytes with filter
// byte 0 on every scanline. Returns the scanlines (malloc'd) or NULL.
static unsigned char *png_decode(const char *path, int *width, int *height) {
    size_t len;
    unsigned char *png = (unsigned char *)test_read_file(path, &len);
    if (!CHECK(png && len > 8, "cannot read %s", path)) return NULL;
    static const unsigned char signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
    CHECK(memcmp(png, signature, 8) == 0, "bad PNG signature");
    unsigned char *idat = NULL;
    size_t idat_len = 0, pos = 8;
    int seen_ihdr = 0, seen_iend = 0;
    while (pos + 12 <= len && !seen_iend) {
        uint32_t n = be32(png + pos);
        if (!CHECK(pos + 12 + n <= len, "chunk at %zu runs past the end", pos)) break;
        const unsigned char *type = png + pos + 4, *data = png + pos + 8;
        uLong crc = crc32(crc32(0L, Z_NULL, 0), type, 4 + n);
        CHECK(crc == be32(data + n), "chunk %.4s: CRC mismatch", type);
        if (memcmp(type, "IHDR", 4) == 0) {
            seen_ihdr = CHECK(n == 13 && pos == 8, "IHDR is not the first 13-byte chunk");
            *width = (int)be32(data);
            *height = (int)be32(data + 4);
            CHECK(data[8] == 8 && data[9] == 2 && data[10] == 0 && data[11] == 0 && data[12] == 0,
                  "IHDR is not 8-bit RGB, deflate, filter 0, no interlace");
        } else if (memcmp(type, "IDAT", 4) == 0) {
            idat = realloc(idat, idat_len + n);
            memcpy(idat + idat_len, data, n);
            idat_len += n;
        } else if (memcmp(type, "IEND", 4) == 0) {
            seen_iend = CHECK(n == 0 && pos + 12 == len, "IEND is not an empty last chunk");
        }
        pos += 12 + n;
    }
    free(png);
    if (!CHECK(seen_ihdr && idat && seen_iend, "missing IHDR, IDAT or IEND")) {
        free(idat);
        return NULL;
    }
    size_t want = (size_t)*height * (1 + 3 * (size_t)*width);
    uLongf got = want + 1;  // room for one byte too many, to catch a longer stream
    unsigned char *raw = malloc(got);
    int rc = uncompress(raw, &got, idat, idat_len);
    free(idat);
    if (!CHECK(rc == Z_OK && got == want, "IDAT inflates to %lu bytes (zlib %d), want %zu",
               (unsigned long)got, rc, want)) {
        free(raw);
        return NULL;
    }
    for (int y = 0; y < *height; y++) {
        if (!CHECK(raw[(size_t)y * (1 + 3 * (size_t)*width)] == 0, "scanline %d: filter byte not 0", y)) {
            free(raw);
            return NULL;
        }
    }
    return raw;
}

static int pixel_is(const unsigned char *raw, int width, long x, long y, int r, int g, int b) {
    const unsigned char *p = raw + (size_t)y * (1 + 3 * (size_t)width) + 1 + 3 * (size_t)x;
    return p[0] == r && p[1] == g && p[2] == b;
}

// An Attention as attention_export makes it, for the .png layout and raster functions.
static Attention png_attention(const uint32_t *chars, int t, int L, int H, const float *att) {
    Attention a = {chars, t, L, H, att, NULL, NULL, NULL, NULL, NULL, NULL};
    return a;
}

TEST(viewer_png_decodes) {
    // 13 characters, 2 layers x 3 heads: cells of min(8, 512/13, 2048/(13*3)) = 8 pixels,
    // 104-pixel panels, with room for a character per cell along both axes
    uint32_t chars[13];
    int t = text_chars("To be, or not", chars), L = 2, H = 3;
    float *att = malloc((size_t)L * H * t * t * sizeof(float));
    synthetic_attention(chars, t, L, H, att);
    // layer 1, head 2: every query puts all its weight on key 0
    float *sink = att + ((size_t)1 * H + 2) * t * t;
    for (int i = 0; i < t; i++)
        for (int j = 0; j < t; j++) sink[i * t + j] = j == 0 ? 1.0f : 0.0f;
    test_make_dir(TMP_DIR);
    const char *path = TMP_DIR "/viewer_test.png";
    char err[ERR_LEN];
    CHECK(export_attention(path, chars, t, L, H, att, NULL, NULL, 1, err) == 0, "export: %s", err);
    Attention a = png_attention(chars, t, L, H, att);
    PngLayout p;
    attention_png_layout(&a, &p);
    CHECK(p.cell == 8 && p.panel == 104 && p.axis_left > 0 && p.axis_top > 0, "cell %d panel %ld axes %d %d",
          p.cell, p.panel, p.axis_left, p.axis_top);
    CHECK(p.step_x >= p.axis_left + p.panel && p.step_y >= p.axis_top + p.panel, "panels overlap");
    int width = 0, height = 0;
    unsigned char *raw = png_decode(path, &width, &height);
    if (raw) {
        CHECK(width == p.width && height == p.height, "image %d x %d, layout %ld x %ld", width, height,
              p.width, p.height);
        // centre of cell (query i, key j) in the sink panel
        long x0 = p.x0 + 2 * p.step_x + p.cell / 2, y0 = p.y0 + 1 * p.step_y + p.cell / 2;
        CHECK(pixel_is(raw, width, 0, 0, 255, 255, 255), "the frame is not white");
        CHECK(pixel_is(raw, width, x0 - p.cell / 2 - p.axis_left - 1, y0, 255, 255, 255), "the gap is not white");
        CHECK(pixel_is(raw, width, x0 + 0 * p.cell, y0 + 5 * p.cell, 253, 231, 37), "weight 1 is not the top colour");
        CHECK(pixel_is(raw, width, x0 + 3 * p.cell, y0 + 5 * p.cell, 68, 1, 84), "weight 0 is not the bottom colour");
        CHECK(pixel_is(raw, width, x0 + 7 * p.cell, y0 + 5 * p.cell, 215, 215, 215), "a masked cell is not grey");
        // the file holds the labelled raster
        unsigned char *rgb = attention_png_pixels(&a, &p, 1);
        size_t differing = 0;
        for (long y = 0; rgb && y < p.height; y++)
            differing += memcmp(raw + y * (1 + 3 * p.width) + 1, rgb + y * 3 * p.width, 3 * p.width) != 0;
        CHECK(rgb && differing == 0, "%zu rows of the file differ from the labelled raster", differing);
        free(rgb);
    }
    free(raw);
    free(att);
}

// Pixels of the w x h box at (x, y) that are not white.
static long ink_in(const unsigned char *rgb, const PngLayout *p, long x, long y, long w, long h) {
    long n = 0;
    for (long yy = y; yy < y + h; yy++)
        for (long xx = x; xx < x + w; xx++) {
            const unsigned char *px = rgb + 3 * (yy * p->width + xx);
            n += px[0] != 255 || px[1] != 255 || px[2] != 255;
        }
    return n;
}

// The w x h boxes at (x1, y1) and (x2, y2) hold the same pixels.
static int same_box(const unsigned char *rgb, const PngLayout *p, long x1, long y1, long x2, long y2, long w, long h) {
    for (long y = 0; y < h; y++)
        if (memcmp(rgb + 3 * ((y1 + y) * p->width + x1), rgb + 3 * ((y2 + y) * p->width + x2), 3 * (size_t)w) != 0)
            return 0;
    return 1;
}

// Labels, characters and legend against an unlabelled render of the same layout: the
// panels are the same pixels; every place a label goes is white without labels and has
// ink with them; labels differ where their text does (head 0 / head 1, 'o' / 'b').
static void check_png_labels(const char *text, int L, int H, int want_axes) {
    uint32_t chars[256];
    int t = text_chars(text, chars);
    float *att = malloc((size_t)L * H * t * t * sizeof(float));
    synthetic_attention(chars, t, L, H, att);
    Attention a = png_attention(chars, t, L, H, att);
    PngLayout p;
    attention_png_layout(&a, &p);
    unsigned char *bare = attention_png_pixels(&a, &p, 0), *labelled = attention_png_pixels(&a, &p, 1);
    if (!CHECK(bare && labelled, "out of memory")) return;
    CHECK((p.axis_left > 0) == want_axes && (p.axis_top > 0) == want_axes, "t=%d, cell %d: axes %d %d", t,
          p.cell, p.axis_left, p.axis_top);
    long label_h = 7L * p.text_scale, panels_differ = 0, missing = 0;
    for (int l = 0; l < L; l++) {
        long y = p.y0 + l * p.step_y;
        for (int h = 0; h < H; h++) {
            long x = p.x0 + h * p.step_x;
            for (long yy = y; yy < y + p.panel; yy++)
                panels_differ += memcmp(bare + 3 * (yy * p.width + x), labelled + 3 * (yy * p.width + x), 3 * (size_t)p.panel) != 0;
            if (want_axes) {
                // keys above, queries to the left
                missing += ink_in(bare, &p, x, y - p.axis_top, p.panel, p.axis_top) != 0 ||
                           ink_in(labelled, &p, x, y - p.axis_top, p.panel, p.axis_top) == 0;
                missing += ink_in(bare, &p, x - p.axis_left, y, p.axis_left, p.panel) != 0 ||
                           ink_in(labelled, &p, x - p.axis_left, y, p.axis_left, p.panel) == 0;
            }
        }
        // "layer l" left of the row
        missing += ink_in(bare, &p, 0, y, p.x0 - p.axis_left, p.panel) != 0 ||
                   ink_in(labelled, &p, 0, y, p.x0 - p.axis_left, p.panel) == 0;
    }
    for (int h = 0; h < H; h++) {
        // "head h" above the column
        long x = p.x0 + h * p.step_x;
        missing += ink_in(bare, &p, x, p.head_label_y, p.panel, label_h) != 0 ||
                   ink_in(labelled, &p, x, p.head_label_y, p.panel, label_h) == 0;
    }
    // the legend
    missing += ink_in(bare, &p, 0, p.legend_y, p.width, p.height - p.legend_y) != 0 ||
               ink_in(labelled, &p, 0, p.legend_y, p.width, p.height - p.legend_y) < 256 * 10;
    CHECK(panels_differ == 0, "%ld panel rows differ between the labelled and unlabelled renders", panels_differ);
    CHECK(missing == 0, "%ld label places are not white unlabelled and inked labelled", missing);
    CHECK(!same_box(labelled, &p, p.x0, p.head_label_y, p.x0 + p.step_x, p.head_label_y, p.panel, label_h),
          "\"head 0\" and \"head 1\" are drawn the same");
    if (want_axes) {
        // text "To be, ...": positions 1 'o' and 3 'b' differ, and 'o' at 1 and 7 are the same
        long key_y = p.y0 - p.axis_top;
        CHECK(!same_box(labelled, &p, p.x0 + 1 * p.cell, key_y, p.x0 + 3 * p.cell, key_y, p.cell, p.axis_top),
              "keys 'o' and 'b' are drawn the same");
        CHECK(same_box(labelled, &p, p.x0 + 1 * p.cell, key_y, p.x0 + 7 * p.cell, key_y, p.cell, p.axis_top),
              "the two keys 'o' are drawn differently");
        CHECK(!same_box(labelled, &p, p.x0 - p.axis_left, p.y0 + 1 * p.cell, p.x0 - p.axis_left, p.y0 + 3 * p.cell,
                        p.axis_left, p.cell),
              "queries 'o' and 'b' are drawn the same");
    }
    free(bare);
    free(labelled);
    free(att);
}

TEST(viewer_png_labels) {
    // 8-pixel cells: characters along both axes
    check_png_labels("To be, or not", 2, 3, 1);
    // 99 characters: 5-pixel cells, too small for characters; labels and legend still
    check_png_labels("To be, or not to be, that is the question: whether 'tis nobler in the mind "
                     "to suffer the slings and", 3, 2, 0);
}

// ---------------------------------------------------------------------------------------
// HTML

static size_t count_occurrences(const char *text, const char *needle) {
    size_t n = 0;
    for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle)) n++;
    return n;
}

TEST(viewer_html_self_contained) {
    uint32_t chars[64];
    int t = text_chars("a<\"", chars), L = 1, H = 1;
    // row 0: 1; row 1: 0.25 0.75; row 2: 0.1 0.2 0.7
    float att[9] = {1.0f, 0, 0, 0.25f, 0.75f, 0, 0.1f, 0.2f, 0.7f};
    test_make_dir(TMP_DIR);
    const char *path = TMP_DIR "/viewer_test.html";
    char err[ERR_LEN];
    CHECK(export_attention(path, chars, t, L, H, att, NULL, NULL, 1, err) == 0, "export: %s", err);
    size_t len;
    char *page = test_read_file(path, &len);
    if (!CHECK(page, "cannot read %s", path)) return;
    CHECK(!strstr(page, "http://") && !strstr(page, "https://") && !strstr(page, "src=\"") &&
              !strstr(page, "href=\"") && !strstr(page, "@import"),
          "the page refers to something outside itself");
    CHECK(strstr(page, "<title>chargpt attention: 3 characters, 1 layer &times; 1 head</title>"),
          "the title does not give the sizes");
    CHECK(strstr(page, "{\"tokens\":[\"a\",\"\\u003c\",\"\\\"\"],\"n_layer\":1,\"n_head\":1,"
                       "\"scale\":10000,\"attention\":[\n[[10000,2500,7500,1000,2000,7000]]]}"),
          "the embedded data is missing or wrong");
    CHECK(strstr(page, "id=\"errors\"") && strstr(page, "dataset.rendered = 'model,text,heatmap,lines'"),
          "no error box or rendered marker");
    CHECK(count_occurrences(page, "<script") == count_occurrences(page, "</script"), "unbalanced <script>");
    free(page);

    // with predictions: surprisal to 3 decimals (the last null), probabilities in 1e-4
    AttentionPrediction pred[3] = {
        {1.5f, 2, {'<', 'a'}, {0.75f, 0.25f}},
        {0.25f, 2, {'"', '<'}, {0.5f, 0.5f}},
        {NAN, 2, {'a', '"'}, {1.0f, 0.0f}},
    };
    CHECK(export_attention(path, chars, t, L, H, att, pred, NULL, 1, err) == 0, "export: %s", err);
    page = test_read_file(path, &len);
    if (CHECK(page, "cannot read %s", path)) {
        CHECK(strstr(page, "[[10000,2500,7500,1000,2000,7000]]],\n\"surprisal\":[1.500,0.250,null],\n"
                           "\"predictions\":[[[\"\\u003c\",7500],[\"a\",2500]],[[\"\\\"\",5000],[\"\\u003c\",5000]],"
                           "[[\"a\",10000],[\"\\\"\",0]]]}</script>"),
              "the embedded predictions are missing or wrong");
        free(page);
    }

    // a text that tries to end the data <script> early stays inside it
    t = text_chars("</script><script>alert(1)</script>", chars);
    float *att2 = malloc((size_t)t * t * sizeof(float));
    synthetic_attention(chars, t, 1, 1, att2);
    CHECK(export_attention(path, chars, t, 1, 1, att2, NULL, NULL, 1, err) == 0, "export: %s", err);
    page = test_read_file(path, &len);
    if (CHECK(page, "cannot read %s", path)) {
        CHECK(!strstr(page, "alert(1)</script>") && !strstr(page, "\"<\""), "a raw < in the data");
        CHECK(count_occurrences(page, "<script") == count_occurrences(page, "</script"), "unbalanced <script>");
        free(page);
    }
    free(att2);
}

// ---------------------------------------------------------------------------------------
// errors and edge cases

TEST(viewer_unknown_extension) {
    uint32_t chars[2] = {'a', 'b'};
    float att[4] = {1, 0, 0.5f, 0.5f};
    test_make_dir(TMP_DIR);
    const char *paths[] = {TMP_DIR "/viewer_test.txt", TMP_DIR "/viewer_test",
                           TMP_DIR "/viewer_test.json.bak", TMP_DIR "/viewer.json/x"};
    for (int k = 0; k < 4; k++) {
        char err[ERR_LEN] = "";
        int rc = export_attention(paths[k], chars, 2, 1, 1, att, NULL, NULL, 1, err);
        CHECK(rc == -2 && strstr(err, paths[k]), "%s: rc %d, err \"%s\"", paths[k], rc, err);
        CHECK(!test_file_exists(paths[k]), "%s was created", paths[k]);
    }
}

TEST(viewer_missing_directory) {
    uint32_t chars[2] = {'a', 'b'};
    float att[4] = {1, 0, 0.5f, 0.5f};
    const char *paths[] = {TMP_DIR "/no_such_dir/a.json", TMP_DIR "/no_such_dir/a.csv",
                           TMP_DIR "/no_such_dir/a.png", TMP_DIR "/no_such_dir/a.html"};
    for (int k = 0; k < 4; k++) {
        char err[ERR_LEN] = "";
        int rc = export_attention(paths[k], chars, 2, 1, 1, att, NULL, NULL, 1, err);
        CHECK(rc == -1 && strstr(err, paths[k]), "%s: rc %d, err \"%s\"", paths[k], rc, err);
        CHECK(!test_file_exists(paths[k]), "%s exists", paths[k]);
    }
    CHECK(!test_file_exists(TMP_DIR "/no_such_dir"), "the directory was created");
}

TEST(viewer_single_character_and_bad_sizes) {
    uint32_t chars[1] = {'\n'};
    float att[1] = {1.0f};
    test_make_dir(TMP_DIR);
    const char *path = TMP_DIR "/viewer_one.json";
    char err[ERR_LEN];
    CHECK(export_attention(path, chars, 1, 1, 1, att, NULL, NULL, 1, err) == 0, "export: %s", err);
    size_t len;
    char *text = test_read_file(path, &len);
    JsonExport e;
    if (CHECK(text, "cannot read %s", path)) {
        CHECK(json_read_export(text, &e), "not valid JSON");
        tokens_match(&e.tokens, chars, 1);
        CHECK(e.attention.n_nums == 1 && e.attention.nums[0] == 1.0 && e.attention.shape[3] == 1, "bad attention");
        json_export_free(&e);
    }
    free(text);
    const char *others[] = {TMP_DIR "/viewer_one.csv", TMP_DIR "/viewer_one.png", TMP_DIR "/viewer_one.html"};
    for (int k = 0; k < 3; k++) CHECK(export_attention(others[k], chars, 1, 1, 1, att, NULL, NULL, 1, err) == 0, "%s", err);
    int width = 0, height = 0;
    free(png_decode(TMP_DIR "/viewer_one.png", &width, &height));
    Attention a = png_attention(chars, 1, 1, 1, att);
    PngLayout p;
    attention_png_layout(&a, &p);
    CHECK(p.cell == 8 && width == p.width && height == p.height, "one %d-pixel cell: %d x %d, layout %ld x %ld",
          p.cell, width, height, p.width, p.height);

    const char *zero = TMP_DIR "/viewer_zero.json";
    CHECK(export_attention(zero, chars, 0, 1, 1, att, NULL, NULL, 1, err) == -1 && !test_file_exists(zero), "t = 0 accepted");
    CHECK(export_attention(zero, chars, 1, 0, 1, att, NULL, NULL, 1, err) == -1 && !test_file_exists(zero), "L = 0 accepted");
}

// All four formats at 256 characters and 8 layers x 8 heads: they are written, the PNG has
// the documented size (1-pixel cells) and the files stay of a sensible size.
TEST(viewer_large_all_formats) {
    enum { T = 256, L = 8, H = 8 };
    const char *line = "ROMEO:\nBut, soft! what light through yonder window breaks?\n"
                       "It is the east, and Juliet is the sun.\n";
    char text[4 * T];
    text[0] = '\0';
    while (strlen(text) < T) strncat(text, line, T - strlen(text));
    uint32_t chars[T];
    int t = text_chars(text, chars);
    float *att = malloc((size_t)L * H * T * T * sizeof(float));
    synthetic_attention(chars, t, L, H, att);
    test_make_dir(TMP_DIR);
    const char *paths[] = {TMP_DIR "/viewer_large.json", TMP_DIR "/viewer_large.csv",
                           TMP_DIR "/viewer_large.png", TMP_DIR "/viewer_large.html"};
    // generous bounds on the sizes, in MB
    const double max_mb[] = {40, 80, 4, 12};
    for (int k = 0; k < 4; k++) {
        char err[ERR_LEN];
        CHECK(export_attention(paths[k], chars, t, L, H, att, NULL, NULL, 1, err) == 0, "%s", err);
        struct stat st;
        CHECK(stat(paths[k], &st) == 0 && st.st_size > 0 && st.st_size < max_mb[k] * 1e6,
              "%s: %lld bytes", paths[k], (long long)st.st_size);
    }
    int width = 0, height = 0;
    free(png_decode(paths[2], &width, &height));
    Attention a = png_attention(chars, t, L, H, att);
    PngLayout p;
    attention_png_layout(&a, &p);
    CHECK(p.cell == 1 && width == p.width && height == p.height && width >= 8 * 256 && height >= 8 * 256,
          "%d-pixel cells, image %d x %d, layout %ld x %ld", p.cell, width, height, p.width, p.height);
    for (int k = 0; k < 4; k++) unlink(paths[k]);
    free(att);
}

// Each head's pattern scores and label (analysis/head_scores.h) on text (t code points), as
// ./generate records them.
typedef struct {
    float reach[HEAD_PATTERNS], chance[HEAD_PATTERNS], *scores, *strength, *importance;
    int *label;
} SampleHeads;

static AttentionHeads sample_heads(SampleHeads *x, const uint32_t *chars, int t, int L, int H, const float *att) {
    int tokens[256], word_start[256], last_space[256];
    for (int i = 0; i < t; i++) tokens[i] = (int)chars[i];
    head_word_starts(chars, t, word_start, last_space);
    HeadText text = {tokens, word_start, last_space, t};
    x->scores = malloc((size_t)L * H * HEAD_PATTERNS * sizeof(float));
    x->strength = malloc((size_t)L * H * sizeof(float));
    x->label = malloc((size_t)L * H * sizeof(int));
    x->importance = malloc((size_t)L * H * sizeof(float));
    for (int p = 0; p < HEAD_PATTERNS; p++) {
        x->reach[p] = (float)head_pattern_reach((HeadPattern)p, &text);
        x->chance[p] = (float)head_pattern_chance((HeadPattern)p, &text);
    }
    for (int index = 0; index < L * H; index++) {
        for (int p = 0; p < HEAD_PATTERNS; p++)
            x->scores[index * HEAD_PATTERNS + p] = (float)head_score((HeadPattern)p, att + (size_t)index * t * t, &text);
        double strength;
        x->label[index] = head_label(x->scores + index * HEAD_PATTERNS, x->reach, x->chance, &strength);
        x->strength[index] = (float)strength;
        x->importance[index] = 0.05f * (float)(index % 7) - 0.1f;  // a loss change in bits, some below 0
    }
    return (AttentionHeads){HEAD_PATTERNS, head_pattern_names, x->reach, x->chance, x->scores, x->label, x->strength,
                            HEAD_LABEL_CLEAR, x->importance, NULL, NULL};
}

// A logit attribution over t positions of a model of L x H heads, as analysis/attribution.h
// lays it out, with made-up parts (their sums the totals): token i is the text's character i
// (the vocabulary is the text's code points), each position's target the next one (at the last,
// the first), its rival the one after.
static int sample_attribution(LogitAttribution *a, int t, int L, int H) {
    char err[ERR_LEN];
    GPTConfig c = {.n_layer = L, .n_head = H, .n_embd = 8};
    if (!CHECK(logit_attribution_init(a, &c, t, err) == 0, "%s", err)) return -1;
    for (int i = 0; i < t; i++) {
        a->target[i] = (i + 1) % t, a->rival[i] = (i + 2) % t, a->next_known[i] = i + 1 < t;
        a->logit[i] = a->difference[i] = 0.0;
        for (int k = 0; k < a->parts; k++) {
            a->logit_parts[i * a->parts + k] = sin(0.7 * i + 1.3 * k);
            a->difference_parts[i * a->parts + k] = cos(0.4 * i - 0.9 * k);
            a->logit[i] += a->logit_parts[i * a->parts + k], a->difference[i] += a->difference_parts[i * a->parts + k];
        }
    }
    return 0;
}

// Writes tests/tmp/viewer_sample.html (and viewer_sample_heatmap.png) from synthetic attention,
// predictions, logit lens and the heads' labels, for scripts/check_viewer.sh and for looking
// at. The text has characters the page's fonts may lack (an emoji, CJK), a tab and an accent.
TEST(viewer_sample_page) {
    const char *text = "ROMEO:\nWhat light through yonder window breaks?\n"
                       "It is the east, and Juliet is the sun \xF0\x9F\x8C\x9E.\n"
                       "\tArise, fair sun, and kill the envious moon \xE6\x9C\x88, caf\xC3\xA9\n";
    uint32_t chars[256];
    AttentionPrediction pred[256];
    int t = text_chars(text, chars), L = 4, H = 4;
    float *att = malloc((size_t)L * H * t * t * sizeof(float));
    synthetic_attention(chars, t, L, H, att);
    synthetic_predictions(chars, t, pred);
    test_make_dir(TMP_DIR);
    char err[ERR_LEN];
    CHECK(t > 100, "sample text of %d characters", t);
    LensCell *cells = malloc((size_t)(L + 1) * t * sizeof(LensCell));
    synthetic_lens(cells, L + 1, t);
    AttentionLens lens = {L + 1, cells, chars};
    SampleHeads made;
    AttentionHeads heads = sample_heads(&made, chars, t, L, H, att);
    // the heads' importance by the mean, the logit attribution and a patching of the text
    float *by_mean = malloc((size_t)L * H * sizeof(float));
    double patched[4 * 4 + 5 * 256];
    int corrupted[256];
    LogitAttribution split;
    if (!by_mean || sample_attribution(&split, t, L, H) != 0) return;
    for (int i = 0; i < L * H; i++) by_mean[i] = 0.03f * (float)(i % 5) - 0.05f;
    heads.importance_mean = by_mean, heads.mean_over = "a <sample> text";
    for (int i = 0; i < L * H + (L + 1) * t; i++) patched[i] = sin(0.37 * i);
    for (int i = 0; i < t; i++) corrupted[i] = i % 9 == 4 ? (i + 3) % t : i;
    Patching patching = {L, H, t, 1, 2, 3.5, -1.25, patched, patched + L * H, NULL};
    AttentionAttribution attribution = {&split, chars};
    AttentionPatching patch = {&patching, corrupted, chars};
    Attention sample = {chars, t, L, H, att, pred, &lens, NULL, &heads, &attribution, &patch};
    CHECK(attention_export(TMP_DIR "/viewer_sample.html", &sample, 1, err) == 0, "%s", err);
    logit_attribution_free(&split);
    free(by_mean);
    free(made.scores), free(made.strength), free(made.label), free(made.importance);
    free(cells);
    CHECK(export_attention(TMP_DIR "/viewer_sample_heatmap.png", chars, t, L, H, att, pred, NULL, 1, err) == 0, "%s", err);
    free(att);
}
