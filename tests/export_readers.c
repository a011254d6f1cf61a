#include "export_readers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// ---- GGUF

typedef struct {
    const uint8_t *p, *end;
    int failed;
} Cursor;

static const uint8_t *take(Cursor *c, uint64_t n) {
    if (c->failed || n > (uint64_t)(c->end - c->p)) {
        c->failed = 1;
        return NULL;
    }
    const uint8_t *at = c->p;
    c->p += n;
    return at;
}

static uint64_t take_uint(Cursor *c, int bytes) {
    const uint8_t *at = take(c, (uint64_t)bytes);
    uint64_t v = 0;
    for (int i = bytes - 1; at && i >= 0; i--) v = v << 8 | at[i];  // little-endian
    return v;
}

// The bytes a value of a fixed-size type takes, or 0 for strings and arrays.
static uint64_t scalar_size(uint32_t type) {
    static const uint8_t sizes[13] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    return type < 13 ? sizes[type] : 0;
}

static void skip_string(Cursor *c) { take(c, take_uint(c, 8)); }

// Moves past a value of type (an array's items: count of item_type).
static void skip_value(Cursor *c, uint32_t type, uint32_t item_type, uint64_t count) {
    if (type == 8) skip_string(c);
    else if (type != 9) take(c, scalar_size(type));
    else if (item_type == 8)
        for (uint64_t i = 0; i < count && !c->failed; i++) skip_string(c);
    else if (item_type >= 13 || item_type == 9 || count > (uint64_t)(c->end - c->p)) c->failed = 1;
    else take(c, count * scalar_size(item_type));
}

int gguf_read(const uint8_t *bytes, size_t len, GgufFile *f, char why[256]) {
    memset(f, 0, sizeof(*f));
    Cursor c = {bytes, bytes + len, 0};
    const uint8_t *magic = take(&c, 4);
    if (!magic || memcmp(magic, "GGUF", 4) != 0) return snprintf(why, 256, "no GGUF magic"), -1;
    f->version = (uint32_t)take_uint(&c, 4);
    f->n_tensors = take_uint(&c, 8);
    f->n_kv = take_uint(&c, 8);
    if (c.failed || f->n_kv > len / 13 || f->n_tensors > len / 24) return snprintf(why, 256, "counts past the file"), -1;
    f->kv = calloc(f->n_kv + 1, sizeof(GgufEntry));
    f->tensors = calloc(f->n_tensors + 1, sizeof(GgufTensorInfo));
    if (!f->kv || !f->tensors) return snprintf(why, 256, "out of memory"), -1;
    for (uint64_t i = 0; i < f->n_kv && !c.failed; i++) {
        GgufEntry *e = &f->kv[i];
        e->key_len = take_uint(&c, 8);
        e->key = (const char *)take(&c, e->key_len);
        e->type = (uint32_t)take_uint(&c, 4);
        if (e->type == 9) e->item_type = (uint32_t)take_uint(&c, 4), e->count = take_uint(&c, 8);
        e->value = c.p;
        if (e->type > 12 || (e->type != 8 && e->type != 9 && scalar_size(e->type) == 0)) c.failed = 1;
        skip_value(&c, e->type, e->item_type, e->count);
    }
    for (uint64_t i = 0; i < f->n_tensors && !c.failed; i++) {
        GgufTensorInfo *t = &f->tensors[i];
        uint64_t name_len = take_uint(&c, 8);
        const uint8_t *name = take(&c, name_len);
        if (!name || name_len >= sizeof(t->name)) {
            c.failed = 1;
            break;
        }
        memcpy(t->name, name, name_len);
        t->ndim = (uint32_t)take_uint(&c, 4);
        if (t->ndim > 4) c.failed = 1;
        for (uint32_t d = 0; d < t->ndim && !c.failed; d++) t->ne[d] = take_uint(&c, 8);
        t->type = (uint32_t)take_uint(&c, 4);
        t->offset = take_uint(&c, 8);
    }
    if (c.failed) return snprintf(why, 256, "a key/value or tensor info runs past the file"), -1;
    f->data_start = (size_t)(c.p - bytes);
    return 0;
}

void gguf_read_free(GgufFile *f) {
    free(f->kv);
    free(f->tensors);
}

const GgufEntry *gguf_entry(const GgufFile *f, const char *key) {
    for (uint64_t i = 0; i < f->n_kv; i++)
        if (f->kv[i].key_len == strlen(key) && memcmp(f->kv[i].key, key, f->kv[i].key_len) == 0) return &f->kv[i];
    return NULL;
}

const char *gguf_string_at(const uint8_t *p, uint64_t *len) {
    Cursor c = {p, p + 8, 0};
    *len = take_uint(&c, 8);
    return (const char *)p + 8;
}

const char *gguf_string_item(const GgufEntry *e, uint64_t i, uint64_t *len) {
    const uint8_t *p = e->value;
    for (uint64_t k = 0; k < i; k++) {
        gguf_string_at(p, len);
        p += 8 + *len;
    }
    return gguf_string_at(p, len);
}

// ---- protobuf

// A varint at *p (before end): 1 with *v, or -1 when it runs past end or past 10 bytes.
static int read_varint(const uint8_t **p, const uint8_t *end, uint64_t *v) {
    *v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        if (*p >= end) return -1;
        uint8_t byte = *(*p)++;
        *v |= (uint64_t)(byte & 0x7f) << shift;
        if (!(byte & 0x80)) return 1;
    }
    return -1;
}

int proto_read_field(const uint8_t **p, const uint8_t *end, ProtoField *f) {
    if (*p >= end) return 0;
    uint64_t key;
    if (read_varint(p, end, &key) < 0) return -1;
    memset(f, 0, sizeof(*f));
    f->field = (int)(key >> 3);
    f->wire_type = (int)(key & 7);
    switch (f->wire_type) {
        case 0: return read_varint(p, end, &f->varint);
        case 2:
            if (read_varint(p, end, &f->varint) < 0 || f->varint > (uint64_t)(end - *p)) return -1;
            f->data = *p;
            f->len = (size_t)f->varint;
            *p += f->len;
            return 1;
        case 5:
            if (end - *p < 4) return -1;
            memcpy(&f->fixed32, *p, 4);
            *p += 4;
            return 1;
        default: return -1;
    }
}
