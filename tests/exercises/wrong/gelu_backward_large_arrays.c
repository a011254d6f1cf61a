// A deliberately wrong exercises/gelu_backward.c for CI (scripts/check_exercises.sh): right
// on the checks' small arrays, wrong on the model's (it stops after 4096 values, as a
// fixed-size buffer would make it), so only the training run can see it; that it does shows
// that the run has the learner's backward in its loop (the model reaches it through
// tests/exercises/through/gelu.c).
#include <math.h>

#include "../../../kernels/kernels.h"

void gelu_backward(float *dinp, const float *inp, const float *dout, int n) {
    for (int i = 0; i < n && i < 4096; i++) {
        float x = inp[i];
        float th = tanhf(0.7978845608f * (x + 0.044715f * x * x * x));
        float du = 0.7978845608f * (1.0f + 3.0f * 0.044715f * x * x);
        dinp[i] = (0.5f * (1.0f + th) + 0.5f * x * (1.0f - th * th) * du) * dout[i];
    }
}
