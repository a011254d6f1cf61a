// The character vocabulary: the sorted set of code points that occur in the corpus.
// A character's token id is its index in that list. A vocabulary may have an "unknown" token:
// U+FFFD (the replacement character, what a decoder writes for a character it cannot show),
// whose token every character outside the list shares: the characters of a large corpus too
// rare to earn a token of their own (train --min-char-count, data/char_counts.h), or those a
// fine-tuned model never saw. A checkpoint keeps it (format/checkpoint.h: vocab_unknown).
#ifndef CHARGPT_VOCAB_H
#define CHARGPT_VOCAB_H

#include <stddef.h>
#include <stdint.h>

#include "../common/errors.h"

#define VOCAB_UNKNOWN_CHAR 0xFFFDu  // U+FFFD REPLACEMENT CHARACTER: the unknown token's character

typedef struct {
    uint32_t *chars;  // (size) code points, strictly increasing
    int size;
    int unknown;      // 1: characters outside chars take the token of VOCAB_UNKNOWN_CHAR, which chars holds
} Vocab;

// 1 when cp can be a character of a vocabulary: a Unicode scalar value (at most U+10FFFF, no
// surrogate) that text can hold: not U+0000, which the corpus reader refuses as the mark of a
// binary file (data/text_reader.h). Other control characters are text (a form feed in source
// code, ESC in a coloured log) and are kept; messages and pages escape them (common/utf8.h).
int vocab_char_allowed(uint32_t cp);
// Collects the distinct code points of text (len > 0, valid Unicode scalar values).
int vocab_build(Vocab *v, const uint32_t *text, size_t len, char err[ERR_LEN]);
// Copies a saved list, which must be non-empty, strictly increasing and hold only characters
// vocab_char_allowed takes.
int vocab_from_chars(Vocab *v, const uint32_t *chars, int n, char err[ERR_LEN]);
// Gives the vocabulary an unknown token: chars must hold VOCAB_UNKNOWN_CHAR. Returns 0, or -1
// with err.
int vocab_set_unknown(Vocab *v, char err[ERR_LEN]);
// Token id of cp, or -1 when it is not in the vocabulary (the unknown token is not used).
int vocab_index(const Vocab *v, uint32_t cp);
// Token id of cp: its own, else the unknown token's when there is one, else -1.
int vocab_token(const Vocab *v, uint32_t cp);
// Maps text to token ids (tokens holds len; it may be text itself, converted in place), a
// character outside the vocabulary to the unknown token when there is one. Returns 0, or -1
// with *bad_pos at the first character that has no token.
int vocab_encode(const Vocab *v, const uint32_t *text, size_t len, int *tokens,
                 size_t *bad_pos);
void vocab_free(Vocab *v);

#endif
