// compare_checkpoints A B [MAX_REL]: how far apart two checkpoints' tensors are, for
// tests/mpi/test_mpi.sh. For the parameters (tensors not named optimizer.*) and for the
// optimizer moments it prints the relative error ||a - b|| / ||b|| over all their values,
// and whether the files' tensors are bit-identical. Exit status: 0 when the parameters'
// relative error is at most MAX_REL (default 0: bit-identical tensors), 1 when not, 2 when
// a file cannot be read or the two do not hold the same tensors.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../format/safetensors.h"

int main(int argc, char **argv) {
    if (argc < 3 || argc > 4) {
        fprintf(stderr, "usage: %s A.safetensors B.safetensors [MAX_REL]\n", argv[0]);
        return 2;
    }
    double max_rel = argc == 4 ? atof(argv[3]) : 0.0;
    SafeTensors a, b;
    char err[ERR_LEN];
    if (safetensors_read(argv[1], &a, err) != 0 || safetensors_read(argv[2], &b, err) != 0) {
        fprintf(stderr, "%s\n", err);
        return 2;
    }
    // [0]: parameters, [1]: optimizer moments
    double diff2[2] = {0, 0}, norm2[2] = {0, 0};
    int identical = a.num_tensors == b.num_tensors;
    for (int i = 0; i < a.num_tensors; i++) {
        const StTensor *ta = &a.tensors[i], *tb = safetensors_find(&b, ta->name);
        if (!tb || tb->nbytes != ta->nbytes || ta->dtype != ST_F32) {
            fprintf(stderr, "%s: tensor %s differs in %s\n", argv[2], ta->name, tb ? "shape" : "presence");
            return 2;
        }
        const float *x = safetensors_tensor_data(&a, ta), *y = safetensors_tensor_data(&b, tb);
        int kind = strncmp(ta->name, "optimizer.", 10) == 0;
        identical &= memcmp(x, y, ta->nbytes) == 0;
        for (size_t k = 0; k < ta->nbytes / sizeof(float); k++) {
            double d = (double)x[k] - y[k];
            diff2[kind] += d * d;
            norm2[kind] += (double)y[k] * y[k];
        }
    }
    double rel[2];
    for (int k = 0; k < 2; k++) rel[k] = norm2[k] > 0 ? sqrt(diff2[k] / norm2[k]) : sqrt(diff2[k]);
    printf("parameters rel err %.3e, optimizer moments rel err %.3e, tensors %s\n", rel[0], rel[1],
           identical ? "bit-identical" : "differ");
    safetensors_free(&a);
    safetensors_free(&b);
    if (max_rel == 0.0) return identical ? 0 : 1;
    return rel[0] <= max_rel ? 0 : 1;
}
