#include "utf8.h"

#include <string.h>

int utf8_is_scalar_value(uint32_t cp) { return cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF); }

long utf8_decode(const unsigned char *bytes, size_t len, uint32_t *out, size_t *bad_offset) {
    size_t i = 0;
    long n = 0;
    while (i < len) {
        unsigned char b = bytes[i];
        uint32_t cp;
        int extra;
        uint32_t min;
        if (b < 0x80) {
            out[n++] = b;
            i++;
            continue;
        } else if ((b & 0xE0) == 0xC0) {
            cp = b & 0x1F; extra = 1; min = 0x80;
        } else if ((b & 0xF0) == 0xE0) {
            cp = b & 0x0F; extra = 2; min = 0x800;
        } else if ((b & 0xF8) == 0xF0) {
            cp = b & 0x07; extra = 3; min = 0x10000;
        } else {
            *bad_offset = i;
            return -1;
        }
        if (i + extra >= len) {  // sequence runs past the end
            *bad_offset = i;
            return -1;
        }
        for (int k = 1; k <= extra; k++) {
            unsigned char c = bytes[i + k];
            if ((c & 0xC0) != 0x80) {
                *bad_offset = i;
                return -1;
            }
            cp = (cp << 6) | (c & 0x3F);
        }
        if (cp < min || !utf8_is_scalar_value(cp)) {
            *bad_offset = i;
            return -1;
        }
        out[n++] = cp;
        i += extra + 1;
    }
    return n;
}

int utf8_encode(uint32_t cp, char out[4]) {
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

// Length of the well-formed UTF-8 sequence starting at s (at most n bytes), or 0.
size_t utf8_sequence_length(const unsigned char *s, size_t n) {
    unsigned char c = s[0];
    if (c < 0x80) return 1;
    size_t len;
    unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0) lo = 0xA0;        // no overlong 3-byte forms
        if (c == 0xED) hi = 0x9F;        // no UTF-16 surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0) lo = 0x90;        // no overlong 4-byte forms
        if (c == 0xF4) hi = 0x8F;        // nothing above U+10FFFF
    } else {
        return 0;
    }
    if (n < len || s[1] < lo || s[1] > hi) return 0;
    for (size_t i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xBF) return 0;
    return len;
}

// Bytes of the character at s when it is shown as it is: a well-formed UTF-8 sequence (of at
// most n bytes) that is no control character, or a newline or a tab; 0 when it must be escaped.
static size_t shown_length(const unsigned char *s, size_t n) {
    size_t len = utf8_sequence_length(s, n);
    if (len == 1 && (s[0] < 0x20 || s[0] == 0x7F)) return s[0] == '\n' || s[0] == '\t';
    if (len == 2 && s[0] == 0xC2 && s[1] < 0xA0) return 0;  // U+0080..U+009F: C1 controls (0x9B is CSI)
    return len;
}

void utf8_write_shown(FILE *fp, const char *s, const char *(*escape)(char c)) {
    const unsigned char *u = (const unsigned char *)s;
    size_t n = strlen(s);
    for (size_t i = 0; i < n;) {
        size_t len = shown_length(u + i, n - i);
        const char *entity = len == 1 && escape ? escape((char)u[i]) : NULL;
        if (entity) fputs(entity, fp);
        else if (len) fwrite(u + i, 1, len, fp);
        else fprintf(fp, "\\x%02x", u[i]);
        i += len ? len : 1;
    }
}

const char *utf8_shown(const char *s, char *out, size_t size) {
    const unsigned char *u = (const unsigned char *)s;
    size_t n = strlen(s), used = 0;
    for (size_t i = 0; i < n;) {
        size_t len = shown_length(u + i, n - i), need = len ? len : 4;
        if (used + need >= size) break;
        if (len) memcpy(out + used, u + i, len);
        else snprintf(out + used, 5, "\\x%02x", u[i]);
        used += need;
        i += len ? len : 1;
    }
    out[used] = '\0';
    return out;
}
