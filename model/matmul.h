// Matrix multiply for linear layers, PyTorch layout: weight is (OC, C), out = inp @ weight^T + bias.
// Cache-blocked and register-tiled, vectorised for AVX-512 or AVX2 (chosen at compile time)
// with a portable C path. Team functions (parallel.h): called by every thread of a team they
// share the work; called from serial code they start a team of their own for a large
// product. Results do not depend on the thread count.
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

// The same register-tiled products for attention's small matrices, on the calling thread:
//   c (M, N) = A (M, K) @ B (K, N), or c += with MATMUL_ADD,
// A(i, k) = a[i*lda + k], or a[k*lda + i] with MATMUL_A_T (a holds A transposed);
// B(k, j) = b[k*ldb + j], or b[j*ldb + k] with MATMUL_B_T.
// At most one triangle flag says which work can be skipped, without changing any result:
//   MATMUL_LOWER         only c(i, j) with j <= i is wanted (tiles that cross the
//                        diagonal are written whole: the caller overwrites what is above)
//   MATMUL_A_ZERO_ABOVE  A(i, k) is 0 for k > i (MATMUL_ADD not needed)
//   MATMUL_A_ZERO_BELOW  A(i, k) is 0 for k < i (only with MATMUL_ADD)
// Each c(i, j) is one chain over k in order, as in the products above.
enum {
    MATMUL_A_T = 1,
    MATMUL_B_T = 2,
    MATMUL_ADD = 4,
    MATMUL_LOWER = 8,
    MATMUL_A_ZERO_ABOVE = 16,
    MATMUL_A_ZERO_BELOW = 32,
};
void matmul_small(float *c, long ldc, const float *a, long lda, const float *b, long ldb,
                  int M, int N, int K, int flags);

// Name of the compiled kernel path ("avx512", "avx2" or "portable").
const char *matmul_kernel_name(void);

#endif
