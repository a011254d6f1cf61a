// Tests of the data layer: corpus reading (plain, gzip, errors), vocabulary, split, batches.
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "../common/platform.h"
#include "../common/rng.h"
#include "../common/utf8.h"
#include "../data/batch.h"
#include "../data/corpus.h"
#include "../data/vocab.h"
#include "test.h"

#define TMP_DIR "tests/tmp"

static void write_file(const char *path, const void *bytes, size_t len) {
    test_make_dir(TMP_DIR);
    test_write_file(path, bytes, len);
}

// One gzip member holding src, compressed with zlib; *out_len gets its size.
static unsigned char *gzip_member(const void *src, size_t len, size_t *out_len) {
    z_stream zs;
    memset(&zs, 0, sizeof(zs));
    deflateInit2(&zs, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
    size_t cap = deflateBound(&zs, len) + 64;
    unsigned char *out = malloc(cap);
    zs.next_in = (unsigned char *)src;
    zs.avail_in = (uInt)len;
    zs.next_out = out;
    zs.avail_out = (uInt)cap;
    int ret = deflate(&zs, Z_FINISH);
    CHECK(ret == Z_STREAM_END, "deflate returned %d", ret);
    *out_len = zs.total_out;
    deflateEnd(&zs);
    return out;
}

// Pseudo-random lines of words, long enough to give a gzip stream of several KiB.
static char *make_text(size_t len) {
    static const char *words[] = {"the", "king", "é", "night", "—",
                                  "中文", "sword", "😀", "and"};
    char *text = malloc(len + 1);
    Rng rng;
    rng_seed(&rng, 7);
    size_t n = 0;
    while (n < len) {
        const char *w = words[rng_below(&rng, 9)];
        size_t wl = strlen(w);
        if (n + wl + 1 > len) break;
        memcpy(text + n, w, wl);
        n += wl;
        text[n++] = rng_below(&rng, 8) == 0 ? '\n' : ' ';
    }
    while (n < len) text[n++] = '.';
    text[len] = '\0';
    return text;
}

// Loads path with keep_cr expecting the code points of want (a UTF-8 string) and the given
// cleanup counts.
static void check_cleanup(const char *path, int keep_cr, const char *want, TextCleanup want_cleanup) {
    size_t want_len = strlen(want);
    uint32_t *want_cps = malloc((want_len + 1) * sizeof(uint32_t));
    size_t bad;
    long n = utf8_decode((const unsigned char *)want, want_len, want_cps, &bad);
    Corpus c;
    char err[ERR_LEN];
    if (CHECK(corpus_load(path, keep_cr, CORPUS_NO_LIMIT, &c, err) == 0, "%s should load: %s", path, err)) {
        CHECK(c.len == (size_t)n && memcmp(c.text, want_cps, c.len * sizeof(uint32_t)) == 0,
              "%s (keep_cr %d): %zu code points, want %ld, or they differ", path, keep_cr, c.len, n);
        CHECK(c.cleanup.bom == want_cleanup.bom && c.cleanup.crlf == want_cleanup.crlf &&
                  c.cleanup.lone_cr == want_cleanup.lone_cr,
              "%s (keep_cr %d): cleanup bom %d crlf %zu lone_cr %zu, want %d %zu %zu", path, keep_cr,
              c.cleanup.bom, c.cleanup.crlf, c.cleanup.lone_cr, want_cleanup.bom,
              want_cleanup.crlf, want_cleanup.lone_cr);
        corpus_free(&c);
    }
    free(want_cps);
}

// Loads path expecting success, the code points of want and nothing cleaned up.
static void check_loads_as(const char *path, const char *want) {
    check_cleanup(path, 0, want, (TextCleanup){0, 0, 0});
}

// Loads path expecting -1, an empty corpus and a message naming the file and holding what.
static void check_load_fails(const char *path, const char *what) {
    Corpus c = {{(uint32_t *)&c}, 123, {1, 1, 1}};
    char err[ERR_LEN] = "";
    int rc = corpus_load(path, 0, CORPUS_NO_LIMIT, &c, err);
    CHECK(rc == -1, "%s should fail with \"%s\"", path, what);
    CHECK(c.text == NULL && c.len == 0, "%s: a failed load must return no text", path);
    CHECK(strstr(err, path) != NULL, "message does not name the file: %s", err);
    CHECK(strstr(err, what) != NULL, "message lacks \"%s\": %s", what, err);
    if (rc == 0) corpus_free(&c);
}

TEST(data_corpus_plain_and_gzip_identical) {
    char *text = make_text(20000);
    size_t gz_len;
    unsigned char *gz = gzip_member(text, strlen(text), &gz_len);
    write_file(TMP_DIR "/data_same.txt", text, strlen(text));
    write_file(TMP_DIR "/data_same.txt.gz", gz, gz_len);
    Corpus plain, packed;
    char err[ERR_LEN];
    CHECK(corpus_load(TMP_DIR "/data_same.txt", 0, CORPUS_NO_LIMIT, &plain, err) == 0, "%s", err);
    CHECK(corpus_load(TMP_DIR "/data_same.txt.gz", 0, CORPUS_NO_LIMIT, &packed, err) == 0, "%s", err);
    CHECK(plain.len == packed.len, "plain %zu vs gzip %zu code points", plain.len, packed.len);
    CHECK(plain.len == packed.len &&
              memcmp(plain.text, packed.text, plain.len * sizeof(uint32_t)) == 0,
          "plain and gzip corpora decode to different code points");
    // both against an independent decode of the source
    check_loads_as(TMP_DIR "/data_same.txt", text);
    corpus_free(&plain);
    corpus_free(&packed);
    free(gz);
    free(text);
}

TEST(data_corpus_gzip_detected_by_magic_not_name) {
    const char *text = "To be, or not to be — that is the question.\n";
    size_t gz_len;
    unsigned char *gz = gzip_member(text, strlen(text), &gz_len);
    write_file(TMP_DIR "/data_gzip_named.txt", gz, gz_len);
    check_loads_as(TMP_DIR "/data_gzip_named.txt", text);
    // and a plain file named .gz is read as plain text
    write_file(TMP_DIR "/data_plain_named.gz", text, strlen(text));
    check_loads_as(TMP_DIR "/data_plain_named.gz", text);
    free(gz);
}

TEST(data_corpus_gzip_multi_member) {
    const char *parts[3] = {"First member, ", "", "third — after an empty member\n"};
    unsigned char buf[4096];
    size_t len = 0;
    for (int i = 0; i < 3; i++) {
        size_t n;
        unsigned char *gz = gzip_member(parts[i], strlen(parts[i]), &n);
        memcpy(buf + len, gz, n);
        len += n;
        free(gz);
    }
    write_file(TMP_DIR "/data_multi.gz", buf, len);
    check_loads_as(TMP_DIR "/data_multi.gz", "First member, third — after an empty member\n");

    // zero padding after the last member is accepted
    memset(buf + len, 0, 512);
    write_file(TMP_DIR "/data_padded.gz", buf, len + 512);
    check_loads_as(TMP_DIR "/data_padded.gz", "First member, third — after an empty member\n");

    // padding followed by anything else, or a trailing member that is garbage, is corrupt
    buf[len + 100] = 'x';
    write_file(TMP_DIR "/data_padded_junk.gz", buf, len + 512);
    check_load_fails(TMP_DIR "/data_padded_junk.gz", "corrupt gzip stream");
    memcpy(buf + len, "garbage\n", 8);
    write_file(TMP_DIR "/data_garbage.gz", buf, len + 8);
    check_load_fails(TMP_DIR "/data_garbage.gz", "corrupt gzip stream");

    // a second member cut short is a truncated stream, not a shorter corpus
    size_t n1;
    unsigned char *gz1 = gzip_member(parts[0], strlen(parts[0]), &n1);
    write_file(TMP_DIR "/data_multi_cut.gz", buf, n1 + 10);
    check_load_fails(TMP_DIR "/data_multi_cut.gz", "truncated gzip stream");
    free(gz1);
}

// Text that compresses poorly: random ASCII letters and digits, plus newlines.
static char *make_noise(size_t len, uint64_t seed) {
    static const char alphabet[] =
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 \n";
    char *text = malloc(len + 1);
    Rng rng;
    rng_seed(&rng, seed);
    for (size_t i = 0; i < len; i++) text[i] = alphabet[rng_below(&rng, sizeof(alphabet) - 1)];
    text[len] = '\0';
    return text;
}

TEST(data_corpus_members_across_read_chunks) {
    // two members of ~100 KB compressed each: the reader's 64 KiB chunks split both the
    // members and the boundary between them; plain text of 300 KB spans several chunks too
    char *a = make_noise(130000, 1), *b = make_noise(170000, 2);
    size_t na, nb;
    unsigned char *ga = gzip_member(a, strlen(a), &na);
    unsigned char *gb = gzip_member(b, strlen(b), &nb);
    CHECK(na > 65536 && nb > 65536, "members too small: %zu and %zu bytes", na, nb);
    unsigned char *both = malloc(na + nb);
    memcpy(both, ga, na);
    memcpy(both + na, gb, nb);
    write_file(TMP_DIR "/data_big_multi.gz", both, na + nb);
    char *ab = malloc(300001);
    memcpy(ab, a, 130000);
    memcpy(ab + 130000, b, 170001);
    check_loads_as(TMP_DIR "/data_big_multi.gz", ab);
    write_file(TMP_DIR "/data_big_plain.txt", ab, 300000);
    check_loads_as(TMP_DIR "/data_big_plain.txt", ab);
    free(ab);
    free(both);
    free(gb);
    free(ga);
    free(b);
    free(a);
}

TEST(data_corpus_utf8_code_points_and_sorted_vocab) {
    // a, e-acute (2 bytes), em dash (3), CJK (3), emoji (4), then repeats
    const char *text = "\xF0\x9F\x98\x80" "a\xC3\xA9\xE2\x80\x94\xE4\xB8\xAD" "a\xC3\xA9";
    write_file(TMP_DIR "/data_utf8.txt", text, strlen(text));
    Corpus c;
    char err[ERR_LEN];
    if (!CHECK(corpus_load(TMP_DIR "/data_utf8.txt", 0, CORPUS_NO_LIMIT, &c, err) == 0, "%s", err)) return;
    const uint32_t want[] = {0x1F600, 'a', 0xE9, 0x2014, 0x4E2D, 'a', 0xE9};
    CHECK(c.len == 7, "%zu code points, want 7", c.len);
    CHECK(c.len == 7 && memcmp(c.text, want, sizeof(want)) == 0, "wrong code points");
    Vocab v;
    CHECK(vocab_build(&v, c.text, c.len, err) == 0, "%s", err);
    const uint32_t sorted[] = {'a', 0xE9, 0x2014, 0x4E2D, 0x1F600};
    CHECK(v.size == 5, "vocab size %d, want 5", v.size);
    CHECK(v.size == 5 && memcmp(v.chars, sorted, sizeof(sorted)) == 0, "vocab not sorted/unique");
    vocab_free(&v);
    corpus_free(&c);
}

TEST(data_corpus_missing_file) {
    check_load_fails(TMP_DIR "/data_no_such_file.txt", strerror(ENOENT));
}

// A directory, a FIFO with no writer (opening it for reading would wait forever) and a
// device are refused at once, before anything is read.
TEST(data_corpus_special_files_refused) {
    test_make_dir(TMP_DIR);
    check_load_fails(TMP_DIR, "not a regular file");
    const char *fifo = TMP_DIR "/data_fifo";
    if (!test_system_has(TEST_FIFOS)) {
        printf("    no FIFOs on %s: left out\n", platform_name());
    } else if (CHECK(test_make_fifo(fifo) == 0, "mkfifo %s: %s", fifo, strerror(errno))) {
        check_load_fails(fifo, "not a regular file");
        platform_remove_file(fifo);
    }
    check_load_fails(test_device(), "not a regular file");
}

// corpus_read takes any stream: the fuzz target feeds it bytes from memory.
TEST(data_corpus_read_from_stream) {
    static const char text[] = "caf\xc3\xa9 \xe2\x98\x83\n";
    FILE *fp = platform_memory_stream(text, sizeof(text) - 1);
    if (!CHECK(fp != NULL, "a stream of the bytes: %s", strerror(errno))) return;
    Corpus c;
    char err[ERR_LEN];
    if (CHECK(corpus_read(fp, "memory", 0, CORPUS_NO_LIMIT, &c, err) == 0, "%s", err)) {
        CHECK(c.len == 7 && c.text[3] == 0xE9 && c.text[5] == 0x2603, "read %zu code points", c.len);
        corpus_free(&c);
    }
    fclose(fp);
}

TEST(data_corpus_truncated_gzip) {
    char *text = make_text(30000);
    size_t gz_len;
    unsigned char *gz = gzip_member(text, strlen(text), &gz_len);
    CHECK(gz_len > 1000, "test stream too small: %zu bytes", gz_len);
    write_file(TMP_DIR "/data_half.gz", gz, gz_len / 2);
    check_load_fails(TMP_DIR "/data_half.gz", "truncated gzip stream");
    // only the trailer's length field missing: all the text decodes, still an error
    write_file(TMP_DIR "/data_no_isize.gz", gz, gz_len - 4);
    check_load_fails(TMP_DIR "/data_no_isize.gz", "truncated gzip stream");
    // the message says where the file ended
    Corpus c;
    char err[ERR_LEN];
    char want[64];
    CHECK(corpus_load(TMP_DIR "/data_no_isize.gz", 0, CORPUS_NO_LIMIT, &c, err) == -1, "should fail");
    snprintf(want, sizeof(want), "ended after %zu bytes", gz_len - 4);
    CHECK(strstr(err, want) != NULL, "message lacks \"%s\": %s", want, err);
    // only the magic bytes
    write_file(TMP_DIR "/data_magic_only.gz", gz, 2);
    check_load_fails(TMP_DIR "/data_magic_only.gz", "truncated gzip stream");
    free(gz);
    free(text);
}

TEST(data_corpus_corrupt_gzip) {
    char *text = make_text(30000);
    size_t gz_len;
    unsigned char *gz = gzip_member(text, strlen(text), &gz_len);
    // flip a byte in the middle of the deflate data (the header is 10 bytes)
    gz[gz_len / 2] ^= 0xFF;
    write_file(TMP_DIR "/data_flipped.gz", gz, gz_len);
    check_load_fails(TMP_DIR "/data_flipped.gz", "corrupt gzip stream");
    gz[gz_len / 2] ^= 0xFF;
    // block type 11 (reserved) in the first deflate block header, right after the 10-byte
    // gzip header: zlib's own message is passed on
    unsigned char block_header = gz[10];
    gz[10] |= 0x06;
    write_file(TMP_DIR "/data_bad_block.gz", gz, gz_len);
    check_load_fails(TMP_DIR "/data_bad_block.gz", "invalid block type");
    gz[10] = block_header;
    // a damaged CRC in the trailer
    gz[gz_len - 8] ^= 0x01;
    write_file(TMP_DIR "/data_bad_crc.gz", gz, gz_len);
    check_load_fails(TMP_DIR "/data_bad_crc.gz", "incorrect data check");
    free(gz);
    free(text);
}

TEST(data_corpus_invalid_utf8_offset) {
    write_file(TMP_DIR "/data_bad_utf8.txt", "abc\xFF" "def", 7);
    check_load_fails(TMP_DIR "/data_bad_utf8.txt", "invalid UTF-8 at byte offset 3");
    // truncated sequence at the end, overlong form, surrogate
    write_file(TMP_DIR "/data_cut_utf8.txt", "ab\xE2\x80", 4);
    check_load_fails(TMP_DIR "/data_cut_utf8.txt", "invalid UTF-8 at byte offset 2");
    write_file(TMP_DIR "/data_overlong.txt", "x\xC0\xAF", 3);
    check_load_fails(TMP_DIR "/data_overlong.txt", "invalid UTF-8 at byte offset 1");
    write_file(TMP_DIR "/data_surrogate.txt", "\xC3\xA9\xED\xA0\x80", 5);
    check_load_fails(TMP_DIR "/data_surrogate.txt", "invalid UTF-8 at byte offset 2");
    // in a gzip file the offset is in the decompressed text
    char *text = make_text(30000);
    text[20000] = (char)0x80;  // a lone continuation byte
    size_t gz_len;
    unsigned char *gz = gzip_member(text, strlen(text), &gz_len);
    write_file(TMP_DIR "/data_bad_utf8.gz", gz, gz_len);
    Corpus c;
    char err[ERR_LEN];
    CHECK(corpus_load(TMP_DIR "/data_bad_utf8.gz", 0, CORPUS_NO_LIMIT, &c, err) == -1, "should fail");
    // 20000 is a lone continuation byte unless it cut a multi-byte character, in which case
    // the character it cut starts the invalid sequence: find that start the same way
    size_t want_off = 20000;
    while (want_off > 0 && ((unsigned char)text[want_off] & 0xC0) == 0x80 &&
           ((unsigned char)text[want_off - 1] & 0x80))
        want_off--;
    char want[96];
    snprintf(want, sizeof(want), "invalid UTF-8 at byte offset %zu of the decompressed text",
             want_off);
    CHECK(strstr(err, want) != NULL, "message lacks \"%s\": %s", want, err);
    free(gz);
    free(text);
}

TEST(data_corpus_empty) {
    write_file(TMP_DIR "/data_empty.txt", "", 0);
    check_load_fails(TMP_DIR "/data_empty.txt", "empty (0 characters)");
    size_t gz_len;
    unsigned char *gz = gzip_member("", 0, &gz_len);
    write_file(TMP_DIR "/data_empty.gz", gz, gz_len);
    check_load_fails(TMP_DIR "/data_empty.gz", "empty (0 characters)");
    free(gz);
}

TEST(data_corpus_bom_and_line_endings) {
    // BOM, CR LF, lone CR, CR CR LF, a final lone CR, CRs beside multi-byte characters, and
    // a U+FEFF inside the text (a zero-width no-break space there, so it stays)
    const char *raw = "\xEF\xBB\xBF" "a\r\nb\rc\r\r\n\xC3\xA9\r\xE2\x80\x94\r\n\xEF\xBB\xBF" "d\r";
    const char *clean = "a\nb\nc\n\n\xC3\xA9\n\xE2\x80\x94\n\xEF\xBB\xBF" "d\n";
    const char *kept = raw + 3;
    size_t gz_len;
    unsigned char *gz = gzip_member(raw, strlen(raw), &gz_len);
    write_file(TMP_DIR "/data_crlf.txt", raw, strlen(raw));
    write_file(TMP_DIR "/data_crlf.gz", gz, gz_len);
    const char *paths[2] = {TMP_DIR "/data_crlf.txt", TMP_DIR "/data_crlf.gz"};
    for (int i = 0; i < 2; i++) {
        check_cleanup(paths[i], 0, clean, (TextCleanup){1, 3, 4});
        check_cleanup(paths[i], 1, kept, (TextCleanup){1, 0, 0});
    }
    // text without a BOM or CR comes back untouched, with nothing reported
    write_file(TMP_DIR "/data_lf.txt", clean, strlen(clean));
    check_cleanup(TMP_DIR "/data_lf.txt", 0, clean, (TextCleanup){0, 0, 0});
    // a long CR LF text across the gzip reader's chunks: every line ending is counted once
    size_t lines = 40000;
    char *big = malloc(lines * 8 + 1), *big_lf = malloc(lines * 8 + 1);
    size_t n = 0, m = 0;
    for (size_t k = 0; k < lines; k++) {
        n += (size_t)sprintf(big + n, "%05zu\r\n", k);
        m += (size_t)sprintf(big_lf + m, "%05zu\n", k);
    }
    free(gz);
    gz = gzip_member(big, n, &gz_len);
    write_file(TMP_DIR "/data_crlf_big.gz", gz, gz_len);
    check_cleanup(TMP_DIR "/data_crlf_big.gz", 0, big_lf, (TextCleanup){0, lines, 0});
    free(big);
    free(big_lf);
    free(gz);
}

TEST(data_corpus_only_a_bom_is_empty) {
    write_file(TMP_DIR "/data_bom_only.txt", "\xEF\xBB\xBF", 3);
    check_load_fails(TMP_DIR "/data_bom_only.txt", "the corpus is empty");
}

TEST(data_text_cleanup_describe) {
    char buf[160];
    text_cleanup_describe(&(TextCleanup){0, 0, 0}, buf, sizeof(buf));
    CHECK(strcmp(buf, "") == 0, "nothing changed: '%s'", buf);
    text_cleanup_describe(&(TextCleanup){1, 0, 0}, buf, sizeof(buf));
    CHECK(strcmp(buf, "dropped a leading byte-order mark") == 0, "BOM only: '%s'", buf);
    text_cleanup_describe(&(TextCleanup){0, 12, 0}, buf, sizeof(buf));
    CHECK(strcmp(buf, "turned 12 CR LF and 0 lone CR line endings into LF") == 0, "CR LF: '%s'", buf);
    text_cleanup_describe(&(TextCleanup){1, 2, 3}, buf, sizeof(buf));
    CHECK(strcmp(buf, "dropped a leading byte-order mark; turned 2 CR LF and 3 lone CR line endings "
                      "into LF") == 0, "all: '%s'", buf);
    // a buffer too small is cut, still terminated
    text_cleanup_describe(&(TextCleanup){1, 2, 3}, buf, 10);
    CHECK(strlen(buf) == 9, "small buffer: '%s'", buf);
}

static int cmp_u32(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

TEST(data_vocab_build_matches_sort_unique) {
    // random code points over the whole range, including both ends and the BMP edge
    size_t n = 200000;
    uint32_t *text = malloc(n * sizeof(uint32_t));
    Rng rng;
    rng_seed(&rng, 42);
    for (size_t i = 0; i < n; i++) {
        uint32_t cp = (uint32_t)(i % 3 == 0 ? rng_below(&rng, 0x110000) : rng_below(&rng, 300));
        if (cp >= 0xD800 && cp <= 0xDFFF) cp -= 0x800;
        text[i] = cp;
    }
    text[10] = 0;
    text[11] = 0x10FFFF;
    text[12] = 0xFFFF;
    text[13] = 0x10000;
    Vocab v;
    char err[ERR_LEN];
    if (!CHECK(vocab_build(&v, text, n, err) == 0, "%s", err)) return;
    uint32_t *ref = malloc(n * sizeof(uint32_t));
    memcpy(ref, text, n * sizeof(uint32_t));
    qsort(ref, n, sizeof(uint32_t), cmp_u32);
    int unique = 0;
    for (size_t i = 0; i < n; i++)
        if (i == 0 || ref[i] != ref[i - 1]) ref[unique++] = ref[i];
    CHECK(v.size == unique, "vocab size %d, want %d", v.size, unique);
    CHECK(v.size == unique && memcmp(v.chars, ref, (size_t)unique * sizeof(uint32_t)) == 0,
          "vocab differs from sort+unique");
    // every character maps to its index and back
    int *tokens = malloc(n * sizeof(int));
    size_t bad = 0;
    if (CHECK(vocab_encode(&v, text, n, tokens, &bad) == 0, "encode failed at %zu", bad)) {
        size_t wrong = 0;
        for (size_t i = 0; i < n; i++)
            wrong += tokens[i] < 0 || tokens[i] >= v.size || v.chars[tokens[i]] != text[i];
        CHECK(wrong == 0, "%zu characters encode to the wrong id", wrong);
    }
    // invalid code points are rejected
    Vocab w;
    text[5] = 0x110000;
    CHECK(vocab_build(&w, text, n, err) == -1 && strstr(err, "character 5") != NULL,
          "U+110000 accepted or wrong message: %s", err);
    text[5] = 0xD800;
    CHECK(vocab_build(&w, text, n, err) == -1 && strstr(err, "U+D800") != NULL,
          "surrogate accepted or wrong message: %s", err);
    CHECK(vocab_build(&w, text, 0, err) == -1, "empty text accepted");
    free(tokens);
    free(ref);
    free(text);
    vocab_free(&v);
}

TEST(data_vocab_from_chars_validates) {
    Vocab v;
    char err[ERR_LEN];
    const uint32_t good[] = {'\n', ' ', 'A', 0xE9, 0x1F600, 0x10FFFF};
    if (CHECK(vocab_from_chars(&v, good, 6, err) == 0, "%s", err)) {
        CHECK(v.size == 6 && memcmp(v.chars, good, sizeof(good)) == 0, "wrong copy");
        CHECK(vocab_index(&v, '\n') == 0 && vocab_index(&v, 0xE9) == 3 &&
                  vocab_index(&v, 0x10FFFF) == 5,
              "vocab_index of present characters wrong");
        CHECK(vocab_index(&v, 0) == -1 && vocab_index(&v, 'B') == -1 &&
                  vocab_index(&v, 0x10FFFE) == -1 && vocab_index(&v, 0x110000) == -1,
              "vocab_index of absent characters not -1");
        vocab_free(&v);
    }
    const uint32_t dup[] = {'a', 'b', 'b'};
    CHECK(vocab_from_chars(&v, dup, 3, err) == -1 && strstr(err, "strictly increasing"),
          "duplicate accepted: %s", err);
    const uint32_t down[] = {'b', 'a'};
    CHECK(vocab_from_chars(&v, down, 2, err) == -1 && strstr(err, "entry 1"),
          "decreasing accepted: %s", err);
    const uint32_t big[] = {'a', 0x110000};
    CHECK(vocab_from_chars(&v, big, 2, err) == -1 && strstr(err, "U+110000"),
          "U+110000 accepted: %s", err);
    const uint32_t sur[] = {'a', 0xDC00};
    CHECK(vocab_from_chars(&v, sur, 2, err) == -1 && strstr(err, "U+DC00"),
          "surrogate accepted: %s", err);
    CHECK(vocab_from_chars(&v, good, 0, err) == -1 && v.chars == NULL, "empty list accepted");
}

TEST(data_vocab_encode_unknown_char_position) {
    Vocab v;
    char err[ERR_LEN];
    const uint32_t chars[] = {' ', 'a', 'b', 'c'};
    CHECK(vocab_from_chars(&v, chars, 4, err) == 0, "%s", err);
    const uint32_t text[] = {'a', 'b', ' ', 'c', 'a', 0xE9, 'z', 'a'};
    int tokens[8];
    size_t bad = 999;
    CHECK(vocab_encode(&v, text, 8, tokens, &bad) == -1, "unknown character accepted");
    CHECK(bad == 5, "bad_pos %zu, want 5", bad);
    const uint32_t cjk[] = {'c', ' ', 0x4E2D, 'a'};  // unknown beyond Latin-1 too
    CHECK(vocab_encode(&v, cjk, 4, tokens, &bad) == -1 && bad == 2,
          "U+4E2D at 2: bad_pos %zu", bad);
    CHECK(vocab_encode(&v, text, 5, tokens, &bad) == 0, "known prefix rejected");
    const int want[] = {1, 2, 0, 3, 1};
    CHECK(memcmp(tokens, want, sizeof(want)) == 0, "wrong token ids");
    vocab_free(&v);
}

// tokens[i] = i, so a window's values say where it came from
static int *position_tokens(size_t n) {
    int *t = malloc(n * sizeof(int));
    for (size_t i = 0; i < n; i++) t[i] = (int)i;
    return t;
}

TEST(data_split_sizes_and_errors) {
    int *tokens = position_tokens(1000);
    Dataset d;
    char err[ERR_LEN];
    CHECK(dataset_split(&d, tokens, 1000, 0.1f, 8, err) == 0, "%s", err);
    CHECK(d.train == tokens && d.train_len == 900 && d.val == tokens + 900 && d.val_len == 100,
          "0.1 of 1000: train %zu val %zu, want 900 and 100", d.train_len, d.val_len);
    CHECK(dataset_split(&d, tokens, 1000, 0.0f, 8, err) == 0, "%s", err);
    CHECK(d.train_len == 1000 && d.val_len == 0, "no val split: train %zu val %zu", d.train_len,
          d.val_len);
    CHECK(dataset_split(&d, tokens, 1000, 0.25f, 8, err) == 0 && d.train_len == 750,
          "0.25 of 1000: train %zu", d.train_len);
    // 1000 * 0.9 = 900 train, needs 901 for block 900
    CHECK(dataset_split(&d, tokens, 1000, 0.1f, 900, err) == -1, "short train split accepted");
    CHECK(strstr(err, "training split") && strstr(err, "900 characters") &&
              strstr(err, "at least 901") && strstr(err, "--block-size") &&
              strstr(err, "--val-fraction"),
          "train message: %s", err);
    // val has 100, block 100 needs 101
    CHECK(dataset_split(&d, tokens, 1000, 0.1f, 100, err) == -1, "short val split accepted");
    CHECK(strstr(err, "validation split") && strstr(err, "100 characters") &&
              strstr(err, "at least 101") && strstr(err, "--block-size") &&
              strstr(err, "--val-fraction"),
          "val message: %s", err);
    CHECK(dataset_split(&d, tokens, 1000, 0.1f, 99, err) == 0, "exactly block+1 rejected: %s",
          err);
    // a fraction so small that the val split is empty is still an error
    CHECK(dataset_split(&d, tokens, 1000, 1e-20f, 8, err) == -1 &&
              strstr(err, "has 0 characters"),
          "empty val split accepted: %s", err);
    CHECK(dataset_split(&d, tokens, 1000, 1.0f, 8, err) == -1, "val_fraction 1 accepted");
    CHECK(dataset_split(&d, tokens, 1000, -0.1f, 8, err) == -1, "negative fraction accepted");
    free(tokens);
}

TEST(data_train_batch_reproducible_in_range_shifted) {
    size_t n = 5000;
    int *tokens = position_tokens(n);
    Dataset d;
    char err[ERR_LEN];
    CHECK(dataset_split(&d, tokens, n, 0.2f, 32, err) == 0, "%s", err);
    int B = 16, T = 32;
    int *in1 = malloc((size_t)B * T * sizeof(int)), *tg1 = malloc((size_t)B * T * sizeof(int));
    int *in2 = malloc((size_t)B * T * sizeof(int)), *tg2 = malloc((size_t)B * T * sizeof(int));
    Rng r1, r2;
    rng_seed(&r1, 1234);
    rng_seed(&r2, 1234);
    for (int step = 0; step < 20; step++) {
        dataset_train_batch(&d, &r1, B, T, in1, tg1);
        dataset_train_batch(&d, &r2, B, T, in2, tg2);
        CHECK(memcmp(in1, in2, (size_t)B * T * sizeof(int)) == 0 &&
                  memcmp(tg1, tg2, (size_t)B * T * sizeof(int)) == 0,
              "same seed gave different batches at step %d", step);
        for (int b = 0; b < B; b++) {
            int start = in1[b * T];
            CHECK(start >= 0 && (size_t)start + T + 1 <= d.train_len,
                  "window at %d leaves the train split (%zu)", start, d.train_len);
            for (int t = 0; t < T; t++) {
                if (!CHECK(in1[b * T + t] == start + t && tg1[b * T + t] == start + t + 1,
                           "row %d is not a contiguous window with targets shifted by one", b))
                    break;
            }
        }
    }
    rng_seed(&r2, 1235);
    dataset_train_batch(&d, &r2, B, T, in2, tg2);
    rng_seed(&r1, 1234);
    dataset_train_batch(&d, &r1, B, T, in1, tg1);
    CHECK(memcmp(in1, in2, (size_t)B * T * sizeof(int)) != 0, "different seeds, same batch");
    // a split with exactly three starts: every one of 0, 1, 2 is drawn, nothing else
    Dataset small = {tokens, (size_t)T + 3, NULL, 0, NULL};
    int hits[3] = {0, 0, 0}, outside = 0;
    for (int i = 0; i < 20; i++) {
        dataset_train_batch(&small, &r1, B, T, in1, tg1);
        for (int b = 0; b < B; b++) {
            if (in1[b * T] >= 0 && in1[b * T] < 3) hits[in1[b * T]]++;
            else outside++;
        }
    }
    CHECK(outside == 0 && hits[0] > 0 && hits[1] > 0 && hits[2] > 0,
          "starts not uniform over [0, len-T-1]: %d %d %d, %d outside", hits[0], hits[1],
          hits[2], outside);
    free(in1);
    free(tg1);
    free(in2);
    free(tg2);
    free(tokens);
}

TEST(data_val_batch_fixed_and_within_split) {
    size_t n = 5000;
    int *tokens = position_tokens(n);
    Dataset d;
    char err[ERR_LEN];
    CHECK(dataset_split(&d, tokens, n, 0.1f, 16, err) == 0, "%s", err);
    int B = 4, T = 16, nb = 5;
    int *in1 = malloc((size_t)B * T * sizeof(int)), *tg1 = malloc((size_t)B * T * sizeof(int));
    int *in2 = malloc((size_t)B * T * sizeof(int)), *tg2 = malloc((size_t)B * T * sizeof(int));
    int first = -1, last = -1, prev = -1;
    for (int k = 0; k < nb; k++) {
        dataset_val_batch(&d, k, nb, B, T, in1, tg1);
        dataset_val_batch(&d, k, nb, B, T, in2, tg2);
        CHECK(memcmp(in1, in2, (size_t)B * T * sizeof(int)) == 0 &&
                  memcmp(tg1, tg2, (size_t)B * T * sizeof(int)) == 0,
              "val batch %d differs between calls", k);
        for (int b = 0; b < B; b++) {
            int start = in1[b * T];
            CHECK((size_t)start >= d.train_len && (size_t)start + T + 1 <= n,
                  "val window at %d leaves the val split [%zu, %zu)", start, d.train_len, n);
            CHECK(start > prev, "val windows not increasing: %d after %d", start, prev);
            for (int t = 0; t < T; t++) {
                if (!CHECK(in1[b * T + t] == start + t && tg1[b * T + t] == start + t + 1,
                           "val row %d is not a contiguous shifted window", b))
                    break;
            }
            if (first < 0) first = start;
            last = start;
            prev = start;
        }
    }
    // spread from the start of the split to its end
    CHECK((size_t)first == d.train_len, "first val window at %d, want %zu", first, d.train_len);
    CHECK((size_t)last + T + 1 == n, "last val window ends at %d, want %zu", last + T + 1, n);
    free(in1);
    free(tg1);
    free(in2);
    free(tg2);
    free(tokens);
}

TEST(data_tinyshakespeare_default_corpus) {
    const char *path = "data/tinyshakespeare.txt.gz";
    Corpus c;
    char err[ERR_LEN];
    if (!CHECK(corpus_load(path, 0, CORPUS_NO_LIMIT, &c, err) == 0, "%s", err)) return;
    CHECK(c.len == 1115394, "%zu characters, want 1115394", c.len);
    CHECK(c.len > 14 && c.text[0] == 'F' && c.text[13] == ':' && c.text[14] == '\n',
          "does not start \"First Citizen:\"");
    Vocab v;
    CHECK(vocab_build(&v, c.text, c.len, err) == 0, "%s", err);
    CHECK(v.size == 65, "%d distinct characters, want 65", v.size);
    CHECK(v.size > 0 && v.chars[0] == '\n' && v.chars[v.size - 1] == 'z',
          "vocab should run from '\\n' to 'z'");
    int *tokens = malloc(c.len * sizeof(int));
    size_t bad;
    CHECK(vocab_encode(&v, c.text, c.len, tokens, &bad) == 0, "encode failed at %zu", bad);
    Dataset d;
    CHECK(dataset_split(&d, tokens, c.len, 0.1f, 256, err) == 0, "%s", err);
    CHECK(d.train_len == 1003854 && d.val_len == 111540, "split %zu / %zu, want 1003854 / 111540",
          d.train_len, d.val_len);
    free(tokens);
    vocab_free(&v);
    corpus_free(&c);
}
