// A deliberately wrong exercises/gelu.c for CI (scripts/check_exercises.sh): right on the
// checks' small arrays, wrong on the model's (it stops after 4096 values, as a fixed-size
// buffer would make it), so only the training run can see it. It must part from the
// project's at step 1, which also shows that the run has the learner's function in its loop.
#include <math.h>

#include "../../../kernels/kernels.h"

void gelu_forward(float *out, const float *inp, int n) {
    for (int i = 0; i < n && i < 4096; i++) {
        float x = inp[i];
        out[i] = 0.5f * x * (1.0f + tanhf(0.7978845608f * (x + 0.044715f * x * x * x)));
    }
}
