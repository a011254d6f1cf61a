// Reading a training corpus: a UTF-8 text file, plain or gzip-compressed (detected by the
// gzip magic bytes 1f 8b, whatever the file is called), into Unicode code points.
#ifndef CHARGPT_CORPUS_H
#define CHARGPT_CORPUS_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "../model/gpt.h"

typedef struct {
    uint32_t *text;  // (len) code points
    size_t len;
} Corpus;

// Reads and decodes the whole file. Gzip files may hold several members (as `cat a.gz b.gz`
// makes) and may end in zero padding. Fails, with err naming the file, when the file cannot
// be read, the gzip stream is truncated or corrupt, the text is not valid UTF-8 (err gives
// the byte offset in the decompressed text) or it holds no characters. On failure nothing is
// returned: corpus is left empty. The path must name a regular file: a FIFO, device or
// directory is refused at once.
int corpus_load(const char *path, Corpus *corpus, char err[ERR_LEN]);
// The same from an open stream, read to its end; path is used in messages.
int corpus_read(FILE *fp, const char *path, Corpus *corpus, char err[ERR_LEN]);
void corpus_free(Corpus *corpus);

#endif
