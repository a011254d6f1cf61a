// The AVX-512 backends (backend.h): a 14x32 register tile (28 of the 32 zmm registers hold
// accumulators, two hold the row of B, one the broadcast A value), the products' driver, the
// portable bf16 kernels and the pointwise and LayerNorm kernels compiled for AVX-512 (F, BW,
// DQ, VL) with FMA. Three backends share them: "avx512", whose bf16 products widen their
// operands to fp32, "avx512_bf16", whose run vdpbf16ps, and "avx512_amx", whose run AMX's
// tiles (both bf16_avx512.c); their fp32 products are the same.
#include <immintrin.h>

#define MR AVX512_MR
#define NR AVX512_NR
#define TILE_VECTORS 2     // 16-column vectors in a row of the tile
#define TILE_PARTIAL_ROWS  // tiles of 4, 8 and 12 rows for a partial row panel (matmul.inc)
#include "matmul_kernels.h"

// The tile body (matmul.inc's tile_of_rows calls it) with the layout of A (a k-major A's steps
// prefetched: matmul_kernels.h's tile_prefetch_step), its rows (MR, or 4, 8 or 12 for a partial
// row panel) and the number of 16-column vectors (nv, 1 or 2) fixed at compile time.
static inline __attribute__((always_inline)) void tile_body(
    int kc, const float *a, long lda, const int a_kmajor, const float *b, long ldb,
    float *c, long ldc, const float *start_row, const int rows, const int nv) {
    __m512 acc[MR][2];  // row i of the tile: columns [0,16) and [16,32)
    if (start_row) {
#pragma GCC unroll 14
        for (int i = 0; i < rows; i++)
            for (int v = 0; v < nv; v++) acc[i][v] = _mm512_loadu_ps(start_row + 16 * v);
    } else {
#pragma GCC unroll 14
        for (int i = 0; i < rows; i++)
            for (int v = 0; v < nv; v++) acc[i][v] = _mm512_loadu_ps(c + i * ldc + 16 * v);
    }
    for (int k = 0; k < kc; k++) {
        __m512 bk[2];
        if (a_kmajor) tile_prefetch_step(a, lda, rows, b, ldb, 16 * nv);
        for (int v = 0; v < nv; v++) bk[v] = _mm512_loadu_ps(b + 16 * v);
#pragma GCC unroll 14
        for (int i = 0; i < rows; i++) {
            __m512 ai = _mm512_set1_ps(a_kmajor ? a[i] : a[i * lda + k]);
            for (int v = 0; v < nv; v++) acc[i][v] = _mm512_fmadd_ps(ai, bk[v], acc[i][v]);
        }
        if (a_kmajor) a += lda;
        b += ldb;
    }
#pragma GCC unroll 14
    for (int i = 0; i < rows; i++)
        for (int v = 0; v < nv; v++) _mm512_storeu_ps(c + i * ldc + 16 * v, acc[i][v]);
}

// Transposes the 16x16 block r in registers: afterwards r[k] holds element k of every input row.
static inline __attribute__((always_inline)) void transpose16(__m512 r[16]) {
    __m512 t[16];
    for (int i = 0; i < 16; i += 2) {  // interleave single floats of row pairs
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) {  // then pairs of floats
        r[i] = _mm512_shuffle_ps(t[i], t[i + 2], 0x44);
        r[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], 0xEE);
        r[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        r[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
    }
    for (int i = 0; i < 8; i++) {  // then 128-bit lanes of rows four apart
        int a = (i / 4) * 8 + i % 4;
        t[a] = _mm512_shuffle_f32x4(r[a], r[a + 4], 0x88);
        t[a + 4] = _mm512_shuffle_f32x4(r[a], r[a + 4], 0xDD);
    }
    for (int i = 0; i < 8; i++) {  // then of rows eight apart
        int a = (i / 4) * 4 + i % 4;
        r[a] = _mm512_shuffle_f32x4(t[a], t[a + 8], 0x88);
        r[a + 8] = _mm512_shuffle_f32x4(t[a], t[a + 8], 0xDD);
    }
}

static void matmul_transpose_panel(float *dst, const float *w, long ldw, int K) {
    int k0 = 0;
    for (; k0 + 16 <= K; k0 += 16)
        for (int h = 0; h < NR; h += 16) {  // the two 16-row halves of the panel
            __m512 r[16];
            for (int j = 0; j < 16; j++) r[j] = _mm512_loadu_ps(w + (h + j) * ldw + k0);
            transpose16(r);
            for (int k = 0; k < 16; k++) _mm512_storeu_ps(dst + (long)(k0 + k) * NR + h, r[k]);
        }
    for (int k = k0; k < K; k++)
        for (int j = 0; j < NR; j++) dst[(long)k * NR + j] = w[j * ldw + k];
}

// R rows of w dotted with x. Each row's sum runs the same operations in the same order
// whatever R is: two 16-lane partial sums over 32-column steps, a masked tail, then a
// fixed horizontal reduction.
static inline __attribute__((always_inline)) void dot_rows_body(
    float *out, const float *x, const float *w, const float *bias, int C, const int R) {
    __m512 acc0[4], acc1[4];
    for (int r = 0; r < R; r++) acc0[r] = acc1[r] = _mm512_setzero_ps();
    int i = 0;
    for (; i + 32 <= C; i += 32) {
        __m512 x0 = _mm512_loadu_ps(x + i), x1 = _mm512_loadu_ps(x + i + 16);
        if (R == 1) {  // rows one after another (matmul.inc's DOT_STREAM_BYTES): prefetched ahead
            _mm_prefetch((const char *)(w + i + DOT_PREFETCH), _MM_HINT_T0);
            _mm_prefetch((const char *)(w + i + DOT_PREFETCH + 16), _MM_HINT_T0);
        }
        for (int r = 0; r < R; r++) {
            acc0[r] = _mm512_fmadd_ps(_mm512_loadu_ps(w + (long)r * C + i), x0, acc0[r]);
            acc1[r] = _mm512_fmadd_ps(_mm512_loadu_ps(w + (long)r * C + i + 16), x1, acc1[r]);
        }
    }
    if (i < C) {  // up to 31 columns left: the first 16 (masked) into acc0, the rest into acc1
        int left = C - i;
        __mmask16 m0 = left >= 16 ? 0xFFFF : (__mmask16)((1u << left) - 1);
        __mmask16 m1 = left <= 16 ? 0 : (__mmask16)((1u << (left - 16)) - 1);
        __m512 x0 = _mm512_maskz_loadu_ps(m0, x + i), x1 = _mm512_maskz_loadu_ps(m1, x + i + 16);
        for (int r = 0; r < R; r++) {
            const float *wr = w + (long)r * C + i;
            acc0[r] = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m0, wr), x0, acc0[r]);
            acc1[r] = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m1, wr + 16), x1, acc1[r]);
        }
    }
    for (int r = 0; r < R; r++) {
        float sum = _mm512_reduce_add_ps(_mm512_add_ps(acc0[r], acc1[r]));
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

static int cpu_runs_avx512(void) {
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("fma");
}

static int cpu_runs_avx512_bf16(void) { return cpu_runs_avx512() && __builtin_cpu_supports("avx512bf16"); }

#if defined(__linux__)
static int cpu_runs_avx512_amx(void) { return cpu_runs_avx512_bf16() && bf16_amx_usable(); }
#endif

const Backend backend_avx512 = {
    .name = "avx512", .needs = "AVX-512 (F, BW, DQ, VL) and FMA", .cpu_runs = cpu_runs_avx512,
    .bf16 = &bf16_portable_kernels, .bf16_cost = BF16_COST_MEASURED("about 1.1 times"), MATMUL_PRODUCTS, POINTWISE_KERNELS, LAYERNORM_KERNELS,
};

#if defined(__linux__)
const Backend backend_avx512_amx = {
    .name = "avx512_amx", .needs = "AVX-512 (F, BW, DQ, VL), FMA, AVX512_BF16 and AMX (AMX-TILE, AMX-BF16)",
    .cpu_runs = cpu_runs_avx512_amx, .bf16 = &bf16_amx_kernels, MATMUL_PRODUCTS, POINTWISE_KERNELS, LAYERNORM_KERNELS,
};
#endif

const Backend backend_avx512_bf16 = {
    .name = "avx512_bf16", .needs = "AVX-512 (F, BW, DQ, VL), FMA and AVX512_BF16", .cpu_runs = cpu_runs_avx512_bf16,
    .bf16 = &bf16_avx512_kernels, .slower_than_next = bf16_avx512_dots_slow, MATMUL_PRODUCTS, POINTWISE_KERNELS, LAYERNORM_KERNELS,
};
