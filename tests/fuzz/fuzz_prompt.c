// Fuzz target: prompt decoding, UTF-8 to tokens, with or without an unknown token.
#include <stdlib.h>
#include <string.h>

#include "../../common/utf8.h"
#include "../../generation/prompt.h"
#include "fuzz.h"

// A vocabulary of newline, printable ASCII, é, —, ☃ and 🙂; with_unknown: U+FFFD too, which
// stands for every other character.
static const Vocab *fuzz_vocab(int with_unknown) {
    static Vocab vocabs[2];
    Vocab *v = &vocabs[with_unknown];
    if (!v->chars) {
        uint32_t chars[101];  // newline, 95 printable, 3 more, U+FFFD and 🙂
        int n = 0;
        chars[n++] = '\n';
        for (uint32_t c = ' '; c < 0x7F; c++) chars[n++] = c;
        chars[n++] = 0xE9, chars[n++] = 0x2014, chars[n++] = 0x2603;
        if (with_unknown) chars[n++] = VOCAB_UNKNOWN_CHAR;
        chars[n++] = 0x1F642;
        char err[ERR_LEN];
        if (vocab_from_chars(v, chars, n, err) != 0 || (with_unknown && vocab_set_unknown(v, err) != 0)) abort();
    }
    return v;
}

int fuzz_prompt(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    int skip_unknown = data[0] & 1, with_unknown = (data[0] >> 1) & 1;
    const Vocab *vocab = fuzz_vocab(with_unknown);
    Prompt p;
    char err[ERR_LEN];
    if (prompt_encode(&p, vocab, (const char *)data + 1, size - 1, skip_unknown, "the prompt", err) != 0) {
        if (!err[0] || p.tokens || p.len || (with_unknown && strstr(err, "vocabulary"))) abort();
        return 0;
    }
    // the tokens are the characters the vocabulary has, in order, and the others dropped or
    // given the unknown token
    uint32_t *chars = malloc(size * sizeof(uint32_t));
    size_t bad;
    long n = utf8_decode(data + 1, size - 1, chars, &bad), kept = 0, missing = 0;
    if (n < 0) abort();
    int unknown_token = vocab_index(vocab, VOCAB_UNKNOWN_CHAR);
    for (long i = 0; i < n; i++) {
        int known = vocab_index(vocab, chars[i]) >= 0;
        missing += !known;
        if (!known && skip_unknown) continue;
        int want = known ? vocab_index(vocab, chars[i]) : unknown_token;
        if (kept >= p.len || p.tokens[kept++] != want) abort();
    }
    if (kept != p.len || p.dropped + p.unknown != missing) abort();
    if (skip_unknown ? p.unknown != 0 : p.dropped != 0) abort();
    if (!skip_unknown && !with_unknown && missing) abort();
    free(chars);
    prompt_free(&p);
    return 0;
}
