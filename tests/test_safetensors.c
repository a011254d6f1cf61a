// Tests of the safetensors reader/writer and the JSON parser under it.
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "../common/rng.h"
#include "../format/json.h"
#include "../format/safetensors.h"
#include "test.h"

#define TMP_DIR "tests/tmp"

// Writes a file: u64 little-endian length of header, header, data_len bytes of data.
static void write_raw(const char *path, const char *header, size_t header_len, const void *data, size_t data_len) {
    FILE *fp = fopen(path, "wb");
    if (!fp) return;
    unsigned char len_bytes[8];
    for (int i = 0; i < 8; i++) len_bytes[i] = (unsigned char)((uint64_t)header_len >> (8 * i));
    fwrite(len_bytes, 1, 8, fp);
    fwrite(header, 1, header_len, fp);
    if (data_len) fwrite(data, 1, data_len, fp);
    fclose(fp);
}

static void write_bytes(const char *path, const unsigned char *bytes, size_t n) {
    FILE *fp = fopen(path, "wb");
    if (!fp) return;
    if (n) fwrite(bytes, 1, n, fp);
    fclose(fp);
}

// Files in TMP_DIR whose names start with prefix and contain ".tmp." (AtomicFile's temp files).
static int count_temp_files(const char *prefix) {
    DIR *dir = opendir(TMP_DIR);
    if (!dir) return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(dir)) != NULL)
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0 && strstr(e->d_name, ".tmp.")) n++;
    closedir(dir);
    return n;
}

// A small valid set of tensors: (2, 3) F32, (5) I32, a scalar, an empty (0, 4) and a 4-dim.
static float f23[6] = {1.5f, -2.25f, 3.0f, 1e-30f, -0.0f, 3.4e38f};
static int32_t i5[5] = {0, -1, 2147483647, -2147483647 - 1, 42};
static float scalar[1] = {7.0f};
static float f4d[2 * 1 * 3 * 2] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
static const StWriteTensor sample[] = {
    {"transformer.h.0.attn.c_attn.weight", ST_F32, 2, {2, 3}, f23},
    {"tokens", ST_I32, 1, {5}, i5},
    {"scalar", ST_F32, 0, {0}, scalar},
    {"empty", ST_F32, 2, {0, 4}, NULL},
    {"four.dims", ST_F32, 4, {2, 1, 3, 2}, f4d},
};
#define NUM_SAMPLE 5
static const StMeta sample_meta[] = {
    {"format", "chargpt"},
    {"quoted", "say \"hi\" \\ back\\slash\nnew line\ttab \x01 ctrl / slash"},
    {"unicode", "h\xc3\xa9llo \xe2\x98\x83 \xf0\x9d\x84\x9e \xe4\xb8\xad"},
    {"empty", ""},
    {"k\xc3\xa9y \"q\"", "v"},
};
#define NUM_SAMPLE_META 5

TEST(safetensors_round_trip) {
    test_make_dir(TMP_DIR);
    const char *path = TMP_DIR "/st_round_trip.safetensors";
    char err[ERR_LEN];
    if (!CHECK(safetensors_write(path, sample, NUM_SAMPLE, sample_meta, NUM_SAMPLE_META, NULL, err) == 0, "write: %s",
               err))
        return;
    SafeTensors st;
    if (!CHECK(safetensors_read(path, &st, err) == 0, "read: %s", err)) return;
    CHECK(st.num_tensors == NUM_SAMPLE, "num_tensors %d", st.num_tensors);
    CHECK(((uintptr_t)st.data & 7) == 0, "data not 8-byte aligned in memory");
    for (int i = 0; i < NUM_SAMPLE && i < st.num_tensors; i++) {
        const StTensor *t = &st.tensors[i];  // header order is write order
        const StWriteTensor *w = &sample[i];
        CHECK(strcmp(t->name, w->name) == 0, "tensor %d name '%s' want '%s'", i, t->name, w->name);
        CHECK(safetensors_find(&st, w->name) == t, "find '%s'", w->name);
        CHECK(t->dtype == w->dtype && t->ndim == w->ndim, "tensor '%s' dtype/ndim", w->name);
        size_t numel = 1;
        for (int d = 0; d < w->ndim; d++) {
            CHECK(t->shape[d] == w->shape[d], "tensor '%s' dim %d: %lld", w->name, d, (long long)t->shape[d]);
            numel *= (size_t)w->shape[d];
        }
        CHECK(t->nbytes == numel * 4, "tensor '%s' nbytes %zu", w->name, t->nbytes);
        if (numel > 0)
            CHECK(memcmp(safetensors_tensor_data(&st, t), w->data, numel * 4) == 0, "tensor '%s' bytes differ",
                  w->name);
    }
    CHECK(safetensors_find(&st, "nope") == NULL, "find of an absent tensor");
    CHECK(st.num_meta == NUM_SAMPLE_META, "num_meta %d", st.num_meta);
    for (int i = 0; i < NUM_SAMPLE_META; i++) {
        const char *v = safetensors_meta(&st, sample_meta[i].key);
        CHECK(v && strcmp(v, sample_meta[i].value) == 0, "metadata '%s' = '%s'", sample_meta[i].key, v ? v : "(null)");
    }
    CHECK(safetensors_meta(&st, "absent") == NULL, "absent metadata key");
    safetensors_free(&st);
    CHECK(st.tensors == NULL && st.buffer == NULL, "free resets the struct");
}

TEST(safetensors_header_aligned_and_padded) {
    test_make_dir(TMP_DIR);
    const char *path = TMP_DIR "/st_aligned.safetensors";
    char err[ERR_LEN];
    // names of every length 1..12 shift the header length through all residues mod 8
    for (int len = 1; len <= 12; len++) {
        char name[16];
        memset(name, 'a', (size_t)len);
        name[len] = '\0';
        StWriteTensor t = {name, ST_F32, 1, {2}, f23};
        if (!CHECK(safetensors_write(path, &t, 1, NULL, 0, NULL, err) == 0, "write: %s", err)) return;
        size_t n;
        unsigned char *bytes = (unsigned char *)test_read_file(path, &n);
        if (!CHECK(bytes && n > 8, "cannot read back %s", path)) return;
        uint64_t header_len = 0;
        for (int i = 7; i >= 0; i--) header_len = (header_len << 8) | bytes[i];
        CHECK((8 + header_len) % 8 == 0, "data section at offset %llu", (unsigned long long)(8 + header_len));
        CHECK(8 + header_len + 8 == n, "file is %zu bytes, header %llu", n, (unsigned long long)header_len);
        CHECK(bytes[8] == '{', "header starts with '%c'", bytes[8]);
        // the padding is spaces after the closing brace
        size_t end = 8 + header_len;
        while (end > 8 && bytes[end - 1] == ' ') end--;
        CHECK(bytes[end - 1] == '}' && 8 + header_len - end < 8, "padding of %zu bytes", (size_t)(8 + header_len - end));
        CHECK(memcmp(bytes + 8 + header_len, f23, 8) == 0, "data follows the header");
        free(bytes);
    }
}

TEST(safetensors_reads_unaligned_header) {
    // a foreign file whose data section starts at an odd offset still gives aligned data
    test_make_dir(TMP_DIR);
    const char *path = TMP_DIR "/st_unaligned.safetensors";
    const char *header = "{\"x\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,12]}}";
    size_t header_len = strlen(header);
    CHECK((8 + header_len) % 8 != 0, "the header should be unaligned for this test");
    write_raw(path, header, header_len, f23, 12);
    SafeTensors st;
    char err[ERR_LEN];
    if (!CHECK(safetensors_read(path, &st, err) == 0, "read: %s", err)) return;
    CHECK(((uintptr_t)st.data & 7) == 0, "data not 8-byte aligned in memory");
    CHECK(st.file[0] == header_len && st.file_len == 8 + header_len + 12, "file kept whole");
    const float *x = safetensors_tensor_data(&st, safetensors_find(&st, "x"));
    CHECK(x[0] == f23[0] && x[1] == f23[1] && x[2] == f23[2], "values %g %g %g", x[0], x[1], x[2]);
    safetensors_free(&st);
}

// The CRC stored under the crc key covers the whole file: length, header (with its own value
// counted as "00000000") and data.
TEST(safetensors_crc_stored) {
    test_make_dir(TMP_DIR);
    const char *path = TMP_DIR "/st_crc.safetensors";
    char err[ERR_LEN];
    if (!CHECK(safetensors_write(path, sample, NUM_SAMPLE, sample_meta, 2, "crc32", err) == 0, "write: %s", err))
        return;
    SafeTensors st;
    if (!CHECK(safetensors_read(path, &st, err) == 0, "read: %s", err)) return;
    const char *stored = safetensors_meta(&st, "crc32");
    if (!CHECK(stored != NULL, "no crc32 in the metadata")) {
        safetensors_free(&st);
        return;
    }
    CHECK(strlen(stored) == 8 && strspn(stored, "0123456789abcdef") == 8, "crc '%s' is not 8 lowercase hex", stored);
    uint32_t crc = 0;
    CHECK(safetensors_file_crc(&st, "crc32", &crc) == 0, "safetensors_file_crc refused the file it wrote");
    CHECK(strtoul(stored, NULL, 16) == crc, "stored %s, computed %08x", stored, crc);
    CHECK(safetensors_file_crc(&st, "format", &crc) == -1, "a value that is not 8 hex digits gave a CRC");
    CHECK(safetensors_file_crc(&st, "absent", &crc) == -1, "an absent key gave a CRC");
    CHECK(safetensors_meta(&st, "format") && st.num_meta == 3, "other metadata kept (%d entries)", st.num_meta);
    safetensors_free(&st);

    // independently: zlib's crc32 over the file's bytes with the stored digits as zeros
    size_t n;
    unsigned char *bytes = (unsigned char *)test_read_file(path, &n);
    char *at = strstr((char *)bytes + 8, "\"crc32\":\"");
    if (!CHECK(at != NULL, "no \"crc32\":\" in the header")) return;
    unsigned char *digits = (unsigned char *)at + 9;
    unsigned char kept[8];
    memcpy(kept, digits, 8);
    memcpy(digits, "00000000", 8);
    uLong want = crc32(crc32(0L, Z_NULL, 0), bytes, (uInt)n);
    CHECK(want == crc, "crc %08x, zlib over the file with a blank crc %08lx", crc, want);
    memcpy(digits, kept, 8);

    // the crc moves when one byte of the data, of a metadata value or of the length does
    size_t flips[] = {n - 1, (size_t)((unsigned char *)strstr((char *)bytes + 8, "chargpt") - bytes), 0};
    for (int i = 0; i < 3; i++) {
        bytes[flips[i]] ^= 1;
        write_bytes(path, bytes, n);
        bytes[flips[i]] ^= 1;
        uint32_t moved = crc;
        if (safetensors_read(path, &st, err) == 0) {
            CHECK(safetensors_file_crc(&st, "crc32", &moved) == 0 && moved != crc,
                  "crc did not change with byte %zu", flips[i]);
            safetensors_free(&st);
        } else {
            CHECK(i == 2, "byte %zu flipped: %s", flips[i], err);  // a changed length breaks the file itself
        }
    }
    free(bytes);
}

// The CRC must be written as 8 plain hex digits where the header says: escapes are refused.
TEST(safetensors_file_crc_needs_plain_digits) {
    test_make_dir(TMP_DIR);
    const char *path = TMP_DIR "/st_crc_escaped.safetensors";
    const char *header = "{\"__metadata__\":{\"crc32\":\"\\u0030000000a\",\"other\":\"0000000a\"}}";
    write_raw(path, header, strlen(header), NULL, 0);
    SafeTensors st;
    char err[ERR_LEN];
    uint32_t crc;
    if (!CHECK(safetensors_read(path, &st, err) == 0, "%s", err)) return;
    CHECK(strcmp(safetensors_meta(&st, "crc32"), "0000000a") == 0, "the escape decodes to 0000000a");
    CHECK(safetensors_file_crc(&st, "crc32", &crc) == -1, "an escaped crc value was accepted");
    CHECK(safetensors_file_crc(&st, "other", &crc) == 0, "a plain 8-digit value was refused");
    safetensors_free(&st);
}

// A header with its data section (zeros), and the words the error must contain.
typedef struct {
    const char *header;
    size_t data_len;
    const char *words[2];
} BadHeader;

static const BadHeader bad_headers[] = {
    {"{\"w\":{\"dtype\":\"F32\",}}", 0, {"invalid JSON", "line 1 column 21"}},
    {"{\"w\":{\"dtype\":\"F32\",\n\"shape\":[1] \"x\"}}", 0, {"invalid JSON", "line 2 column 13"}},
    {"[1, 2]", 0, {"not a safetensors file", NULL}},  // a header must begin with '{'
    {" {}", 0, {"not a safetensors file", NULL}},
    {"{\"w\":5}", 4, {"'w'", "not an object"}},
    {"{\"w\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4, {"'w'", "missing \"dtype\""}},
    {"{\"w\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}}", 4, {"'w'", "missing \"shape\""}},
    {"{\"w\":{\"dtype\":\"F32\",\"shape\":[1]}}", 4, {"'w'", "missing \"data_offsets\""}},
    {"{\"w\":{\"dtype\":5,\"shape\":[1],\"data_offsets\":[0,4]}}", 4, {"'w'", "dtype is not a string"}},
    {"{\"w\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4, {"'w'", "unsupported dtype 'F16'"}},
    {"{\"w\":{\"dtype\":\"F32\",\"shape\":1,\"data_offsets\":[0,4]}}", 4, {"'w'", "shape is not an array"}},
    {"{\"w\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", 4, {"'w'", "negative"}},
    {"{\"w\":{\"dtype\":\"F32\",\"shape\":[1.5],\"data_offsets\":[0,4]}}", 4, {"'w'", "not an integer"}},
    {"{\"w\":{\"dtype\":\"F32\",\"shape\":[\"1\"],\"data_offsets\":[0,4]}}", 4, {"'w'", "not an integer"}},
    {"{\"w\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1],\"data_offsets\":[0,4]}}", 4, {"'w'", "5 dimensions"}},
    {"{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0]}}", 4, {"'w'", "[begin, end]"}},
    {"{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":{}}}", 4, {"'w'", "[begin, end]"}},
    {"{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[-4,0]}}", 4, {"'w'", "non-negative"}},
    {"{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,\"4\"]}}", 4, {"'w'", "non-negative integers"}},
    {"{\"w\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[4,0]}}", 4, {"'w'", "begin 4 > end 0"}},
    {"{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 4, {"'w'", "past the data section"}},
    {"{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4, {"'w'", "size mismatch"}},
    {"{\"w\":{\"dtype\":\"I32\",\"shape\":[4611686018427387904,4],\"data_offsets\":[0,4]}}", 4,
     {"'w'", "size mismatch"}},
    {"{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
     "\"v\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}",
     12, {"overlap", "'v'"}},
    {"{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
     "\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
     8, {"duplicate tensor name", "'w'"}},
    {"{\"w\":{\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
     {"'w'", "duplicate key"}},
    {"{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8, {"gap", "'w'"}},
    {"{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 8, {"4 bytes after the last tensor", NULL}},
    {"{}", 4, {"after the last tensor", NULL}},
    {"{\"__metadata__\":{\"k\":1}}", 0, {"'k'", "not a string"}},
    {"{\"__metadata__\":{\"k\":\"v\",\"k\":\"w\"}}", 0, {"duplicate metadata key", "'k'"}},
    {"{\"__metadata__\":[]}", 0, {"__metadata__ is not an object", NULL}},
    {"{\"__metadata__\":{},\"__metadata__\":{}}", 0, {"duplicate", "__metadata__"}},
    {"{\"__metadata__\":{\"k\":\"a\\u0000b\"}}", 0, {"'k'", "NUL"}},
    {"{\"a\\u0000b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, {"'a?b'", "NUL"}},
    {"{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}} x", 4, {"invalid JSON", "after the JSON value"}},
    {"{\"w\xff\":1}", 0, {"invalid JSON", "UTF-8"}},
    {"{\"w\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[", 0,
     {"invalid JSON", "deeper"}},
    {"", 0, {"invalid JSON", "end of input"}},
};

TEST(safetensors_rejects_malformed) {
    test_make_dir(TMP_DIR);
    const char *path = TMP_DIR "/st_bad.safetensors";
    static const unsigned char zeros[16];
    char err[ERR_LEN];
    SafeTensors st;
    for (size_t i = 0; i < sizeof(bad_headers) / sizeof(bad_headers[0]); i++) {
        const BadHeader *b = &bad_headers[i];
        write_raw(path, b->header, strlen(b->header), zeros, b->data_len);
        err[0] = '\0';
        int rc = safetensors_read(path, &st, err);
        if (!CHECK(rc == -1, "case %zu accepted: %s", i, b->header)) {
            safetensors_free(&st);
            continue;
        }
        CHECK(strstr(err, path) == err, "case %zu: message does not start with the path: %s", i, err);
        for (int w = 0; w < 2; w++)
            if (b->words[w]) CHECK(strstr(err, b->words[w]), "case %zu: no \"%s\" in: %s", i, b->words[w], err);
        CHECK(st.tensors == NULL && st.buffer == NULL && st.meta == NULL, "case %zu: struct not emptied", i);
    }

    // a name of 128 bytes
    char header[512];
    snprintf(header, sizeof(header), "{\"%0128d\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 7);
    write_raw(path, header, strlen(header), zeros, 4);
    CHECK(safetensors_read(path, &st, err) == -1 && strstr(err, "128 bytes long"), "long name: %s", err);
    // ... and one of 127 is fine
    snprintf(header, sizeof(header), "{\"%0127d\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 7);
    write_raw(path, header, strlen(header), zeros, 4);
    if (CHECK(safetensors_read(path, &st, err) == 0, "127-byte name: %s", err)) safetensors_free(&st);

    // the file itself
    const char *missing = TMP_DIR "/st_does_not_exist.safetensors";
    unlink(missing);
    CHECK(safetensors_read(missing, &st, err) == -1 && strstr(err, missing) && strstr(err, "cannot open"),
          "missing file: %s", err);
    CHECK(safetensors_read(TMP_DIR, &st, err) == -1 && strstr(err, "not a regular file"), "directory: %s", err);
    write_bytes(path, (const unsigned char *)"\x02\0\0\0\0", 5);
    CHECK(safetensors_read(path, &st, err) == -1 && strstr(err, "too short"), "short file: %s", err);
    write_bytes(path, (const unsigned char *)"\x10\0\0\0\0\0\0\0{}      ", 16);
    CHECK(safetensors_read(path, &st, err) == -1 && strstr(err, "larger than the rest of the file"),
          "header length past the end: %s", err);
    write_bytes(path, (const unsigned char *)"\0\0\0\x10\0\0\0\0{}      ", 16);
    CHECK(safetensors_read(path, &st, err) == -1 && strstr(err, "absurd"), "absurd header length: %s", err);
    write_bytes(path, (const unsigned char *)"\xff\xff\xff\xff\xff\xff\xff\xff{}      ", 16);
    CHECK(safetensors_read(path, &st, err) == -1 && strstr(err, "absurd"), "header length 2^64-1: %s", err);
    // another kind of file (a run's log.csv): said to be no checkpoint, not an absurd header length
    const char *csv = "step,train_loss,val_loss,lr,tokens_seen,elapsed_s\n10,2.5,,0.001,7680,1.2\n";
    write_bytes(path, (const unsigned char *)csv, strlen(csv));
    CHECK(safetensors_read(path, &st, err) == -1 && strstr(err, "not a safetensors file (not a checkpoint)") &&
              strstr(err, "\"step,train_l\"") && !strstr(err, "absurd"), "log.csv: %s", err);
    CHECK(safetensors_parse(csv, strlen(csv), "log.csv", &st, err) == -1 && strstr(err, "not a safetensors file"),
          "log.csv in memory: %s", err);
}

// For an accepted file: every tensor lies inside the data section with the size its shape needs.
static int tensors_consistent(const SafeTensors *st) {
    size_t total = 0;
    for (int i = 0; i < st->num_tensors; i++) {
        const StTensor *t = &st->tensors[i];
        size_t numel = 1;
        for (int d = 0; d < t->ndim; d++) numel *= (size_t)t->shape[d];
        if (t->ndim < 0 || t->ndim > 4 || t->nbytes != numel * 4 || t->offset > st->data_len ||
            t->nbytes > st->data_len - t->offset || strlen(t->name) > ST_MAX_NAME)
            return 0;
        total += t->nbytes;
    }
    return total == st->data_len && st->data + st->data_len == st->file + st->file_len;
}

TEST(safetensors_rejects_every_truncation) {
    test_make_dir(TMP_DIR);
    const char *path = TMP_DIR "/st_full.safetensors";
    const char *cut = TMP_DIR "/st_truncated.safetensors";
    char err[ERR_LEN];
    if (!CHECK(safetensors_write(path, sample, NUM_SAMPLE, sample_meta, 2, "crc", err) == 0, "write: %s", err)) return;
    size_t n;
    unsigned char *bytes = (unsigned char *)test_read_file(path, &n);
    SafeTensors st;
    int accepted = 0;
    for (size_t len = 0; len < n; len++) {
        err[0] = '\0';
        if (safetensors_parse(bytes, len, cut, &st, err) == 0) {
            accepted++;
            safetensors_free(&st);
        } else {
            CHECK(strstr(err, cut) == err, "truncated to %zu: message without the path: %s", len, err);
        }
    }
    CHECK(accepted == 0, "%d truncations of a %zu-byte file accepted", accepted, n);
    write_bytes(cut, bytes, n);
    if (CHECK(safetensors_read(cut, &st, err) == 0, "whole file: %s", err)) safetensors_free(&st);
    free(bytes);
}

TEST(safetensors_survives_header_mutations) {
    // every header byte replaced by JSON-significant and odd bytes, every bit of the length
    // flipped, then random multi-byte damage: the reader returns 0 or -1, never crashes, and
    // what it accepts is self-consistent (run under ASan/valgrind for the full guarantee)
    // (in memory: safetensors_parse is what safetensors_read runs on the file's bytes)
    test_make_dir(TMP_DIR);
    const char *path = TMP_DIR "/st_mutate_src.safetensors";
    const char *mutated = "mutated.safetensors";
    char err[ERR_LEN];
    if (!CHECK(safetensors_write(path, sample, NUM_SAMPLE, sample_meta, 2, NULL, err) == 0, "write: %s", err)) return;
    size_t n;
    unsigned char *bytes = (unsigned char *)test_read_file(path, &n);
    uint64_t header_len = 0;
    for (int i = 7; i >= 0; i--) header_len = (header_len << 8) | bytes[i];
    size_t header_end = 8 + (size_t)header_len;
    static const unsigned char replacements[] = {'"', '{', '}', '[', ']', ',', ':', '\\', '0', '9', '-',
                                                 'e', '.', ' ', 'u', 0x00, 0x80, 0xff, 0xc3};
    int accepted = 0, rejected = 0, inconsistent = 0, silent = 0;
    SafeTensors st;
    unsigned char *copy = malloc(n);
    for (size_t pos = 0; pos < header_end; pos++) {
        size_t num_variants = pos < 8 ? 8 : sizeof(replacements);
        for (size_t r = 0; r < num_variants; r++) {
            memcpy(copy, bytes, n);
            if (pos < 8) copy[pos] ^= (unsigned char)(1u << r);
            else copy[pos] = replacements[r];
            if (copy[pos] == bytes[pos]) continue;
            err[0] = '\0';
            if (safetensors_parse(copy, n, mutated, &st, err) == 0) {
                accepted++;
                inconsistent += !tensors_consistent(&st);
                safetensors_free(&st);
            } else {
                rejected++;
                silent += strstr(err, mutated) != err;
            }
        }
    }
    Rng rng;
    rng_seed(&rng, 1234);
    for (int trial = 0; trial < 2000; trial++) {
        memcpy(copy, bytes, n);
        int flips = 1 + (int)rng_below(&rng, 4);
        for (int f = 0; f < flips; f++) copy[rng_below(&rng, header_end)] = (unsigned char)rng_below(&rng, 256);
        size_t len = rng_below(&rng, 4) == 0 ? (size_t)rng_below(&rng, n + 1) : n;
        err[0] = '\0';
        if (safetensors_parse(copy, len, mutated, &st, err) == 0) {
            accepted++;
            inconsistent += !tensors_consistent(&st);
            safetensors_free(&st);
        } else {
            rejected++;
            silent += strstr(err, mutated) != err;
        }
    }
    CHECK(inconsistent == 0, "%d accepted mutations are inconsistent", inconsistent);
    CHECK(silent == 0, "%d rejections without a message naming the file", silent);
    CHECK(rejected > 0 && accepted > 0, "accepted %d, rejected %d: expected both", accepted, rejected);
    free(copy);
    free(bytes);
}

TEST(safetensors_write_failure_leaves_no_trace) {
    test_make_dir(TMP_DIR);
    char err[ERR_LEN];
    // the directory does not exist: nothing is created
    const char *nodir = TMP_DIR "/st_no_such_dir/model.safetensors";
    err[0] = '\0';
    CHECK(safetensors_write(nodir, sample, NUM_SAMPLE, NULL, 0, "crc", err) == -1, "write into a missing directory");
    CHECK(strstr(err, nodir) != NULL, "message without the path: %s", err);
    struct stat sb;
    CHECK(stat(TMP_DIR "/st_no_such_dir", &sb) != 0, "directory created");

    // the target is a directory: the rename fails after the temp file was written
    const char *dir_target = TMP_DIR "/st_target_dir";
    test_make_dir(dir_target);
    CHECK(safetensors_write(dir_target, sample, NUM_SAMPLE, NULL, 0, NULL, err) == -1, "write over a directory");
    CHECK(stat(dir_target, &sb) == 0 && S_ISDIR(sb.st_mode), "directory replaced");
    CHECK(count_temp_files("st_target_dir") == 0, "temp file left behind after a failed rename");
    rmdir(dir_target);

    // an existing file survives a refused write untouched; a good write replaces it cleanly
    const char *path = TMP_DIR "/st_existing.safetensors";
    if (!CHECK(safetensors_write(path, sample, 2, NULL, 0, NULL, err) == 0, "write: %s", err)) return;
    size_t n0, n1;
    unsigned char *before = (unsigned char *)test_read_file(path, &n0);
    StWriteTensor dup[2] = {sample[0], sample[0]};
    CHECK(safetensors_write(path, dup, 2, NULL, 0, NULL, err) == -1 && strstr(err, "duplicate"), "duplicate: %s", err);
    unsigned char *after = (unsigned char *)test_read_file(path, &n1);
    CHECK(n0 == n1 && memcmp(before, after, n0) == 0, "existing file changed by a refused write");
    free(after);
    CHECK(count_temp_files("st_existing") == 0, "temp file left behind");
    CHECK(safetensors_write(path, sample, NUM_SAMPLE, NULL, 0, NULL, err) == 0, "overwrite: %s", err);
    after = (unsigned char *)test_read_file(path, &n1);
    CHECK(n1 > n0, "file not replaced (%zu -> %zu bytes)", n0, n1);
    CHECK(count_temp_files("st_existing") == 0, "temp file left behind after a good write");
    free(before);
    free(after);
}

TEST(safetensors_writer_refuses_bad_arguments) {
    test_make_dir(TMP_DIR);
    const char *path = TMP_DIR "/st_refused.safetensors";
    unlink(path);
    char err[ERR_LEN];
    char long_name[200];
    memset(long_name, 'n', 128);
    long_name[128] = '\0';
    struct {
        StWriteTensor t;
        const char *word;
    } cases[] = {
        {{long_name, ST_F32, 1, {1}, f23}, "128 bytes long"},
        {{"__metadata__", ST_F32, 1, {1}, f23}, "__metadata__"},
        {{"bad\xc3(", ST_F32, 1, {1}, f23}, "UTF-8"},
        {{"five", ST_F32, 5, {1, 1, 1, 1}, f23}, "invalid shape"},
        {{"negative", ST_F32, 1, {-1}, f23}, "invalid shape"},
        {{"nodata", ST_F32, 1, {2}, NULL}, "no data"},
        {{NULL, ST_F32, 1, {2}, f23}, "no name"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        err[0] = '\0';
        CHECK(safetensors_write(path, &cases[i].t, 1, NULL, 0, NULL, err) == -1 && strstr(err, cases[i].word) &&
                  strstr(err, path),
              "case %zu: %s", i, err);
    }
    StMeta dup_meta[2] = {{"k", "1"}, {"k", "2"}};
    CHECK(safetensors_write(path, sample, 1, dup_meta, 2, NULL, err) == -1 && strstr(err, "duplicate metadata key"),
          "duplicate metadata: %s", err);
    CHECK(safetensors_write(path, sample, 1, dup_meta, 1, "k", err) == -1 && strstr(err, "CRC key"),
          "metadata key equal to the CRC key: %s", err);
    StMeta bad_value = {"k", "\xff"};
    CHECK(safetensors_write(path, sample, 1, &bad_value, 1, NULL, err) == -1 && strstr(err, "UTF-8"),
          "invalid UTF-8 value: %s", err);
    struct stat sb;
    CHECK(stat(path, &sb) != 0, "a refused write created the file");
    CHECK(count_temp_files("st_refused") == 0, "temp file left behind");
    // no tensors at all is a valid file
    CHECK(safetensors_write(path, NULL, 0, NULL, 0, NULL, err) == 0, "empty file: %s", err);
    SafeTensors st;
    if (CHECK(safetensors_read(path, &st, err) == 0, "read empty: %s", err)) {
        CHECK(st.num_tensors == 0 && st.num_meta == 0 && st.data_len == 0, "empty file contents");
        safetensors_free(&st);
    }
}

// ---------------------------------------------------------------------------------------
// the JSON parser

#define NO_NODE_LIMIT SIZE_MAX

static int parse(const char *text, JsonDoc *doc, char err[ERR_LEN]) {
    return json_parse(text, strlen(text), NO_NODE_LIMIT, doc, err);
}

TEST(safetensors_json_values) {
    JsonDoc doc;
    char err[ERR_LEN];
    const char *text = " { \"a\" : [1, -2, 3.5, 1e3, true, false, null, \"x\", [], {}] ,\"b\":{\"c\":[[7]]}, \"\":0}\n";
    if (!CHECK(parse(text, &doc, err) == 0, "parse: %s", err)) return;
    const JsonNode *root = &doc.nodes[0];
    CHECK(root->type == JSON_OBJECT && root->count == 3 && root->size == doc.num_nodes, "root: type %d count %u",
          root->type, (unsigned)root->count);
    const JsonNode *a = json_object_get(&doc, root, "a");
    if (CHECK(a && a->type == JSON_ARRAY && a->count == 10, "a")) {
        const JsonNode *v = json_first(a);
        CHECK(v->type == JSON_NUMBER && v->is_integer && v->integer == 1 && json_number(v) == 1.0, "1");
        v = json_next(v);
        CHECK(v->is_integer && v->integer == -2, "-2");
        v = json_next(v);
        CHECK(!v->is_integer && v->number == 3.5, "3.5");
        v = json_next(v);
        CHECK(!v->is_integer && v->number == 1000.0, "1e3");
        v = json_next(v);
        CHECK(v->type == JSON_BOOL && v->boolean == 1, "true");
        v = json_next(v);
        CHECK(v->type == JSON_BOOL && v->boolean == 0, "false");
        v = json_next(v);
        CHECK(v->type == JSON_NULL, "null");
        v = json_next(v);
        CHECK(v->type == JSON_STRING && v->count == 1 && strcmp(json_string(&doc, v), "x") == 0, "\"x\"");
        v = json_next(v);
        CHECK(v->type == JSON_ARRAY && v->count == 0 && v->size == 1, "[]");
        v = json_next(v);
        CHECK(v->type == JSON_OBJECT && v->count == 0 && v->size == 1, "{}");
    }
    const JsonNode *b = json_object_get(&doc, root, "b");
    const JsonNode *c = b ? json_object_get(&doc, b, "c") : NULL;
    CHECK(c && json_first(json_first(c))->integer == 7, "b.c[0][0]");
    const JsonNode *empty_key = json_object_get(&doc, root, "");
    CHECK(empty_key && empty_key->integer == 0, "empty key");
    CHECK(json_object_get(&doc, root, "zz") == NULL && json_object_get(&doc, a, "a") == NULL, "absent keys");
    json_free(&doc);
}

TEST(safetensors_json_integers) {
    struct {
        const char *text;
        int is_integer;
        int64_t integer;
        double number;
    } cases[] = {
        {"9223372036854775807", 1, INT64_MAX, 9223372036854775807.0},
        {"-9223372036854775808", 1, INT64_MIN, -9223372036854775808.0},
        {"9223372036854775808", 0, 0, 9223372036854775808.0},
        {"18446744073709551616", 0, 0, 18446744073709551616.0},
        {"-0", 1, 0, -0.0},
        {"0", 1, 0, 0.0},
        {"1.0", 0, 0, 1.0},
        {"2E-2", 0, 0, 0.02},
        {"-12.5e+1", 0, 0, -125.0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        JsonDoc doc;
        char err[ERR_LEN];
        if (!CHECK(parse(cases[i].text, &doc, err) == 0, "%s: %s", cases[i].text, err)) continue;
        const JsonNode *v = &doc.nodes[0];
        CHECK(v->type == JSON_NUMBER && v->is_integer == cases[i].is_integer && json_number(v) == cases[i].number,
              "%s: is_integer %d number %.17g", cases[i].text, v->is_integer, v->number);
        if (cases[i].is_integer)
            CHECK(v->integer == cases[i].integer, "%s: integer %lld", cases[i].text, (long long)v->integer);
        json_free(&doc);
    }
}

TEST(safetensors_json_string_escapes) {
    JsonDoc doc;
    char err[ERR_LEN];
    const char *text = "\"q\\\" b\\\\ s\\/ \\b\\f\\n\\r\\t \\u0041\\u00e9\\u20AC \\ud834\\udd1e raw \xc3\xa9\xf0\x9f\x98\x80\"";
    const char *want = "q\" b\\ s/ \b\f\n\r\t A\xc3\xa9\xe2\x82\xac \xf0\x9d\x84\x9e raw \xc3\xa9\xf0\x9f\x98\x80";
    if (CHECK(parse(text, &doc, err) == 0, "parse: %s", err)) {
        const JsonNode *s = &doc.nodes[0];
        CHECK(s->type == JSON_STRING && s->count == strlen(want) && strcmp(json_string(&doc, s), want) == 0,
              "decoded '%s'", json_string(&doc, s));
        json_free(&doc);
    }
    // \u0000 stays in the string, counted
    if (CHECK(parse("\"a\\u0000b\"", &doc, err) == 0, "parse: %s", err)) {
        const JsonNode *s = &doc.nodes[0];
        CHECK(s->count == 3 && memcmp(json_string(&doc, s), "a\0b", 4) == 0, "embedded NUL: count %u", (unsigned)s->count);
        json_free(&doc);
    }
    // the writer's escaping round-trips every byte 1..127 and multi-byte UTF-8
    char all[160];
    int n = 0;
    for (int c = 1; c < 128; c++) all[n++] = (char)c;
    strcpy(all + n, "\xc3\xa9\xe2\x98\x83\xf0\x9d\x84\x9e");
    n += 9;
    JsonBuf buf = {0};
    json_buf_string(&buf, all, (size_t)n);
    if (CHECK(!buf.failed && json_parse(buf.data, buf.len, NO_NODE_LIMIT, &doc, err) == 0, "parse of written string: %s", err)) {
        CHECK(doc.nodes[0].count == (size_t)n && memcmp(json_string(&doc, &doc.nodes[0]), all, (size_t)n) == 0,
              "written string did not round-trip");
        json_free(&doc);
    }
    json_buf_free(&buf);
}

TEST(safetensors_json_rejects_invalid) {
    const char *bad[] = {
        "", "  ", "{", "}", "[1,]", "[,1]", "{\"a\":1,}", "{\"a\"}", "{\"a\" 1}", "{1:2}", "[1 2]", "1 2",
        "01", "-01", "1.", ".5", "+1", "-", "1e", "1e+", "0x10", "NaN", "Infinity", "1e999", "-1e999",
        "tru", "nul", "True", "\"abc", "\"\\\"", "\"\\x\"", "\"\\u12\"", "\"\\u12g4\"", "\"\\ud800\"",
        "\"\\udc00\"", "\"\\ud800\\u0041\"", "\"\\ud800x\"", "\"a\tb\"", "\"a\nb\"", "\"\x7f\x80\"",
        "\"\xc0\xaf\"", "\"\xe0\x80\xaf\"", "\"\xed\xa0\x80\"", "\"\xf4\x90\x80\x80\"", "\"\xf8\x88\x80\x80\x80\"",
        "\"\xc3\"", "\"\xe2\x82\"", "[\"a\"]]", "\xef\xbb\xbf{}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        JsonDoc doc;
        char err[ERR_LEN] = "";
        if (!CHECK(parse(bad[i], &doc, err) == -1, "accepted case %zu: %s", i, bad[i])) {
            json_free(&doc);
            continue;
        }
        CHECK(strncmp(err, "invalid JSON at line ", 21) == 0, "case %zu message: %s", i, err);
    }
    // a text with NUL inside is judged on all its bytes
    JsonDoc doc;
    char err[ERR_LEN];
    CHECK(json_parse("[1]\0[2]", 7, NO_NODE_LIMIT, &doc, err) == -1, "bytes after a NUL were ignored");
    CHECK(json_parse("[1,\n  x]", 8, NO_NODE_LIMIT, &doc, err) == -1 && strstr(err, "line 2 column 3") && strstr(err, "'x'"),
          "location: %s", err);
}

TEST(safetensors_json_depth_limit) {
    static char text[200002];
    JsonDoc doc;
    char err[ERR_LEN];
    for (int depth = JSON_MAX_DEPTH; depth <= JSON_MAX_DEPTH + 1; depth++) {
        for (int i = 0; i < depth; i++) {
            text[i] = '[';
            text[2 * depth - 1 - i] = ']';
        }
        int rc = json_parse(text, (size_t)(2 * depth), NO_NODE_LIMIT, &doc, err);
        if (depth == JSON_MAX_DEPTH) {
            if (CHECK(rc == 0, "depth %d: %s", depth, err)) {
                CHECK(doc.num_nodes == (size_t)depth && doc.nodes[0].size == (size_t)depth, "nodes %zu", doc.num_nodes);
                json_free(&doc);
            }
        } else {
            CHECK(rc == -1 && strstr(err, "deeper"), "depth %d: %s", depth, err);
        }
    }
    // hostile nesting is refused at the limit, without deep recursion
    memset(text, '[', 100000);
    memset(text + 100000, '{', 100000);
    CHECK(json_parse(text, 200000, NO_NODE_LIMIT, &doc, err) == -1 && strstr(err, "deeper"), "100000 brackets: %s", err);
    for (int i = 0; i < 30000; i++) memcpy(text + 6 * i, "{\"a\":[", 6);
    CHECK(json_parse(text, 180000, NO_NODE_LIMIT, &doc, err) == -1 && strstr(err, "deeper"), "nested objects: %s", err);
}

TEST(safetensors_json_utf8_validation) {
    CHECK(json_utf8_valid("", 0), "empty");
    const char *good = "ascii \xc2\x80 \xdf\xbf \xe0\xa0\x80 \xef\xbf\xbf \xf0\x90\x80\x80 \xf4\x8f\xbf\xbf";
    CHECK(json_utf8_valid(good, strlen(good)), "boundaries of every length");
    const char *bad[] = {"\x80", "\xc1\xbf", "\xc2", "\xe0\x9f\xbf", "\xed\xa0\x80", "\xed\xbf\xbf",
                         "\xf0\x8f\xbf\xbf", "\xf4\x90\x80\x80", "\xf5\x80\x80\x80", "\xff", "\xc2\xc2"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        CHECK(!json_utf8_valid(bad[i], strlen(bad[i])), "case %zu accepted", i);
}
