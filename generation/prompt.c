#include "prompt.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/input_file.h"
#include "../common/platform.h"
#include "../common/utf8.h"
#include "../data/vocab_coverage.h"

void prompt_printable_char(uint32_t cp, char out[5]) {
    memset(out, 0, 5);
    if (cp >= 0x20 && cp != 0x7F) utf8_encode(cp, out);
}

// The error for characters of chars (n) that vocab lacks: every one named, with its count.
static void unknown_characters(const Vocab *vocab, const uint32_t *chars, long n, uint32_t first, long first_at,
                               const char *what, char err[ERR_LEN]) {
    MissingChars missing;
    if (vocab_coverage_find(vocab, chars, (size_t)n, &missing, err) != 0) return;
    char listed[ERR_LEN / 2];
    vocab_coverage_describe(&missing, 24, listed, sizeof(listed));
    char shown[5];
    prompt_printable_char(first, shown);
    snprintf(err, ERR_LEN, "%s has %zu character%s (%d distinct) not in the checkpoint's vocabulary: %s; the first, "
             "'%s' (U+%04" PRIX32 "), at position %ld (use --skip-unknown to drop such characters)", what,
             missing.total, missing.total == 1 ? "" : "s", missing.distinct, listed, shown, first, first_at);
    vocab_coverage_free(&missing);
}

int prompt_from_chars(Prompt *p, const Vocab *vocab, uint32_t *chars, long n, int skip_unknown, const char *what,
                      char err[ERR_LEN]) {
    memset(p, 0, sizeof(*p));
    // the characters' tokens, with the first one the vocabulary lacks found before any is written
    long first_at = -1;
    for (long i = 0; i < n && first_at < 0; i++)
        if (vocab_index(vocab, chars[i]) < 0) first_at = i;
    if (first_at >= 0 && !skip_unknown && !vocab->unknown) {
        unknown_characters(vocab, chars, n, chars[first_at], first_at, what, err);
        free(chars);
        return -1;
    }
    if (first_at >= 0) p->first_dropped = chars[first_at], p->first_dropped_at = first_at;
    // token i is written where character i or a later one was, after that one was read
    // (int and uint32_t may alias each other)
    p->tokens = (int *)chars;
    for (long i = 0; i < n; i++) {
        uint32_t c = chars[i];
        int id = vocab_index(vocab, c);
        if (id < 0 && skip_unknown) {
            p->dropped++;
            continue;
        }
        if (id < 0) {
            id = vocab_token(vocab, c);
            p->unknown++;
        }
        p->tokens[p->len++] = id;
    }
    return 0;
}

int prompt_encode(Prompt *p, const Vocab *vocab, const char *bytes, size_t n, int skip_unknown, const char *what,
                  char err[ERR_LEN]) {
    memset(p, 0, sizeof(*p));
    // a character takes at least one byte
    uint32_t *decoded = malloc((n + 1) * sizeof(uint32_t));
    if (!decoded) {
        snprintf(err, ERR_LEN, "out of memory for %s of %zu bytes", what, n);
        return -2;
    }
    size_t bad_offset;
    long count = utf8_decode((const unsigned char *)bytes, n, decoded, &bad_offset);
    if (count < 0) {
        snprintf(err, ERR_LEN, "%s is not valid UTF-8 (byte offset %zu)", what, bad_offset);
        free(decoded);
        return -2;
    }
    return prompt_from_chars(p, vocab, decoded, count, skip_unknown, what, err);
}

void prompt_free(Prompt *p) {
    free(p->tokens);
    memset(p, 0, sizeof(*p));
}

// Opens the prompt file at path for reading: stdin for "-", else a regular file. Returns the
// stream, or NULL with err.
static FILE *open_prompt_file(const char *path, char err[ERR_LEN]) {
    if (strcmp(path, "-") == 0) return stdin;
    PlatformFileInfo st;
    int fd = input_file_open(path, 0, &st);
    if (fd == -1) {
        snprintf(err, ERR_LEN, "cannot open prompt file %s: %s", path, strerror(errno));
        return NULL;
    }
    if (fd == -2) {
        snprintf(err, ERR_LEN, "prompt file %s is not a regular file (use -f - to read the prompt from stdin)", path);
        return NULL;
    }
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        snprintf(err, ERR_LEN, "cannot open prompt file %s: %s", path, strerror(errno));
        close(fd);
    }
    return f;
}

int prompt_read_file(const char *path, size_t max_bytes, char **bytes, size_t *len, char err[ERR_LEN]) {
    *bytes = NULL;
    *len = 0;
    FILE *f = open_prompt_file(path, err);
    if (!f) return -1;
    char *buf = malloc(max_bytes + 2);
    if (!buf) {
        snprintf(err, ERR_LEN, "out of memory reading %s", path);
        if (f != stdin) fclose(f);
        return -1;
    }
    // one byte more than the limit tells a file at the limit from a longer one
    size_t n = fread(buf, 1, max_bytes + 1, f);
    int read_failed = ferror(f), error = errno;
    if (f != stdin) fclose(f);
    if (read_failed) snprintf(err, ERR_LEN, "cannot read prompt file %s: %s", path, strerror(error));
    else if (n > max_bytes) snprintf(err, ERR_LEN, "prompt file %s is longer than %zu bytes, the limit", path, max_bytes);
    if (read_failed || n > max_bytes) {
        free(buf);
        return -1;
    }
    buf[n] = '\0';
    *bytes = buf;
    *len = n;
    return 0;
}

void prompt_warn_dropped(const Prompt *p, const char *what) {
    if (p->dropped == 0 && p->unknown == 0) return;
    char shown[5];
    prompt_printable_char(p->first_dropped, shown);
    long n = p->dropped ? p->dropped : p->unknown;
    fprintf(stderr, "%s: %s %ld character%s of %s not in the vocabulary%s, the first '%s' (U+%04" PRIX32
            ") at position %ld\n", program_name(), p->dropped ? "warning: dropped" : "note:", n,
            n == 1 ? "" : "s", what, p->dropped ? "" : n == 1 ? " takes its unknown token U+FFFD" :
            " take its unknown token U+FFFD", shown, p->first_dropped, p->first_dropped_at);
}
