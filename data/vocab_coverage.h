// The characters of a text that a vocabulary lacks, as when a checkpoint's model is trained
// further on another text (train --init-from): each with its count, for a message naming
// them, and the text without them (train --skip-unknown).
#ifndef CHARGPT_VOCAB_COVERAGE_H
#define CHARGPT_VOCAB_COVERAGE_H

#include <stddef.h>
#include <stdint.h>

#include "vocab.h"

typedef struct {
    uint32_t cp;
    size_t count;
} CharCount;

typedef struct {
    CharCount *chars;  // (distinct) the missing characters, most frequent first (ties: by code point)
    int distinct;
    size_t total;      // occurrences of all of them in the text
} MissingChars;

// Finds the characters of text (len code points) that are not in vocab. Returns 0 (with
// missing->distinct 0 when the vocabulary covers the text), or -1 with err when memory runs out.
int vocab_coverage_find(const Vocab *vocab, const uint32_t *text, size_t len, MissingChars *missing,
                        char err[ERR_LEN]);
// Describes them: "'€' U+20AC 3 times, U+0009 (tab) once, ..." with at most `max_listed`
// characters and "and N more" after; characters without a glyph (control characters,
// whitespace but the space) by their code point alone, with a name for the common ones.
void vocab_coverage_describe(const MissingChars *missing, int max_listed, char *buf, size_t size);
// The vocabulary `old` grown by the characters of `missing` (what a text has that old lacks)
// seen at least min_count times (train --init-from --grow-vocab); when the others are rarer,
// they share the unknown token, U+FFFD, which joins too when old lacks it. *added lists the
// characters added, most frequent first (free it with vocab_coverage_free). Returns 0, or -1
// with err when memory runs out.
int vocab_grow(const Vocab *old, const MissingChars *missing, size_t min_count, Vocab *grown, MissingChars *added,
               char err[ERR_LEN]);
// Removes from text the characters vocab lacks, in place; returns the new length.
size_t vocab_coverage_drop(const Vocab *vocab, uint32_t *text, size_t len);
void vocab_coverage_free(MissingChars *missing);

#endif
