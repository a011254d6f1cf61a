// A deliberately wrong exercises/layernorm.c for CI (scripts/check_exercises.sh): its loop
// runs one step too far (<= for <) and writes one float past the end of out. The checker must
// name the array and the element.
#include "../../../model/layers.h"

void layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *weight, const float *bias,
                       int N, int C) {
    for (int i = 0; i <= N * C; i++) out[i] = 0.0f;
}
