// Exercise: LayerNorm, backward (`make exercise NAME=layernorm_backward`; docs/exercises.md).
//
// Write layernorm_backward. With xhat = (x - mean) * rstd (the normalised row) and
// g = dout * weight (the gradient reaching xhat), for each row:
//   dinp    += rstd * (g - mean(g) - xhat * mean(g * xhat))   (means over the row's C values)
//   dweight += dout * xhat,   dbias += dout                    (summed over the N rows)
// Every gradient is added to (+=), as all of model/layers.h's backwards do. The two means
// are what a change of x does to the row's own mean and variance.
//   dinp, dout, inp (N, C); dweight, dbias, weight (C); mean, rstd (N), the forward's
//
// The project's solution, if you want to compare afterwards: kernels/plain.c, layernorm_backward.
#include "../kernels/kernels.h"

void layernorm_backward(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                        const float *weight, const float *mean, const float *rstd, int N, int C) {
    // your code here
}
