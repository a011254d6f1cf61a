// A deliberately wrong exercises/gelu.c for CI (scripts/check_exercises.sh): its loop never
// ends (the counter is never increased). The checker must stop it and say so.
#include "../../../kernels/kernels.h"

void gelu_forward(float *out, const float *inp, int n) {
    for (int i = 0; i < n;) out[i] = 0.5f * inp[i];
}
