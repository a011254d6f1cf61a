// The portable backend (backend.h), for any CPU: a 4x8 register tile in local arrays, whose
// `omp simd` column loops the compiler keeps in vector registers, the products' driver, the
// portable bf16 kernels and the pointwise and LayerNorm kernels, all in plain C compiled for the
// build's baseline instruction set.
#define MR 4
#define NR 8
#define TILE_VECTORS NR  // a row of the tile's "vectors": its columns, one a lane of the simd loops
#include "matmul_kernels.h"

// The tile body (matmul.inc's tile_of_rows calls it) with the layout of A (a k-major A's steps
// prefetched: matmul_kernels.h's tile_prefetch_step), its rows (always MR here) and its columns
// (NR, or NR / 2 for a half tile) fixed at compile time.
static inline __attribute__((always_inline)) void tile_body(
    int kc, const float *a, long lda, const int a_kmajor, const float *b, long ldb,
    float *c, long ldc, const float *start_row, const int rows, const int ncols) {
    float acc[MR][NR];
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < ncols; j++) acc[i][j] = start_row ? start_row[j] : c[i * ldc + j];
    for (int k = 0; k < kc; k++) {
        if (a_kmajor) tile_prefetch_step(a, lda, rows, b, ldb, ncols);
        for (int i = 0; i < rows; i++) {
            float ai = a_kmajor ? a[i] : a[i * lda + k];
#pragma omp simd
            for (int j = 0; j < ncols; j++) acc[i][j] += ai * b[j];
        }
        if (a_kmajor) a += lda;
        b += ldb;
    }
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < ncols; j++) c[i * ldc + j] = acc[i][j];
}

static void matmul_transpose_panel(float *dst, const float *w, long ldw, int K) {
    for (int k = 0; k < K; k++)
        for (int j = 0; j < NR; j++) dst[(long)k * NR + j] = w[j * ldw + k];
}

// Each row: 8 partial sums over 8-column steps (lane l takes columns l, l+8, ...),
// then the partial sums added in a fixed order.
static void matmul_dot_rows(float *out, const float *x, const float *w, const float *bias, int C,
                            int o0, int o1) {
    for (int o = o0; o < o1; o++) {
        const float *wr = w + (long)o * C;
        float part[8] = {0};
        int i = 0;
        for (; i + 8 <= C; i += 8)
            for (int l = 0; l < 8; l++) part[l] += wr[i + l] * x[i + l];
        for (int l = 0; i + l < C; l++) part[l] += wr[i + l] * x[i + l];
        float sum = ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
        out[o] = bias ? bias[o] + sum : sum;
    }
}

#include "bf16_portable.inc"
#include "matmul.inc"
#include "matmul_bf16.inc"
#include "pointwise.inc"
#include "layernorm.inc"

static int cpu_runs_portable(void) { return 1; }

#if defined(__x86_64__)
#define PORTABLE_BF16_COST BF16_COST_MEASURED("about 1.2 times")
#else
#define PORTABLE_BF16_COST BF16_COST_UNMEASURED
#endif

const Backend backend_portable = {
    .name = "portable", .needs = "nothing beyond the build's baseline", .cpu_runs = cpu_runs_portable,
    .bf16 = &bf16_portable_kernels, .bf16_cost = PORTABLE_BF16_COST, MATMUL_PRODUCTS, POINTWISE_KERNELS, LAYERNORM_KERNELS,
};
