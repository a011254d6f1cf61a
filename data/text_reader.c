#include "text_reader.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "../common/platform.h"
#include "../common/utf8.h"

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

static const char *noun(const TextReader *r) { return r->options.noun ? r->options.noun : "corpus"; }

// " of the decompressed text" for a gzip document's offsets, which are in its inflated bytes.
static const char *where(const TextReader *r) { return r->gzip ? " of the decompressed text" : ""; }

// What converts the document to UTF-8 from iconv's encoding `from`: a plain file's command,
// else the iconv stage to put in its pipe.
static void iconv_advice(const TextReader *r, const char *from, char *buf, size_t size) {
    if (r->gzip)
        snprintf(buf, size, "gzip -dc %s | iconv -f %s -t UTF-8 > %s.txt", r->path, from, r->path);
    else if (strcmp(r->path, TEXT_STDIN_NAME) == 0)
        snprintf(buf, size, "... | iconv -f %s -t UTF-8%s%s", from, r->options.pipe_into ? " | " : "",
                 r->options.pipe_into ? r->options.pipe_into : "");
    else
        snprintf(buf, size, "iconv -f %s -t UTF-8 %s > %s.utf8.txt", from, r->path, r->path);
}

// The bytes at `bytes` (n of them, the chunk where the problem is) are not UTF-8 text: what
// they most likely are, and how to read or convert them.
static void encoding_advice(TextReader *r, const unsigned char *bytes, size_t n, char *buf, size_t size) {
    EncodingGuess guess = encoding_guess(bytes, n, r->offset == 0);
    const char *from = encoding_guess_iconv(guess), *option = encoding_guess_option(guess);
    if (!from) snprintf(r->not_text, sizeof(r->not_text), "binary data");
    else if (option)
        snprintf(r->not_text, sizeof(r->not_text), "%s, not UTF-8 (--encoding %s reads it)", encoding_guess_name(guess),
                 option);
    else snprintf(r->not_text, sizeof(r->not_text), "%s, not UTF-8", encoding_guess_name(guess));
    if (!from) {
        snprintf(buf, size, "it looks like binary data, not text");
        return;
    }
    char command[ERR_LEN];
    iconv_advice(r, from, command, sizeof(command));
    if (option)
        snprintf(buf, size, "it looks like %s: give --encoding %s to read it so, or convert it to UTF-8 (%s)",
                 encoding_guess_name(guess), option, command);
    else
        snprintf(buf, size, "it looks like %s: convert it to UTF-8 (%s)", encoding_guess_name(guess), command);
}

static TextStatus invalid_utf8(TextReader *r, size_t offset, unsigned char byte, const unsigned char *chunk,
                               size_t n, char err[ERR_LEN]) {
    char advice[ERR_LEN];
    encoding_advice(r, chunk, n, advice, sizeof(advice));
    snprintf(err, ERR_LEN, "%s: invalid UTF-8 at byte offset %zu%s (byte 0x%02x); the %s must be UTF-8 text, and %s",
             r->path, offset, where(r), byte, noun(r), advice);
    return TEXT_NOT_TEXT;
}

static TextStatus nul_byte(TextReader *r, size_t offset, const unsigned char *chunk, size_t n,
                           char err[ERR_LEN]) {
    char advice[ERR_LEN];
    encoding_advice(r, chunk, n, advice, sizeof(advice));
    snprintf(err, ERR_LEN, "%s: a NUL byte at byte offset %zu%s: not text (%s)", r->path, offset, where(r), advice);
    return TEXT_NOT_TEXT;
}

static TextStatus too_long(const TextReader *r, char err[ERR_LEN]) {
    snprintf(err, ERR_LEN, "%s: more than %zu characters (%s stopped there, after %zu bytes of text)", r->path,
             r->max_chars, r->gzip ? "decompressing" : "reading", r->offset);
    return TEXT_TOO_LONG;
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
                r->cleanup.bom++;
                continue;
            }
        }
        if (!r->options.keep_cr) {
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

// Makes room for `more` characters after len, growing the text up to max_chars.
static TextStatus grow(TextReader *r, size_t more, char err[ERR_LEN]) {
    if (more > r->max_chars - r->len) return too_long(r, err);
    if (r->len + more <= r->cap) return TEXT_OK;
    size_t cap = r->cap ? r->cap : TEXT_READ_CHUNK;
    while (cap < r->len + more) cap *= 2;  // the text holds len already: this cannot overflow
    if (cap > r->max_chars) cap = r->max_chars;
    uint32_t *text = realloc(r->text, cap * sizeof(uint32_t));
    if (!text) {
        snprintf(err, ERR_LEN, "%s: out of memory after %zu characters", r->path, r->len);
        return TEXT_BAD;
    }
    r->text = text;
    r->cap = cap;
    return TEXT_OK;
}

// Appends n cleaned characters of the document, after the separator when they are its first
// and a document is there before it.
static TextStatus append_chars(TextReader *r, const uint32_t *chars, size_t n, size_t doc_start,
                               char err[ERR_LEN]) {
    if (n == 0) return TEXT_OK;  // a chunk that ended inside a character, or held only a byte-order mark
    size_t separator = r->len == doc_start && r->documents > 0 ? r->separator_len : 0;
    TextStatus status = grow(r, separator + n, err);
    if (status != TEXT_OK) return status;
    memcpy(r->text + r->len, r->separator, separator * sizeof(uint32_t));
    memcpy(r->text + r->len + separator, chars, n * sizeof(uint32_t));
    r->len += separator + n;
    return TEXT_OK;
}

// Decodes the n bytes at bytes (n <= TEXT_READ_CHUNK), which follow those already read of the
// document that starts at doc_start in the text.
static TextStatus feed_bytes(TextReader *r, const unsigned char *bytes, size_t n, size_t doc_start,
                             char err[ERR_LEN]) {
    const unsigned char *nul = memchr(bytes, 0, n);
    if (nul) return nul_byte(r, r->offset + (size_t)(nul - bytes), bytes, n, err);
    if (r->options.encoding != ENCODING_UTF8) {
        encoding_decode_8bit(r->options.encoding, bytes, n, r->decoded);
        r->offset += n;
        return append_chars(r, r->decoded, clean_chars(r, r->decoded, n), doc_start, err);
    }
    size_t count = 0, used = 0, bad;
    if (r->carried > 0) {
        // complete the sequence the last chunk cut, and decode it alone
        int need = sequence_length(r->carry[0]);
        while (r->carried < need && used < n) r->carry[r->carried++] = bytes[used++];
        if (r->carried < need) {  // still cut: the chunk was shorter than the rest
            r->offset += n;
            return TEXT_OK;
        }
        if (utf8_decode(r->carry, (size_t)need, r->decoded, &bad) < 0)
            return invalid_utf8(r, r->carry_at + bad, r->carry[bad], bytes, n, err);
        count = 1;
        r->carried = 0;
    }
    int cut = cut_sequence(bytes + used, n - used);
    long m = utf8_decode(bytes + used, n - used - (size_t)cut, r->decoded + count, &bad);
    if (m < 0) return invalid_utf8(r, r->offset + used + bad, bytes[used + bad], bytes, n, err);
    memcpy(r->carry, bytes + n - cut, (size_t)cut);
    r->carried = cut;
    r->carry_at = r->offset + n - (size_t)cut;
    r->offset += n;
    count += (size_t)m;
    return append_chars(r, r->decoded, clean_chars(r, r->decoded, count), doc_start, err);
}

static TextStatus read_error(const char *path, char err[ERR_LEN]) {
    snprintf(err, ERR_LEN, "%s: read error: %s", path, strerror(errno));
    return TEXT_BAD;
}

// Reads up to TEXT_READ_CHUNK bytes of an input that waits (common/platform.h's
// platform_waiting_read): what has come, waiting while nothing does; a stop request is checked
// before each read. A stop signal ends the wait at once (POSIX's poll is never restarted); the
// wait is also cut every quarter second, so that a signal that came just before it is seen too.
static TextStatus read_waiting(TextReader *r, FILE *fp, unsigned char *buf, size_t *got, char err[ERR_LEN]) {
    *got = 0;
    int end = 0;
    while (*got < TEXT_READ_CHUNK && !end) {
        if (r->options.stop_requested()) {
            snprintf(err, ERR_LEN, "%s: stopped while reading it", r->path);
            return TEXT_STOPPED;
        }
        long n = platform_waiting_read(fp, buf + *got, TEXT_READ_CHUNK - *got, 250, &end);
        if (n < 0) return read_error(r->path, err);
        *got += (size_t)n;
    }
    return TEXT_OK;
}

// Reads up to TEXT_READ_CHUNK bytes; *got is 0 only at the end of the file.
static TextStatus read_chunk(TextReader *r, FILE *fp, unsigned char *buf, size_t *got, char err[ERR_LEN]) {
    if (r->waits) return read_waiting(r, fp, buf, got, err);
    *got = fread(buf, 1, TEXT_READ_CHUNK, fp);
    if (*got < TEXT_READ_CHUNK && ferror(fp)) return read_error(r->path, err);
    return TEXT_OK;
}

// Decodes the rest of a plain text document; `first` bytes of it are already in the chunk.
static TextStatus read_plain(FILE *fp, TextReader *r, size_t first, size_t doc_start, char err[ERR_LEN]) {
    size_t got = first;
    while (got > 0) {
        TextStatus status = feed_bytes(r, r->chunk, got, doc_start, err);
        if (status != TEXT_OK) return status;
        if ((status = read_chunk(r, fp, r->chunk, &got, err)) != TEXT_OK) return status;
    }
    return TEXT_OK;
}

// Whether the input zs holds, past the last member, has a non-zero byte (err says where):
// only zero padding may follow a gzip file's last member.
static int padding_not_zero(const z_stream *zs, size_t file_bytes, const char *path, char err[ERR_LEN]) {
    for (uInt i = 0; i < zs->avail_in; i++)
        if (zs->next_in[i] != 0) {
            snprintf(err, ERR_LEN, "%s: corrupt gzip stream: non-zero byte at offset %zu of the file after the zero "
                     "padding that follows the last member", path, file_bytes - zs->avail_in + i);
            return 1;
        }
    return 0;
}

// Inflates every gzip member of the document and decodes what comes out; `first` bytes of it
// are already in the chunk. Members follow each other directly (concatenated .gz files);
// after the last one only zero bytes (padding, as some tape and block tools add) may follow.
// Text that is not text in the encoding is reported once its member ends intact: a damaged
// stream inflates to garbage before zlib finds the damage, which is the message then.
static TextStatus read_gzip(FILE *fp, TextReader *r, size_t first, size_t doc_start, char err[ERR_LEN]) {
    z_stream zs = {0};
    // 16 + MAX_WBITS: expect a gzip header and trailer around the deflate data
    if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) {
        snprintf(err, ERR_LEN, "%s: cannot initialise zlib", r->path);
        return TEXT_BAD;
    }
    TextStatus status = TEXT_BAD;
    size_t file_bytes = first;  // bytes read from the file so far
    int member = 1;             // 1-based number of the member being inflated
    int in_member = 1;          // inside a member whose trailer has not been read yet
    int padding = 0;            // past the last member, in the zero padding
    TextStatus bad_text = TEXT_OK;  // the text was found not to be text (err says where)
    zs.next_in = r->chunk;
    zs.avail_in = (uInt)first;
    for (;;) {
        if (zs.avail_in == 0) {
            size_t got;
            TextStatus read = read_chunk(r, fp, r->chunk, &got, err);
            if (read != TEXT_OK) {
                status = read;
                goto done;
            }
            if (got == 0) break;  // end of file
            file_bytes += got;
            zs.next_in = r->chunk;
            zs.avail_in = (uInt)got;
        }
        if (!in_member) {
            // between members: a zero byte cannot start a gzip header, so it begins padding
            if (padding || zs.next_in[0] == 0) {
                padding = 1;
                if (padding_not_zero(&zs, file_bytes, r->path, err)) goto done;
                zs.avail_in = 0;
                continue;
            }
            // more input after a member's trailer: the next member (inflateReset was done)
            in_member = 1;
            member++;
        }
        zs.next_out = r->inflated;
        zs.avail_out = TEXT_READ_CHUNK;
        int ret = inflate(&zs, Z_NO_FLUSH);
        if (zs.avail_out < TEXT_READ_CHUNK && bad_text == TEXT_OK) {
            TextStatus fed = feed_bytes(r, r->inflated, TEXT_READ_CHUNK - zs.avail_out, doc_start, err);
            if (fed == TEXT_TOO_LONG || fed == TEXT_BAD) {  // stop at once
                status = fed;
                goto done;
            }
            bad_text = fed;
        }
        if (ret == Z_STREAM_END) {
            if (bad_text != TEXT_OK) {
                status = bad_text;
                goto done;
            }
            in_member = 0;
            inflateReset(&zs);
        } else if (ret != Z_OK && ret != Z_BUF_ERROR) {
            // Z_BUF_ERROR only means inflate wants more input: the loop reads it
            const char *why = zs.msg                 ? zs.msg
                              : ret == Z_MEM_ERROR   ? "out of memory"
                              : ret == Z_NEED_DICT   ? "needs a preset dictionary"
                                                     : "inflate failed";
            snprintf(err, ERR_LEN, "%s: corrupt gzip stream: %s (member %d, near byte %zu of the file)", r->path, why,
                     member, file_bytes - zs.avail_in);
            goto done;
        }
    }
    if (in_member) {
        snprintf(err, ERR_LEN, "%s: truncated gzip stream: the file ended after %zu bytes, "
                 "inside gzip member %d (%zu bytes decompressed so far)",
                 r->path, file_bytes, member, r->offset);
        goto done;
    }
    status = TEXT_OK;
done:
    inflateEnd(&zs);
    return status;
}

static TextStatus unread_compression(TextReader *r, Compression c, char err[ERR_LEN]) {
    const char *name = compression_name(c), *command = compression_command(c);
    snprintf(r->not_text, sizeof(r->not_text), "compressed with %s", name);
    if (r->options.pipe_into)
        snprintf(err, ERR_LEN, "%s: compressed with %s, which chargpt does not read (gzip is the one it reads): "
                 "decompress it through a pipe, %s %s | %s", r->path, name, command, r->path, r->options.pipe_into);
    else
        snprintf(err, ERR_LEN, "%s: compressed with %s, which chargpt does not read (gzip is the one it reads): "
                 "decompress it first, %s %s > %s.txt", r->path, name, command, r->path, r->path);
    return TEXT_NOT_TEXT;
}

int text_reader_init(TextReader *r, const TextOptions *options, size_t max_chars, const uint32_t *separator,
                     size_t separator_len, char err[ERR_LEN]) {
    memset(r, 0, sizeof(*r));
    r->options = *options;
    r->max_chars = max_chars;
    r->chunk = malloc(TEXT_READ_CHUNK);
    r->inflated = malloc(TEXT_READ_CHUNK);
    r->decoded = malloc((TEXT_READ_CHUNK + 1) * sizeof(uint32_t));
    r->separator = malloc((separator_len + 1) * sizeof(uint32_t));
    if (!r->chunk || !r->inflated || !r->decoded || !r->separator) {
        text_reader_free(r);
        snprintf(err, ERR_LEN, "out of memory for the buffers of the %s", options->noun ? options->noun : "corpus");
        return -1;
    }
    if (separator_len) memcpy(r->separator, separator, separator_len * sizeof(uint32_t));
    r->separator_len = separator_len;
    return 0;
}

int text_reader_reserve(TextReader *r, size_t chars) {
    if (chars > r->max_chars) chars = r->max_chars;
    if (chars <= r->cap) return 0;
    uint32_t *text = realloc(r->text, chars * sizeof(uint32_t));
    if (!text) return -1;
    r->text = text;
    r->cap = chars;
    return 0;
}

TextStatus text_reader_add(TextReader *r, FILE *fp, const char *path, size_t size_hint, char err[ERR_LEN]) {
    size_t doc_start = r->len;
    TextCleanup cleanup = r->cleanup;
    r->path = path;
    r->gzip = r->carried = r->started = r->after_cr = 0;
    r->offset = 0;
    // a regular file or a stream without a descriptor (fmemopen) does not wait
    int saved = r->options.stop_requested ? platform_waiting_start(fp) : -1;
    r->waits = saved >= 0;
    size_t first;
    TextStatus status = read_chunk(r, fp, r->chunk, &first, err);
    if (status == TEXT_OK) {
        Compression c = compression_detect(r->chunk, first);
        r->gzip = c == COMPRESSION_GZIP;
        if (c != COMPRESSION_NONE && !r->gzip) {
            status = unread_compression(r, c, err);
        } else if (!r->gzip && size_hint / 4 > r->max_chars - r->len) {
            // a character takes at most 4 bytes
            snprintf(err, ERR_LEN, "%s: %zu bytes, more than %zu characters", path, size_hint, r->max_chars - r->len);
            status = TEXT_TOO_LONG;
        } else {
            // a plain file's characters, a byte each at least, fit in its size: room for them
            // at once, so that the text need not grow
            if (!r->gzip && size_hint > 0) text_reader_reserve(r, r->len + r->separator_len + size_hint);
            status = r->gzip ? read_gzip(fp, r, first, doc_start, err) : read_plain(fp, r, first, doc_start, err);
        }
    }
    if (status == TEXT_OK && r->carried > 0) {
        size_t bad;
        utf8_decode(r->carry, (size_t)r->carried, r->decoded, &bad);  // a sequence the end cut
        status = invalid_utf8(r, r->carry_at + bad, r->carry[bad], r->carry, (size_t)r->carried, err);
    }
    if (r->waits) platform_waiting_end(fp, saved);  // the descriptor as it was (it may be shared)
    if (status != TEXT_OK) {  // the text as it was before this document
        r->len = doc_start;
        r->cleanup = cleanup;
        return status;
    }
    if (r->len > doc_start) r->documents++;
    return TEXT_OK;
}

void text_reader_take(TextReader *r, uint32_t **text, size_t *len) {
    uint32_t *shrunk = r->len > 0 && r->len < r->cap ? realloc(r->text, r->len * sizeof(uint32_t)) : NULL;
    *text = shrunk ? shrunk : r->text;
    *len = r->len;
    if (r->len == 0) {
        free(*text);
        *text = NULL;
    }
    r->text = NULL;
    text_reader_free(r);
}

void text_reader_free(TextReader *r) {
    free(r->text);
    free(r->chunk);
    free(r->inflated);
    free(r->decoded);
    free(r->separator);
    r->text = NULL;
    r->chunk = r->inflated = NULL;
    r->decoded = r->separator = NULL;
    r->len = r->cap = 0;
}

void text_cleanup_describe(const TextCleanup *cleanup, char *buf, size_t size) {
    int n = 0;
    if (cleanup->bom == 1) n = snprintf(buf, size, "dropped a leading byte-order mark");
    else if (cleanup->bom > 1) n = snprintf(buf, size, "dropped the leading byte-order marks of %d files", cleanup->bom);
    else buf[0] = '\0';
    if ((cleanup->crlf || cleanup->lone_cr) && n >= 0 && (size_t)n < size)
        snprintf(buf + n, size - (size_t)n, "%sturned %zu CR LF and %zu lone CR line endings into LF",
                 cleanup->bom ? "; " : "", cleanup->crlf, cleanup->lone_cr);
}
