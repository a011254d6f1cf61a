#include "reference_text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/platform.h"
#include "../data/batch.h"
#include "../data/corpus.h"
#include "../data/encoding.h"
#include "../data/task.h"

// A task run's validation rows, one after the other.
static int task_text(const Checkpoint *ck, int task, Prompt *out, char *what, size_t what_size, char err[ERR_LEN]) {
    const char *seed_text = checkpoint_meta(ck, "train.seed");
    char *end = NULL;
    unsigned long long seed = seed_text ? strtoull(seed_text, &end, 10) : 0;
    if (!seed_text || end == seed_text || *end)
        return error_status(err, EXIT_DATA, "%s: checkpoint metadata 'train.seed' is missing or not a number", ck->path);
    int *tokens;
    unsigned char *scored;
    int row_len = ck->config.block_size + 1;
    if (task_validation_text((Task)task, seed, REFERENCE_TASK_ROWS, row_len, &tokens, &scored, err) != 0) return EXIT_DATA;
    free(scored);
    *out = (Prompt){.tokens = tokens, .len = (long)REFERENCE_TASK_ROWS * row_len};
    snprintf(what, what_size, "the validation split of the %s task (%d rows)", task_name((Task)task), REFERENCE_TASK_ROWS);
    return 0;
}

// A corpus run's file: its saved path, else the file of that name beside the checkpoint.
static void corpus_path(const Checkpoint *ck, const char *saved, char *path, size_t size) {
    snprintf(path, size, "%s", saved);
    if (access(path, F_OK) == 0 || saved[0] == '/') return;
    const char *slash = platform_path_last_separator(ck->path);
    if (slash) snprintf(path, size, "%.*s/%s", (int)(slash - ck->path), ck->path, saved);
}

// The last val_fraction of a corpus run's one file, as its tokens.
static int corpus_text(const Checkpoint *ck, const Vocab *vocab, const char *saved, size_t max_chars, Prompt *out,
                       char *what, size_t what_size, char err[ERR_LEN]) {
    const char *fraction = checkpoint_meta(ck, "train.val_fraction"), *encoding = checkpoint_meta(ck, "train.encoding");
    const char *keep_cr = checkpoint_meta(ck, "train.keep_cr");
    float val_fraction = fraction ? strtof(fraction, NULL) : 0.0f;
    TextOptions options = {keep_cr && strcmp(keep_cr, "1") == 0, ENCODING_UTF8, NULL, NULL, NULL};
    if (encoding && encoding_parse(encoding, &options.encoding) != 0)
        return error_status(err, EXIT_DATA, "%s: checkpoint metadata 'train.encoding' is '%.40s'", ck->path, encoding);
    if (!(val_fraction > 0.0f && val_fraction < 1.0f))
        return error_status(err, EXIT_USAGE, "%s: its run kept no validation split (val_fraction %s): give "
                            "--mean-over FILE, a text to take the heads' means over", ck->path, fraction ? fraction : "?");
    char path[2048], why[ERR_LEN];
    corpus_path(ck, saved, path, sizeof(path));
    Corpus corpus;
    int rc = corpus_load_as(path, &options, max_chars, &corpus, why);
    if (rc != 0)
        return error_status(err, rc == -2 ? EXIT_USAGE : EXIT_DATA, "the validation split of %s's corpus, for the heads' "
                            "means: %s (--mean-over FILE gives another text)", ck->path, why);
    size_t n = corpus.len;
    if (prompt_from_chars(out, vocab, corpus.text, (long)n, 0, path, why) != 0)  // as ./train encoded it
        return error_status(err, EXIT_DATA, "%s", why);
    Dataset split;
    if (dataset_split(&split, out->tokens, (size_t)out->len, val_fraction, ck->config.block_size, why) != 0) {
        prompt_free(out);
        return error_status(err, EXIT_DATA, "%s: %s", path, why);
    }
    memmove(out->tokens, split.val, split.val_len * sizeof(int));
    out->len = (long)split.val_len;
    snprintf(what, what_size, "the validation split of %s (its last %s, %ld characters)", path, fraction, out->len);
    return 0;
}

int reference_text_load(const Checkpoint *ck, const Vocab *vocab, const char *file, size_t max_chars, Prompt *out,
                        char *what, size_t what_size, char err[ERR_LEN]) {
    memset(out, 0, sizeof(*out));
    if (file) {
        Corpus text;
        TextOptions options = {0, ENCODING_UTF8, "reference text", NULL, NULL};
        int rc = corpus_load_as(file, &options, max_chars, &text, err);
        if (rc != 0) return rc == -2 ? EXIT_USAGE : EXIT_DATA;
        if (prompt_from_chars(out, vocab, text.text, (long)text.len, 1, file, err) != 0) return EXIT_DATA;
        if (out->len < 1) {
            prompt_free(out);
            return error_status(err, EXIT_DATA, "%s: no character of the model's vocabulary, nothing to take the heads' "
                                "means over", file);
        }
        snprintf(what, what_size, "%s", file);
        return 0;
    }
    const char *task = checkpoint_meta(ck, "train.task"), *data = checkpoint_meta(ck, "train.data");
    if (task && task[0] && task_find(task) >= 0) return task_text(ck, task_find(task), out, what, what_size, err);
    if (!data || !data[0] || strchr(data, '\n') || strcmp(data, "-") == 0)
        return error_status(err, EXIT_USAGE, "%s: its run read %s, whose validation split is not made here: give "
                            "--mean-over FILE, a text to take the heads' means over", ck->path,
                            data && data[0] ? "several files or standard input" : "no file it saved");
    return corpus_text(ck, vocab, data, max_chars, out, what, what_size, err);
}
