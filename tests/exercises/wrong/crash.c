// A deliberately wrong exercises/linear.c for CI (scripts/check_exercises.sh): it writes far
// outside its arrays (an index from a wrong formula), so it crashes. The checker must say so
// and go no further.
#include "../../../kernels/kernels.h"

void linear_forward(Kernels *k, float *out, const float *inp, const float *weight, const float *bias, int N, int C,
                    int OC) {
    for (long n = 0; n < N; n++)
        for (long o = 0; o < OC; o++) out[(n * OC + o) << 40] = 0.0f;
}
