#include "run_text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/platform.h"
#include "../common/utf8.h"
#include "../data/char_counts.h"
#include "../data/corpus_fingerprint.h"
#include "../data/vocab_coverage.h"
#include "../model/gpt.h"
#include "run.h"
#include "stop_signals.h"

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
    format_bytes(limit, limit_text, sizeof(limit_text));
    if (held > 0) {
        strcpy(held_text, " beside the checkpoint's ");
        format_bytes(held, held_text + strlen(held_text), sizeof(held_text) - strlen(held_text));
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

// ----------------------------------------------------------------------------
// a task's text

double run_task_memory(long rows, int row_len) {
    // the tokens and scored flags, and the characters while the fingerprint is taken
    return (double)rows * row_len * (2 * sizeof(int) + 1);
}

// The fingerprint of the split's text, as a corpus's is taken (its code points).
static int fingerprint_of(const RunTask *t, char fingerprint[CORPUS_FINGERPRINT_LEN], char err[ERR_LEN]) {
    const char *alphabet = task_alphabet(t->task);
    uint32_t *chars = malloc(t->len * sizeof(uint32_t));
    if (!chars) {
        snprintf(err, ERR_LEN, "out of memory for the %s task's fingerprint", task_name(t->task));
        return -1;
    }
    for (size_t i = 0; i < t->len; i++) chars[i] = (unsigned char)alphabet[t->tokens[i]];
    corpus_fingerprint(chars, t->len, fingerprint);
    free(chars);
    return 0;
}

// The vocabulary of the task's characters; a resumed run's checkpoint must have the same.
static int task_vocabulary(Task task, const Checkpoint *ck, Vocab *vocab, char err[ERR_LEN]) {
    const char *alphabet = task_alphabet(task);
    uint32_t chars[128];
    int n = (int)strlen(alphabet);
    for (int i = 0; i < n; i++) chars[i] = (unsigned char)alphabet[i];
    if (vocab_from_chars(vocab, chars, n, err) != 0) return EXIT_USAGE;
    if (ck && (ck->config.vocab_size != n || ck->vocab_unknown ||
               memcmp(ck->vocab, chars, (size_t)n * sizeof(uint32_t)) != 0)) {
        snprintf(err, ERR_LEN, "%s: its vocabulary is not the %s task's %d characters (a checkpoint of another "
                 "version of chargpt?)", ck->path, task_name(task), n);
        return EXIT_DATA;
    }
    return 0;
}

int run_task_make(RunTask *t, Task task, uint64_t seed, long rows, int row_len, const Checkpoint *ck,
                  const char *saved, Vocab *vocab, char fingerprint[CORPUS_FINGERPRINT_LEN], Dataset *ds,
                  char err[ERR_LEN]) {
    memset(t, 0, sizeof(*t));
    t->task = task;
    int status = task_vocabulary(task, ck, vocab, err);
    if (status != 0) return status;
    if (task_validation_text(task, seed, rows, row_len, &t->tokens, &t->scored, err) != 0) return EXIT_USAGE;
    t->len = (size_t)rows * (size_t)row_len;
    if (fingerprint_of(t, fingerprint, err) != 0) return EXIT_USAGE;
    if (ck && strcmp(saved, fingerprint) != 0) {
        char want[80], got[80];
        corpus_fingerprint_describe(saved, want, sizeof(want));
        corpus_fingerprint_describe(fingerprint, got, sizeof(got));
        snprintf(err, ERR_LEN, "%s: the %s task's validation split here (%s) is not the one it was trained with "
                 "(%s): this chargpt makes the task's text differently, so the run's stream cannot be continued",
                 ck->path, task_name(task), got, want);
        return EXIT_DATA;
    }
    *ds = (Dataset){NULL, 0, t->tokens, t->len, t->scored};
    return 0;
}

void run_task_free(RunTask *t) {
    free(t->tokens);
    free(t->scored);
    memset(t, 0, sizeof(*t));
}

// A task's text: its vocabulary and validation split, within the memory limit.
static int set_up_task(Run *r, char err[ERR_LEN]) {
    TrainOptions *o = &r->o;
    snprintf(r->data_name, sizeof(r->data_name), "the %s task", o->task);
    long rows = o->eval_batches * o->batch_size;
    const char *source;
    double limit = r->memory_limit(o, &source), need = run_task_memory(rows, o->block_size + 1);
    if (limit > 0 && need > limit)
        return error_status(err, EXIT_USAGE, "the %s task's validation split (--eval-batches x --batch-size rows of "
                            "--block-size + 1 characters) needs %.0f MiB, more than the %.0f MiB %s", o->task,
                            need / (1024.0 * 1024.0), limit / (1024.0 * 1024.0), source);
    int status = run_task_make(&r->task, (Task)task_find(o->task), o->seed, rows, o->block_size + 1,
                               r->resuming ? &r->ck : NULL, o->corpus_fingerprint, &r->vocab, r->fingerprint, &r->ds,
                               err);
    if (status != 0) return status;
    strcpy(o->corpus_fingerprint, r->fingerprint);
    r->text_bytes = need;
    return 0;
}

// ----------------------------------------------------------------------------
// the run's text

// Reads --data within the memory limit less the checkpoint being read, and says what the set
// held and skipped and what reading changed; a stop signal ends the reading at once. Returns
// 0, or the exit status with err.
static int read_data(Run *r, char err[ERR_LEN]) {
    TrainOptions *o = &r->o;
    char why[ERR_LEN], note[ERR_LEN], pipe_into[1100];
    if (!o->data[0] && corpus_default_path(o->data, sizeof(o->data), why) != 0)
        return error_status(err, EXIT_DATA, "%s; give --data FILE", why);
    if (run_meta_check_paths(o, err) != 0) return EXIT_USAGE;
    char name[sizeof(r->data_name)];
    data_paths_name(o->data, name, sizeof(name));
    utf8_shown(name, r->data_name, sizeof(r->data_name));  // for messages, the loss plot and the page
    DataPaths paths;
    if (data_paths_split(o->data, &paths, err) != 0) return EXIT_USAGE;
    for (int i = 0; i < paths.n && dist_size() > 1; i++)
        if (strcmp(paths.paths[i], CORPUS_STDIN) == 0)
            return error_status(err, EXIT_USAGE, "--data - reads standard input, which mpirun gives to rank 0 alone: "
                                "every process reads the corpus itself, so give it a file");
    snprintf(pipe_into, sizeof(pipe_into), "%s --data -", program_invocation());
    TextSource source = {o->data, o->separator, {o->keep_cr, o->encoding, NULL, pipe_into, stop_signals_received}};
    TextBudget budget = {.limit_given = o->max_memory > 0, .held = (double)r->ck.file.file_len};
    budget.limit = r->memory_limit(o, &budget.source);
    CorpusSetReport report;
    int status = run_text_read(&source, &budget, &r->corpus, &report, why);
    if (status != 0 && stop_signals_received()) return stop_before_the_run(stop_signals_received(), err);
    if (status != 0)
        return error_status(err, status, "%s%s", why, status == EXIT_DATA && r->resuming && !r->given.given[OPT_DATA]
                                                          ? " (give --data if the corpus moved)" : "");
    if (report.directories || report.files > 1 || report.empty) {
        corpus_set_describe(&report, note, sizeof(note));
        printf("%s: %s\n", r->data_name, note);
    }
    r->text_bytes = (double)r->corpus.len * sizeof(uint32_t);
    text_cleanup_describe(&r->corpus.cleanup, note, sizeof(note));
    if (note[0])
        printf("%s: %s%s\n", r->data_name, note,
               r->corpus.cleanup.crlf || r->corpus.cleanup.lone_cr ? " (--keep-cr keeps them)" : "");
    return 0;
}

int set_up_text(Run *r, char err[ERR_LEN]) {
    TrainOptions *o = &r->o;
    const int *given = r->given.given;
    char why[ERR_LEN], note[ERR_LEN];
    if (o->task[0]) return set_up_task(r, err);
    int status = read_data(r, err);
    if (status != 0) return status;
    corpus_fingerprint(r->corpus.text, r->corpus.len, r->fingerprint);
    int saved_fingerprint = o->corpus_fingerprint[0] != '\0';
    if (r->resuming && (status = run_text_recognise(r->data_name, r->fingerprint, o->resume, o->corpus_fingerprint,
                                                    given[OPT_DATA], err)))
        return status;
    strcpy(o->corpus_fingerprint, r->fingerprint);
    const Checkpoint *ck = r->resuming || r->initializing ? &r->ck : NULL;
    VocabOptions vocab = {o->min_char_count, o->skip_unknown, o->grow_vocab, r->resuming};
    if ((status = run_text_vocabulary(ck, r->data_name, &vocab, &r->corpus, &r->vocab, note, err)) != 0) return status;
    if (note[0]) printf("%s\n", note);
    if (r->resuming && !saved_fingerprint &&
        (status = run_text_same_vocabulary(&r->corpus, &r->vocab, r->data_name, o->resume, err)) != 0)
        return status;
    size_t bad_pos;
    corpus_encode(&r->corpus, &r->vocab, &bad_pos);  // every character has a token by now
    if (dataset_split(&r->ds, r->corpus.tokens, r->corpus.len, o->val_fraction, o->block_size, why) != 0)
        return error_status(err, given[OPT_BLOCK_SIZE] || given[OPT_VAL_FRACTION] ? EXIT_USAGE : EXIT_DATA, "%s: %s",
                            r->data_name, why);
    return 0;
}
