// Fuzz target: the safetensors reader.
#include <stdlib.h>
#include <string.h>

#include "../../format/safetensors.h"
#include "fuzz.h"

int fuzz_safetensors(const uint8_t *data, size_t size) {
    SafeTensors st;
    char err[ERR_LEN];
    if (safetensors_parse(data, size, "fuzz", &st, err) != 0) {
        if (strncmp(err, "fuzz: ", 6) != 0) abort();
        return 0;
    }
    // what it accepts: tensors that tile the data section exactly, each the size of its shape,
    // each found by its name; metadata found by its key
    static volatile unsigned char sink;  // reads of every tensor byte that are not optimised away
    size_t total = 0;
    for (int i = 0; i < st.num_tensors; i++) {
        const StTensor *t = &st.tensors[i];
        size_t numel = 1;
        for (int d = 0; d < t->ndim; d++) numel *= (size_t)t->shape[d];
        if (t->ndim < 0 || t->ndim > 4 || t->nbytes != numel * 4 || t->offset > st.data_len ||
            t->nbytes > st.data_len - t->offset || safetensors_find(&st, t->name) != t)
            abort();
        const unsigned char *bytes = safetensors_tensor_data(&st, t);
        for (size_t k = 0; k < t->nbytes; k++) sink ^= bytes[k];
        total += t->nbytes;
    }
    if (total != st.data_len || st.data + st.data_len != st.file + st.file_len) abort();
    for (int i = 0; i < st.num_meta; i++) {
        if (safetensors_meta(&st, st.meta[i].key) != st.meta[i].value) abort();
        uint32_t crc;
        safetensors_file_crc(&st, st.meta[i].key, &crc);
    }
    safetensors_data_crc(&st);
    safetensors_free(&st);
    return 0;
}
