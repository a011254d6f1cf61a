// Reading a training corpus: a UTF-8 text file, plain or gzip-compressed (detected by the
// gzip magic bytes 1f 8b, whatever the file is called), into Unicode code points.
#ifndef CHARGPT_CORPUS_H
#define CHARGPT_CORPUS_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "../common/errors.h"
#include "vocab.h"

// What corpus_load changed in the decoded text, for the caller to tell the user.
typedef struct {
    int bom;         // 1 when a leading byte-order mark (U+FEFF) was dropped
    size_t crlf;     // CR LF pairs turned into one LF
    size_t lone_cr;  // CRs not followed by LF turned into LF
} TextCleanup;

typedef struct {
    union {
        uint32_t *text;  // (len) code points
        int *tokens;     // (len) after corpus_encode: their token ids, in the same memory
    };
    size_t len;
    TextCleanup cleanup;
} Corpus;

#define CORPUS_NO_LIMIT SIZE_MAX
// The memory reading takes besides the text's code points (4 bytes each): the read, inflate
// and decode buffers and zlib's state, rounded up.
#define CORPUS_READ_BUFFERS (512.0 * 1024)

// Reads and decodes the whole file, as it is read: a gzip file is inflated a chunk at a time
// and each chunk decoded at once, so the bytes are never held whole and the text takes 4 bytes
// a character. Gzip files may hold several members (as `cat a.gz b.gz` makes) and may end in
// zero padding. A leading byte-order mark is dropped; unless keep_cr, CR LF and lone CR line
// endings become LF (Windows and old Mac text would otherwise make '\r' a character the model
// learns and prints); corpus->cleanup counts both. Returns 0; -1 with err naming the file when
// it cannot be read, the gzip stream is truncated or corrupt, the text is not valid UTF-8 (err
// gives the byte offset in the decompressed text) or it holds no characters; -2 with err when
// it holds more than max_chars characters (CORPUS_NO_LIMIT: no limit), found before more is
// allocated: "big.gz: more than N characters (decompressing stopped there, after B bytes of
// text)", or a plain file's size when that alone is too much. On failure nothing is returned:
// corpus is left empty. The path must name a regular file: a FIFO, device or directory is
// refused at once.
int corpus_load(const char *path, int keep_cr, size_t max_chars, Corpus *corpus, char err[ERR_LEN]);
// The same from an open stream, read to its end; path is used in messages.
int corpus_read(FILE *fp, const char *path, int keep_cr, size_t max_chars, Corpus *corpus, char err[ERR_LEN]);
// The most characters a text may have to be read in `bytes` of memory, its buffers included.
size_t corpus_max_chars(double bytes);
// Turns the text into vocab's token ids, in place (corpus->tokens from then on). Returns 0,
// or -1 with *bad_pos at the first character vocab lacks (the text is then part tokens).
int corpus_encode(Corpus *corpus, const Vocab *vocab, size_t *bad_pos);
void corpus_free(Corpus *corpus);

// Finds the corpus shipped with chargpt (tinyshakespeare.txt.gz) relative to the running
// program (platform_executable_path): installed, in <prefix>/share/chargpt/ beside
// <prefix>/bin/; in the build tree, in data/ beside the binary. On a system that does not say
// where the program is: in the install prefix the build was made for (the Makefile's PREFIX),
// then in data/ in the current directory. Returns 0 with its absolute path in out, or -1 with
// err naming the places looked in.
int corpus_default_path(char *out, size_t size, char err[ERR_LEN]);

// Describes the cleanup in a phrase such as "dropped a leading byte-order mark; turned 3 CR
// LF and 1 lone CR line endings into LF"; "" when nothing changed.
void text_cleanup_describe(const TextCleanup *cleanup, char *buf, size_t size);

#endif
