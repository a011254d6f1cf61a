// The AVX2 backend (backend.h): a 6x16 register tile (12 of the 16 ymm registers hold
// accumulators, two hold the row of B, one the broadcast A value), the products' driver, the
// portable bf16 kernels and the pointwise and LayerNorm kernels compiled for AVX2 with FMA.
#include <immintrin.h>

#define MR 6
#define NR 16  // two 8-float vectors
#define TILE_VECTORS 2  // 8-column vectors in a row of the tile
#include "matmul_kernels.h"

// The tile body (matmul.inc's tile_of_rows calls it) with the layout of A (a k-major A's steps
// prefetched: matmul_kernels.h's tile_prefetch_step), its rows (always MR here) and the number of
// 8-column vectors (nv, 1 or 2) fixed at compile time.
static inline __attribute__((always_inline)) void tile_body(
    int kc, const float *a, long lda, const int a_kmajor, const float *b, long ldb,
    float *c, long ldc, const float *start_row, const int rows, const int nv) {
    __m256 acc[MR][2];  // row i of the tile: columns [0,8) and [8,16)
    if (start_row) {
#pragma GCC unroll 6
        for (int i = 0; i < rows; i++)
            for (int v = 0; v < nv; v++) acc[i][v] = _mm256_loadu_ps(start_row + 8 * v);
    } else {
#pragma GCC unroll 6
        for (int i = 0; i < rows; i++)
            for (int v = 0; v < nv; v++) acc[i][v] = _mm256_loadu_ps(c + i * ldc + 8 * v);
    }
    for (int k = 0; k < kc; k++) {
        __m256 bk[2];
        if (a_kmajor) tile_prefetch_step(a, lda, rows, b, ldb, 8 * nv);
        for (int v = 0; v < nv; v++) bk[v] = _mm256_loadu_ps(b + 8 * v);
#pragma GCC unroll 6
        for (int i = 0; i < rows; i++) {
            __m256 ai = _mm256_broadcast_ss(a_kmajor ? a + i : a + i * lda + k);
            for (int v = 0; v < nv; v++) acc[i][v] = _mm256_fmadd_ps(ai, bk[v], acc[i][v]);
        }
        if (a_kmajor) a += lda;
        b += ldb;
    }
#pragma GCC unroll 6
    for (int i = 0; i < rows; i++)
        for (int v = 0; v < nv; v++) _mm256_storeu_ps(c + i * ldc + 8 * v, acc[i][v]);
}

// Transposes the 8x8 block r in registers: afterwards r[k] holds element k of every input row.
static inline __attribute__((always_inline)) void transpose8(__m256 r[8]) {
    __m256 t[8];
    for (int i = 0; i < 8; i += 2) {  // interleave single floats of row pairs
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 8; i += 4) {  // then pairs of floats
        r[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
        r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
        r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
    }
    for (int i = 0; i < 4; i++) {  // then 128-bit halves of rows four apart
        t[i] = _mm256_permute2f128_ps(r[i], r[i + 4], 0x20);
        t[i + 4] = _mm256_permute2f128_ps(r[i], r[i + 4], 0x31);
    }
    for (int i = 0; i < 8; i++) r[i] = t[i];
}

static void matmul_transpose_panel(float *dst, const float *w, long ldw, int K) {
    int k0 = 0;
    for (; k0 + 8 <= K; k0 += 8)
        for (int h = 0; h < NR; h += 8) {  // the two 8-row halves of the panel
            __m256 r[8];
            for (int j = 0; j < 8; j++) r[j] = _mm256_loadu_ps(w + (h + j) * ldw + k0);
            transpose8(r);
            for (int k = 0; k < 8; k++) _mm256_storeu_ps(dst + (long)(k0 + k) * NR + h, r[k]);
        }
    for (int k = k0; k < K; k++)
        for (int j = 0; j < NR; j++) dst[(long)k * NR + j] = w[j * ldw + k];
}

// Sum of the 8 lanes in a fixed order.
static inline float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// R rows of w dotted with x. Each row's sum runs the same operations in the same order
// whatever R is: two 8-lane partial sums over 16-column steps, a masked tail, then a
// fixed horizontal reduction.
static inline __attribute__((always_inline)) void dot_rows_body(
    float *out, const float *x, const float *w, const float *bias, int C, const int R) {
    __m256 acc0[4], acc1[4];
    for (int r = 0; r < R; r++) acc0[r] = acc1[r] = _mm256_setzero_ps();
    int i = 0;
    for (; i + 16 <= C; i += 16) {
        __m256 x0 = _mm256_loadu_ps(x + i), x1 = _mm256_loadu_ps(x + i + 8);
        if (R == 1) {  // rows one after another (matmul.inc's DOT_STREAM_BYTES): prefetched ahead
            _mm_prefetch((const char *)(w + i + DOT_PREFETCH), _MM_HINT_T0);
            _mm_prefetch((const char *)(w + i + DOT_PREFETCH + 16), _MM_HINT_T0);
        }
        for (int r = 0; r < R; r++) {
            acc0[r] = _mm256_fmadd_ps(_mm256_loadu_ps(w + (long)r * C + i), x0, acc0[r]);
            acc1[r] = _mm256_fmadd_ps(_mm256_loadu_ps(w + (long)r * C + i + 8), x1, acc1[r]);
        }
    }
    if (i < C) {  // up to 15 columns left: the first 8 (masked) into acc0, the rest into acc1
        const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        int left = C - i;
        __m256i m0 = _mm256_cmpgt_epi32(_mm256_set1_epi32(left), lane);
        __m256i m1 = _mm256_cmpgt_epi32(_mm256_set1_epi32(left - 8), lane);
        __m256 x0 = _mm256_maskload_ps(x + i, m0), x1 = _mm256_maskload_ps(x + i + 8, m1);
        for (int r = 0; r < R; r++) {
            const float *wr = w + (long)r * C + i;
            acc0[r] = _mm256_fmadd_ps(_mm256_maskload_ps(wr, m0), x0, acc0[r]);
            acc1[r] = _mm256_fmadd_ps(_mm256_maskload_ps(wr + 8, m1), x1, acc1[r]);
        }
    }
    for (int r = 0; r < R; r++) {
        float sum = hsum(_mm256_add_ps(acc0[r], acc1[r]));
        out[r] = bias ? bias[r] + sum : sum;
    }
}

static void matmul_dot_rows(float *out, const float *x, const float *w, const float *bias, int C,
                            int o0, int o1) {
    int o = o0;
    for (; o + 4 <= o1; o += 4)
        dot_rows_body(out + o, x, w + (long)o * C, bias ? bias + o : NULL, C, 4);
    for (; o < o1; o++)
        dot_rows_body(out + o, x, w + (long)o * C, bias ? bias + o : NULL, C, 1);
}

#include "bf16_portable.inc"
#include "matmul.inc"
#include "matmul_bf16.inc"
#include "pointwise.inc"
#include "layernorm.inc"

static int cpu_runs_avx2(void) { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }

const Backend backend_avx2 = {
    .name = "avx2", .needs = "AVX2 and FMA", .cpu_runs = cpu_runs_avx2, .bf16 = &bf16_portable_kernels,
    .bf16_cost = BF16_COST_MEASURED("about 1.1 times"), MATMUL_PRODUCTS, POINTWISE_KERNELS, LAYERNORM_KERNELS,
};
