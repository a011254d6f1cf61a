// Reading and writing safetensors files (https://github.com/huggingface/safetensors):
//
//   u64 little-endian N | N bytes of JSON header | data section
//
// The header maps each tensor name to {"dtype", "shape", "data_offsets": [begin, end]}
// (offsets into the data section) and may hold "__metadata__", an object of strings.
// Only F32 and I32 tensors of at most 4 dimensions are supported. The writer pads the header
// with spaces so the data section starts 8-byte aligned; tensors are packed back to back.
// The reader checks everything: a file it accepts has tensors that exactly tile the data
// section, so every tensor's bytes lie inside the file.
//
// Reading holds the file and parses its header in at most about 9 bytes of memory per header
// byte, the file's own byte included (measured: a header of "[0,0,...]" takes 9.0, one of
// empty tensors 8.4): JSON nodes of 16 bytes, at most one per 2 bytes of text, and a 184-byte
// entry per tensor. The caps below bound it whatever the header's size: at most ST_MAX_NODES
// nodes (28 MiB) and ST_MAX_TENSORS entries (23 MiB). safetensors_read_within bounds it by
// a memory limit too, counting ST_HEADER_MEMORY bytes a header byte (the nodes' 8, the
// decoded strings' 1 and the file's own 1), before anything is allocated.
#ifndef CHARGPT_SAFETENSORS_H
#define CHARGPT_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "../common/errors.h"

#define ST_MAX_NAME 127                  // bytes in a tensor name
#define ST_MAX_HEADER (100u * 1000 * 1000) // a longer header is refused as absurd
#define ST_HEADER_MEMORY 10              // bytes of memory a header byte takes at most, read and parsed
// Caps on what a header may list, far above what chargpt writes: its largest model (1024
// layers) has 12,292 parameter tensors, 36,876 with the optimizer's moments, and a checkpoint
// has about 50 metadata entries.
#define ST_MAX_TENSORS (1 << 17)
#define ST_MAX_META 4096
// The JSON values (keys included) of a header within those caps: the root, "__metadata__" and
// its object, a key and a value per metadata entry, and per tensor its name, its object,
// three keys, the dtype, the shape with up to 4 dimensions and the two data offsets.
#define ST_MAX_NODES (3 + 2 * ST_MAX_META + 14 * ST_MAX_TENSORS)

typedef enum { ST_F32, ST_I32 } StDtype;

typedef struct {
    char name[ST_MAX_NAME + 1];
    StDtype dtype;
    int ndim;          // 0..4; a 0-dim tensor holds one element
    int64_t shape[4];
    size_t offset;     // into the data section
    size_t nbytes;     // product(shape) * 4
} StTensor;

typedef struct {
    char *key;
    char *value;
} StMeta;

typedef struct {
    StTensor *tensors;  // in header order
    int num_tensors;
    int *tensor_order;  // indices into tensors, sorted by name (for lookups)
    StMeta *meta;
    size_t *meta_at;    // where each meta value is in the file (its opening quote)
    int num_meta;
    int *meta_order;    // indices into meta, sorted by key
    unsigned char *file;        // the whole file in memory
    size_t file_len;
    const unsigned char *data;  // the data section within file, 8-byte aligned in memory
    size_t data_len;
    unsigned char *buffer;      // the allocation holding file (file may start a few bytes in)
} SafeTensors;

// Reads and validates a whole file, which must be a regular file (a FIFO or device is refused
// without blocking on it). Returns 0, or -1 with a message naming the file, the problem and
// the tensor where there is one (st is then empty).
int safetensors_read(const char *path, SafeTensors *st, char err[ERR_LEN]);
// The same within max_bytes of memory (0: no limit): a file whose bytes and header's parse
// would take more is refused before it is read (returns -2 with err "PATH: reading it needs
// up to N MiB of memory (...), more than the M MiB", for the caller to say whose limit that is).
int safetensors_read_within(const char *path, double max_bytes, SafeTensors *st, char err[ERR_LEN]);
// The same for the file's header alone, its tensors checked against the file's size: the
// metadata and the tensors' names and shapes, in memory bounded by the header's size (the data
// is not read: data is NULL, and only safetensors_tensor_data and the CRCs need it).
int safetensors_read_header(const char *path, SafeTensors *st, char err[ERR_LEN]);
// The same as safetensors_read for len bytes in memory (copied); name is used in messages.
int safetensors_parse(const void *bytes, size_t len, const char *name, SafeTensors *st, char err[ERR_LEN]);
// The tensor called name, or NULL.
const StTensor *safetensors_find(const SafeTensors *st, const char *name);
// The tensor's bytes: float or int32_t values in row-major order, 4-byte aligned.
const void *safetensors_tensor_data(const SafeTensors *st, const StTensor *t);
// The metadata value for key, or NULL if absent.
const char *safetensors_meta(const SafeTensors *st, const char *key);
// zlib crc32 of the data section.
uint32_t safetensors_data_crc(const SafeTensors *st);
// zlib crc32 of the whole file (length, header, data) with the value of metadata `key` counted
// as "00000000": what safetensors_write stores under its crc_key. Returns 0, or -1 when the
// key is absent or its value is not written as exactly 8 lowercase hex digits.
int safetensors_file_crc(const SafeTensors *st, const char *key, uint32_t *crc);
void safetensors_free(SafeTensors *st);

typedef struct {
    const char *name;
    StDtype dtype;
    int ndim;
    int64_t shape[4];
    const void *data;  // product(shape) values of 4 bytes
} StWriteTensor;

// Writes atomically (AtomicFile: temp file in the same directory, fsync, rename). When crc_key
// is not NULL, stores under it in the metadata the zlib crc32 of the whole file, computed with
// that value as "00000000" (see safetensors_file_crc), as 8 lowercase hex digits, so that a
// change to any byte of the header or the data is detected. Tensors are written in the order given. Names,
// metadata keys and values must be UTF-8; names at most ST_MAX_NAME bytes, unique, and not
// "__metadata__". Returns 0, or -1 with err (an existing file at path is then untouched).
int safetensors_write(const char *path, const StWriteTensor *tensors, int num_tensors,
                      const StMeta *meta, int num_meta, const char *crc_key, char err[ERR_LEN]);

#endif
