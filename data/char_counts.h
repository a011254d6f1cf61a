// How often each character of a text occurs, and the vocabulary of those that occur often
// enough (train --min-char-count N): a large real corpus has thousands of characters seen a
// few times each (6,483 distinct in 141 MB of Debian's documentation and Python's sources),
// whose embedding rows cost parameters and are barely trained; below N occurrences they share
// one unknown token (data/vocab.h).
#ifndef CHARGPT_CHAR_COUNTS_H
#define CHARGPT_CHAR_COUNTS_H

#include <stddef.h>
#include <stdint.h>

#include "../common/errors.h"
#include "vocab.h"

typedef struct {
    uint32_t *chars;   // (distinct) the text's code points, increasing
    size_t *counts;    // (distinct) how often each occurs
    int distinct;
    size_t len;        // characters counted
} CharCounts;

// Counts the characters of text (len > 0, valid Unicode scalar values) in two passes: which
// occur (a bit per code point, 136 KiB), then how often, each found by its rank among them.
// The counts take 12 bytes per distinct character besides. Returns 0, or -1 with err.
int char_counts_build(CharCounts *c, const uint32_t *text, size_t len, char err[ERR_LEN]);
// The characters occurring fewer than min_count times: how many distinct, and their occurrences.
void char_counts_rare(const CharCounts *c, size_t min_count, int *distinct, size_t *occurrences);
// The vocabulary of the characters occurring at least min_count times; when others are rarer,
// U+FFFD is added (if it is not there already) and becomes the unknown token they share.
// min_count 1: every character, no unknown token. Returns 0, or -1 with err.
int char_counts_vocab(const CharCounts *c, size_t min_count, Vocab *v, char err[ERR_LEN]);
// The size that vocabulary would have.
int char_counts_vocab_size(const CharCounts *c, size_t min_count);
// A text with a single distinct character has nothing for a model to learn: returns 0, or -1
// with err naming the character and how often it occurs ("'a' U+0061 2000000 times"), for
// the caller to put after the text's name.
int char_counts_check_varied(const CharCounts *c, char err[ERR_LEN]);
void char_counts_free(CharCounts *c);

#endif
