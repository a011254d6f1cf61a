#include "protobuf.h"

#include <stdlib.h>
#include <string.h>

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "protobuf's fixed32 is written as it lies in memory");

static void append(ProtoBuf *b, const void *data, size_t n) {
    if (b->failed || n == 0) return;
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n) cap *= 2;
        uint8_t *grown = realloc(b->data, cap);
        if (!grown) {
            b->failed = 1;
            return;
        }
        b->data = grown;
        b->cap = cap;
    }
    memcpy(b->data + b->len, data, n);
    b->len += n;
}

void proto_varint(ProtoBuf *b, uint64_t v) {
    uint8_t bytes[PROTO_VARINT_MAX];
    size_t n = 0;
    do {
        bytes[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    append(b, bytes, n);
}

size_t proto_varint_size(uint64_t v) {
    size_t n = 1;
    while (v > 0x7f) v >>= 7, n++;
    return n;
}

static void key(ProtoBuf *b, int field, int wire_type) { proto_varint(b, (uint64_t)field << 3 | (uint64_t)wire_type); }

void proto_int(ProtoBuf *b, int field, int64_t v) {
    key(b, field, PROTO_VARINT);
    proto_varint(b, (uint64_t)v);
}

void proto_float(ProtoBuf *b, int field, float v) {
    key(b, field, PROTO_FIXED32);
    append(b, &v, sizeof(v));
}

void proto_length_prefix(ProtoBuf *b, int field, uint64_t n) {
    key(b, field, PROTO_LENGTH_DELIMITED);
    proto_varint(b, n);
}

void proto_bytes(ProtoBuf *b, int field, const void *data, size_t n) {
    proto_length_prefix(b, field, n);
    append(b, data, n);
}

void proto_string(ProtoBuf *b, int field, const char *s) { proto_bytes(b, field, s, strlen(s)); }

void proto_message(ProtoBuf *b, int field, const ProtoBuf *message) {
    if (message->failed) b->failed = 1;
    proto_bytes(b, field, message->data, message->len);
}

void proto_append_fields(ProtoBuf *b, const ProtoBuf *fields) {
    if (fields->failed) b->failed = 1;
    append(b, fields->data, fields->len);
}

void proto_buf_free(ProtoBuf *b) {
    free(b->data);
    memset(b, 0, sizeof(*b));
}
