// Exercise: the linear layer, backward (`make exercise NAME=linear_backward`; docs/exercises.md).
//
// Write linear_backward, the gradients of out = inp @ weight^T + bias given dout:
//   dinp (N, C)     = dout @ weight,        dinp[n][c] = sum over o of dout[n][o] weight[o][c]   (written, =)
//   dweight (OC, C) += dout^T @ inp,        dweight[o][c] += sum over n of dout[n][o] inp[n][c]  (added, +=)
//   dbias (OC)      += the sum of dout's rows                                                     (added, +=)
// The parameters' gradients are added to because a weight's gradient sums over every use of
// it; dinp is written. dinp and dbias may be NULL (not wanted): then skip them.
//   dout (N, OC), inp (N, C) the forward's input, weight (OC, C)
// k is the kernels' workspace; yours can leave it alone.
//
// The project's solution, if you want to compare afterwards: kernels/plain.c, linear_backward.
#include "../kernels/kernels.h"

void linear_backward(Kernels *k, float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                     const float *weight, int N, int C, int OC) {
    // your code here
}
