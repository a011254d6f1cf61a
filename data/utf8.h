// UTF-8 decoding and encoding of Unicode code points.
#ifndef CHARGPT_UTF8_H
#define CHARGPT_UTF8_H

#include <stddef.h>
#include <stdint.h>

// Decodes `len` bytes into code points (out must hold len entries). Rejects overlong forms,
// surrogates, code points above U+10FFFF and truncated sequences. Returns the number of
// code points, or -1 with *bad_offset set to the byte offset of the first invalid sequence.
long utf8_decode(const unsigned char *bytes, size_t len, uint32_t *out, size_t *bad_offset);

// Writes the UTF-8 form of cp (a valid scalar value) into out[0..3]; returns its length.
int utf8_encode(uint32_t cp, char out[4]);

#endif
