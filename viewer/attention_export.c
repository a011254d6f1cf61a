// attention_export: picks the writer by extension and writes the file atomically; also the
// small text helpers the writers share.
#include "attention_export.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "../data/utf8.h"
#include "../model/atomic_file.h"
#include "attention_formats.h"

typedef int (*AttentionWriter)(FILE *fp, const Attention *a, char err[ERR_LEN]);

// The extension of the last path component ("" when it has none), without the dot.
static const char *path_extension(const char *path) {
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *dot = strrchr(base, '.');
    return dot ? dot + 1 : "";
}

static AttentionWriter writer_for_extension(const char *ext) {
    if (strcasecmp(ext, "json") == 0) return attention_write_json;
    if (strcasecmp(ext, "csv") == 0) return attention_write_csv;
    if (strcasecmp(ext, "png") == 0) return attention_write_png;
    if (strcasecmp(ext, "html") == 0) return attention_write_html;
    return NULL;
}

int attention_export(const char *path, const uint32_t *chars, int t, int n_layer, int n_head,
                     const float *att, char err[ERR_LEN]) {
    AttentionWriter writer = writer_for_extension(path_extension(path));
    if (!writer) {
        snprintf(err, ERR_LEN, "%s: unknown attention file extension (use .json, .csv, .png or .html)",
                 path);
        return -2;
    }
    if (t < 1 || n_layer < 1 || n_head < 1) {
        snprintf(err, ERR_LEN, "%s: nothing to export (t=%d, n_layer=%d, n_head=%d)", path, t,
                 n_layer, n_head);
        return -1;
    }
    Attention a = {path, chars, t, n_layer, n_head, att};
    AtomicFile f;
    if (atomic_file_open(&f, path, err) != 0) return -1;
    if (writer(f.fp, &a, err) != 0) {
        atomic_file_abort(&f);
        return -1;
    }
    return atomic_file_commit(&f, err);
}

int append_utf8(char *out, uint32_t cp) {
    if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) cp = 0xFFFD;
    return utf8_encode(cp, out);
}

int append_json_char(char *out, uint32_t cp, int html_safe) {
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
        n += append_utf8(out + n, cp);
    }
    out[n++] = '"';
    return n;
}

int append_float(char *out, float x) {
    if (x == 0.0f) {
        out[0] = '0';
        return 1;
    }
    return snprintf(out, 24, "%.9g", (double)x);
}

int append_uint(char *out, uint32_t x) {
    char digits[10];
    int n = 0;
    do {
        digits[n++] = (char)('0' + x % 10);
        x /= 10;
    } while (x);
    for (int i = 0; i < n; i++) out[i] = digits[n - 1 - i];
    return n;
}
