#include "corpus.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "../common/platform.h"
#include "utf8.h"
#include "vocab.h"

#define READ_CHUNK (1 << 16)  // bytes read from the file, or inflated, at a time

// A text being read: UTF-8 bytes arrive a chunk at a time (as read or as inflated) and are
// decoded, cleaned (byte-order mark, CR) and appended as code points at once, so the bytes
// are never held whole. A UTF-8 sequence cut by a chunk's end waits in `carry`.
typedef struct {
    const char *path;
    int gzip, keep_cr;
    size_t max_chars;        // more characters than this are refused
    uint32_t *text;          // (cap) the code points so far
    size_t len, cap;
    uint32_t *decoded;       // (READ_CHUNK + 1) one chunk's code points, before they are appended
    unsigned char carry[4];  // the start of a UTF-8 sequence the last chunk cut
    int carried;
    size_t carry_at;         // its offset in the text
    size_t offset;           // bytes of text decoded (or carried) so far
    int started;             // the first character was seen (a leading byte-order mark is dropped)
    int after_cr;            // the last character was a CR turned into LF
    TextCleanup cleanup;
} TextReader;

// Bytes in the UTF-8 sequence a lead byte starts (1 for ASCII), or 0 for a byte that starts
// none (utf8_decode then reports it).
static int sequence_length(unsigned char b) {
    if (b < 0x80) return 1;
    if ((b & 0xE0) == 0xC0) return 2;
    if ((b & 0xF0) == 0xE0) return 3;
    if ((b & 0xF8) == 0xF0) return 4;
    return 0;
}

// How many of the n bytes at s, at their end, start a sequence that runs past them.
static int cut_sequence(const unsigned char *s, size_t n) {
    for (size_t back = 1; back <= 3 && back <= n; back++) {
        unsigned char b = s[n - back];
        if ((b & 0xC0) == 0x80) continue;  // a continuation byte: look further back
        return sequence_length(b) > (int)back ? (int)back : 0;
    }
    return 0;
}

static int invalid_utf8(const TextReader *r, size_t offset, unsigned char byte, char err[ERR_LEN]) {
    snprintf(err, ERR_LEN, "%s: invalid UTF-8 at byte offset %zu%s (byte 0x%02x); the corpus must be UTF-8 text",
             r->path, offset, r->gzip ? " of the decompressed text" : "", byte);
    return -1;
}

static int too_long(const TextReader *r, char err[ERR_LEN]) {
    snprintf(err, ERR_LEN, "%s: more than %zu characters (%s stopped there, after %zu bytes of text)", r->path,
             r->max_chars, r->gzip ? "decompressing" : "reading", r->offset);
    return -2;
}

// Drops a leading byte-order mark and, unless keep_cr, turns CR LF and lone CR into LF, in
// place, over n characters that follow those already read; returns how many are left.
static size_t clean_chars(TextReader *r, uint32_t *chars, size_t n) {
    size_t to = 0;
    for (size_t from = 0; from < n; from++) {
        uint32_t c = chars[from];
        if (!r->started) {
            r->started = 1;
            if (c == 0xFEFF) {
                r->cleanup.bom = 1;
                continue;
            }
        }
        if (!r->keep_cr) {
            if (c == '\n' && r->after_cr) {  // the LF of a CR LF whose CR became an LF
                r->cleanup.lone_cr--;
                r->cleanup.crlf++;
                r->after_cr = 0;
                continue;
            }
            r->after_cr = c == '\r';
            if (c == '\r') {
                r->cleanup.lone_cr++;
                c = '\n';
            }
        }
        chars[to++] = c;
    }
    return to;
}

// Appends n cleaned characters, growing the text up to max_chars.
static int append_chars(TextReader *r, const uint32_t *chars, size_t n, char err[ERR_LEN]) {
    if (n == 0) return 0;  // a chunk that ended inside a character, or held only a byte-order mark
    if (n > r->max_chars - r->len) return too_long(r, err);
    if (r->len + n > r->cap) {
        size_t cap = r->cap ? r->cap : READ_CHUNK;
        while (cap < r->len + n) cap *= 2;  // the text holds len already: this cannot overflow
        if (cap > r->max_chars) cap = r->max_chars;
        uint32_t *text = realloc(r->text, cap * sizeof(uint32_t));
        if (!text) {
            snprintf(err, ERR_LEN, "%s: out of memory after %zu characters", r->path, r->len);
            return -1;
        }
        r->text = text;
        r->cap = cap;
    }
    memcpy(r->text + r->len, chars, n * sizeof(uint32_t));
    r->len += n;
    return 0;
}

// Decodes the n bytes at bytes (n <= READ_CHUNK), which follow those already read.
static int feed_bytes(TextReader *r, const unsigned char *bytes, size_t n, char err[ERR_LEN]) {
    size_t count = 0, used = 0, bad;
    if (r->carried > 0) {
        // complete the sequence the last chunk cut, and decode it alone
        int need = sequence_length(r->carry[0]);
        while (r->carried < need && used < n) r->carry[r->carried++] = bytes[used++];
        if (r->carried < need) {  // still cut: the chunk was shorter than the rest
            r->offset += n;
            return 0;
        }
        if (utf8_decode(r->carry, (size_t)need, r->decoded, &bad) < 0)
            return invalid_utf8(r, r->carry_at + bad, r->carry[bad], err);
        count = 1;
        r->carried = 0;
    }
    int cut = cut_sequence(bytes + used, n - used);
    long m = utf8_decode(bytes + used, n - used - (size_t)cut, r->decoded + count, &bad);
    if (m < 0) return invalid_utf8(r, r->offset + used + bad, bytes[used + bad], err);
    memcpy(r->carry, bytes + n - cut, (size_t)cut);
    r->carried = cut;
    r->carry_at = r->offset + n - (size_t)cut;
    r->offset += n;
    count += (size_t)m;
    return append_chars(r, r->decoded, clean_chars(r, r->decoded, count), err);
}

// Reads up to READ_CHUNK bytes; *got is 0 only at the end of the file.
static int read_chunk(FILE *fp, const char *path, unsigned char *buf, size_t *got, char err[ERR_LEN]) {
    *got = fread(buf, 1, READ_CHUNK, fp);
    if (*got < READ_CHUNK && ferror(fp)) {
        snprintf(err, ERR_LEN, "%s: read error: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

// Decodes the rest of a plain text file; `first` bytes of it are already in chunk.
static int read_plain(FILE *fp, TextReader *r, unsigned char *chunk, size_t first, char err[ERR_LEN]) {
    size_t got = first;
    while (got > 0) {
        int rc = feed_bytes(r, chunk, got, err);
        if (rc != 0) return rc;
        if (read_chunk(fp, r->path, chunk, &got, err)) return -1;
    }
    return 0;
}

// Inflates every gzip member of the file and decodes what comes out; `first` bytes of the
// file are already in chunk; out holds READ_CHUNK bytes. Members follow each other directly
// (concatenated .gz files); after the last one only zero bytes (padding, as some tape and
// block tools add) may follow. Text that is not UTF-8 is reported once its member ends intact:
// a damaged stream inflates to garbage before zlib finds the damage, which is the message.
static int read_gzip(FILE *fp, TextReader *r, unsigned char *chunk, size_t first, unsigned char *out,
                     char err[ERR_LEN]) {
    const char *path = r->path;
    z_stream zs;
    memset(&zs, 0, sizeof(zs));
    // 16 + MAX_WBITS: expect a gzip header and trailer around the deflate data
    if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) {
        snprintf(err, ERR_LEN, "%s: cannot initialise zlib", path);
        return -1;
    }
    int status = -1;
    size_t file_bytes = first;  // bytes read from the file so far
    int member = 1;             // 1-based number of the member being inflated
    int in_member = 1;          // inside a member whose trailer has not been read yet
    int padding = 0;            // past the last member, in the zero padding
    int bad_text = 0;           // the text was found not to be UTF-8 (err says where)
    zs.next_in = chunk;
    zs.avail_in = (uInt)first;
    for (;;) {
        if (zs.avail_in == 0) {
            size_t got;
            if (read_chunk(fp, path, chunk, &got, err)) goto done;
            if (got == 0) break;  // end of file
            file_bytes += got;
            zs.next_in = chunk;
            zs.avail_in = (uInt)got;
        }
        if (!in_member) {
            // between members: a zero byte cannot start a gzip header, so it begins padding
            if (padding || zs.next_in[0] == 0) {
                padding = 1;
                for (uInt i = 0; i < zs.avail_in; i++) {
                    if (zs.next_in[i] != 0) {
                        snprintf(err, ERR_LEN,
                                 "%s: corrupt gzip stream: non-zero byte at offset %zu of the "
                                 "file after the zero padding that follows the last member",
                                 path, file_bytes - zs.avail_in + i);
                        goto done;
                    }
                }
                zs.avail_in = 0;
                continue;
            }
            // more input after a member's trailer: the next member (inflateReset was done)
            in_member = 1;
            member++;
        }
        zs.next_out = out;
        zs.avail_out = READ_CHUNK;
        int ret = inflate(&zs, Z_NO_FLUSH);
        if (zs.avail_out < READ_CHUNK && !bad_text) {
            int fed = feed_bytes(r, out, READ_CHUNK - zs.avail_out, err);
            if (fed == -2) {  // too long: stop at once
                status = -2;
                goto done;
            }
            bad_text = fed != 0;
        }
        if (ret == Z_STREAM_END) {
            if (bad_text) goto done;
            in_member = 0;
            inflateReset(&zs);
        } else if (ret != Z_OK && ret != Z_BUF_ERROR) {
            // Z_BUF_ERROR only means inflate wants more input: the loop reads it
            const char *why = zs.msg ? zs.msg
                              : ret == Z_MEM_ERROR ? "out of memory"
                              : ret == Z_NEED_DICT ? "needs a preset dictionary"
                                                   : "inflate failed";
            snprintf(err, ERR_LEN, "%s: corrupt gzip stream: %s (member %d, near byte %zu of "
                     "the file)", path, why, member, file_bytes - zs.avail_in);
            goto done;
        }
    }
    if (in_member) {
        snprintf(err, ERR_LEN, "%s: truncated gzip stream: the file ended after %zu bytes, "
                 "inside gzip member %d (%zu bytes decompressed so far)",
                 path, file_bytes, member, r->offset);
        goto done;
    }
    status = 0;
done:
    inflateEnd(&zs);
    return status;
}

void text_cleanup_describe(const TextCleanup *cleanup, char *buf, size_t size) {
    int n = snprintf(buf, size, "%s", cleanup->bom ? "dropped a leading byte-order mark" : "");
    if ((cleanup->crlf || cleanup->lone_cr) && (size_t)n < size)
        snprintf(buf + n, size - (size_t)n, "%sturned %zu CR LF and %zu lone CR line endings into LF",
                 cleanup->bom ? "; " : "", cleanup->crlf, cleanup->lone_cr);
}

// Reads fp to its end into corpus (see corpus_read); size_hint > 0 is the file's size.
static int read_text(FILE *fp, const char *path, int keep_cr, size_t max_chars, size_t size_hint, Corpus *corpus,
                     char err[ERR_LEN]) {
    memset(corpus, 0, sizeof(*corpus));
    TextReader r = {.path = path, .keep_cr = keep_cr, .max_chars = max_chars};
    unsigned char *chunk = malloc(READ_CHUNK), *out = malloc(READ_CHUNK);
    r.decoded = malloc((READ_CHUNK + 1) * sizeof(uint32_t));
    int status = -1;
    size_t first;
    if (!chunk || !out || !r.decoded) {
        snprintf(err, ERR_LEN, "%s: out of memory", path);
    } else if (read_chunk(fp, path, chunk, &first, err) == 0) {
        r.gzip = first >= 2 && chunk[0] == 0x1f && chunk[1] == 0x8b;
        if (!r.gzip && size_hint / 4 > max_chars) {
            // a UTF-8 character takes at most 4 bytes
            snprintf(err, ERR_LEN, "%s: %zu bytes, more than %zu characters", path, size_hint, max_chars);
            status = -2;
        } else {
            // a plain file's characters, a byte each at least, fit in its size: no growing
            r.cap = r.gzip ? 0 : size_hint < max_chars ? size_hint : max_chars;
            if (r.cap > 0 && !(r.text = malloc(r.cap * sizeof(uint32_t)))) r.cap = 0;
            status = r.gzip ? read_gzip(fp, &r, chunk, first, out, err) : read_plain(fp, &r, chunk, first, err);
        }
    }
    if (status == 0 && r.carried > 0) {
        size_t bad;
        utf8_decode(r.carry, (size_t)r.carried, r.decoded, &bad);  // a sequence the end cut
        status = invalid_utf8(&r, r.carry_at + bad, r.carry[bad], err);
    }
    if (status == 0 && r.len == 0) {
        snprintf(err, ERR_LEN, "%s: the corpus is empty (0 characters%s)", path,
                 r.cleanup.bom ? " after its byte-order mark" : "");
        status = -1;
    }
    if (status == 0) {
        uint32_t *shrunk = r.len < r.cap ? realloc(r.text, r.len * sizeof(uint32_t)) : NULL;
        corpus->text = shrunk ? shrunk : r.text;
        corpus->len = r.len;
        corpus->cleanup = r.cleanup;
    } else {
        free(r.text);
    }
    free(r.decoded);
    free(out);
    free(chunk);
    return status;
}

int corpus_load(const char *path, int keep_cr, size_t max_chars, Corpus *corpus, char err[ERR_LEN]) {
    memset(corpus, 0, sizeof(*corpus));
    // O_NONBLOCK: opening a FIFO must not wait for a writer before it is refused
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        snprintf(err, ERR_LEN, "cannot open corpus %s: %s", path, strerror(errno));
        if (fd >= 0) close(fd);
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, ERR_LEN, "%s: not a regular file (the corpus must be a file, not a directory, FIFO or device)",
                 path);
        close(fd);
        return -1;
    }
    FILE *fp = fdopen(fd, "rb");
    if (!fp) {
        snprintf(err, ERR_LEN, "cannot open corpus %s: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    int status = read_text(fp, path, keep_cr, max_chars, (size_t)st.st_size, corpus, err);
    fclose(fp);
    return status;
}

int corpus_read(FILE *fp, const char *path, int keep_cr, size_t max_chars, Corpus *corpus, char err[ERR_LEN]) {
    return read_text(fp, path, keep_cr, max_chars, 0, corpus, err);
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
