// Reading texts, one document after another, into one array of Unicode code points: the bytes
// of each arrive a chunk at a time (as read, or as inflated from gzip) and are decoded (UTF-8,
// or an 8-bit encoding), cleaned (a leading byte-order mark dropped, CR line endings made LF)
// and appended at once, so a text's bytes are never held whole and it takes 4 bytes a
// character. data/corpus.h reads one file with it, data/corpus_set.h many.
#ifndef CHARGPT_TEXT_READER_H
#define CHARGPT_TEXT_READER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "../common/errors.h"
#include "compression.h"
#include "encoding.h"

// How a text is read.
typedef struct {
    int keep_cr;            // 1: CR characters are kept; else CR LF and lone CR become LF
    TextEncoding encoding;  // of the bytes (a gzip file's once inflated)
    const char *noun;       // what the text is, in messages: NULL "corpus", or "scored text"
    const char *pipe_into;  // the command that reads a text on standard input, which a compressed
                            // file's message pipes the decompressing command into ("./train
                            // --data -"); NULL: the message says to decompress the file first
    int (*stop_requested)(void);  // non-zero once the reading should stop (./train's stop signals:
                                  // training/stop_signals.h), or NULL: reading never stops
} TextOptions;

// What reading changed in the text, for the caller to tell the user.
typedef struct {
    int bom;         // byte-order marks (U+FEFF) dropped, one at most per document
    size_t crlf;     // CR LF pairs turned into one LF
    size_t lone_cr;  // CRs not followed by LF turned into LF
} TextCleanup;

// How reading a document ended.
typedef enum {
    TEXT_OK = 0,
    TEXT_BAD = -1,       // it cannot be read: an I/O error, a truncated or corrupt gzip stream, no memory
    TEXT_TOO_LONG = -2,  // the text would hold more than max_chars characters
    TEXT_NOT_TEXT = -3,  // it is not text in the encoding: a byte sequence it does not decode, a NUL
                         // byte, or a compression chargpt does not read (err names the encoding it
                         // most likely is, or the format, and what reads it)
    TEXT_STOPPED = -4,   // options.stop_requested asked for a stop
} TextStatus;

typedef struct {
    TextOptions options;
    size_t max_chars;          // more characters than this are refused
    uint32_t *separator;       // (separator_len) code points put between two documents
    size_t separator_len;
    uint32_t *text;            // (cap) the code points so far
    size_t len, cap;
    size_t documents;          // documents appended (empty ones are not)
    TextCleanup cleanup;
    unsigned char *chunk, *inflated;  // (TEXT_READ_CHUNK) bytes as read, and as inflated
    uint32_t *decoded;         // (TEXT_READ_CHUNK + 1) one chunk's code points, before they are appended
    // the document being read
    const char *path;
    int waits;                 // a pipe, FIFO or terminal read with a stop_requested: read
                               // without blocking, waiting for its bytes in poll(2)
    int gzip;
    unsigned char carry[4];    // the start of a UTF-8 sequence the last chunk cut
    int carried;
    size_t carry_at;           // its offset in the document's text
    size_t offset;             // bytes of the document's text decoded (or carried) so far
    int started;               // its first character was seen (a leading byte-order mark is dropped)
    int after_cr;              // its last character was a CR turned into LF
    char not_text[96];         // after TEXT_NOT_TEXT: why, in a few words ("binary data",
                               // "compressed with xz", "not UTF-8 (Latin-1 (ISO-8859-1)?)")
} TextReader;

// The name of standard input in messages (a caller reading it gives this as the path).
#define TEXT_STDIN_NAME "standard input"

#define TEXT_READ_CHUNK (1 << 16)  // bytes read from a file, or inflated, at a time
// The memory a reader takes besides the text's code points (4 bytes each): its buffers and
// zlib's state, rounded up.
#define TEXT_READ_BUFFERS (512.0 * 1024)

// Starts an empty text of at most max_chars characters whose documents are joined by the
// separator_len code points at separator (copied; 0 for none). Returns 0, or -1 with err
// when memory runs out.
int text_reader_init(TextReader *r, const TextOptions *options, size_t max_chars, const uint32_t *separator,
                     size_t separator_len, char err[ERR_LEN]);
// Makes room for `chars` characters at once (a caller that knows the size of what it will read:
// a plain file's size bounds its characters), so that the text need not grow; at most
// max_chars. Returns 0, or -1 when memory runs out (the text then grows as it is read).
int text_reader_reserve(TextReader *r, size_t chars);
// Reads fp to its end and appends its text, after the separator when a document is there
// before it; path names it in messages. When fp is not a regular file (a pipe, a FIFO) and
// options.stop_requested is set, a wait for its bytes ends as soon as a stop is asked for
// (TEXT_STOPPED). size_hint > 0 is its size in bytes (a plain file that
// size / 4 characters would already make too long is refused before it is read). gzip is
// inflated (several members, and zero padding after them, allowed); other compressions are
// refused by name. A document that fails leaves the text as it was before it (so a caller may
// skip it and go on), and one that holds no character appends nothing, not even the separator.
TextStatus text_reader_add(TextReader *r, FILE *fp, const char *path, size_t size_hint, char err[ERR_LEN]);
// Hands the text over: *text (malloc'd, shrunk to *len characters; NULL when empty) becomes
// the caller's. The reader is freed.
void text_reader_take(TextReader *r, uint32_t **text, size_t *len);
void text_reader_free(TextReader *r);

// Describes the cleanup in a phrase such as "dropped a leading byte-order mark; turned 3 CR
// LF and 1 lone CR line endings into LF"; "" when nothing changed.
void text_cleanup_describe(const TextCleanup *cleanup, char *buf, size_t size);

#endif
