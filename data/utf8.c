#include "utf8.h"

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
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
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
