#include "vocab.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/utf8.h"

#define NUM_CODE_POINTS 0x110000u  // U+0000 .. U+10FFFF

int vocab_char_allowed(uint32_t cp) { return cp != 0 && utf8_is_scalar_value(cp); }

int vocab_build(Vocab *v, const uint32_t *text, size_t len, char err[ERR_LEN]) {
    memset(v, 0, sizeof(*v));
    if (len == 0) {
        snprintf(err, ERR_LEN, "cannot build a vocabulary from empty text");
        return -1;
    }
    // one presence bit per code point (136 KiB): a single pass over the text, then the set
    // bits read out in increasing order are the sorted vocabulary
    uint64_t *seen = calloc(NUM_CODE_POINTS / 64, sizeof(uint64_t));
    if (!seen) {
        snprintf(err, ERR_LEN, "out of memory building the vocabulary");
        return -1;
    }
    for (size_t i = 0; i < len; i++) {
        uint32_t cp = text[i];
        if (!utf8_is_scalar_value(cp)) {
            snprintf(err, ERR_LEN, "character %zu of the text, U+%04X, is not a valid Unicode "
                     "scalar value", i, (unsigned)cp);
            free(seen);
            return -1;
        }
        seen[cp >> 6] |= 1ull << (cp & 63);
    }
    int size = 0;
    for (uint32_t w = 0; w < NUM_CODE_POINTS / 64; w++) size += __builtin_popcountll(seen[w]);
    v->chars = malloc((size_t)size * sizeof(uint32_t));
    if (!v->chars) {
        snprintf(err, ERR_LEN, "out of memory building the vocabulary");
        free(seen);
        return -1;
    }
    for (uint32_t w = 0; w < NUM_CODE_POINTS / 64; w++) {
        for (uint64_t bits = seen[w]; bits; bits &= bits - 1) {
            v->chars[v->size++] = w * 64 + (uint32_t)__builtin_ctzll(bits);
        }
    }
    free(seen);
    return 0;
}

int vocab_from_chars(Vocab *v, const uint32_t *chars, int n, char err[ERR_LEN]) {
    memset(v, 0, sizeof(*v));
    if (n <= 0) {
        snprintf(err, ERR_LEN, "the vocabulary is empty (%d characters)", n);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        if (!vocab_char_allowed(chars[i])) {
            snprintf(err, ERR_LEN, "vocabulary entry %d, U+%04X, is %s", i, (unsigned)chars[i],
                     chars[i] == 0 ? "NUL, which no text holds" : "not a valid Unicode scalar value");
            return -1;
        }
        if (i > 0 && chars[i] <= chars[i - 1]) {
            snprintf(err, ERR_LEN, "vocabulary entry %d, U+%04X, does not follow entry %d, "
                     "U+%04X: the list must be strictly increasing", i, (unsigned)chars[i],
                     i - 1, (unsigned)chars[i - 1]);
            return -1;
        }
    }
    v->chars = malloc((size_t)n * sizeof(uint32_t));
    if (!v->chars) {
        snprintf(err, ERR_LEN, "out of memory for a vocabulary of %d characters", n);
        return -1;
    }
    memcpy(v->chars, chars, (size_t)n * sizeof(uint32_t));
    v->size = n;
    return 0;
}

int vocab_index(const Vocab *v, uint32_t cp) {
    // binary search over chars[lo, hi)
    int lo = 0, hi = v->size;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (v->chars[mid] < cp) lo = mid + 1;
        else hi = mid;
    }
    return lo < v->size && v->chars[lo] == cp ? lo : -1;
}

int vocab_set_unknown(Vocab *v, char err[ERR_LEN]) {
    if (vocab_index(v, VOCAB_UNKNOWN_CHAR) < 0) {
        snprintf(err, ERR_LEN, "the vocabulary has no U+FFFD, the unknown token's character");
        return -1;
    }
    v->unknown = 1;
    return 0;
}

int vocab_token(const Vocab *v, uint32_t cp) {
    int id = vocab_index(v, cp);
    return id >= 0 || !v->unknown ? id : vocab_index(v, VOCAB_UNKNOWN_CHAR);
}

int vocab_encode(const Vocab *v, const uint32_t *text, size_t len, int *tokens,
                 size_t *bad_pos) {
    // ids of U+0000..U+00FF looked up once: most characters of most corpora are in that
    // range, and a table read beats a binary search per character
    int latin1[256];
    for (uint32_t cp = 0; cp < 256; cp++) latin1[cp] = vocab_token(v, cp);
    for (size_t i = 0; i < len; i++) {
        int id = text[i] < 256 ? latin1[text[i]] : vocab_token(v, text[i]);
        if (id < 0) {
            *bad_pos = i;
            return -1;
        }
        tokens[i] = id;
    }
    return 0;
}

void vocab_free(Vocab *v) {
    free(v->chars);
    memset(v, 0, sizeof(*v));
}
