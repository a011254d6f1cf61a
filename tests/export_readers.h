// Readers of the files ./generate --export writes, written apart from the writers (from the
// formats' documents, GGUF's docs/gguf.md and protobuf's encoding) so that the tests read back
// what is in a file, not what the writer meant to put there. Every read is bounded by the
// bytes it is given; a malformed file is an error, not a crash.
#ifndef CHARGPT_TEST_EXPORT_READERS_H
#define CHARGPT_TEST_EXPORT_READERS_H

#include <stddef.h>
#include <stdint.h>

// ---- GGUF

typedef struct {
    const char *key;      // points into the file (len bytes, not NUL-terminated)
    size_t key_len;
    uint32_t type;        // GGUF_TYPE_*
    uint32_t item_type;   // arrays: the items' type
    uint64_t count;       // arrays: the number of items
    const uint8_t *value; // the value's bytes (an array's: its items)
} GgufEntry;

typedef struct {
    char name[64];
    uint32_t ndim;
    uint64_t ne[4];
    uint32_t type;
    uint64_t offset;      // from the data section's start
} GgufTensorInfo;

typedef struct {
    uint32_t version;
    GgufEntry *kv;
    uint64_t n_kv;
    GgufTensorInfo *tensors;
    uint64_t n_tensors;
    size_t data_start;    // where the data section starts in the file
} GgufFile;

// Parses the len bytes of a GGUF file (kept by the caller while f is used). Returns 0, or -1
// with a message in why (256 bytes).
int gguf_read(const uint8_t *bytes, size_t len, GgufFile *f, char why[256]);
void gguf_read_free(GgufFile *f);
// The entry of key, or NULL.
const GgufEntry *gguf_entry(const GgufFile *f, const char *key);
// A string's bytes (its u64 length, then them) at p: *len and the first byte.
const char *gguf_string_at(const uint8_t *p, uint64_t *len);
// An array of strings' item i (walking the ones before it).
const char *gguf_string_item(const GgufEntry *e, uint64_t i, uint64_t *len);

// ---- protobuf

typedef struct {
    int field;
    int wire_type;
    uint64_t varint;      // wire type 0
    uint32_t fixed32;     // wire type 5
    const uint8_t *data;  // wire type 2: the bytes
    size_t len;
} ProtoField;

// Reads the field at *p (before end) and moves *p past it. Returns 1, 0 at the end, -1 when the
// bytes are not a field (an unknown wire type, a varint or length that runs past end).
int proto_read_field(const uint8_t **p, const uint8_t *end, ProtoField *f);

#endif
