#include "run_text.h"

#include <stdio.h>
#include <string.h>

#include "../data/char_counts.h"
#include "../data/corpus_fingerprint.h"
#include "../data/vocab_coverage.h"
#include "../model/gpt.h"

int data_paths_split(const char *data, DataPaths *p, char err[ERR_LEN]) {
    snprintf(p->text, sizeof(p->text), "%s", data);
    p->n = 0;
    for (char *line = p->text; line; ) {
        char *end = strchr(line, '\n');
        if (end) *end = '\0';
        if (p->n == RUN_TEXT_MAX_PATHS) {
            snprintf(err, ERR_LEN, "--data may be given at most %d times", RUN_TEXT_MAX_PATHS);
            return -1;
        }
        if (line[0]) p->paths[p->n++] = line;
        line = end ? end + 1 : NULL;
    }
    if (p->n == 0) {
        snprintf(err, ERR_LEN, "no --data to read");
        return -1;
    }
    return 0;
}

int data_paths_add(char *data, size_t size, const char *path, char err[ERR_LEN]) {
    size_t used = strlen(data);
    if (!path[0] || strchr(path, '\n')) {
        snprintf(err, ERR_LEN, "--data needs a path%s", path[0] ? " without a newline in it" : "");
        return -1;
    }
    if (used + (used > 0) + strlen(path) >= size) {
        snprintf(err, ERR_LEN, "--data: the paths given take more than %zu bytes in all", size - 1);
        return -1;
    }
    snprintf(data + used, size - used, "%s%s", used > 0 ? "\n" : "", path);
    return 0;
}

void data_paths_name(const char *data, char *name, size_t size) {
    size_t used = 0;
    name[0] = '\0';
    for (const char *line = data; *line && used < size;) {
        size_t n = strcspn(line, "\n");
        int stdin_path = n == 1 && line[0] == '-';
        used += (size_t)snprintf(name + used, size - used, "%s%.*s", used ? ", " : "", stdin_path ? 14 : (int)n,
                                 stdin_path ? TEXT_STDIN_NAME : line);
        line += n + (line[n] == '\n');
    }
}

int run_text_read(const TextSource *source, const TextBudget *budget, Corpus *corpus, CorpusSetReport *report,
                  char err[ERR_LEN]) {
    DataPaths paths;
    uint32_t separator[CORPUS_SEPARATOR_MAX];
    size_t separator_len;
    memset(report, 0, sizeof(*report));
    if (data_paths_split(source->data, &paths, err) != 0 ||
        corpus_separator_parse(source->separator, separator, &separator_len, err) != 0)
        return EXIT_USAGE;
    double limit = budget->limit, held = budget->held;
    CorpusSetSpec spec = {paths.paths, paths.n, separator, separator_len, source->options,
                          limit > 0 ? corpus_max_chars(limit - held) : CORPUS_NO_LIMIT};
    char why[ERR_LEN];
    int loaded = corpus_set_load(&spec, corpus, report, why);
    if (loaded == 0) return 0;
    if (loaded != -2) {
        snprintf(err, ERR_LEN, "%s", why);
        return loaded == -3 ? EXIT_USAGE : EXIT_DATA;
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

// How many characters rarer than this a large alphabet's hint counts.
#define HINT_MIN_COUNT 10
// A vocabulary larger than this gets the hint when most of it is rare.
#define HINT_VOCAB 256

// A new run's vocabulary: the text's characters, those rarer than min_char_count sharing the
// unknown token; note says what became of the rare ones, or how many a large alphabet has.
static int new_vocabulary(const char *data, long min_char_count, const Corpus *corpus, Vocab *vocab,
                          char note[ERR_LEN], char err[ERR_LEN]) {
    CharCounts counts;
    char why[ERR_LEN];
    int status = EXIT_DATA;
    if (char_counts_build(&counts, corpus->text, corpus->len, why) != 0 || char_counts_check_varied(&counts, why) != 0 ||
        char_counts_vocab(&counts, min_char_count > 1 ? (size_t)min_char_count : 1, vocab, why) != 0) {
        snprintf(err, ERR_LEN, "%s: %s", data, why);
        goto done;
    }
    if (vocab->size < 2) {  // every character rarer than min_char_count: the unknown token alone
        size_t most = 0;
        for (int i = 0; i < counts.distinct; i++) most = counts.counts[i] > most ? counts.counts[i] : most;
        snprintf(err, ERR_LEN, "--min-char-count %ld leaves no character a token of its own (the most frequent is seen "
                 "%zu times), so a model would have nothing to learn: give at most %zu", min_char_count, most, most);
        vocab_free(vocab);
        status = EXIT_USAGE;
        goto done;
    }
    int rare;
    size_t occurrences;
    double share = 100.0 / (double)corpus->len;
    if (vocab->unknown) {
        char_counts_rare(&counts, (size_t)min_char_count, &rare, &occurrences);
        snprintf(note, ERR_LEN, "--min-char-count %ld: %d characters seen fewer times (%zu occurrences, %.3g%% of the "
                 "text) share the unknown token U+FFFD: vocabulary %d instead of %d", min_char_count, rare,
                 occurrences, occurrences * share, vocab->size, counts.distinct);
    } else if (counts.distinct > HINT_VOCAB) {
        char_counts_rare(&counts, HINT_MIN_COUNT, &rare, &occurrences);
        if (2 * rare > counts.distinct)
            snprintf(note, ERR_LEN, "vocabulary of %d characters, %d of them seen fewer than %d times (%.3g%% of the "
                     "text): --min-char-count %d would have those share one unknown token (vocabulary %d)",
                     counts.distinct, rare, HINT_MIN_COUNT, occurrences * share, HINT_MIN_COUNT,
                     char_counts_vocab_size(&counts, HINT_MIN_COUNT));
    }
    status = 0;
done:
    char_counts_free(&counts);
    return status;
}

// A fine-tuning text's characters that ck's vocabulary lacks (missing): added with --grow-vocab.
static int grow_vocabulary(const Checkpoint *ck, const char *data, long min_char_count, const MissingChars *missing,
                           Vocab *vocab, char note[ERR_LEN], char err[ERR_LEN]) {
    Vocab grown;
    MissingChars added;
    if (vocab_grow(vocab, missing, min_char_count > 1 ? (size_t)min_char_count : 1, &grown, &added, err) != 0)
        return EXIT_DATA;
    char listed[600];
    vocab_coverage_describe(&added, 12, listed, sizeof(listed));
    size_t rare = missing->total - added.total;
    snprintf(note, ERR_LEN, "%s: --grow-vocab: the vocabulary of %s grows from %d to %d characters, adding %s; the new "
             "characters' embedding rows start as a new model's (drawn from N(0, 0.02) with --seed), the others keep "
             "the checkpoint's%s", data, ck->path, vocab->size, grown.size, listed,
             rare ? "; characters rarer than --min-char-count take the unknown token U+FFFD" : "");
    vocab_coverage_free(&added);
    vocab_free(vocab);
    *vocab = grown;
    return 0;
}

int run_text_vocabulary(const Checkpoint *ck, const char *data, const VocabOptions *options, Corpus *corpus,
                        Vocab *vocab, char note[ERR_LEN], char err[ERR_LEN]) {
    note[0] = '\0';
    if (!ck) return new_vocabulary(data, options->min_char_count, corpus, vocab, note, err);
    if (checkpoint_vocab(ck, vocab, err) != 0) return EXIT_DATA;
    MissingChars missing;
    if (vocab_coverage_find(vocab, corpus->text, corpus->len, &missing, err) != 0) return EXIT_DATA;
    int status = 0;
    if (missing.distinct > 0 && options->grow_vocab) {
        status = grow_vocabulary(ck, data, options->min_char_count, &missing, vocab, note, err);
        vocab_coverage_free(&missing);
        return status;
    }
    char listed[600];
    vocab_coverage_describe(&missing, 12, listed, sizeof(listed));
    size_t total = missing.total;
    int distinct = missing.distinct;
    vocab_coverage_free(&missing);
    if (distinct == 0) return 0;
    const char *s = total == 1 ? "" : "s";
    if (vocab->unknown && options->resuming) return 0;
    if (vocab->unknown) {
        snprintf(note, ERR_LEN, "%s: %zu character%s (%d distinct) not in the vocabulary of %s take its unknown token "
                 "U+FFFD: %s (--grow-vocab adds them)", data, total, s, distinct, ck->path, listed);
        return 0;
    }
    if (!options->skip_unknown) {
        snprintf(err, ERR_LEN, "%s: %zu character%s (%d distinct) not in the vocabulary of %s: %s; give --grow-vocab "
                 "to add them, or --skip-unknown to drop them", data, total, s, distinct, ck->path, listed);
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
