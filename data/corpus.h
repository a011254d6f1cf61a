// Reading a training corpus (or a text to score): one text file, plain or gzip-compressed
// (detected by the gzip magic bytes 1f 8b, whatever the file is called), UTF-8 or an 8-bit
// encoding, into Unicode code points (data/text_reader.h); data/corpus_set.h reads many.
#ifndef CHARGPT_CORPUS_H
#define CHARGPT_CORPUS_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "../common/errors.h"
#include "text_reader.h"
#include "vocab.h"

typedef struct {
    union {
        uint32_t *text;  // (len) code points
        int *tokens;     // (len) after corpus_encode: their token ids, in the same memory
    };
    size_t len;
    TextCleanup cleanup;
} Corpus;

#define CORPUS_NO_LIMIT SIZE_MAX
// The memory reading takes besides the text's code points (4 bytes each).
#define CORPUS_READ_BUFFERS TEXT_READ_BUFFERS

// Reads and decodes the whole file, as it is read: a gzip file is inflated a chunk at a time
// and each chunk decoded at once, so the bytes are never held whole and the text takes 4 bytes
// a character. Gzip files may hold several members (as `cat a.gz b.gz` makes) and may end in
// zero padding; xz, bzip2, zstd and the other compressions compression.h knows are refused,
// naming the format and the command that decompresses them. A leading byte-order mark is
// dropped; unless keep_cr, CR LF and lone CR line endings become LF (Windows and old Mac text
// would otherwise make '\r' a character the model learns and prints); corpus->cleanup counts
// both. Returns 0; -1 with err naming the file when it cannot be read, the gzip stream is
// truncated or corrupt, the text is not UTF-8 (err gives the byte offset in the decompressed
// text, and the encoding the bytes most likely are with the iconv command that converts them),
// holds a NUL byte (binary data, or UTF-16) or holds no characters; -2 with err when it holds
// more than max_chars characters (CORPUS_NO_LIMIT: no limit), found before more is allocated:
// "big.gz: more than N characters (decompressing stopped there, after B bytes of text)", or a
// plain file's size when that alone is too much. On failure nothing is returned: corpus is
// left empty. The path must name a regular file: a FIFO, device or directory is refused at once.
int corpus_load(const char *path, int keep_cr, size_t max_chars, Corpus *corpus, char err[ERR_LEN]);
// The same from an open stream, read to its end; path is used in messages.
int corpus_read(FILE *fp, const char *path, int keep_cr, size_t max_chars, Corpus *corpus, char err[ERR_LEN]);
// corpus_load and corpus_read with every reading option: the encoding, and what the text is
// called in messages (data/text_reader.h).
int corpus_load_as(const char *path, const TextOptions *options, size_t max_chars, Corpus *corpus, char err[ERR_LEN]);
int corpus_read_as(FILE *fp, const char *path, const TextOptions *options, size_t max_chars, Corpus *corpus,
                   char err[ERR_LEN]);
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

#endif
