// Protocol Buffers' wire format, written (protobuf.dev's "Encoding"): a message is a sequence
// of fields, each a key, (field number << 3) | wire type, as a varint, then the value: a
// varint (wire type 0: int64, int32, enums, bools; a negative number takes 10 bytes), a length
// as a varint then that many bytes (wire type 2: strings, bytes, nested messages, packed
// repeated numbers) or 4 little-endian bytes (wire type 5: float). A varint holds 7 bits a
// byte, lowest first, the high bit set on every byte but the last. Fields may come in any
// order; a repeated field is its key once per element.
//
// Messages are built in a growing buffer; one that holds another gets it as length-delimited
// bytes (proto_message). A field too large to copy (a tensor's data) is written by its caller
// after proto_length_prefix: its key and length.
#ifndef CHARGPT_PROTOBUF_H
#define CHARGPT_PROTOBUF_H

#include <stddef.h>
#include <stdint.h>

#define PROTO_VARINT 0
#define PROTO_LENGTH_DELIMITED 2
#define PROTO_FIXED32 5
#define PROTO_VARINT_MAX 10  // bytes of the longest varint (a negative int64)

// Start from all zeros; on allocation failure `failed` is set and later appends do nothing, so
// callers check once at the end.
typedef struct {
    uint8_t *data;
    size_t len;
    size_t cap;
    int failed;
} ProtoBuf;

void proto_varint(ProtoBuf *b, uint64_t v);
// The bytes the varint of v takes.
size_t proto_varint_size(uint64_t v);
// Fields: an integer (int64, int32, enum: negative values as their two's complement, as
// protobuf writes them), a float, bytes, a NUL-terminated string, a nested message. A
// repeated field is written once per element (proto2's default, not packed).
void proto_int(ProtoBuf *b, int field, int64_t v);
void proto_float(ProtoBuf *b, int field, float v);
void proto_bytes(ProtoBuf *b, int field, const void *data, size_t n);
void proto_string(ProtoBuf *b, int field, const char *s);
void proto_message(ProtoBuf *b, int field, const ProtoBuf *message);
// The fields of a message built apart appended to b's (the same message's).
void proto_append_fields(ProtoBuf *b, const ProtoBuf *fields);
// The key and length of a length-delimited field whose n bytes the caller writes next.
void proto_length_prefix(ProtoBuf *b, int field, uint64_t n);
void proto_buf_free(ProtoBuf *b);

#endif
