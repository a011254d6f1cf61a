// UTF-8 decoding and encoding of Unicode code points, and text shown safely: names and
// metadata in terminal messages, pages and SVG files.
#ifndef CHARGPT_UTF8_H
#define CHARGPT_UTF8_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

// Whether cp is a Unicode scalar value: at most U+10FFFF and not a surrogate (U+D800..U+DFFF).
int utf8_is_scalar_value(uint32_t cp);

// Decodes `len` bytes into code points (out must hold len entries). Rejects overlong forms,
// surrogates, code points above U+10FFFF and truncated sequences. Returns the number of
// code points, or -1 with *bad_offset set to the byte offset of the first invalid sequence.
long utf8_decode(const unsigned char *bytes, size_t len, uint32_t *out, size_t *bad_offset);

// Writes the UTF-8 form of cp (a valid scalar value) into out[0..3]; returns its length.
int utf8_encode(uint32_t cp, char out[4]);

// Length of the well-formed UTF-8 sequence starting at s (at most n bytes), or 0.
size_t utf8_sequence_length(const unsigned char *s, size_t n);

// Text shown as it is, but for each control character other than newline and tab (C0, DEL
// and C1: ESC and CSI start the sequences that drive a terminal; XML allows none of them) and
// each byte that is not part of well-formed UTF-8 (a file name's), which are shown as \xNN.
// utf8_shown copies s so into out (size bytes, always terminated; cut before what does not
// fit) and returns out. utf8_write_shown writes s so to fp, each single-byte character for
// which escape (or NULL) gives a text written as that text (markup's &amp; &lt; ...).
const char *utf8_shown(const char *s, char *out, size_t size);
void utf8_write_shown(FILE *fp, const char *s, const char *(*escape)(char c));

#endif
