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

#include "utf8.h"

#define READ_CHUNK (1 << 16)  // bytes read from the file per fread

// A growing byte buffer for the raw (decompressed) text.
typedef struct {
    unsigned char *data;
    size_t len;
    size_t cap;
} ByteBuf;

// Makes room for at least `extra` more bytes, doubling the capacity.
static int bytebuf_reserve(ByteBuf *b, size_t extra) {
    if (b->cap - b->len >= extra) return 0;
    size_t cap = b->cap ? b->cap : READ_CHUNK;
    while (cap - b->len < extra) {
        if (cap > SIZE_MAX / 2) return -1;
        cap *= 2;
    }
    unsigned char *p = realloc(b->data, cap);
    if (!p) return -1;
    b->data = p;
    b->cap = cap;
    return 0;
}

// Reads up to READ_CHUNK bytes; *got is 0 only at the end of the file.
static int read_chunk(FILE *fp, const char *path, unsigned char *buf, size_t *got,
                      char err[ERR_LEN]) {
    *got = fread(buf, 1, READ_CHUNK, fp);
    if (*got < READ_CHUNK && ferror(fp)) {
        snprintf(err, ERR_LEN, "%s: read error: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

// Copies the rest of a plain text file into out; `first` holds the bytes already read.
static int read_plain(FILE *fp, const char *path, unsigned char *chunk, size_t first,
                      ByteBuf *out, char err[ERR_LEN]) {
    size_t got = first;
    while (got > 0) {
        if (bytebuf_reserve(out, got)) {
            snprintf(err, ERR_LEN, "%s: out of memory after reading %zu bytes", path, out->len);
            return -1;
        }
        memcpy(out->data + out->len, chunk, got);
        out->len += got;
        if (read_chunk(fp, path, chunk, &got, err)) return -1;
    }
    return 0;
}

// Inflates every gzip member of the file into out; `first` bytes of it are already in
// chunk. Members follow each other directly (concatenated .gz files); after the last one
// only zero bytes (padding, as some tape and block tools add) may follow.
static int read_gzip(FILE *fp, const char *path, unsigned char *chunk, size_t first,
                     ByteBuf *out, char err[ERR_LEN]) {
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
        if (bytebuf_reserve(out, READ_CHUNK)) {
            snprintf(err, ERR_LEN, "%s: out of memory after decompressing %zu bytes", path,
                     out->len);
            goto done;
        }
        size_t room = out->cap - out->len;
        if (room > (1u << 30)) room = 1u << 30;  // avail_out is a uInt
        zs.next_out = out->data + out->len;
        zs.avail_out = (uInt)room;
        int ret = inflate(&zs, Z_NO_FLUSH);
        out->len += room - zs.avail_out;
        if (ret == Z_STREAM_END) {
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
                 path, file_bytes, member, out->len);
        goto done;
    }
    status = 0;
done:
    inflateEnd(&zs);
    return status;
}

// Drops a leading byte-order mark and, unless keep_cr, turns CR LF and lone CR into LF, in
// place; returns the new length.
static size_t clean_text(uint32_t *text, size_t len, int keep_cr, TextCleanup *cleanup) {
    size_t from = 0, to = 0;
    if (len > 0 && text[0] == 0xFEFF) {
        cleanup->bom = 1;
        from = 1;
    }
    for (; from < len; from++) {
        uint32_t c = text[from];
        if (c == '\r' && !keep_cr) {
            c = '\n';
            if (from + 1 < len && text[from + 1] == '\n') {
                cleanup->crlf++;
                from++;
            } else {
                cleanup->lone_cr++;
            }
        }
        text[to++] = c;
    }
    return to;
}

void text_cleanup_describe(const TextCleanup *cleanup, char *buf, size_t size) {
    int n = snprintf(buf, size, "%s", cleanup->bom ? "dropped a leading byte-order mark" : "");
    if ((cleanup->crlf || cleanup->lone_cr) && (size_t)n < size)
        snprintf(buf + n, size - (size_t)n, "%sturned %zu CR LF and %zu lone CR line endings into LF",
                 cleanup->bom ? "; " : "", cleanup->crlf, cleanup->lone_cr);
}

int corpus_load(const char *path, int keep_cr, Corpus *corpus, char err[ERR_LEN]) {
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
    int status = corpus_read(fp, path, keep_cr, corpus, err);
    fclose(fp);
    return status;
}

int corpus_read(FILE *fp, const char *path, int keep_cr, Corpus *corpus, char err[ERR_LEN]) {
    memset(corpus, 0, sizeof(*corpus));
    int status = -1;
    ByteBuf raw = {0};
    uint32_t *text = NULL;
    unsigned char *chunk = malloc(READ_CHUNK);
    if (!chunk) {
        snprintf(err, ERR_LEN, "%s: out of memory", path);
        goto done;
    }
    size_t first;
    if (read_chunk(fp, path, chunk, &first, err)) goto done;
    int gzip = first >= 2 && chunk[0] == 0x1f && chunk[1] == 0x8b;
    if (gzip ? read_gzip(fp, path, chunk, first, &raw, err)
             : read_plain(fp, path, chunk, first, &raw, err))
        goto done;
    if (raw.len == 0) {
        snprintf(err, ERR_LEN, "%s: the corpus is empty (0 characters)", path);
        goto done;
    }
    // a code point takes at least one byte, so raw.len entries always suffice
    if (raw.len > SIZE_MAX / sizeof(uint32_t) ||
        !(text = malloc(raw.len * sizeof(uint32_t)))) {
        snprintf(err, ERR_LEN, "%s: out of memory decoding %zu bytes of text", path, raw.len);
        goto done;
    }
    size_t bad;
    long n = utf8_decode(raw.data, raw.len, text, &bad);
    if (n < 0) {
        snprintf(err, ERR_LEN, "%s: invalid UTF-8 at byte offset %zu%s (byte 0x%02x); the "
                 "corpus must be UTF-8 text", path, bad,
                 gzip ? " of the decompressed text" : "", raw.data[bad]);
        goto done;
    }
    TextCleanup cleanup = {0};
    size_t len = clean_text(text, (size_t)n, keep_cr, &cleanup);
    if (len == 0) {
        snprintf(err, ERR_LEN, "%s: the corpus is empty (0 characters after its byte-order mark)",
                 path);
        goto done;
    }
    uint32_t *shrunk = realloc(text, len * sizeof(uint32_t));
    if (shrunk) text = shrunk;
    corpus->text = text;
    corpus->len = len;
    corpus->cleanup = cleanup;
    text = NULL;
    status = 0;
done:
    free(text);
    free(raw.data);
    free(chunk);
    return status;
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
