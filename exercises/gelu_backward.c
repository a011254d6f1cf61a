// Exercise: GELU, backward (`make exercise NAME=gelu_backward`; docs/exercises.md).
//
// Write gelu_backward: dinp[i] = GELU'(inp[i]) * dout[i] for every i < n, where GELU is the
// forward's 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3). The chain rule through
// tanh: d tanh(u)/dx = (1 - tanh(u)^2) du/dx.
//   dinp, inp, dout (n): the gradient written (=) into dinp, the forward's input, the output's gradient
// dinp may be dout itself (the model calls it in place), so read dout[i] before you write dinp[i].
//
// The project's solution, if you want to compare afterwards: kernels/plain.c, gelu_backward.
#include "../kernels/kernels.h"

void gelu_backward(float *dinp, const float *inp, const float *dout, int n) {
    // your code here
}
