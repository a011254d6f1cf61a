// Private to matmul: the per-instruction-set inner kernels that matmul.c drives.
// Exactly one of matmul_avx512.c, matmul_avx2.c, matmul_portable.c compiles to code,
// picked by the compiler's target flags; the others are empty.
#ifndef CHARGPT_MATMUL_KERNELS_H
#define CHARGPT_MATMUL_KERNELS_H

#if defined(__AVX512F__)
#define MATMUL_KERNEL_NAME "avx512"
#define MR 14  // rows of a register tile: one broadcast each
#define NR 32  // columns of a register tile: two 16-float vectors
#elif defined(__AVX2__) && defined(__FMA__)
#define MATMUL_KERNEL_NAME "avx2"
#define MR 6
#define NR 16  // two 8-float vectors
#else
#define MATMUL_KERNEL_NAME "portable"
#define MR 4
#define NR 8
#endif

// One register tile, c (MR, NR) = start + sum over k < kc of A(i, k) B(k, j), where
//   A(i, k) = a[i*lda + k] when a_kmajor is 0 (rows of A contiguous in k),
//   A(i, k) = a[k*lda + i] when a_kmajor is 1 (the MR values of one k contiguous),
//   B(k, j) = b[k*ldb + j],
//   start is c's own values when start_row is NULL, else start_row (NR) on every row.
// With half set only columns [0, NR/2) are computed, read and written.
// Every c[i][j] is one chain start + A(i,0)B(0,j) + A(i,1)B(1,j) + ... in k order
// (fused multiply-adds where the instruction set has them), whatever the tile's position
// and whether half is set.
void matmul_tile(int kc, const float *a, long lda, int a_kmajor, const float *b, long ldb,
                 float *c, long ldc, const float *start_row, int half);

// A full column panel of B = W^T for matmul_tile: dst (K, NR) with dst[k*NR + j] = w[j*ldw + k],
// for the NR rows of W starting at w.
void matmul_transpose_panel(float *dst, const float *w, long ldw, int K);

// out[o] = (bias ? bias[o] : 0) + w[o, :] . x for o in [o0, o1); w (OC, C), x (C).
void matmul_dot_rows(float *out, const float *x, const float *w, const float *bias, int C,
                     int o0, int o1);

#endif
