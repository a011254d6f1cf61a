// Exercise: GELU, forward (`make exercise NAME=gelu`; docs/exercises.md says how they work).
//
// Write gelu_forward: out[i] = GELU(inp[i]) for every i < n, in the tanh form GPT-2 uses,
//   GELU(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
// It is the MLP's non-linearity: x where x is large, 0 where it is very negative, smooth between.
//   out, inp (n): the MLP's hidden activations, N rows of 4C, as one flat array
//
// The project's solution, if you want to compare afterwards: kernels/plain.c, gelu_forward.
#include "../kernels/kernels.h"

void gelu_forward(float *out, const float *inp, int n) {
    // your code here
}
