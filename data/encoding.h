// The encodings a text may be read in (UTF-8, and the 8-bit Latin-1 and Windows-1252 with
// --encoding), and a guess at the encoding of bytes that are not UTF-8, for a message that
// names it and the iconv command that converts it.
#ifndef CHARGPT_ENCODING_H
#define CHARGPT_ENCODING_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
    ENCODING_UTF8 = 0,  // the default
    ENCODING_LATIN1,    // ISO-8859-1: byte b is code point U+00bb
    ENCODING_CP1252,    // Windows-1252: Latin-1 but for 0x80-0x9F (curly quotes, dashes, the euro sign)
} TextEncoding;

// Reads an encoding's name, as --encoding takes it: "utf-8", "latin-1", "cp1252" (and the
// spellings iconv knows: "utf8", "latin1", "iso-8859-1", "windows-1252", any case).
// Returns 0, or -1 for a name it does not know.
int encoding_parse(const char *name, TextEncoding *out);
// The name --encoding takes for it: "utf-8", "latin-1", "cp1252".
const char *encoding_name(TextEncoding e);
// Decodes n bytes of an 8-bit encoding (not UTF-8) into n code points.
void encoding_decode_8bit(TextEncoding e, const unsigned char *bytes, size_t n, uint32_t *out);

// What bytes that are not UTF-8 (or that hold NUL bytes) most likely are.
typedef enum {
    GUESS_LATIN1,    // bytes above 0x7F, none in 0x80-0x9F
    GUESS_CP1252,    // bytes in 0x80-0x9F too, which Windows-1252 uses for printable characters
    GUESS_UTF16LE,   // a byte-order mark FF FE, or NUL bytes at odd offsets
    GUESS_UTF16BE,   // FE FF, or NUL bytes at even offsets
    GUESS_BINARY,    // NUL bytes without UTF-16's pattern: not text at all
} EncodingGuess;

// Guesses from the n bytes at `bytes`; at_start: they begin the file (a byte-order mark counts).
EncodingGuess encoding_guess(const unsigned char *bytes, size_t n, int at_start);
// "Latin-1 (ISO-8859-1)", "Windows-1252", "UTF-16 (little-endian)", "binary data".
const char *encoding_guess_name(EncodingGuess g);
// iconv's name for it ("LATIN1", "WINDOWS-1252", "UTF-16LE", "UTF-16BE"), or NULL for binary.
const char *encoding_guess_iconv(EncodingGuess g);
// The --encoding value that reads it ("latin-1", "cp1252"), or NULL when none does.
const char *encoding_guess_option(EncodingGuess g);

#endif
