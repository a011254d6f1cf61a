#include "corpus.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
    // O_NONBLOCK: opening a FIFO must not wait for a writer before it is refused
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        snprintf(err, ERR_LEN, "cannot open %s %s: %s", options->noun ? options->noun : "corpus", path,
                 strerror(errno));
        if (fd >= 0) close(fd);
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, ERR_LEN, "%s: not a regular file (the %s must be a file, not a directory, FIFO or device)",
                 path, options->noun ? options->noun : "corpus");
        close(fd);
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

int corpus_default_path(char *out, size_t size, char err[ERR_LEN]) {
    static const char *name = "tinyshakespeare.txt.gz";
    static const char *places[2] = {"/../share/chargpt/", "/data/"};  // installed, build tree
    char dir[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", dir, sizeof(dir) - 1);
    if (n <= 0) {
        snprintf(err, ERR_LEN, "cannot find the default corpus %s: /proc/self/exe: %s", name,
                 n < 0 ? strerror(errno) : "empty");
        return -1;
    }
    dir[n] = '\0';
    *strrchr(dir, '/') = '\0';  // the link is an absolute path: keep its directory
    for (int i = 0; i < 2; i++) {
        char path[PATH_MAX + 64], resolved[PATH_MAX];
        snprintf(path, sizeof(path), "%s%s%s", dir, places[i], name);
        if (access(path, R_OK) == 0 && realpath(path, resolved) && strlen(resolved) < size) {
            strcpy(out, resolved);
            return 0;
        }
    }
    snprintf(err, ERR_LEN, "the default corpus %s is neither in %s%s nor in %s%s", name, dir, places[0], dir,
             places[1]);
    return -1;
}

void corpus_free(Corpus *corpus) {
    free(corpus->text);
    memset(corpus, 0, sizeof(*corpus));
}
