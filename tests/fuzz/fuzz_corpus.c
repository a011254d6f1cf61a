// Fuzz target: the corpus reader, plain text or gzip (other compressions refused), UTF-8 or an
// 8-bit encoding; then the same bytes as two documents joined by a separator that the input's
// first bytes spell (--separator's parser).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/platform.h"
#include "../../data/batch.h"
#include "../../data/corpus.h"
#include "../../data/corpus_set.h"
#include "../../data/text_reader.h"
#include "../../data/vocab.h"
#include "fuzz.h"

// The input read as two documents, its halves, joined by a separator parsed from its first 16
// bytes: what is accepted fits the limit, and a document refused leaves the text as it was.
static void fuzz_two_documents(const uint8_t *data, size_t size, const TextOptions *options, size_t max_chars) {
    char arg[17];
    size_t n = size < 16 ? size : 16;
    memcpy(arg, data, n);
    arg[n] = '\0';
    uint32_t separator[CORPUS_SEPARATOR_MAX];
    size_t separator_len;
    char err[ERR_LEN];
    if (corpus_separator_parse(arg, separator, &separator_len, err) != 0) {
        if (strncmp(err, "--separator", 11) != 0) abort();
        separator_len = 0;
    } else if (separator_len > CORPUS_SEPARATOR_MAX) {
        abort();
    }
    TextReader r;
    if (text_reader_init(&r, options, max_chars, separator, separator_len, err) != 0) return;
    size_t half = size / 2;
    const uint8_t *parts[2] = {data, data + half};
    size_t lens[2] = {half, size - half};
    for (int i = 0; i < 2; i++) {
        if (lens[i] == 0) continue;
        FILE *fp = platform_memory_stream(parts[i], lens[i]);
        if (!fp) break;
        size_t before = r.len, documents = r.documents;
        TextStatus status = text_reader_add(&r, fp, "part", 0, err);
        fclose(fp);
        if (r.len > r.max_chars) abort();
        if (status != TEXT_OK && (r.len != before || r.documents != documents || strncmp(err, "part: ", 6) != 0)) abort();
        if (status == TEXT_OK && r.len > before && r.documents != documents + 1) abort();
    }
    uint32_t *text;
    size_t len;
    text_reader_take(&r, &text, &len);
    free(text);
}

int fuzz_corpus(const uint8_t *data, size_t size) {
    if (size == 0) return 0;  // fmemopen needs a buffer; the empty corpus has its own test
    FILE *fp = platform_memory_stream(data, size);
    if (!fp) return 0;
    Corpus corpus;
    char err[ERR_LEN];
    // every third input is read with a limit of 100 characters, in one of the encodings
    size_t max_chars = size % 3 == 0 ? 100 : CORPUS_NO_LIMIT;
    TextOptions options = {.keep_cr = (int)(size % 2), .encoding = (TextEncoding)(size / 2 % 3)};
    int rc = corpus_read_as(fp, "fuzz", &options, max_chars, &corpus, err);
    fclose(fp);
    fuzz_two_documents(data, size, &options, max_chars);
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
