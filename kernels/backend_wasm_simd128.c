// The WebAssembly SIMD backend (backend.h), for the page and the other builds for
// WebAssembly (web/): a 4x8 register tile of 128-bit vectors, the products' driver, the
// portable bf16 kernels and the pointwise and LayerNorm kernels, compiled with -msimd128.
//
// WebAssembly's SIMD has no fused multiply-add (relaxed SIMD's is not in every engine, and
// not exact), so each step of a chain is a multiply, then an add, as in the portable
// backend compiled for x86-64's baseline: every c[i][j], and every row of a matrix-vector
// product (its 8 lanes, then their sum in the portable backend's order), has the portable
// backend's bits. An engine runs the module only if it has SIMD (all current browsers do:
// Chrome 91, Firefox 89, Safari 16.4 and later), and a module that runs has this backend.
#include <wasm_simd128.h>

// The tile: 8 accumulators, two vectors of B and the broadcast A value. The engines keep
// fewer vectors in registers than their CPU has (V8 on x86-64: 16, one its scratch), and
// larger tiles spill: timing the induction model's linear layers in node, 4x8 and 3x8 were the
// fastest of 2x8 to 6x8 and 2x16 to 2x32, 6x8 a quarter slower.
#define MR 4
#define NR 8  // two 4-float vectors
#define TILE_VECTORS 2  // 4-column vectors in a row of the tile
#include "matmul_kernels.h"

// The tile body (matmul.inc's tile_of_rows calls it) with the layout of A (a k-major A's steps
// prefetched: matmul_kernels.h's tile_prefetch_step), its rows (always MR here) and the number of
// 4-column vectors (nv, 1 or 2) fixed at compile time, A's value broadcast as it is loaded
// (load32_splat).
static inline __attribute__((always_inline)) void tile_body(
    int kc, const float *a, long lda, const int a_kmajor, const float *b, long ldb,
    float *c, long ldc, const float *start_row, const int rows, const int nv) {
    v128_t acc[MR][2];  // row i of the tile: columns [0,4) and [4,8)
    for (int i = 0; i < rows; i++)
        for (int v = 0; v < nv; v++) acc[i][v] = wasm_v128_load(start_row ? start_row + 4 * v : c + i * ldc + 4 * v);
    for (int k = 0; k < kc; k++) {
        v128_t bk[2];
        if (a_kmajor) tile_prefetch_step(a, lda, rows, b, ldb, 4 * nv);
        for (int v = 0; v < nv; v++) bk[v] = wasm_v128_load(b + 4 * v);
        for (int i = 0; i < rows; i++) {
            v128_t ai = wasm_v128_load32_splat(a_kmajor ? a + i : a + i * lda + k);
            for (int v = 0; v < nv; v++) acc[i][v] = wasm_f32x4_add(acc[i][v], wasm_f32x4_mul(ai, bk[v]));
        }
        if (a_kmajor) a += lda;
        b += ldb;
    }
    for (int i = 0; i < rows; i++)
        for (int v = 0; v < nv; v++) wasm_v128_store(c + i * ldc + 4 * v, acc[i][v]);
}

// Transposes the 4x4 block of r in registers: afterwards r[k] holds element k of every row.
static inline __attribute__((always_inline)) void transpose4(v128_t r[4]) {
    v128_t t0 = wasm_i32x4_shuffle(r[0], r[1], 0, 4, 1, 5), t1 = wasm_i32x4_shuffle(r[0], r[1], 2, 6, 3, 7);
    v128_t t2 = wasm_i32x4_shuffle(r[2], r[3], 0, 4, 1, 5), t3 = wasm_i32x4_shuffle(r[2], r[3], 2, 6, 3, 7);
    r[0] = wasm_i64x2_shuffle(t0, t2, 0, 2), r[1] = wasm_i64x2_shuffle(t0, t2, 1, 3);
    r[2] = wasm_i64x2_shuffle(t1, t3, 0, 2), r[3] = wasm_i64x2_shuffle(t1, t3, 1, 3);
}

static void matmul_transpose_panel(float *dst, const float *w, long ldw, int K) {
    int k0 = 0;
    for (; k0 + 4 <= K; k0 += 4)
        for (int h = 0; h < NR; h += 4) {  // the two 4-row quarters of the panel
            v128_t r[4];
            for (int j = 0; j < 4; j++) r[j] = wasm_v128_load(w + (h + j) * ldw + k0);
            transpose4(r);
            for (int k = 0; k < 4; k++) wasm_v128_store(dst + (long)(k0 + k) * NR + h, r[k]);
        }
    for (int k = k0; k < K; k++)
        for (int j = 0; j < NR; j++) dst[(long)k * NR + j] = w[j * ldw + k];
}

// Rows of w dotted with x, each as the portable backend sums it: lane l (of 8, two vectors)
// takes the products of columns l, l + 8, ..., the last partial step's missing columns
// adding nothing; then ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7)).
static void matmul_dot_rows(float *out, const float *x, const float *w, const float *bias, int C,
                            int o0, int o1) {
    for (int o = o0; o < o1; o++) {
        const float *wr = w + (long)o * C;
        v128_t lo = wasm_f32x4_splat(0.0f), hi = lo;
        int i = 0;
        for (; i + 8 <= C; i += 8) {
            lo = wasm_f32x4_add(lo, wasm_f32x4_mul(wasm_v128_load(wr + i), wasm_v128_load(x + i)));
            hi = wasm_f32x4_add(hi, wasm_f32x4_mul(wasm_v128_load(wr + i + 4), wasm_v128_load(x + i + 4)));
        }
        float part[8];
        wasm_v128_store(part, lo);
        wasm_v128_store(part + 4, hi);
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

// WebAssembly has no bf16 dot products: bf16 operands are widened to fp32 as they are packed
#define WASM_BF16_COST                                                                                   \
    "a training step in bf16 takes longer than one in fp32 on them (WebAssembly has no bf16 "           \
    "instructions: its operands are rounded and widened as they are packed); --precision fp32 is faster here"

// A module that runs has SIMD: the engine validated every function of it before the first ran.
static int cpu_runs_wasm_simd128(void) { return 1; }

const Backend backend_wasm_simd128 = {
    .name = "wasm_simd128", .needs = "WebAssembly SIMD (128-bit)", .cpu_runs = cpu_runs_wasm_simd128,
    .bf16 = &bf16_portable_kernels, .bf16_cost = WASM_BF16_COST, MATMUL_PRODUCTS, POINTWISE_KERNELS, LAYERNORM_KERNELS,
};
