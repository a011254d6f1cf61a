#include "json.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/utf8.h"

typedef struct {
    const char *text;
    size_t len;
    size_t pos;          // next byte to read
    JsonNode *nodes;
    size_t num_nodes;
    size_t cap_nodes;
    size_t max_nodes;    // more values than this are refused
    int too_many;        // set when they were
    char *strings;       // decoded strings, each NUL-terminated, at its source's offset
    char *err;
} Parser;

// Writes "invalid JSON at line L column C: <problem>" for the byte at `at`; returns -1.
static int fail_at(Parser *p, size_t at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail_at(Parser *p, size_t at, const char *fmt, ...) {
    size_t line = 1, column = 1;
    for (size_t i = 0; i < at && i < p->len; i++) {
        if (p->text[i] == '\n') {
            line++;
            column = 1;
        } else {
            column++;
        }
    }
    int n = snprintf(p->err, ERR_LEN, "invalid JSON at line %zu column %zu: ", line, column);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->err + n, ERR_LEN - n, fmt, ap);
    va_end(ap);
    return -1;
}

// Describes the byte at pos for an error message: 'x', or its hex code when not printable.
static void describe_byte(const Parser *p, size_t pos, char out[16]) {
    unsigned char c = (unsigned char)p->text[pos];
    if (c >= 0x20 && c < 0x7f) snprintf(out, 16, "'%c'", c);
    else snprintf(out, 16, "byte 0x%02x", c);
}

static void skip_whitespace(Parser *p) {
    while (p->pos < p->len) {
        char c = p->text[p->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
        p->pos++;
    }
}

// Appends a node of the given type; returns its index, or -1 when memory runs out or the
// text holds more than max_nodes values.
static long new_node(Parser *p, JsonType type) {
    if (p->num_nodes == p->max_nodes) {
        p->too_many = 1;
        return -1;
    }
    if (p->num_nodes == p->cap_nodes) {
        size_t cap = p->cap_nodes ? 2 * p->cap_nodes : 64;
        if (cap > p->max_nodes) cap = p->max_nodes;
        JsonNode *nodes = realloc(p->nodes, cap * sizeof(JsonNode));
        if (!nodes) return fail_at(p, p->pos, "out of memory");
        p->nodes = nodes;
        p->cap_nodes = cap;
    }
    JsonNode *n = &p->nodes[p->num_nodes];
    memset(n, 0, sizeof(*n));
    n->type = (uint8_t)type;
    n->offset = (uint32_t)p->pos;
    return (long)p->num_nodes++;
}

int json_utf8_valid(const char *s, size_t n) {
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        size_t len = utf8_sequence_length(u + i, n - i);
        if (len == 0) return 0;
        i += len;
    }
    return 1;
}

// Reads 4 hex digits at p->pos; returns the value, or -1.
static long read_hex4(const Parser *p) {
    if (p->len - p->pos < 4) return -1;
    long v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p->text[p->pos + i];
        int d;
        if (c >= '0' && c <= '9') d = c - '0';
        else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
        else return -1;
        v = v * 16 + d;
    }
    return v;
}

// Parses the \uXXXX escape at p->pos (just after the backslash and 'u'), joining a
// surrogate pair; appends the UTF-8 to out and returns the bytes written, or -1.
static long parse_unicode_escape(Parser *p, char *out) {
    size_t start = p->pos - 2;
    long cp = read_hex4(p);
    if (cp < 0) return fail_at(p, start, "\\u must be followed by 4 hex digits");
    p->pos += 4;
    if (cp >= 0xDC00 && cp <= 0xDFFF)
        return fail_at(p, start, "unpaired low surrogate \\u%04lX", cp);
    if (cp >= 0xD800 && cp <= 0xDBFF) {
        // a high surrogate must be followed by \u and a low surrogate
        if (p->len - p->pos < 2 || p->text[p->pos] != '\\' || p->text[p->pos + 1] != 'u')
            return fail_at(p, start, "unpaired high surrogate \\u%04lX", cp);
        p->pos += 2;
        long low = read_hex4(p);
        if (low < 0xDC00 || low > 0xDFFF)
            return fail_at(p, start, "high surrogate \\u%04lX not followed by a low surrogate", cp);
        p->pos += 4;
        cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
    }
    return utf8_encode((uint32_t)cp, out);
}

// Parses the string starting at the opening quote at p->pos into a new string node. A
// decoded string and its NUL are never longer than its quoted source, so it is written into
// `strings` (sized to the whole text) at the offset of its opening quote.
static int parse_string(Parser *p) {
    size_t start = p->pos;
    long idx = new_node(p, JSON_STRING);
    if (idx < 0) return -1;
    char *out = p->strings + start;
    size_t n = 0;
    p->pos++;  // opening quote
    for (;;) {
        if (p->pos >= p->len) return fail_at(p, start, "unterminated string");
        unsigned char c = (unsigned char)p->text[p->pos];
        if (c == '"') {
            p->pos++;
            break;
        }
        if (c < 0x20) return fail_at(p, p->pos, "control character 0x%02x in a string", c);
        if (c == '\\') {
            if (p->pos + 1 >= p->len) return fail_at(p, start, "unterminated string");
            char e = p->text[p->pos + 1];
            p->pos += 2;
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
                long k = parse_unicode_escape(p, out + n);
                if (k < 0) return -1;
                n += (size_t)k;
                break;
            }
            default: {
                char what[16];
                describe_byte(p, p->pos - 1, what);
                return fail_at(p, p->pos - 2, "invalid escape \\ followed by %s", what);
            }
            }
            continue;
        }
        size_t len = utf8_sequence_length((const unsigned char *)p->text + p->pos, p->len - p->pos);
        if (len == 0) return fail_at(p, p->pos, "invalid UTF-8 in a string");
        memcpy(out + n, p->text + p->pos, len);
        n += len;
        p->pos += len;
    }
    out[n] = '\0';
    p->nodes[idx].count = (uint32_t)n;
    return 0;
}

static int is_digit(char c) { return c >= '0' && c <= '9'; }

// Parses a number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
static int parse_number(Parser *p) {
    size_t start = p->pos;
    long idx = new_node(p, JSON_NUMBER);
    if (idx < 0) return -1;
    const char *t = p->text;
    size_t i = p->pos;
    int negative = 0;
    if (i < p->len && t[i] == '-') {
        negative = 1;
        i++;
    }
    if (i >= p->len || !is_digit(t[i])) return fail_at(p, start, "invalid number");
    if (t[i] == '0' && i + 1 < p->len && is_digit(t[i + 1]))
        return fail_at(p, start, "invalid number: leading zero");
    // the integer part, accumulated as a magnitude while it fits
    uint64_t magnitude = 0;
    int fits = 1;
    while (i < p->len && is_digit(t[i])) {
        uint64_t d = (uint64_t)(t[i] - '0');
        if (magnitude > (UINT64_MAX - d) / 10) fits = 0;
        else magnitude = magnitude * 10 + d;
        i++;
    }
    int integral = 1;
    if (i < p->len && t[i] == '.') {
        integral = 0;
        i++;
        if (i >= p->len || !is_digit(t[i])) return fail_at(p, start, "invalid number: no digit after '.'");
        while (i < p->len && is_digit(t[i])) i++;
    }
    if (i < p->len && (t[i] == 'e' || t[i] == 'E')) {
        integral = 0;
        i++;
        if (i < p->len && (t[i] == '+' || t[i] == '-')) i++;
        if (i >= p->len || !is_digit(t[i]))
            return fail_at(p, start, "invalid number: no digit in the exponent");
        while (i < p->len && is_digit(t[i])) i++;
    }
    // strtod needs a NUL-terminated copy
    size_t n = i - start;
    char small[64];
    char *copy = n < sizeof(small) ? small : malloc(n + 1);
    if (!copy) return fail_at(p, start, "out of memory");
    memcpy(copy, t + start, n);
    copy[n] = '\0';
    double value = strtod(copy, NULL);
    if (copy != small) free(copy);
    if (isinf(value)) return fail_at(p, start, "number out of range");
    JsonNode *node = &p->nodes[idx];
    // int64 holds magnitudes up to 2^63 - 1, and 2^63 when negative
    if (integral && fits && magnitude <= (uint64_t)INT64_MAX + (uint64_t)negative) {
        node->is_integer = 1;
        node->integer = negative ? (int64_t)(0 - magnitude) : (int64_t)magnitude;
    } else {
        node->number = value;
    }
    p->pos = i;
    return 0;
}

static int parse_literal(Parser *p, const char *word, JsonType type, int boolean) {
    size_t n = strlen(word);
    if (p->len - p->pos < n || memcmp(p->text + p->pos, word, n) != 0) {
        char what[16];
        describe_byte(p, p->pos, what);
        return fail_at(p, p->pos, "unexpected %s", what);
    }
    long idx = new_node(p, type);
    if (idx < 0) return -1;
    p->nodes[idx].boolean = boolean;
    p->pos += n;
    return 0;
}

static int parse_value(Parser *p, int depth);

// Parses the array or object whose opening bracket is at p->pos; depth counts the
// containers around it.
static int parse_container(Parser *p, int depth) {
    int is_object = p->text[p->pos] == '{';
    char close = is_object ? '}' : ']';
    if (depth >= JSON_MAX_DEPTH)
        return fail_at(p, p->pos, "nested deeper than %d levels", JSON_MAX_DEPTH);
    long idx = new_node(p, is_object ? JSON_OBJECT : JSON_ARRAY);
    if (idx < 0) return -1;
    p->pos++;
    skip_whitespace(p);
    size_t count = 0;
    if (p->pos < p->len && p->text[p->pos] == close) {
        p->pos++;
    } else {
        for (;;) {
            if (is_object) {
                skip_whitespace(p);
                if (p->pos >= p->len) return fail_at(p, p->pos, "unexpected end of input");
                if (p->text[p->pos] != '"') return fail_at(p, p->pos, "expected a string key");
                if (parse_string(p) != 0) return -1;
                skip_whitespace(p);
                if (p->pos >= p->len || p->text[p->pos] != ':')
                    return fail_at(p, p->pos, "expected ':' after an object key");
                p->pos++;
            }
            if (parse_value(p, depth + 1) != 0) return -1;
            count++;
            skip_whitespace(p);
            if (p->pos >= p->len) return fail_at(p, p->pos, "unexpected end of input");
            char c = p->text[p->pos++];
            if (c == close) break;
            if (c != ',') return fail_at(p, p->pos - 1, "expected ',' or '%c'", close);
        }
    }
    p->nodes[idx].count = (uint32_t)count;
    p->nodes[idx].size = (uint32_t)(p->num_nodes - (size_t)idx);
    return 0;
}

static int parse_value(Parser *p, int depth) {
    skip_whitespace(p);
    if (p->pos >= p->len) return fail_at(p, p->pos, "unexpected end of input");
    char c = p->text[p->pos];
    switch (c) {
    case '{':
    case '[': return parse_container(p, depth);
    case '"': return parse_string(p);
    case 't': return parse_literal(p, "true", JSON_BOOL, 1);
    case 'f': return parse_literal(p, "false", JSON_BOOL, 0);
    case 'n': return parse_literal(p, "null", JSON_NULL, 0);
    default:
        if (c == '-' || is_digit(c)) return parse_number(p);
        char what[16];
        describe_byte(p, p->pos, what);
        return fail_at(p, p->pos, "unexpected %s", what);
    }
}

int json_parse(const char *text, size_t len, size_t max_nodes, JsonDoc *doc, char err[ERR_LEN]) {
    memset(doc, 0, sizeof(*doc));
    // counts and sizes are 32-bit, which any shorter text respects
    if (len > UINT32_MAX) {
        snprintf(err, ERR_LEN, "invalid JSON: text of %zu bytes is longer than 4 GiB", len);
        return -1;
    }
    Parser p = {.text = text, .len = len, .max_nodes = max_nodes, .err = err};
    p.strings = malloc(len + 1);
    if (!p.strings) {
        snprintf(err, ERR_LEN, "invalid JSON: out of memory for %zu bytes", len);
        return -1;
    }
    int rc = parse_value(&p, 0);
    if (rc == 0) {
        skip_whitespace(&p);
        if (p.pos < p.len) rc = fail_at(&p, p.pos, "unexpected data after the JSON value");
    }
    if (rc != 0) {
        free(p.nodes);
        free(p.strings);
        if (!p.too_many) return -1;
        snprintf(err, ERR_LEN, "the JSON text holds more than %zu values (keys included), the most allowed",
                 max_nodes);
        return -2;
    }
    doc->nodes = p.nodes;
    doc->num_nodes = p.num_nodes;
    doc->strings = p.strings;
    return 0;
}

void json_free(JsonDoc *doc) {
    free(doc->nodes);
    free(doc->strings);
    memset(doc, 0, sizeof(*doc));
}

const JsonNode *json_object_get(const JsonDoc *doc, const JsonNode *object, const char *key) {
    if (object->type != JSON_OBJECT) return NULL;
    size_t n = strlen(key);
    const JsonNode *k = json_first(object);
    for (size_t i = 0; i < object->count; i++, k = json_next(k + 1)) {
        if (k->count == n && memcmp(json_string(doc, k), key, n) == 0) return k + 1;
    }
    return NULL;
}

void json_buf_append(JsonBuf *b, const char *s, size_t n) {
    if (b->failed) return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1) cap *= 2;
        char *data = realloc(b->data, cap);
        if (!data) {
            b->failed = 1;
            return;
        }
        b->data = data;
        b->cap = cap;
    }
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void json_buf_printf(JsonBuf *b, const char *fmt, ...) {
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof(small), fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->failed = 1;
        return;
    }
    if ((size_t)n < sizeof(small)) {
        json_buf_append(b, small, (size_t)n);
        return;
    }
    char *big = malloc((size_t)n + 1);
    if (!big) {
        b->failed = 1;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    json_buf_append(b, big, (size_t)n);
    free(big);
}

void json_buf_string(JsonBuf *b, const char *s, size_t n) {
    json_buf_append(b, "\"", 1);
    size_t run = 0;  // start of the bytes not yet copied
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c != '"' && c != '\\' && c >= 0x20) continue;
        json_buf_append(b, s + run, i - run);
        run = i + 1;
        switch (c) {
        case '"': json_buf_append(b, "\\\"", 2); break;
        case '\\': json_buf_append(b, "\\\\", 2); break;
        case '\n': json_buf_append(b, "\\n", 2); break;
        case '\r': json_buf_append(b, "\\r", 2); break;
        case '\t': json_buf_append(b, "\\t", 2); break;
        default: json_buf_printf(b, "\\u%04x", c); break;
        }
    }
    json_buf_append(b, s + run, n - run);
    json_buf_append(b, "\"", 1);
}

void json_buf_free(JsonBuf *b) {
    free(b->data);
    memset(b, 0, sizeof(*b));
}
