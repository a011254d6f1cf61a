// Fuzz target: the corpus reader, plain text or gzip (other compressions refused), UTF-8 or an
// 8-bit encoding.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../data/batch.h"
#include "../../data/corpus.h"
#include "../../data/vocab.h"
#include "fuzz.h"

int fuzz_corpus(const uint8_t *data, size_t size) {
    if (size == 0) return 0;  // fmemopen needs a buffer; the empty corpus has its own test
    FILE *fp = fmemopen((void *)data, size, "rb");
    if (!fp) return 0;
    Corpus corpus;
    char err[ERR_LEN];
    // every third input is read with a limit of 100 characters, in one of the encodings
    size_t max_chars = size % 3 == 0 ? 100 : CORPUS_NO_LIMIT;
    TextOptions options = {.keep_cr = (int)(size % 2), .encoding = (TextEncoding)(size / 2 % 3)};
    int rc = corpus_read_as(fp, "fuzz", &options, max_chars, &corpus, err);
    fclose(fp);
    if (rc != 0) {
        if (strncmp(err, "fuzz: ", 6) != 0 || corpus.text || corpus.len) abort();
        if (rc == -2 && (max_chars != 100 || !strstr(err, "more than 100 characters"))) abort();
        return 0;
    }
    if (corpus.len > max_chars) abort();
    // every character of an accepted corpus has a token in its vocabulary, and none is NUL
    Vocab vocab;
    if (vocab_build(&vocab, corpus.text, corpus.len, err) != 0) abort();
    if (vocab.chars[0] == 0) abort();
    size_t bad;
    if (corpus_encode(&corpus, &vocab, &bad) != 0) abort();
    for (size_t i = 0; i < corpus.len; i++)
        if (corpus.tokens[i] < 0 || corpus.tokens[i] >= vocab.size) abort();
    Dataset ds;
    if (dataset_split(&ds, corpus.tokens, corpus.len, 0.1f, 4, err) == 0 && ds.train_len != 0) {
        Rng rng;
        int inputs[2 * 4], targets[2 * 4];
        rng_seed(&rng, size);
        dataset_train_batch(&ds, &rng, 2, 4, inputs, targets);
    }
    vocab_free(&vocab);
    corpus_free(&corpus);
    return 0;
}
