// Exercise: the linear layer, forward (`make exercise NAME=linear`; docs/exercises.md).
//
// Write linear_forward: out = inp @ weight^T + bias, in PyTorch's layout, that is
//   out[n][o] = bias[o] + the sum over c of inp[n][c] * weight[o][c]
// for each of the N rows and OC outputs. bias may be NULL (the output head has none): then
// there is no bias term.
//   out (N, OC) written, inp (N, C), weight (OC, C), bias (OC) or NULL; row-major, so
//   inp[n][c] is inp[n * C + c]
// k is the kernels' workspace; yours can leave it alone (the project's fast kernels use it).
//
// The project's solution, if you want to compare afterwards: kernels/plain.c, linear_forward.
#include "../kernels/kernels.h"

void linear_forward(Kernels *k, float *out, const float *inp, const float *weight, const float *bias, int N, int C,
                    int OC) {
    // your code here
}
