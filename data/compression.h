// Compressed files recognised by their first bytes (their "magic"), whatever they are called.
// gzip is the one format chargpt reads itself (through zlib); the others are recognised so
// that a message can name the format and the command that decompresses it, instead of
// calling the compressed bytes invalid UTF-8.
#ifndef CHARGPT_COMPRESSION_H
#define CHARGPT_COMPRESSION_H

#include <stddef.h>

typedef enum {
    COMPRESSION_NONE = 0,  // none recognised: the bytes are read as text
    COMPRESSION_GZIP,      // 1f 8b
    COMPRESSION_XZ,        // fd '7zXZ' 00
    COMPRESSION_BZIP2,     // 'BZh' '1'..'9', then a block or end-of-stream marker
    COMPRESSION_ZSTD,      // 28 b5 2f fd
    COMPRESSION_LZ4,       // 04 22 4d 18
    COMPRESSION_COMPRESS,  // 1f 9d: Unix compress (.Z)
    COMPRESSION_ZIP,       // 'PK' 03 04 (or 05 06, an empty archive)
    COMPRESSION_7Z,        // '7z' bc af 27 1c
} Compression;

// The longest magic compression_detect looks at: give it at least this many bytes when the
// file has them.
#define COMPRESSION_MAGIC_MAX 10

// The format whose magic the n bytes at `bytes` (a file's start) begin with.
Compression compression_detect(const unsigned char *bytes, size_t n);
// Its name for a message: "xz", "bzip2", "zstd", "zip archive", ...
const char *compression_name(Compression c);
// The command that writes a file of it, decompressed, to standard output: "xz -dc",
// "unzip -p" (every file of a zip archive, one after the other), ...
const char *compression_command(Compression c);

#endif
