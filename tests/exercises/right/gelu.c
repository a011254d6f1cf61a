// A right exercises/gelu.c for CI (scripts/check_exercises.sh), written as a learner would:
// it must pass the checks and the training run in the exercise's own ./train, whose model
// reaches it through tests/exercises/through/gelu.c (SOLUTION=1 runs the project's ./train,
// which does not).
#include <math.h>

#include "../../../kernels/kernels.h"

void gelu_forward(float *out, const float *inp, int n) {
    for (int i = 0; i < n; i++) {
        float x = inp[i];
        out[i] = 0.5f * x * (1.0f + tanhf(0.7978845608f * (x + 0.044715f * x * x * x)));
    }
}
