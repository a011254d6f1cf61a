#include "corpus_fingerprint.h"

#include <stdio.h>
#include <string.h>
#include <zlib.h>

#include "../common/utf8.h"

void corpus_fingerprint(const uint32_t *text, size_t len, char out[CORPUS_FINGERPRINT_LEN]) {
    // the text as UTF-8 through zlib's CRC-32, a block of characters at a time
    enum { CHUNK = 4096 };
    unsigned char bytes[CHUNK * 4];
    uLong crc = crc32(0L, Z_NULL, 0);
    for (size_t start = 0; start < len; start += CHUNK) {
        size_t end = start + CHUNK < len ? start + CHUNK : len, n = 0;
        for (size_t i = start; i < end; i++) n += (size_t)utf8_encode(text[i], (char *)bytes + n);
        crc = crc32(crc, bytes, (uInt)n);
    }
    snprintf(out, CORPUS_FINGERPRINT_LEN, "%zu:%08lx", len, (unsigned long)crc);
}

void corpus_fingerprint_describe(const char *fingerprint, char *buf, size_t size) {
    size_t len;
    char crc[9];
    int used = 0;
    if (sscanf(fingerprint, "%zu:%8[0-9a-f]%n", &len, crc, &used) == 2 && fingerprint[used] == '\0')
        snprintf(buf, size, "%zu characters, CRC-32 %s", len, crc);
    else
        snprintf(buf, size, "'%.40s'", fingerprint);
}
