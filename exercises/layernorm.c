// Exercise: LayerNorm, forward (`make exercise NAME=layernorm`; docs/exercises.md).
//
// Write layernorm_forward: each of the N rows x of C values is normalised to mean 0 and
// variance 1, then scaled and shifted per channel:
//   out = (x - mean) * rstd * weight + bias,   rstd = 1 / sqrt(var + 1e-5)   (LAYERNORM_EPS)
// var is the biased variance, the mean of (x - mean)^2 (divide by C). Keep each row's mean
// and rstd: the backward reads them.
//   out, inp (N, C); mean, rstd (N) written; weight, bias (C)
//
// The project's solution, if you want to compare afterwards: kernels/plain.c, layernorm_forward.
#include "../kernels/kernels.h"

void layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *weight, const float *bias,
                       int N, int C) {
    // your code here
}
