// Tests of what a corpus file may be: each compression recognised by its magic bytes (gzip read,
// the others refused naming the format and the pipe that reads them), the encodings read with
// --encoding, the likely encoding named for a text that is not UTF-8, and NUL bytes refused.
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/utf8.h"
#include "../data/compression.h"
#include "../data/corpus.h"
#include "../data/encoding.h"
#include "test.h"

#define TMP_DIR "tests/tmp"

static void write_bytes(const char *path, const void *bytes, size_t len) {
    test_make_dir(TMP_DIR);
    test_write_file(path, bytes, len);
}

// Loads path with options, expecting failure (-1) and a message that holds each of the words.
static void check_refused(const char *path, const TextOptions *options, const char *const *words) {
    Corpus c;
    char err[ERR_LEN] = "";
    int rc = corpus_load_as(path, options, CORPUS_NO_LIMIT, &c, err);
    if (!CHECK(rc == -1, "%s: loaded (rc %d), want it refused", path, rc)) {
        if (rc == 0) corpus_free(&c);
        return;
    }
    CHECK(c.text == NULL && c.len == 0, "%s: a refused text must leave the corpus empty", path);
    for (int i = 0; words[i]; i++) CHECK(strstr(err, words[i]) != NULL, "%s: the message lacks \"%s\": %s", path, words[i], err);
}

// The first bytes of real files made by each tool from "hello\n" (xz -c, bzip2 -c, ...).
static const struct {
    const char *name, *command;
    Compression kind;
    unsigned char bytes[16];
} made_by_tools[] = {
    {"xz", "xz -dc", COMPRESSION_XZ,
     {0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00, 0x00, 0x04, 0xe6, 0xd6, 0xb4, 0x46, 0x02, 0x00, 0x21, 0x01}},
    {"bzip2", "bzip2 -dc", COMPRESSION_BZIP2,
     {0x42, 0x5a, 0x68, 0x39, 0x31, 0x41, 0x59, 0x26, 0x53, 0x59, 0xc1, 0xc0, 0x80, 0xe2, 0x00, 0x00}},
    {"zstd", "zstd -dc", COMPRESSION_ZSTD,
     {0x28, 0xb5, 0x2f, 0xfd, 0x04, 0x58, 0x31, 0x00, 0x00, 0x68, 0x65, 0x6c, 0x6c, 0x6f, 0x0a, 0x53}},
    {"lz4", "lz4 -dc", COMPRESSION_LZ4,
     {0x04, 0x22, 0x4d, 0x18, 0x64, 0x40, 0xa7, 0x06, 0x00, 0x00, 0x80, 0x68, 0x65, 0x6c, 0x6c, 0x6f}},
    {"zip archive", "unzip -p", COMPRESSION_ZIP,
     {0x50, 0x4b, 0x03, 0x04, 0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0xb8, 0x58, 0, 0, 0, 0}},
    {"Unix compress (.Z)", "gzip -dc", COMPRESSION_COMPRESS, {0x1f, 0x9d, 0x90, 0x68, 0x65, 0x6c, 0x6c, 0x6f}},
    {"7z archive", "7z x -so", COMPRESSION_7Z, {'7', 'z', 0xbc, 0xaf, 0x27, 0x1c, 0x00, 0x04}},
};

TEST(corpus_format_compressions_recognised_by_magic) {
    for (size_t i = 0; i < sizeof(made_by_tools) / sizeof(made_by_tools[0]); i++) {
        Compression c = compression_detect(made_by_tools[i].bytes, 16);
        CHECK(c == made_by_tools[i].kind, "%s: detected as %s", made_by_tools[i].name, compression_name(c));
        CHECK(strcmp(compression_name(c), made_by_tools[i].name) == 0, "%s named %s", made_by_tools[i].name,
              compression_name(c));
        CHECK(strcmp(compression_command(c), made_by_tools[i].command) == 0, "%s: command %s", made_by_tools[i].name,
              compression_command(c));
    }
    static const unsigned char gz[] = {0x1f, 0x8b, 0x08, 0x00};
    CHECK(compression_detect(gz, 4) == COMPRESSION_GZIP, "gzip not detected");
    // text that starts like a magic is text: "BZh" without bzip2's block marker, too few bytes
    static const char *texts[] = {"BZh9 is a font size\n", "PK", "7z", "hello"};
    for (int i = 0; i < 4; i++)
        CHECK(compression_detect((const unsigned char *)texts[i], strlen(texts[i])) == COMPRESSION_NONE,
              "'%s' taken for %s", texts[i], compression_name(compression_detect((const unsigned char *)texts[i],
                                                                                strlen(texts[i]))));
}

// A compressed file named as the corpus: refused with the format, and the pipe that reads it.
TEST(corpus_format_other_compressions_refused_with_the_pipe) {
    for (size_t i = 0; i < sizeof(made_by_tools) / sizeof(made_by_tools[0]); i++) {
        char path[128], pipe[256];
        snprintf(path, sizeof(path), TMP_DIR "/formats_corpus.%zu", i);
        write_bytes(path, made_by_tools[i].bytes, 16);
        snprintf(pipe, sizeof(pipe), "%s %s | ./train --data -", made_by_tools[i].command, path);
        TextOptions options = {.pipe_into = "./train --data -"};
        check_refused(path, &options, (const char *[]){made_by_tools[i].name, pipe, NULL});
        // without a command to pipe into: decompress it first
        snprintf(pipe, sizeof(pipe), "%s %s > %s.txt", made_by_tools[i].command, path, path);
        check_refused(path, &(TextOptions){0}, (const char *[]){pipe, NULL});
        unlink(path);
    }
}

// Loads path expecting success and the code points want (n of them).
static void check_code_points(const char *path, const TextOptions *options, const uint32_t *want, size_t n) {
    Corpus c;
    char err[ERR_LEN];
    if (!CHECK(corpus_load_as(path, options, CORPUS_NO_LIMIT, &c, err) == 0, "%s: %s", path, err)) return;
    CHECK(c.len == n && memcmp(c.text, want, n * sizeof(uint32_t)) == 0, "%s: %zu code points, want %zu, or they differ",
          path, c.len, n);
    corpus_free(&c);
}

TEST(corpus_format_latin1_named_and_read_with_encoding) {
    // "café à l'été\n" in Latin-1: é is 0xE9, à 0xE0
    static const unsigned char latin1[] = "caf\xe9 \xe0 l'\xe9t\xe9\n";
    write_bytes(TMP_DIR "/formats_latin1.txt", latin1, sizeof(latin1) - 1);
    check_refused(TMP_DIR "/formats_latin1.txt", &(TextOptions){0},
                  (const char *[]){"invalid UTF-8 at byte offset 3 (byte 0xe9)", "Latin-1 (ISO-8859-1)",
                                   "--encoding latin-1",
                                   "iconv -f LATIN1 -t UTF-8 " TMP_DIR "/formats_latin1.txt > " TMP_DIR
                                   "/formats_latin1.txt.utf8.txt",
                                   NULL});
    static const uint32_t want[] = {'c', 'a', 'f', 0xE9, ' ', 0xE0, ' ', 'l', '\'', 0xE9, 't', 0xE9, '\n'};
    check_code_points(TMP_DIR "/formats_latin1.txt", &(TextOptions){.encoding = ENCODING_LATIN1}, want, 13);
    // cp1252 reads the same bytes the same way (they are not in 0x80-0x9F)
    check_code_points(TMP_DIR "/formats_latin1.txt", &(TextOptions){.encoding = ENCODING_CP1252}, want, 13);
    // and CR LF is cleaned in an 8-bit encoding too
    write_bytes(TMP_DIR "/formats_latin1_crlf.txt", "caf\xe9\r\n", 6);
    check_code_points(TMP_DIR "/formats_latin1_crlf.txt", &(TextOptions){.encoding = ENCODING_LATIN1},
                      (const uint32_t[]){'c', 'a', 'f', 0xE9, '\n'}, 5);
}

TEST(corpus_format_cp1252_named_and_read) {
    // “quoted” – and 5 € in Windows-1252: bytes 0x93, 0x94, 0x96, 0x80 (C1 controls in Latin-1)
    static const unsigned char cp1252[] = "\x93quoted\x94 \x96 5 \x80\n";
    write_bytes(TMP_DIR "/formats_cp1252.txt", cp1252, sizeof(cp1252) - 1);
    check_refused(TMP_DIR "/formats_cp1252.txt", &(TextOptions){0},
                  (const char *[]){"Windows-1252", "--encoding cp1252", "iconv -f WINDOWS-1252 -t UTF-8", NULL});
    static const uint32_t want[] = {0x201C, 'q', 'u', 'o', 't', 'e', 'd', 0x201D, ' ', 0x2013, ' ', '5', ' ', 0x20AC, '\n'};
    check_code_points(TMP_DIR "/formats_cp1252.txt", &(TextOptions){.encoding = ENCODING_CP1252}, want, 15);
    // Latin-1 gives the C1 controls instead
    check_code_points(TMP_DIR "/formats_cp1252.txt", &(TextOptions){.encoding = ENCODING_LATIN1},
                      (const uint32_t[]){0x93, 'q', 'u', 'o', 't', 'e', 'd', 0x94, ' ', 0x96, ' ', '5', ' ', 0x80, '\n'},
                      15);
}

TEST(corpus_format_encoding_names) {
    static const struct {
        const char *name;
        TextEncoding want;
    } names[] = {{"utf-8", ENCODING_UTF8}, {"UTF8", ENCODING_UTF8}, {"latin-1", ENCODING_LATIN1},
                 {"ISO-8859-1", ENCODING_LATIN1}, {"latin1", ENCODING_LATIN1}, {"cp1252", ENCODING_CP1252},
                 {"Windows-1252", ENCODING_CP1252}};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        TextEncoding e = ENCODING_UTF8;
        CHECK(encoding_parse(names[i].name, &e) == 0 && e == names[i].want, "%s read as %s", names[i].name,
              encoding_name(e));
    }
    TextEncoding e;
    CHECK(encoding_parse("ebcdic", &e) != 0, "ebcdic accepted");
    CHECK(encoding_parse("", &e) != 0, "an empty name accepted");
}

// NUL bytes: UTF-16 named as such, anything else as binary; refused even with --encoding.
TEST(corpus_format_nul_bytes_refused) {
    static const unsigned char utf16le_bom[] = {0xff, 0xfe, 'h', 0, 'i', 0, '\n', 0};
    write_bytes(TMP_DIR "/formats_utf16_bom.txt", utf16le_bom, sizeof(utf16le_bom));
    check_refused(TMP_DIR "/formats_utf16_bom.txt", &(TextOptions){0},
                  (const char *[]){"UTF-16 (little-endian)", "iconv -f UTF-16LE -t UTF-8", NULL});
    static const unsigned char utf16be[] = {0, 'h', 0, 'e', 0, 'l', 0, 'l', 0, 'o', 0, '\n'};
    write_bytes(TMP_DIR "/formats_utf16be.txt", utf16be, sizeof(utf16be));
    check_refused(TMP_DIR "/formats_utf16be.txt", &(TextOptions){0},
                  (const char *[]){"NUL byte at byte offset 0", "UTF-16 (big-endian)", NULL});
    // a file of NUL bytes (2 MB of them trained to loss 0 before) and binary data
    size_t n = 2 << 20;
    unsigned char *zeros = calloc(n, 1);
    write_bytes(TMP_DIR "/formats_zeros.bin", zeros, n);
    free(zeros);
    check_refused(TMP_DIR "/formats_zeros.bin", &(TextOptions){0},
                  (const char *[]){"NUL byte at byte offset 0", "binary data", NULL});
    check_refused(TMP_DIR "/formats_zeros.bin", &(TextOptions){.encoding = ENCODING_LATIN1},
                  (const char *[]){"NUL byte", NULL});
    static const unsigned char binary[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 0x0d, 'I', 'H'};
    write_bytes(TMP_DIR "/formats_image.png", binary, sizeof(binary));
    check_refused(TMP_DIR "/formats_image.png", &(TextOptions){.encoding = ENCODING_LATIN1},
                  (const char *[]){"NUL byte at byte offset 8", "binary data", NULL});
    unlink(TMP_DIR "/formats_zeros.bin");
}

// What a text is called in messages: a scored text is not a corpus.
TEST(corpus_format_noun_in_messages) {
    write_bytes(TMP_DIR "/formats_empty.txt", "", 0);
    TextOptions scored = {.noun = "scored text"};
    check_refused(TMP_DIR "/formats_empty.txt", &scored, (const char *[]){"the scored text is empty", NULL});
    write_bytes(TMP_DIR "/formats_bad.txt", "ab\xff", 3);
    check_refused(TMP_DIR "/formats_bad.txt", &scored, (const char *[]){"the scored text must be UTF-8", NULL});
    Corpus c;
    char err[ERR_LEN];
    CHECK(corpus_load_as(TMP_DIR "/formats_bad.txt", &scored, CORPUS_NO_LIMIT, &c, err) == -1 && !strstr(err, "corpus"),
          "a scored text called a corpus: %s", err);
}

TEST(corpus_format_encoding_guesses) {
    static const struct {
        const char *bytes;
        size_t n;
        EncodingGuess want;
    } cases[] = {
        {"caf\xe9", 4, GUESS_LATIN1},
        {"\x93hi\x94", 4, GUESS_CP1252},
        {"\xff\xfeh\0i\0", 6, GUESS_UTF16LE},
        {"\xfe\xff\0h\0i", 6, GUESS_UTF16BE},
        {"h\0e\0l\0l\0o\0", 10, GUESS_UTF16LE},
        {"\0h\0e\0l\0l\0o", 10, GUESS_UTF16BE},
        {"\x7f" "ELF\x02\x01\x01\0\0\0\0\0", 12, GUESS_BINARY},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        EncodingGuess g = encoding_guess((const unsigned char *)cases[i].bytes, cases[i].n, 1);
        CHECK(g == cases[i].want, "case %zu guessed as %s, want %s", i, encoding_guess_name(g),
              encoding_guess_name(cases[i].want));
    }
}
