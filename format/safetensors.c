#include "safetensors.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "../common/input_file.h"
#include "atomic_file.h"
#include "json.h"

// Tensor bytes are written and read as they lie in memory; the format is little-endian.
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "safetensors I/O assumes a little-endian host");

#define ST_DTYPE_BYTES 4  // both F32 and I32
#define CRC_DIGITS 8      // a crc32 in metadata: 8 lowercase hex digits
static const char BLANK_CRC[CRC_DIGITS + 1] = "00000000";  // its value while the crc is computed

static const char *dtype_name(StDtype d) { return d == ST_F32 ? "F32" : "I32"; }

// Writes "<path>: <message>" into err; returns -1.
static int fail(char err[ERR_LEN], const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(char err[ERR_LEN], const char *path, const char *fmt, ...) {
    int n = snprintf(err, ERR_LEN, "%s: ", path);
    if (n < 0 || n >= ERR_LEN) return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err + n, ERR_LEN - n, fmt, ap);
    va_end(ap);
    return -1;
}

// A copy of the n bytes at s fit for an error message: control bytes become '?', and
// long strings are cut (at a UTF-8 character boundary) and end in "...".
static const char *printable(const char *s, size_t n, char out[64]) {
    size_t keep = n;
    if (keep > 48) {
        keep = 48;
        while (keep > 0 && ((unsigned char)s[keep] & 0xC0) == 0x80) keep--;
    }
    for (size_t i = 0; i < keep; i++) {
        unsigned char c = (unsigned char)s[i];
        out[i] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
    }
    strcpy(out + keep, keep < n ? "..." : "");
    return out;
}

static uint32_t crc32_update(uint32_t crc, const unsigned char *p, size_t n) {
    // zlib's crc32 takes at most a uInt of bytes per call
    while (n > 0) {
        uInt chunk = n > (1u << 30) ? (1u << 30) : (uInt)n;
        crc = (uint32_t)crc32(crc, p, chunk);
        p += chunk;
        n -= chunk;
    }
    return crc;
}

// ---------------------------------------------------------------------------------------
// reading

// A safetensors file begins with its header's length, 8 bytes, then the header, a JSON object:
// a file whose ninth byte is not '{' is something else (a log.csv, a corpus), said so rather
// than its first bytes read as an absurd length.
static int check_start(const char *path, const unsigned char *first, size_t n, char err[ERR_LEN]) {
    if (n <= 8 || first[8] == '{') return 0;
    char shown[64];
    return fail(err, path, "not a safetensors file (not a checkpoint): it begins with \"%s\", where a checkpoint "
                "has its header's length in 8 bytes and then '{'",
                printable((const char *)first, n < 12 ? n : 12, shown));
}

// Checks the header length in the file's first 8 bytes against the file's size.
static int check_header_length(const char *path, const unsigned char len_bytes[8], size_t file_len,
                               size_t *header_len, char err[ERR_LEN]) {
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = (n << 8) | len_bytes[i];
    if (n > ST_MAX_HEADER)
        return fail(err, path, "header length %llu is absurd (more than %u bytes)", (unsigned long long)n,
                    ST_MAX_HEADER);
    if (n > file_len - 8)
        return fail(err, path, "header length %llu is larger than the rest of the file (%zu bytes)",
                    (unsigned long long)n, file_len - 8);
    *header_len = (size_t)n;
    return 0;
}

// Allocates st->buffer for a file of file_len bytes, placed so that its data section (after
// the 8-byte length and the header) is 8-byte aligned in memory; sets file and file_len.
static int alloc_file(const char *path, SafeTensors *st, size_t header_len, size_t file_len, char err[ERR_LEN]) {
    // malloc's result is 16-byte aligned; shift the file so that 8 + header_len lands on a multiple of 8
    size_t shift = (8 - (8 + header_len) % 8) % 8;
    st->buffer = malloc(file_len + shift);
    if (!st->buffer) return fail(err, path, "out of memory for %zu bytes", file_len);
    st->file = st->buffer + shift;
    st->file_len = file_len;
    return 0;
}

static int too_short(const char *path, size_t file_len, char err[ERR_LEN]) {
    return fail(err, path, "too short for a safetensors file (%zu bytes, the header length alone takes 8)", file_len);
}

// Refuses (-2) a read of read_len bytes whose header of header_len bytes would take the
// memory past max_bytes (> 0) once parsed.
static int check_memory(const char *path, size_t read_len, size_t header_len, double max_bytes, char err[ERR_LEN]) {
    double bytes = (double)(read_len - header_len) + ST_HEADER_MEMORY * (double)header_len;
    if (max_bytes <= 0 || bytes <= max_bytes) return 0;
    fail(err, path, "reading it needs up to %.1f MiB of memory (%zu bytes, its header of %zu parsed in up to %d bytes "
         "a byte), more than the %.1f MiB", bytes / 1048576, read_len, header_len, ST_HEADER_MEMORY,
         max_bytes / 1048576);
    return -2;
}

// Reads the file into st (see alloc_file), or with header_only its length and header alone;
// *header_len is checked against the file's size, which *data_len receives less the length
// and the header, and with the memory its parse takes against max_bytes (-2 past it).
// Opening does not wait on a FIFO: anything but a regular file is refused.
static int read_file(const char *path, SafeTensors *st, int header_only, double max_bytes, size_t *header_len,
                     size_t *data_len, char err[ERR_LEN]) {
    PlatformFileInfo sb;
    int fd = input_file_open(path, 0, &sb);
    if (fd == -1) return fail(err, path, "cannot open: %s", strerror(errno));
    if (fd == -2) return fail(err, path, "not a regular file");
    FILE *fp = fdopen(fd, "rb");
    if (!fp) {
        close(fd);
        return fail(err, path, "cannot open: %s", strerror(errno));
    }
    size_t file_len = (size_t)sb.size, read_len = file_len;
    unsigned char first[12];  // the header's length, and the start of the header
    size_t n_first = fread(first, 1, sizeof(first), fp);
    unsigned char *len_bytes = first;
    int rc = -1;
    if (file_len < 8 || n_first < 8) {
        too_short(path, file_len, err);
    } else if (fseek(fp, 8, SEEK_SET) != 0) {
        fail(err, path, "cannot seek: %s", strerror(errno));
    } else if (check_start(path, first, n_first, err) == 0 &&
               check_header_length(path, len_bytes, file_len, header_len, err) == 0 &&
               (read_len = header_only ? 8 + *header_len : file_len,
                (rc = check_memory(path, read_len, *header_len, max_bytes, err)) == 0) &&
               (rc = alloc_file(path, st, *header_len, read_len, err)) == 0) {
        rc = -1;
        memcpy(st->file, len_bytes, 8);
        size_t got = fread(st->file + 8, 1, read_len - 8, fp);
        *data_len = file_len - 8 - *header_len;
        if (got == read_len - 8) rc = 0;
        else if (ferror(fp)) fail(err, path, "read %zu of %zu bytes: %s", got + 8, read_len, strerror(errno));
        else fail(err, path, "read %zu of %zu bytes: the file shrank while being read", got + 8, read_len);
    }
    fclose(fp);
    return rc;
}

// A JSON integer >= 0, or -1.
static int64_t non_negative_integer(const JsonNode *v) {
    if (v->type != JSON_NUMBER || !v->is_integer || v->integer < 0) return -1;
    return v->integer;
}

// 1 when the string node k is exactly word (no trailing NUL-separated bytes).
static int key_is(const JsonDoc *doc, const JsonNode *k, const char *word) {
    return k->count == strlen(word) && memcmp(json_string(doc, k), word, k->count) == 0;
}

// A tensor's "shape": at most 4 non-negative integers, into t->ndim and t->shape.
static int parse_shape(const char *path, const char *name, const JsonNode *shape, StTensor *t, char err[ERR_LEN]) {
    if (shape->type != JSON_ARRAY) return fail(err, path, "tensor '%s': shape is not an array", name);
    if (shape->count > 4)
        return fail(err, path, "tensor '%s': shape has %u dimensions (at most 4)", name, (unsigned)shape->count);
    t->ndim = (int)shape->count;
    const JsonNode *d = json_first(shape);
    for (int i = 0; i < t->ndim; i++, d = json_next(d)) {
        if (d->type != JSON_NUMBER || !d->is_integer)
            return fail(err, path, "tensor '%s': shape entry %d is not an integer", name, i);
        if (d->integer < 0)
            return fail(err, path, "tensor '%s': shape entry %d is negative (%lld)", name, i,
                        (long long)d->integer);
        t->shape[i] = d->integer;
    }
    return 0;
}

// Fills t from the header entry `entry` of the tensor named by `key` (already checked to be
// a short name without NUL bytes).
static int parse_tensor_entry(const char *path, const JsonDoc *doc, const JsonNode *key, const JsonNode *entry,
                              size_t data_len, StTensor *t, char err[ERR_LEN]) {
    char name[64];
    printable(json_string(doc, key), key->count, name);
    memset(t, 0, sizeof(*t));
    memcpy(t->name, json_string(doc, key), key->count + 1);
    if (entry->type != JSON_OBJECT)
        return fail(err, path, "tensor '%s': entry is not an object", name);
    const JsonNode *dtype = NULL, *shape = NULL, *offsets = NULL;
    const JsonNode *k = json_first(entry);
    for (size_t i = 0; i < entry->count; i++, k = json_next(k + 1)) {
        const JsonNode **slot = NULL;
        if (key_is(doc, k, "dtype")) slot = &dtype;
        else if (key_is(doc, k, "shape")) slot = &shape;
        else if (key_is(doc, k, "data_offsets")) slot = &offsets;
        else continue;  // unknown keys are ignored, as the reference reader does
        if (*slot) return fail(err, path, "tensor '%s': duplicate key \"%s\"", name, json_string(doc, k));
        *slot = k + 1;
    }
    if (!dtype) return fail(err, path, "tensor '%s': missing \"dtype\"", name);
    if (!shape) return fail(err, path, "tensor '%s': missing \"shape\"", name);
    if (!offsets) return fail(err, path, "tensor '%s': missing \"data_offsets\"", name);

    if (dtype->type != JSON_STRING) return fail(err, path, "tensor '%s': dtype is not a string", name);
    const char *dtype_text = json_string(doc, dtype);
    if (strcmp(dtype_text, "F32") == 0) {
        t->dtype = ST_F32;
    } else if (strcmp(dtype_text, "I32") == 0) {
        t->dtype = ST_I32;
    } else {
        char what[64];
        return fail(err, path, "tensor '%s': unsupported dtype '%s' (only F32 and I32)", name,
                    printable(dtype_text, dtype->count, what));
    }

    if (parse_shape(path, name, shape, t, err) != 0) return -1;

    if (offsets->type != JSON_ARRAY || offsets->count != 2)
        return fail(err, path, "tensor '%s': data_offsets is not [begin, end]", name);
    int64_t begin = non_negative_integer(json_first(offsets));
    int64_t end = non_negative_integer(json_next(json_first(offsets)));
    if (begin < 0 || end < 0)
        return fail(err, path, "tensor '%s': data_offsets must be non-negative integers", name);
    if (begin > end)
        return fail(err, path, "tensor '%s': data_offsets begin %lld > end %lld", name, (long long)begin,
                    (long long)end);
    if ((uint64_t)end > data_len)
        return fail(err, path, "tensor '%s': data_offsets end %lld is past the data section (%zu bytes)", name,
                    (long long)end, data_len);
    t->offset = (size_t)begin;
    t->nbytes = (size_t)(end - begin);

    // the byte count the shape needs, saturated at UINT64_MAX (which no span can match)
    uint64_t need = ST_DTYPE_BYTES;
    for (int i = 0; i < t->ndim; i++) {
        uint64_t d = (uint64_t)t->shape[i];
        need = (d != 0 && need > UINT64_MAX / d) ? UINT64_MAX : need * d;
    }
    if (need != t->nbytes) {
        char dims[96] = "";
        for (int i = 0, n = 0; i < t->ndim; i++)
            n += snprintf(dims + n, sizeof(dims) - (size_t)n, "%s%lld", i ? ", " : "",
                          (long long)t->shape[i]);
        char needed[32] = "more than 2^64";
        if (need != UINT64_MAX) snprintf(needed, sizeof(needed), "%llu", (unsigned long long)need);
        return fail(err, path,
                    "tensor '%s': size mismatch: data_offsets span %zu bytes but shape [%s] of %s needs %s bytes",
                    name, t->nbytes, dims, dtype_name(t->dtype), needed);
    }
    return 0;
}

// Copies the "__metadata__" object's string members into st->meta.
static int parse_metadata(const char *path, const JsonDoc *doc, const JsonNode *obj, SafeTensors *st,
                          char err[ERR_LEN]) {
    if (obj->type != JSON_OBJECT) return fail(err, path, "__metadata__ is not an object");
    if (obj->count > ST_MAX_META)
        return fail(err, path, "header has %u metadata entries, more than the %d a checkpoint may have",
                    (unsigned)obj->count, ST_MAX_META);
    st->meta = calloc(obj->count ? obj->count : 1, sizeof(StMeta));
    st->meta_at = calloc(obj->count ? obj->count : 1, sizeof(size_t));
    if (!st->meta || !st->meta_at) return fail(err, path, "out of memory");
    const JsonNode *k = json_first(obj);
    for (size_t i = 0; i < obj->count; i++, k = json_next(k + 1)) {
        const JsonNode *v = k + 1;
        const char *key_text = json_string(doc, k), *value_text = json_string(doc, v);
        char key[64];
        printable(key_text, k->count, key);
        if (v->type != JSON_STRING)
            return fail(err, path, "metadata value for key '%s' is not a string", key);
        if (strlen(key_text) != k->count)
            return fail(err, path, "metadata key '%s' contains a NUL byte", key);
        if (strlen(value_text) != v->count)
            return fail(err, path, "metadata value for key '%s' contains a NUL byte", key);
        StMeta *m = &st->meta[st->num_meta];
        m->key = malloc(k->count + 1);
        m->value = malloc(v->count + 1);
        if (!m->key || !m->value) {
            free(m->key);
            free(m->value);
            return fail(err, path, "out of memory");
        }
        memcpy(m->key, key_text, k->count + 1);
        memcpy(m->value, value_text, v->count + 1);
        st->meta_at[st->num_meta] = 8 + v->offset;
        st->num_meta++;
    }
    return 0;
}

// Orders of indices into st->meta and st->tensors: negative, 0 or positive as strcmp.
typedef int IndexOrder(const SafeTensors *st, int i, int j);

static int by_meta_key(const SafeTensors *st, int i, int j) { return strcmp(st->meta[i].key, st->meta[j].key); }
static int by_tensor_name(const SafeTensors *st, int i, int j) {
    return strcmp(st->tensors[i].name, st->tensors[j].name);
}
static int by_tensor_offset(const SafeTensors *st, int i, int j) {
    const StTensor *x = &st->tensors[i], *y = &st->tensors[j];
    if (x->offset != y->offset) return x->offset < y->offset ? -1 : 1;
    if (x->nbytes != y->nbytes) return x->nbytes < y->nbytes ? -1 : 1;
    return 0;
}

// Whether index i goes before j: by order, ties by the index itself.
static int goes_before(IndexOrder *order, const SafeTensors *st, int i, int j) {
    int c = order(st, i, j);
    return c < 0 || (c == 0 && i < j);
}

static void sift_down(int *idx, int root, int n, IndexOrder *order, const SafeTensors *st) {
    for (int child; (child = 2 * root + 1) < n; root = child) {
        if (child + 1 < n && goes_before(order, st, idx[child], idx[child + 1])) child++;
        if (!goes_before(order, st, idx[root], idx[child])) return;
        int swap = idx[root];
        idx[root] = idx[child];
        idx[child] = swap;
    }
}

// Sorts the indices idx[0, n) by order, ties by index, so every C library gives the same
// order (a heap sort, in place: standard C's qsort passes its comparator no context).
static void sort_indices(int *idx, int n, IndexOrder *order, const SafeTensors *st) {
    for (int i = n / 2 - 1; i >= 0; i--) sift_down(idx, i, n, order, st);
    for (int end = n - 1; end > 0; end--) {
        int swap = idx[0];
        idx[0] = idx[end];
        idx[end] = swap;
        sift_down(idx, 0, end, order, st);
    }
}

// Sorts the tensor names and metadata keys (kept in tensor_order and meta_order for lookups)
// and refuses repeated ones, and refuses tensors that overlap, leave gaps or leave bytes after
// the last one (the format requires the data section to be tiled exactly).
static int check_layout(const char *path, SafeTensors *st, char err[ERR_LEN]) {
    st->meta_order = malloc((size_t)(st->num_meta ? st->num_meta : 1) * sizeof(int));
    st->tensor_order = malloc((size_t)(st->num_tensors ? st->num_tensors : 1) * sizeof(int));
    int *by_offset = malloc((size_t)(st->num_tensors ? st->num_tensors : 1) * sizeof(int));
    int rc = 0;
    if (!st->meta_order || !st->tensor_order || !by_offset) {
        free(by_offset);
        return fail(err, path, "out of memory");
    }
    char a[64], b[64];
    for (int i = 0; i < st->num_meta; i++) st->meta_order[i] = i;
    sort_indices(st->meta_order, st->num_meta, by_meta_key, st);
    for (int i = 1; i < st->num_meta && rc == 0; i++) {
        const char *key = st->meta[st->meta_order[i]].key;
        if (strcmp(st->meta[st->meta_order[i - 1]].key, key) == 0)
            rc = fail(err, path, "duplicate metadata key '%s'", printable(key, strlen(key), a));
    }

    for (int i = 0; i < st->num_tensors; i++) st->tensor_order[i] = by_offset[i] = i;
    sort_indices(st->tensor_order, st->num_tensors, by_tensor_name, st);
    for (int i = 1; i < st->num_tensors && rc == 0; i++) {
        const char *name = st->tensors[st->tensor_order[i]].name;
        if (strcmp(st->tensors[st->tensor_order[i - 1]].name, name) == 0)
            rc = fail(err, path, "duplicate tensor name '%s'", printable(name, strlen(name), a));
    }

    sort_indices(by_offset, st->num_tensors, by_tensor_offset, st);
    size_t pos = 0;  // end of the tensors so far
    for (int i = 0; i < st->num_tensors && rc == 0; i++) {
        const StTensor *t = &st->tensors[by_offset[i]];
        if (t->offset < pos) {
            const StTensor *prev = &st->tensors[by_offset[i - 1]];
            rc = fail(err, path, "tensors '%s' and '%s' overlap in the data section",
                      printable(prev->name, strlen(prev->name), a), printable(t->name, strlen(t->name), b));
        } else if (t->offset > pos) {
            rc = fail(err, path, "data section has a gap: bytes %zu..%zu before tensor '%s' belong to no tensor", pos,
                      t->offset, printable(t->name, strlen(t->name), a));
        }
        pos = t->offset + t->nbytes;
    }
    if (rc == 0 && pos != st->data_len)
        rc = fail(err, path, "data section has %zu bytes after the last tensor", st->data_len - pos);
    free(by_offset);
    return rc;
}

// Parses and checks the JSON header, filling tensors and meta.
static int parse_header(const char *path, SafeTensors *st, const char *header, size_t header_len,
                        char err[ERR_LEN]) {
    JsonDoc doc;
    char json_err[ERR_LEN];
    int rc = json_parse(header, header_len, ST_MAX_NODES, &doc, json_err);
    if (rc == -2)
        return fail(err, path, "header holds more than %d JSON values, more than a checkpoint of at most %d "
                    "tensors and %d metadata entries needs", ST_MAX_NODES, ST_MAX_TENSORS, ST_MAX_META);
    if (rc != 0) return fail(err, path, "header: %s", json_err);
    const JsonNode *root = &doc.nodes[0];
    if (root->type != JSON_OBJECT) {
        rc = fail(err, path, "header is not a JSON object");
        goto done;
    }
    // the members are the tensors and at most one __metadata__
    st->tensors = calloc(root->count < ST_MAX_TENSORS ? root->count + 1 : ST_MAX_TENSORS, sizeof(StTensor));
    if (!st->tensors) {
        rc = fail(err, path, "out of memory");
        goto done;
    }
    int seen_metadata = 0;
    const JsonNode *k = json_first(root);
    for (size_t i = 0; i < root->count && rc == 0; i++, k = json_next(k + 1)) {
        char name[64];
        printable(json_string(&doc, k), k->count, name);
        if (key_is(&doc, k, "__metadata__")) {
            if (seen_metadata) rc = fail(err, path, "duplicate key '__metadata__'");
            else rc = parse_metadata(path, &doc, k + 1, st, err);
            seen_metadata = 1;
        } else if (k->count > ST_MAX_NAME) {
            rc = fail(err, path, "tensor name '%s' is %u bytes long (at most %d)", name, (unsigned)k->count,
                      ST_MAX_NAME);
        } else if (strlen(json_string(&doc, k)) != k->count) {
            rc = fail(err, path, "tensor name '%s' contains a NUL byte", name);
        } else if (st->num_tensors == ST_MAX_TENSORS) {
            rc = fail(err, path, "header lists more than %d tensors, the most a checkpoint may have",
                      ST_MAX_TENSORS);
        } else {
            rc = parse_tensor_entry(path, &doc, k, k + 1, st->data_len, &st->tensors[st->num_tensors], err);
            if (rc == 0) st->num_tensors++;
        }
    }
    if (rc == 0) rc = check_layout(path, st, err);
done:
    json_free(&doc);
    return rc;
}

// Parses st->file, whose header length was checked (header_len), with data_len bytes of data
// after it in the file.
static int parse_file(const char *path, SafeTensors *st, size_t header_len, size_t data_len, char err[ERR_LEN]) {
    st->data = st->file + 8 + header_len;
    st->data_len = data_len;
    return parse_header(path, st, (const char *)st->file + 8, header_len, err);
}

static int read_and_parse(const char *path, SafeTensors *st, int header_only, double max_bytes, char err[ERR_LEN]) {
    memset(st, 0, sizeof(*st));
    size_t header_len = 0, data_len = 0;
    int rc = read_file(path, st, header_only, max_bytes, &header_len, &data_len, err);
    if (rc != 0 || parse_file(path, st, header_len, data_len, err) != 0) {
        safetensors_free(st);
        return rc == -2 ? -2 : -1;
    }
    if (header_only) st->data = NULL;  // the data was not read
    return 0;
}

int safetensors_read(const char *path, SafeTensors *st, char err[ERR_LEN]) {
    return read_and_parse(path, st, 0, 0.0, err);
}

int safetensors_read_within(const char *path, double max_bytes, SafeTensors *st, char err[ERR_LEN]) {
    return read_and_parse(path, st, 0, max_bytes, err);
}

int safetensors_read_header(const char *path, SafeTensors *st, char err[ERR_LEN]) {
    return read_and_parse(path, st, 1, 0.0, err);
}

int safetensors_parse(const void *bytes, size_t len, const char *name, SafeTensors *st, char err[ERR_LEN]) {
    memset(st, 0, sizeof(*st));
    if (len < 8) return too_short(name, len, err);
    size_t header_len = 0;
    if (check_start(name, bytes, len < 12 ? len : 12, err) != 0 ||
        check_header_length(name, bytes, len, &header_len, err) != 0 ||
        alloc_file(name, st, header_len, len, err) != 0) {
        safetensors_free(st);
        return -1;
    }
    memcpy(st->file, bytes, len);
    if (parse_file(name, st, header_len, len - 8 - header_len, err) != 0) {
        safetensors_free(st);
        return -1;
    }
    return 0;
}

const StTensor *safetensors_find(const SafeTensors *st, const char *name) {
    int lo = 0, hi = st->num_tensors;  // binary search of tensor_order
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        const StTensor *t = &st->tensors[st->tensor_order[mid]];
        int c = strcmp(t->name, name);
        if (c == 0) return t;
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

const void *safetensors_tensor_data(const SafeTensors *st, const StTensor *t) { return st->data + t->offset; }

// The index in st->meta of key, or -1.
static int find_meta(const SafeTensors *st, const char *key) {
    int lo = 0, hi = st->num_meta;  // binary search of meta_order
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        int c = strcmp(st->meta[st->meta_order[mid]].key, key);
        if (c == 0) return st->meta_order[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return -1;
}

const char *safetensors_meta(const SafeTensors *st, const char *key) {
    int i = find_meta(st, key);
    return i >= 0 ? st->meta[i].value : NULL;
}

uint32_t safetensors_data_crc(const SafeTensors *st) { return crc32_update(0, st->data, st->data_len); }

int safetensors_file_crc(const SafeTensors *st, const char *key, uint32_t *crc) {
    int i = find_meta(st, key);
    if (i < 0) return -1;
    // the value as written must be a quote, 8 digits and a quote: no escapes
    const char *value = st->meta[i].value;
    size_t digits = st->meta_at[i] + 1;
    if (strlen(value) != CRC_DIGITS || strspn(value, "0123456789abcdef") != CRC_DIGITS ||
        memcmp(st->file + digits, value, CRC_DIGITS) != 0)
        return -1;
    uint32_t c = crc32_update(0, st->file, digits);
    c = crc32_update(c, (const unsigned char *)BLANK_CRC, CRC_DIGITS);
    *crc = crc32_update(c, st->file + digits + CRC_DIGITS, st->file_len - digits - CRC_DIGITS);
    return 0;
}

void safetensors_free(SafeTensors *st) {
    for (int i = 0; i < st->num_meta; i++) {
        free(st->meta[i].key);
        free(st->meta[i].value);
    }
    free(st->meta);
    free(st->meta_at);
    free(st->meta_order);
    free(st->tensors);
    free(st->tensor_order);
    free(st->buffer);
    memset(st, 0, sizeof(*st));
}

// ---------------------------------------------------------------------------------------
// writing

// Bytes of a tensor to write, or -1 for an invalid shape.
static int64_t write_tensor_bytes(const StWriteTensor *t) {
    if (t->ndim < 0 || t->ndim > 4) return -1;
    uint64_t n = ST_DTYPE_BYTES;
    for (int i = 0; i < t->ndim; i++) {
        if (t->shape[i] < 0) return -1;
        if (t->shape[i] > 0 && n > (uint64_t)INT64_MAX / (uint64_t)t->shape[i]) return -1;
        n *= (uint64_t)t->shape[i];
    }
    return (int64_t)n;
}

// Checks the arguments of safetensors_write.
static int check_write_args(const char *path, const StWriteTensor *tensors, int num_tensors, const StMeta *meta,
                            int num_meta, const char *crc_key, char err[ERR_LEN]) {
    char a[64];
    if (num_tensors < 0 || num_meta < 0) return fail(err, path, "negative tensor or metadata count");
    if (num_tensors > ST_MAX_TENSORS || num_meta > ST_MAX_META)
        return fail(err, path, "%d tensors and %d metadata entries: at most %d and %d can be read back", num_tensors,
                    num_meta, ST_MAX_TENSORS, ST_MAX_META);
    for (int i = 0; i < num_tensors; i++) {
        const StWriteTensor *t = &tensors[i];
        if (!t->name) return fail(err, path, "tensor %d has no name", i);
        size_t len = strlen(t->name);
        printable(t->name, len, a);
        if (len > ST_MAX_NAME)
            return fail(err, path, "tensor name '%s' is %zu bytes long (at most %d)", a, len, ST_MAX_NAME);
        if (!json_utf8_valid(t->name, len)) return fail(err, path, "tensor name '%s' is not valid UTF-8", a);
        if (strcmp(t->name, "__metadata__") == 0)
            return fail(err, path, "'__metadata__' cannot name a tensor");
        if (t->dtype != ST_F32 && t->dtype != ST_I32) return fail(err, path, "tensor '%s': unknown dtype", a);
        int64_t nbytes = write_tensor_bytes(t);
        if (nbytes < 0) return fail(err, path, "tensor '%s': invalid shape (ndim %d)", a, t->ndim);
        if (nbytes > 0 && !t->data) return fail(err, path, "tensor '%s': no data", a);
        for (int j = 0; j < i; j++)
            if (strcmp(tensors[j].name, t->name) == 0)
                return fail(err, path, "duplicate tensor name '%s'", a);
    }
    for (int i = 0; i < num_meta; i++) {
        const StMeta *m = &meta[i];
        if (!m->key || !m->value) return fail(err, path, "metadata entry %d has no key or value", i);
        printable(m->key, strlen(m->key), a);
        if (!json_utf8_valid(m->key, strlen(m->key)))
            return fail(err, path, "metadata key '%s' is not valid UTF-8", a);
        if (!json_utf8_valid(m->value, strlen(m->value)))
            return fail(err, path, "metadata value for key '%s' is not valid UTF-8", a);
        if (crc_key && strcmp(m->key, crc_key) == 0)
            return fail(err, path, "metadata key '%s' is also the CRC key", a);
        for (int j = 0; j < i; j++)
            if (strcmp(meta[j].key, m->key) == 0) return fail(err, path, "duplicate metadata key '%s'", a);
    }
    if (crc_key && !json_utf8_valid(crc_key, strlen(crc_key)))
        return fail(err, path, "CRC key '%s' is not valid UTF-8", printable(crc_key, strlen(crc_key), a));
    return 0;
}

// Builds the header: metadata first, then tensors packed back to back in the order given;
// padded with spaces so that 8 + its length is a multiple of 8. With a crc_key, its value is
// BLANK_CRC, at *crc_at in the header.
static void build_header(JsonBuf *h, const StWriteTensor *tensors, int num_tensors, const StMeta *meta,
                         int num_meta, const char *crc_key, size_t *crc_at) {
    json_buf_append(h, "{", 1);
    int members = 0;
    if (num_meta > 0 || crc_key) {
        json_buf_append(h, "\"__metadata__\":{", 16);
        for (int i = 0; i < num_meta; i++) {
            if (i > 0) json_buf_append(h, ",", 1);
            json_buf_string(h, meta[i].key, strlen(meta[i].key));
            json_buf_append(h, ":", 1);
            json_buf_string(h, meta[i].value, strlen(meta[i].value));
        }
        if (crc_key) {
            if (num_meta > 0) json_buf_append(h, ",", 1);
            json_buf_string(h, crc_key, strlen(crc_key));
            json_buf_append(h, ":\"", 2);
            *crc_at = h->len;
            json_buf_append(h, BLANK_CRC, CRC_DIGITS);
            json_buf_append(h, "\"", 1);
        }
        json_buf_append(h, "}", 1);
        members++;
    }
    size_t offset = 0;
    for (int i = 0; i < num_tensors; i++) {
        const StWriteTensor *t = &tensors[i];
        size_t nbytes = (size_t)write_tensor_bytes(t);
        if (members++ > 0) json_buf_append(h, ",", 1);
        json_buf_string(h, t->name, strlen(t->name));
        json_buf_printf(h, ":{\"dtype\":\"%s\",\"shape\":[", dtype_name(t->dtype));
        for (int d = 0; d < t->ndim; d++) json_buf_printf(h, "%s%lld", d ? "," : "", (long long)t->shape[d]);
        json_buf_printf(h, "],\"data_offsets\":[%zu,%zu]}", offset, offset + nbytes);
        offset += nbytes;
    }
    json_buf_append(h, "}", 1);
    while (!h->failed && (8 + h->len) % 8 != 0) json_buf_append(h, " ", 1);
}

int safetensors_write(const char *path, const StWriteTensor *tensors, int num_tensors, const StMeta *meta,
                      int num_meta, const char *crc_key, char err[ERR_LEN]) {
    if (check_write_args(path, tensors, num_tensors, meta, num_meta, crc_key, err) != 0) return -1;
    JsonBuf header = {0};
    size_t crc_at = 0;
    build_header(&header, tensors, num_tensors, meta, num_meta, crc_key, &crc_at);
    if (header.failed) {
        json_buf_free(&header);
        return fail(err, path, "out of memory for the header");
    }
    if (header.len > ST_MAX_HEADER) {
        json_buf_free(&header);
        return fail(err, path, "header would be larger than %u bytes", ST_MAX_HEADER);
    }
    unsigned char len_bytes[8];
    for (int i = 0; i < 8; i++) len_bytes[i] = (unsigned char)((uint64_t)header.len >> (8 * i));
    if (crc_key) {
        // the file's bytes in order, the crc value still blank; then the value filled in
        uint32_t crc = crc32_update(0, len_bytes, 8);
        crc = crc32_update(crc, (const unsigned char *)header.data, header.len);
        for (int i = 0; i < num_tensors; i++)
            crc = crc32_update(crc, tensors[i].data, (size_t)write_tensor_bytes(&tensors[i]));
        char digits[CRC_DIGITS + 1];
        snprintf(digits, sizeof(digits), "%08" PRIx32, crc);
        memcpy(header.data + crc_at, digits, CRC_DIGITS);
    }

    AtomicFile f;
    if (atomic_file_open(&f, path, err) != 0) {
        json_buf_free(&header);
        return -1;
    }
    // write errors are sticky in the FILE and reported by the commit
    fwrite(len_bytes, 1, 8, f.fp);
    fwrite(header.data, 1, header.len, f.fp);
    json_buf_free(&header);
    for (int i = 0; i < num_tensors; i++) {
        size_t nbytes = (size_t)write_tensor_bytes(&tensors[i]);
        if (nbytes > 0) fwrite(tensors[i].data, 1, nbytes, f.fp);
    }
    return atomic_file_commit(&f, err);
}
