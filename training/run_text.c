#include "run_text.h"

#include <stdio.h>
#include <string.h>

#include "../data/corpus_fingerprint.h"
#include "../data/vocab_coverage.h"
#include "../model/gpt.h"

int run_text_read(const char *path, int keep_cr, const TextBudget *budget, Corpus *corpus, char err[ERR_LEN]) {
    double limit = budget->limit, held = budget->held;
    char why[ERR_LEN];
    int loaded = corpus_load(path, keep_cr, limit > 0 ? corpus_max_chars(limit - held) : CORPUS_NO_LIMIT, corpus, why);
    if (loaded == 0) return 0;
    if (loaded != -2) {
        snprintf(err, ERR_LEN, "%s", why);
        return EXIT_DATA;
    }
    char limit_text[32], held_text[64] = "";
    gpt_format_bytes(limit, limit_text, sizeof(limit_text));
    if (held > 0) {
        strcpy(held_text, " beside the checkpoint's ");
        gpt_format_bytes(held, held_text + strlen(held_text), sizeof(held_text) - strlen(held_text));
    }
    snprintf(err, ERR_LEN, "%s: the text, at 4 bytes a character, needs more than the %s %s%s%s", why, limit_text,
             budget->source, held_text, budget->limit_given ? "" : " (or set --max-memory)");
    return EXIT_USAGE;
}

int run_text_recognise(const char *data, const char *fingerprint, const char *resume, const char *saved,
                       int data_given, char err[ERR_LEN]) {
    if (saved[0] && strcmp(fingerprint, saved) != 0) {
        char have[64], want[64];
        corpus_fingerprint_describe(fingerprint, have, sizeof(have));
        corpus_fingerprint_describe(saved, want, sizeof(want));
        snprintf(err, ERR_LEN, "%s is not the text %s was trained on: it has %s, the checkpoint's corpus %s", data,
                 resume, have, want);
        return EXIT_DATA;
    }
    if (!saved[0] && data_given) {
        snprintf(err, ERR_LEN, "%s keeps no corpus fingerprint (an older checkpoint), so --data cannot be checked: "
                 "resume without --data", resume);
        return EXIT_USAGE;
    }
    return 0;
}

int run_text_vocabulary(const Checkpoint *ck, const char *data, int skip_unknown, Corpus *corpus, Vocab *vocab,
                        char note[ERR_LEN], char err[ERR_LEN]) {
    note[0] = '\0';
    char why[ERR_LEN];
    if (!ck) {
        if (vocab_build(vocab, corpus->text, corpus->len, why) == 0) return 0;
        snprintf(err, ERR_LEN, "%s: %s", data, why);
        return EXIT_DATA;
    }
    if (vocab_from_chars(vocab, ck->vocab, ck->config.vocab_size, why) != 0) {
        snprintf(err, ERR_LEN, "%s: %s", ck->path, why);
        return EXIT_DATA;
    }
    MissingChars missing;
    if (vocab_coverage_find(vocab, corpus->text, corpus->len, &missing, err) != 0) return EXIT_DATA;
    char listed[600];
    vocab_coverage_describe(&missing, 12, listed, sizeof(listed));
    size_t total = missing.total;
    int distinct = missing.distinct;
    vocab_coverage_free(&missing);
    if (distinct == 0) return 0;
    const char *s = total == 1 ? "" : "s";
    if (!skip_unknown) {
        snprintf(err, ERR_LEN, "%s: %zu character%s (%d distinct) not in the vocabulary of %s: %s; give --skip-unknown "
                 "to drop them", data, total, s, distinct, ck->path, listed);
        return EXIT_DATA;
    }
    corpus->len = vocab_coverage_drop(vocab, corpus->text, corpus->len);
    snprintf(note, ERR_LEN, "%s: dropped %zu character%s (%d distinct) not in the vocabulary of %s: %s", data, total, s,
             distinct, ck->path, listed);
    return 0;
}

int run_text_same_vocabulary(const Corpus *corpus, const Vocab *vocab, const char *data, const char *resume,
                             char err[ERR_LEN]) {
    Vocab own = {0};
    int same = vocab_build(&own, corpus->text, corpus->len, err) == 0 && own.size == vocab->size &&
               memcmp(own.chars, vocab->chars, vocab->size * sizeof(uint32_t)) == 0;
    vocab_free(&own);
    if (same) return 0;
    snprintf(err, ERR_LEN, "%s: the vocabulary of %s differs from the checkpoint's; resume needs the same corpus",
             resume, data);
    return EXIT_DATA;
}
