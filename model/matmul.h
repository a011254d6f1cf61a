// Matrix multiply for linear layers, PyTorch layout: weight is (OC, C), out = inp @ weight^T + bias.
// Cache-blocked and register-tiled, vectorised for AVX-512 or AVX2 (chosen at compile time)
// with a portable C path, parallel with OpenMP. Results do not depend on the thread count.
#ifndef CHARGPT_MATMUL_H
#define CHARGPT_MATMUL_H

// out (N, OC) = inp (N, C) @ weight (OC, C)^T + bias (OC); bias may be NULL.
void matmul_forward(float *out, const float *inp, const float *weight, const float *bias,
                    int N, int C, int OC);

// The same product as one matrix-vector product per row of inp: each row of out has the bits
// that a one-row matmul_forward gives it, whatever N is (generation decodes samples together
// and each must equal the sample decoded alone).
void matmul_forward_rows(float *out, const float *inp, const float *weight, const float *bias,
                         int N, int C, int OC);

// Backward of matmul_forward, accumulating:
//   dinp (N, C)     += dout (N, OC) @ weight (OC, C)
//   dweight (OC, C) += dout^T @ inp
//   dbias (OC)      += sum over rows of dout
// Any of dinp, dbias may be NULL (not wanted).
void matmul_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                     const float *inp, const float *weight, int N, int C, int OC);

// Name of the compiled kernel path ("avx512", "avx2" or "portable").
const char *matmul_kernel_name(void);

#endif
