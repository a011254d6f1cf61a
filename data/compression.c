#include "compression.h"

#include <string.h>

static const struct {
    Compression kind;
    const char *name, *command;
    const char *magic;
    size_t magic_len;
} formats[] = {
    {COMPRESSION_GZIP, "gzip", "gzip -dc", "\x1f\x8b", 2},
    {COMPRESSION_XZ, "xz", "xz -dc", "\xfd" "7zXZ\0", 6},
    {COMPRESSION_BZIP2, "bzip2", "bzip2 -dc", "BZh", 3},  // and more: see is_bzip2
    {COMPRESSION_ZSTD, "zstd", "zstd -dc", "\x28\xb5\x2f\xfd", 4},
    {COMPRESSION_LZ4, "lz4", "lz4 -dc", "\x04\x22\x4d\x18", 4},
    {COMPRESSION_COMPRESS, "Unix compress (.Z)", "gzip -dc", "\x1f\x9d", 2},
    {COMPRESSION_ZIP, "zip archive", "unzip -p", "PK\x03\x04", 4},
    {COMPRESSION_ZIP, "zip archive", "unzip -p", "PK\x05\x06", 4},
    {COMPRESSION_7Z, "7z archive", "7z x -so", "7z\xbc\xaf\x27\x1c", 6},
};
#define NUM_FORMATS (sizeof(formats) / sizeof(formats[0]))

// "BZh" starts plain text too ("BZh1 is..."): a bzip2 stream has a block size digit, then a
// block's magic (the digits of pi) or the end-of-stream one (of sqrt(pi)).
static int is_bzip2(const unsigned char *b, size_t n) {
    return n >= 10 && b[3] >= '1' && b[3] <= '9' &&
           (memcmp(b + 4, "\x31\x41\x59\x26\x53\x59", 6) == 0 || memcmp(b + 4, "\x17\x72\x45\x38\x50\x90", 6) == 0);
}

Compression compression_detect(const unsigned char *bytes, size_t n) {
    for (size_t i = 0; i < NUM_FORMATS; i++) {
        if (n < formats[i].magic_len || memcmp(bytes, formats[i].magic, formats[i].magic_len) != 0) continue;
        if (formats[i].kind == COMPRESSION_BZIP2 && !is_bzip2(bytes, n)) continue;
        return formats[i].kind;
    }
    return COMPRESSION_NONE;
}

const char *compression_name(Compression c) {
    for (size_t i = 0; i < NUM_FORMATS; i++)
        if (formats[i].kind == c) return formats[i].name;
    return "uncompressed";
}

const char *compression_command(Compression c) {
    for (size_t i = 0; i < NUM_FORMATS; i++)
        if (formats[i].kind == c) return formats[i].command;
    return "cat";
}
