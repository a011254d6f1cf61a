#include "char_counts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/utf8.h"
#include "vocab_coverage.h"

#define NUM_CODE_POINTS 0x110000u  // U+0000 .. U+10FFFF
#define WORDS (NUM_CODE_POINTS / 64)

int char_counts_build(CharCounts *c, const uint32_t *text, size_t len, char err[ERR_LEN]) {
    memset(c, 0, sizeof(*c));
    if (len == 0) {
        snprintf(err, ERR_LEN, "cannot count the characters of an empty text");
        return -1;
    }
    // which code points occur: a bit each; then the rank of each word's first bit among them
    uint64_t *seen = calloc(WORDS, sizeof(uint64_t));
    uint32_t *rank = malloc(WORDS * sizeof(uint32_t));
    int rc = -1;
    if (!seen || !rank) goto out_of_memory;
    for (size_t i = 0; i < len; i++) {
        uint32_t cp = text[i];
        if (!utf8_is_scalar_value(cp)) {
            snprintf(err, ERR_LEN, "character %zu of the text, U+%04X, is not a valid Unicode scalar value", i,
                     (unsigned)cp);
            goto done;
        }
        seen[cp >> 6] |= 1ull << (cp & 63);
    }
    uint32_t distinct = 0;
    for (uint32_t w = 0; w < WORDS; w++) {
        rank[w] = distinct;
        distinct += (uint32_t)__builtin_popcountll(seen[w]);
    }
    c->chars = malloc(distinct * sizeof(uint32_t));
    c->counts = calloc(distinct, sizeof(size_t));
    if (!c->chars || !c->counts) goto out_of_memory;
    for (uint32_t w = 0, k = 0; w < WORDS; w++)
        for (uint64_t bits = seen[w]; bits; bits &= bits - 1) c->chars[k++] = w * 64 + (uint32_t)__builtin_ctzll(bits);
    // a character's index among the distinct ones: its word's rank plus the bits below it
    for (size_t i = 0; i < len; i++) {
        uint32_t cp = text[i];
        uint64_t below = seen[cp >> 6] & ((1ull << (cp & 63)) - 1);
        c->counts[rank[cp >> 6] + (uint32_t)__builtin_popcountll(below)]++;
    }
    c->distinct = (int)distinct;
    c->len = len;
    rc = 0;
    goto done;
out_of_memory:
    snprintf(err, ERR_LEN, "out of memory counting the text's characters");
done:
    if (rc != 0) char_counts_free(c);
    free(seen);
    free(rank);
    return rc;
}

void char_counts_rare(const CharCounts *c, size_t min_count, int *distinct, size_t *occurrences) {
    *distinct = 0;
    *occurrences = 0;
    for (int i = 0; i < c->distinct; i++)
        if (c->counts[i] < min_count) {
            (*distinct)++;
            *occurrences += c->counts[i];
        }
}

// Whether U+FFFD occurs often enough to be in the vocabulary on its own.
static int keeps_unknown_char(const CharCounts *c, size_t min_count) {
    for (int i = 0; i < c->distinct; i++)
        if (c->chars[i] == VOCAB_UNKNOWN_CHAR) return c->counts[i] >= min_count;
    return 0;
}

int char_counts_vocab_size(const CharCounts *c, size_t min_count) {
    int rare;
    size_t occurrences;
    char_counts_rare(c, min_count, &rare, &occurrences);
    return c->distinct - rare + (rare > 0 && !keeps_unknown_char(c, min_count));
}

int char_counts_vocab(const CharCounts *c, size_t min_count, Vocab *v, char err[ERR_LEN]) {
    memset(v, 0, sizeof(*v));
    int size = char_counts_vocab_size(c, min_count), rare;
    size_t occurrences;
    char_counts_rare(c, min_count, &rare, &occurrences);
    v->chars = malloc(((size_t)size + 1) * sizeof(uint32_t));
    if (!v->chars) {
        snprintf(err, ERR_LEN, "out of memory for a vocabulary of %d characters", size);
        return -1;
    }
    // the kept characters in their order, U+FFFD put in its place among them
    int add_unknown = rare > 0 && !keeps_unknown_char(c, min_count);
    for (int i = 0; i < c->distinct; i++) {
        if (add_unknown && c->chars[i] > VOCAB_UNKNOWN_CHAR) {
            v->chars[v->size++] = VOCAB_UNKNOWN_CHAR;
            add_unknown = 0;
        }
        if (c->counts[i] >= min_count) v->chars[v->size++] = c->chars[i];
    }
    if (add_unknown) v->chars[v->size++] = VOCAB_UNKNOWN_CHAR;
    v->unknown = rare > 0;
    return 0;
}

int char_counts_check_varied(const CharCounts *c, char err[ERR_LEN]) {
    if (c->distinct != 1) return 0;
    MissingChars one = {&(CharCount){c->chars[0], c->counts[0]}, 1, c->counts[0]};
    char shown[128];
    vocab_coverage_describe(&one, 1, shown, sizeof(shown));
    snprintf(err, ERR_LEN, "one distinct character, %s: a model has nothing to learn from it", shown);
    return -1;
}

void char_counts_free(CharCounts *c) {
    free(c->chars);
    free(c->counts);
    memset(c, 0, sizeof(*c));
}
