#include "corpus.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/input_file.h"
#include "../common/platform.h"
#include "vocab.h"

// Reads fp (size_hint > 0: its size in bytes) into corpus as one document.
static int read_text(FILE *fp, const char *path, const TextOptions *options, size_t max_chars, size_t size_hint,
                     Corpus *corpus, char err[ERR_LEN]) {
    memset(corpus, 0, sizeof(*corpus));
    TextReader r;
    if (text_reader_init(&r, options, max_chars, NULL, 0, err) != 0) return -1;
    TextStatus status = text_reader_add(&r, fp, path, size_hint, err);
    if (status == TEXT_OK && r.len == 0) {
        snprintf(err, ERR_LEN, "%s: the %s is empty (0 characters%s)", path, options->noun ? options->noun : "corpus",
                 r.cleanup.bom ? " after its byte-order mark" : "");
        status = TEXT_BAD;
    }
    if (status != TEXT_OK) {
        text_reader_free(&r);
        return status == TEXT_TOO_LONG ? -2 : -1;
    }
    corpus->cleanup = r.cleanup;
    text_reader_take(&r, &corpus->text, &corpus->len);
    return 0;
}

int corpus_load_as(const char *path, const TextOptions *options, size_t max_chars, Corpus *corpus, char err[ERR_LEN]) {
    memset(corpus, 0, sizeof(*corpus));
    struct stat st;
    int fd = input_file_open(path, 0, &st);
    if (fd == -1) {
        snprintf(err, ERR_LEN, "cannot open %s %s: %s", options->noun ? options->noun : "corpus", path,
                 strerror(errno));
        return -1;
    }
    if (fd == -2) {
        snprintf(err, ERR_LEN, "%s: not a regular file (the %s must be a file, not a directory, FIFO or device)",
                 path, options->noun ? options->noun : "corpus");
        return -1;
    }
    FILE *fp = fdopen(fd, "rb");
    if (!fp) {
        snprintf(err, ERR_LEN, "cannot open %s %s: %s", options->noun ? options->noun : "corpus", path,
                 strerror(errno));
        close(fd);
        return -1;
    }
    int status = read_text(fp, path, options, max_chars, (size_t)st.st_size, corpus, err);
    fclose(fp);
    return status;
}

int corpus_read_as(FILE *fp, const char *path, const TextOptions *options, size_t max_chars, Corpus *corpus,
                   char err[ERR_LEN]) {
    return read_text(fp, path, options, max_chars, 0, corpus, err);
}

int corpus_load(const char *path, int keep_cr, size_t max_chars, Corpus *corpus, char err[ERR_LEN]) {
    return corpus_load_as(path, &(TextOptions){.keep_cr = keep_cr}, max_chars, corpus, err);
}

int corpus_read(FILE *fp, const char *path, int keep_cr, size_t max_chars, Corpus *corpus, char err[ERR_LEN]) {
    return corpus_read_as(fp, path, &(TextOptions){.keep_cr = keep_cr}, max_chars, corpus, err);
}

size_t corpus_max_chars(double bytes) {
    double chars = (bytes - CORPUS_READ_BUFFERS) / sizeof(uint32_t);
    return chars < 1.0 ? 0 : chars >= (double)(SIZE_MAX / sizeof(uint32_t)) ? CORPUS_NO_LIMIT : (size_t)chars;
}

int corpus_encode(Corpus *corpus, const Vocab *vocab, size_t *bad_pos) {
    return vocab_encode(vocab, corpus->text, corpus->len, corpus->tokens, bad_pos);
}

#define CORPUS_DEFAULT_NAME "tinyshakespeare.txt.gz"  // the corpus shipped with chargpt

// Where chargpt was installed: the programs find the shipped corpus in CHARGPT_PREFIX/share/chargpt/
// when the system does not say where they are (the Makefile passes its PREFIX).
#ifndef CHARGPT_PREFIX
#define CHARGPT_PREFIX "/usr/local"
#endif

// The first of the n places (each a directory and "/") that holds the default corpus, its
// absolute path into out. Returns 0, or -1 when none has it.
static int find_default_corpus(const char *const *places, int n, char *out, size_t size) {
    for (int i = 0; i < n; i++) {
        char path[PATH_MAX + 64], resolved[PATH_MAX];
        snprintf(path, sizeof(path), "%s%s", places[i], CORPUS_DEFAULT_NAME);
        if (access(path, R_OK) == 0 && realpath(path, resolved) && strlen(resolved) < size) {
            strcpy(out, resolved);
            return 0;
        }
    }
    return -1;
}

int corpus_default_path(char *out, size_t size, char err[ERR_LEN]) {
    char dir[PATH_MAX], why[ERR_LEN];
    if (platform_executable_path(dir, sizeof(dir), why) != 0) {
        // the install prefix, then data/ in the current directory (the build tree)
        const char *places[2] = {CHARGPT_PREFIX "/share/chargpt/", "data/"};
        if (find_default_corpus(places, 2, out, size) == 0) return 0;
        snprintf(err, ERR_LEN, "the default corpus %s is neither in %s nor in %s (%s)", CORPUS_DEFAULT_NAME, places[0],
                 places[1], why);
        return -1;
    }
    *strrchr(dir, '/') = '\0';  // an absolute path: keep its directory
    char installed[PATH_MAX + 32], build_tree[PATH_MAX + 32];
    snprintf(installed, sizeof(installed), "%s/../share/chargpt/", dir);
    snprintf(build_tree, sizeof(build_tree), "%s/data/", dir);
    const char *places[2] = {installed, build_tree};
    if (find_default_corpus(places, 2, out, size) == 0) return 0;
    snprintf(err, ERR_LEN, "the default corpus %s is neither in %s nor in %s", CORPUS_DEFAULT_NAME, installed,
             build_tree);
    return -1;
}

void corpus_free(Corpus *corpus) {
    free(corpus->text);
    memset(corpus, 0, sizeof(*corpus));
}
