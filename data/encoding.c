#include "encoding.h"

#include <strings.h>

int encoding_parse(const char *name, TextEncoding *out) {
    static const struct {
        const char *name;
        TextEncoding encoding;
    } names[] = {
        {"utf-8", ENCODING_UTF8},         {"utf8", ENCODING_UTF8},       {"latin-1", ENCODING_LATIN1},
        {"latin1", ENCODING_LATIN1},      {"iso-8859-1", ENCODING_LATIN1}, {"iso8859-1", ENCODING_LATIN1},
        {"cp1252", ENCODING_CP1252},      {"windows-1252", ENCODING_CP1252},
    };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (strcasecmp(name, names[i].name) == 0) {
            *out = names[i].encoding;
            return 0;
        }
    return -1;
}

const char *encoding_name(TextEncoding e) {
    return e == ENCODING_LATIN1 ? "latin-1" : e == ENCODING_CP1252 ? "cp1252" : "utf-8";
}

// Windows-1252's characters at 0x80-0x9F; the five bytes it leaves undefined (0x81, 0x8D, 0x8F,
// 0x90, 0x9D) are read as the C1 controls of the same value, as WHATWG's decoder does.
static const uint16_t cp1252_high[32] = {
    0x20AC, 0x0081, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160, 0x2039, 0x0152, 0x008D,
    0x017D, 0x008F, 0x0090, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014, 0x02DC, 0x2122, 0x0161, 0x203A,
    0x0153, 0x009D, 0x017E, 0x0178,
};

void encoding_decode_8bit(TextEncoding e, const unsigned char *bytes, size_t n, uint32_t *out) {
    for (size_t i = 0; i < n; i++) {
        unsigned char b = bytes[i];
        out[i] = e == ENCODING_CP1252 && b >= 0x80 && b < 0xA0 ? cp1252_high[b - 0x80] : b;
    }
}

EncodingGuess encoding_guess(const unsigned char *bytes, size_t n, int at_start) {
    if (at_start && n >= 2 && bytes[0] == 0xFF && bytes[1] == 0xFE) return GUESS_UTF16LE;
    if (at_start && n >= 2 && bytes[0] == 0xFE && bytes[1] == 0xFF) return GUESS_UTF16BE;
    // UTF-16 text of mostly ASCII has a NUL in every other byte; binary data has them anywhere
    size_t nul_even = 0, nul_odd = 0, c1 = 0;
    for (size_t i = 0; i < n; i++) {
        if (bytes[i] == 0 && i % 2) nul_odd++;
        else if (bytes[i] == 0) nul_even++;
        if (bytes[i] >= 0x80 && bytes[i] < 0xA0) c1++;
    }
    size_t pairs = n / 2;
    if (nul_odd > pairs / 2 && nul_even <= nul_odd / 8) return GUESS_UTF16LE;
    if (nul_even > pairs / 2 && nul_odd <= nul_even / 8) return GUESS_UTF16BE;
    if (nul_even + nul_odd > 0) return GUESS_BINARY;
    return c1 > 0 ? GUESS_CP1252 : GUESS_LATIN1;
}

const char *encoding_guess_name(EncodingGuess g) {
    switch (g) {
        case GUESS_LATIN1: return "Latin-1 (ISO-8859-1)";
        case GUESS_CP1252: return "Windows-1252";
        case GUESS_UTF16LE: return "UTF-16 (little-endian)";
        case GUESS_UTF16BE: return "UTF-16 (big-endian)";
        default: return "binary data";
    }
}

const char *encoding_guess_iconv(EncodingGuess g) {
    switch (g) {
        case GUESS_LATIN1: return "LATIN1";
        case GUESS_CP1252: return "WINDOWS-1252";
        case GUESS_UTF16LE: return "UTF-16LE";
        case GUESS_UTF16BE: return "UTF-16BE";
        default: return NULL;
    }
}

const char *encoding_guess_option(EncodingGuess g) {
    return g == GUESS_LATIN1 ? "latin-1" : g == GUESS_CP1252 ? "cp1252" : NULL;
}
