// attention_export: picks the writer by extension and writes the file atomically; also the
// small text helpers the writers share.
#include "attention_export.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

#include "../common/platform.h"
#include "../common/utf8.h"
#include "../format/atomic_file.h"
#include "attention_formats.h"

typedef int (*AttentionWriter)(FILE *fp, const Attention *a, char err[ERR_LEN]);

// The writer of a file extension (without its dot), or NULL.
static AttentionWriter writer_for_extension(const char *ext) {
    if (strcasecmp(ext, "json") == 0) return attention_write_json;
    if (strcasecmp(ext, "csv") == 0) return attention_write_csv;
    if (strcasecmp(ext, "png") == 0) return attention_write_png;
    if (strcasecmp(ext, "html") == 0) return attention_write_html;
    return NULL;
}

int attention_check_path(const char *path, char err[ERR_LEN]) {
    if (writer_for_extension(platform_path_extension(path))) return 0;
    snprintf(err, ERR_LEN, "%s: unknown attention file extension (use .json, .csv, .png or .html)", path);
    return -2;
}

// The layout of path's .png image for t characters; 1 when path is a .png whose image fits.
static int png_fits(int t, int n_layer, int n_head, PngLayout *p) {
    Attention a = {.t = t, .n_layer = n_layer, .n_head = n_head};
    attention_png_layout(&a, p);
    return p->width <= ATTENTION_PNG_MAX_SIDE && p->height <= ATTENTION_PNG_MAX_SIDE;
}

int attention_check_size(const char *path, int t, int n_layer, int n_head, char err[ERR_LEN]) {
    PngLayout p, smaller;
    if (writer_for_extension(platform_path_extension(path)) != attention_write_png || png_fits(t, n_layer, n_head, &p))
        return 0;
    int fits = t - 1;  // the image shrinks with the text (cells grow as panels shrink, but not past 8 pixels)
    while (fits > 0 && !png_fits(fits, n_layer, n_head, &smaller)) fits--;
    if (fits > 0)
        snprintf(err, ERR_LEN, "%s: %d characters over %d layers x %d heads make a %ld x %ld image, past the %d "
                 "pixels a side it may have: record at most %d characters, or write .html, .json or .csv", path, t,
                 n_layer, n_head, p.width, p.height, ATTENTION_PNG_MAX_SIDE, fits);
    else
        snprintf(err, ERR_LEN, "%s: %d layers x %d heads make an image past the %d pixels a side it may have, "
                 "whatever the text: write .html, .json or .csv", path, n_layer, n_head, ATTENTION_PNG_MAX_SIDE);
    return -2;
}

double attention_export_memory(const char *path, int t, int n_layer, int n_head) {
    PngLayout p;
    if (writer_for_extension(platform_path_extension(path)) != attention_write_png || !png_fits(t, n_layer, n_head, &p))
        return 0.0;
    double pixels = 3.0 * p.width * p.height, rows = pixels + p.height;
    return pixels + rows + (double)compressBound((uLong)rows);
}

int attention_export(const char *path, const Attention *a, int replace, char err[ERR_LEN]) {
    if (attention_check_path(path, err) != 0) return -2;
    AttentionWriter writer = writer_for_extension(platform_path_extension(path));
    if (a->t < 1 || a->n_layer < 1 || a->n_head < 1 || (a->vectors && a->vectors->head_size < 1)) {
        snprintf(err, ERR_LEN, "%s: nothing to export (t=%d, n_layer=%d, n_head=%d%s)", path, a->t, a->n_layer,
                 a->n_head, a->vectors && a->vectors->head_size < 1 ? ", head_size < 1" : "");
        return -1;
    }
    AtomicFile f;
    if (atomic_file_open(&f, path, err) != 0) return -1;
    char why[ERR_LEN];
    if (writer(f.fp, a, why) != 0) {
        snprintf(err, ERR_LEN, "%s: %s", path, why);
        atomic_file_abort(&f);
        return -1;
    }
    return replace ? atomic_file_commit(&f, err) : atomic_file_commit_new(&f, err);
}

void viewer_write_json_text(FILE *fp, const char *s) {
    fputc('"', fp);
    size_t n = strlen(s);
    for (const unsigned char *p = (const unsigned char *)s, *end = p + n; p < end; p++) {
        size_t len = utf8_sequence_length(p, (size_t)(end - p));
        if (len == 0) fputs("\\ufffd", fp);
        else if (*p == '"' || *p == '\\') fprintf(fp, "\\%c", *p);
        else if (*p < 0x20 || *p == '<') fprintf(fp, "\\u%04x", *p);
        else fwrite(p, 1, len, fp);
        p += len ? len - 1 : 0;
    }
    fputc('"', fp);
}

void viewer_write_number(FILE *fp, double x) {
    if (isfinite(x)) fprintf(fp, "%.9g", x);
    else fputs("null", fp);
}

int viewer_append_utf8(char *out, uint32_t cp) {
    if (!utf8_is_scalar_value(cp)) cp = 0xFFFD;
    return utf8_encode(cp, out);
}

int viewer_append_json_char(char *out, uint32_t cp, int html_safe) {
    static const char hex[] = "0123456789abcdef";
    int n = 0;
    out[n++] = '"';
    const char *short_escape = NULL;
    switch (cp) {
    case '"': short_escape = "\\\""; break;
    case '\\': short_escape = "\\\\"; break;
    case '\n': short_escape = "\\n"; break;
    case '\r': short_escape = "\\r"; break;
    case '\t': short_escape = "\\t"; break;
    case '\b': short_escape = "\\b"; break;
    case '\f': short_escape = "\\f"; break;
    }
    if (short_escape) {
        out[n++] = short_escape[0];
        out[n++] = short_escape[1];
    } else if (cp < 0x20 || (html_safe && (cp == '<' || cp == 0x2028 || cp == 0x2029))) {
        memcpy(out + n, "\\u", 2);
        n += 2;
        for (int shift = 12; shift >= 0; shift -= 4) out[n++] = hex[(cp >> shift) & 0xF];
    } else {
        n += viewer_append_utf8(out + n, cp);
    }
    out[n++] = '"';
    return n;
}

// round(m * 10^k / 2^shift) for m < 2^24, 0 <= k <= 17, to nearest with ties to even, as
// printf rounds; m * 5^k < 2^64 keeps it exact. Returns 0 when the result would not fit.
static uint64_t scaled_round(uint32_t m, int k, int binary_exponent) {
    uint64_t p = m;
    for (int i = 0; i < k; i++) p *= 5;  // m * 10^k = m * 5^k * 2^k
    int shift = -(binary_exponent + k);   // value = p / 2^shift
    if (shift <= 0) return shift > -30 ? p << -shift : 0;
    if (shift >= 64) return 0;
    uint64_t q = p >> shift, rem = p & ((UINT64_C(1) << shift) - 1), half = UINT64_C(1) << (shift - 1);
    if (rem > half || (rem == half && (q & 1))) q++;
    return q;
}

// The 9 significant digits of |x| and its decimal exponent, exactly as printf's %.9g
// rounds them, for 1e-9 <= |x| < 1e9 (k = 8 - exponent within 0..17); 0 outside.
static int nine_digits(float x, uint32_t *digits, int *exponent) {
    float ax = fabsf(x);
    if (!(ax >= 1e-9f && ax < 1e9f)) return 0;
    int e2;
    float mantissa = frexpf(ax, &e2);                  // ax = mantissa * 2^e2, mantissa in [0.5, 1)
    uint32_t m = (uint32_t)ldexpf(mantissa, 24);      // ax = m * 2^(e2 - 24), exactly
    int e10 = (int)floor(log10((double)ax));
    for (int attempt = 0; attempt < 3; attempt++) {
        int k = 8 - e10;
        if (k < 0 || k > 17) return 0;
        uint64_t d = scaled_round(m, k, e2 - 24);
        if (d >= 1000000000u) e10++;       // log10 guessed low, or rounding carried
        else if (d < 100000000u) e10--;    // log10 guessed high
        else {
            *digits = (uint32_t)d;
            *exponent = e10;
            return 1;
        }
    }
    return 0;
}

int viewer_append_float(char *out, float x) {
    if (x == 0.0f) {
        out[0] = '0';
        return 1;
    }
    uint32_t d;
    int e10;
    if (!nine_digits(x, &d, &e10)) return snprintf(out, 24, "%.9g", (double)x);
    // %g: fixed notation for exponents -4..8, otherwise d.dddddddde+XX; no trailing zeros
    char digits[9];
    for (int i = 8; i >= 0; i--, d /= 10) digits[i] = (char)('0' + d % 10);
    int last = 8;
    while (last > 0 && digits[last] == '0') last--;
    int n = 0;
    if (x < 0.0f) out[n++] = '-';
    if (e10 < -4) {
        out[n++] = digits[0];
        if (last > 0) {
            out[n++] = '.';
            memcpy(out + n, digits + 1, (size_t)last);
            n += last;
        }
        n += snprintf(out + n, 8, "e-%02d", -e10);
    } else if (e10 < 0) {
        out[n++] = '0';
        out[n++] = '.';
        for (int i = 0; i < -e10 - 1; i++) out[n++] = '0';
        memcpy(out + n, digits, (size_t)last + 1);
        n += last + 1;
    } else {
        memcpy(out + n, digits, (size_t)e10 + 1);
        n += e10 + 1;
        if (last > e10) {
            out[n++] = '.';
            memcpy(out + n, digits + e10 + 1, (size_t)(last - e10));
            n += last - e10;
        }
    }
    return n;
}

int viewer_append_uint(char *out, uint32_t x) {
    char digits[10];
    int n = 0;
    do {
        digits[n++] = (char)('0' + x % 10);
        x /= 10;
    } while (x);
    for (int i = 0; i < n; i++) out[i] = digits[n - 1 - i];
    return n;
}

// base64, streamed: three bytes at a time into four characters, written a chunk at a time
typedef struct {
    FILE *fp;
    uint8_t held[3];
    int n_held;
    char chunk[1024];
    size_t used;
} Base64;

static void base64_flush_group(Base64 *b) {
    static const char digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    uint32_t v = (uint32_t)b->held[0] << 16 | (b->n_held > 1 ? (uint32_t)b->held[1] << 8 : 0) |
                 (b->n_held > 2 ? b->held[2] : 0);
    b->chunk[b->used++] = digits[v >> 18 & 63];
    b->chunk[b->used++] = digits[v >> 12 & 63];
    b->chunk[b->used++] = b->n_held > 1 ? digits[v >> 6 & 63] : '=';
    b->chunk[b->used++] = b->n_held > 2 ? digits[v & 63] : '=';
    b->n_held = 0;
    if (b->used == sizeof(b->chunk)) fwrite(b->chunk, 1, b->used, b->fp), b->used = 0;
}

static void base64_put(Base64 *b, const uint8_t *bytes, size_t n) {
    for (size_t i = 0; i < n; i++) {
        b->held[b->n_held++] = bytes[i];
        if (b->n_held == 3) base64_flush_group(b);
    }
}

static void base64_end(Base64 *b) {
    if (b->n_held) base64_flush_group(b);
    fwrite(b->chunk, 1, b->used, b->fp);
    fputc('"', b->fp);
}

void viewer_write_base64(FILE *fp, const uint8_t *bytes, size_t n) {
    Base64 b = {.fp = fp};
    fputc('"', fp);
    base64_put(&b, bytes, n);
    base64_end(&b);
}

void viewer_write_base64_floats(FILE *fp, const float *x, size_t n) {
    Base64 b = {.fp = fp};
    fputc('"', fp);
    for (size_t i = 0; i < n; i++) {
        uint32_t v;
        memcpy(&v, &x[i], 4);
        const uint8_t le[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
        base64_put(&b, le, 4);
    }
    base64_end(&b);
}

// The t characters as JSON strings separated by commas.
static void write_tokens(FILE *fp, const Attention *a, int html_safe) {
    char text[JSON_CHAR_MAX + 1];
    for (int i = 0; i < a->t; i++) {
        int n = viewer_append_json_char(text, a->chars[i], html_safe);
        if (i + 1 < a->t) text[n++] = ',';
        fwrite(text, 1, (size_t)n, fp);
    }
}

// "[[head, ...], ...]": the L layers of H heads each.
static void write_attention(FILE *fp, const Attention *a, const JsonLayout *layout, char *row) {
    int t = a->t;
    for (int l = 0; l < a->n_layer; l++) {
        fputc('[', fp);
        for (int h = 0; h < a->n_head; h++) {
            fputc('[', fp);
            layout->write_head(fp, a->att + ((size_t)l * a->n_head + h) * t * t, t, row);
            fputs(h + 1 < a->n_head ? layout->head_end : "]", fp);
        }
        fputs(l + 1 < a->n_layer ? "],\n" : layout->last_layer_end, fp);
    }
    fputc(']', fp);
}

// The surprisal array (t numbers) and the predictions array (t positions, each a list of k
// [character, probability] pairs).
static void write_predictions(FILE *fp, const Attention *a, const JsonLayout *layout) {
    // one position: k pairs of a character, a number and punctuation
    char line[ATTENTION_TOP_K * (JSON_CHAR_MAX + 24 + 4) + 4];
    fputs(layout->surprisal_open, fp);
    for (int i = 0; i < a->t; i++) {
        int n = layout->append_surprisal(line, a->pred[i].surprisal);
        if (i + 1 < a->t) line[n++] = ',';
        fwrite(line, 1, (size_t)n, fp);
    }
    fputs(layout->predictions_open, fp);
    size_t end_len = strlen(layout->position_end);
    for (int i = 0; i < a->t; i++) {
        const AttentionPrediction *p = &a->pred[i];
        int n = 0;
        line[n++] = '[';
        for (int r = 0; r < p->k; r++) {
            line[n++] = '[';
            n += viewer_append_json_char(line + n, p->top_char[r], layout->html_safe);
            line[n++] = ',';
            n += layout->append_probability(line + n, p->top_prob[r]);
            line[n++] = ']';
            if (r + 1 < p->k) line[n++] = ',';
        }
        line[n++] = ']';
        if (i + 1 < a->t) line[n++] = ',';
        memcpy(line + n, layout->position_end, end_len);
        fwrite(line, 1, (size_t)n + end_len, fp);
    }
    fputc(']', fp);
}

int viewer_write_json(FILE *fp, const Attention *a, const JsonLayout *layout, char err[ERR_LEN]) {
    char *row = malloc(layout->row_bytes(a->t));
    if (!row) {
        snprintf(err, ERR_LEN, "out of memory for a %d-character row", a->t);
        return -1;
    }
    fputs(layout->open, fp);
    write_tokens(fp, a, layout->html_safe);
    layout->write_sizes(fp, a);
    write_attention(fp, a, layout, row);
    if (a->pred) write_predictions(fp, a, layout);
    if (a->lens) layout->write_lens(fp, a, row);
    if (a->vectors) layout->write_vectors(fp, a);
    if (a->heads) layout->write_heads(fp, a);
    if (a->attribution || a->patching) layout->write_analysis(fp, a);
    fputs(layout->close, fp);
    free(row);
    return 0;
}
