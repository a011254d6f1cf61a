// The NEON backends (backend.h), for AArch64's Advanced SIMD, which every AArch64 CPU that
// Linux or macOS runs on has: a 6x16 register tile (24 of the 32 vector registers hold
// accumulators, four hold the row of B, two the column of A), the products' driver, the
// portable bf16 kernels and the pointwise and LayerNorm kernels compiled for AArch64. Two
// backends share them: "neon", whose bf16 products widen their operands to fp32 and run on this
// tile, and "neon_bf16", whose run BFDOT (bf16_neon.c) on CPUs with FEAT_BF16.
//
// The tile's figures. Each k step loads 6 values of A and 16 of B (88 bytes) and does
// 6 x 16 multiply-adds (192 FLOPs): 2.2 FLOPs per byte loaded, against 0.5 for one vector
// FMA that loads its operand. The 24 fmla of a step are independent, more than the 8 to 16
// in flight that two or four FMA pipes of 4-cycle latency need.
#include <arm_neon.h>

#include "../common/platform.h"

#define MR NEON_MR
#define NR NEON_NR
#define TILE_VECTORS 4  // 4-column vectors in a row of the tile
#include "matmul_kernels.h"

// acc[i][v] += b[v] * lane `lane` of a, for the nv vectors of row i
#define ROW_BY_LANE(fma, i, a, lane) \
    for (int v = 0; v < nv; v++) acc[i][v] = fma(acc[i][v], bk[v], a, lane)

// The tile body (matmul.inc's tile_of_rows calls it) with the layout of A (a k-major A's steps
// prefetched: matmul_kernels.h's tile_prefetch_step), its rows (always MR here) and the number of
// 4-column vectors (nv, 2 or 4) fixed at compile time. A k-major A gives the step's six values in
// two loads, used lane by lane (fmla by element); a row-major A, one value per row, each broadcast
// from memory.
static inline __attribute__((always_inline)) void tile_body(
    int kc, const float *a, long lda, const int a_kmajor, const float *b, long ldb,
    float *c, long ldc, const float *start_row, const int rows, const int nv) {
    float32x4_t acc[MR][4];  // row i of the tile: columns [0,4), [4,8), [8,12), [12,16)
    for (int i = 0; i < rows; i++)
        for (int v = 0; v < nv; v++) acc[i][v] = vld1q_f32(start_row ? start_row + 4 * v : c + i * ldc + 4 * v);
    for (int k = 0; k < kc; k++) {
        float32x4_t bk[4];
        if (a_kmajor) tile_prefetch_step(a, lda, rows, b, ldb, 4 * nv);
        for (int v = 0; v < nv; v++) bk[v] = vld1q_f32(b + 4 * v);
        if (a_kmajor) {
            float32x4_t a0 = vld1q_f32(a);     // rows 0-3
            float32x2_t a4 = vld1_f32(a + 4);  // rows 4-5
            ROW_BY_LANE(vfmaq_laneq_f32, 0, a0, 0);
            ROW_BY_LANE(vfmaq_laneq_f32, 1, a0, 1);
            ROW_BY_LANE(vfmaq_laneq_f32, 2, a0, 2);
            ROW_BY_LANE(vfmaq_laneq_f32, 3, a0, 3);
            ROW_BY_LANE(vfmaq_lane_f32, 4, a4, 0);
            ROW_BY_LANE(vfmaq_lane_f32, 5, a4, 1);
            a += lda;
        } else {
#pragma GCC unroll 6
            for (int i = 0; i < rows; i++) {
                float32x4_t ai = vld1q_dup_f32(a + i * lda + k);
                for (int v = 0; v < nv; v++) acc[i][v] = vfmaq_f32(acc[i][v], bk[v], ai);
            }
        }
        b += ldb;
    }
    for (int i = 0; i < rows; i++)
        for (int v = 0; v < nv; v++) vst1q_f32(c + i * ldc + 4 * v, acc[i][v]);
}

// Transposes the 4x4 block r in registers: afterwards r[k] holds element k of every input row.
static inline __attribute__((always_inline)) void transpose4(float32x4_t r[4]) {
    float32x4_t t0 = vtrn1q_f32(r[0], r[1]), t1 = vtrn2q_f32(r[0], r[1]);  // single floats of row pairs
    float32x4_t t2 = vtrn1q_f32(r[2], r[3]), t3 = vtrn2q_f32(r[2], r[3]);
    // then pairs of floats of rows two apart
    r[0] = vreinterpretq_f32_f64(vtrn1q_f64(vreinterpretq_f64_f32(t0), vreinterpretq_f64_f32(t2)));
    r[1] = vreinterpretq_f32_f64(vtrn1q_f64(vreinterpretq_f64_f32(t1), vreinterpretq_f64_f32(t3)));
    r[2] = vreinterpretq_f32_f64(vtrn2q_f64(vreinterpretq_f64_f32(t0), vreinterpretq_f64_f32(t2)));
    r[3] = vreinterpretq_f32_f64(vtrn2q_f64(vreinterpretq_f64_f32(t1), vreinterpretq_f64_f32(t3)));
}

static void matmul_transpose_panel(float *dst, const float *w, long ldw, int K) {
    int k0 = 0;
    for (; k0 + 4 <= K; k0 += 4)
        for (int h = 0; h < NR; h += 4) {  // the four 4-row quarters of the panel
            float32x4_t r[4];
            for (int j = 0; j < 4; j++) r[j] = vld1q_f32(w + (h + j) * ldw + k0);
            transpose4(r);
            for (int k = 0; k < 4; k++) vst1q_f32(dst + (long)(k0 + k) * NR + h, r[k]);
        }
    for (int k = k0; k < K; k++)
        for (int j = 0; j < NR; j++) dst[(long)k * NR + j] = w[j * ldw + k];
}

// R rows of w dotted with x. Each row's sum runs the same operations in the same order
// whatever R is: four 4-lane partial sums over 16-column steps, the last step's columns
// past C read as zeros, then the partial sums and lanes added in a fixed order.
static inline __attribute__((always_inline)) void dot_rows_body(
    float *out, const float *x, const float *w, const float *bias, int C, const int R) {
    float32x4_t acc[4][4];
    for (int r = 0; r < R; r++)
        for (int v = 0; v < 4; v++) acc[r][v] = vdupq_n_f32(0.0f);
    int i = 0;
    for (; i + 16 <= C; i += 16) {
        float32x4_t xv[4];
        for (int v = 0; v < 4; v++) xv[v] = vld1q_f32(x + i + 4 * v);
        for (int r = 0; r < R; r++)
            for (int v = 0; v < 4; v++) acc[r][v] = vfmaq_f32(acc[r][v], vld1q_f32(w + (long)r * C + i + 4 * v), xv[v]);
    }
    if (i < C) {  // up to 15 columns left, zero-padded to a step
        float xt[16] = {0}, wt[16] = {0};
        memcpy(xt, x + i, (size_t)(C - i) * sizeof(float));
        for (int r = 0; r < R; r++) {
            memcpy(wt, w + (long)r * C + i, (size_t)(C - i) * sizeof(float));
            for (int v = 0; v < 4; v++) acc[r][v] = vfmaq_f32(acc[r][v], vld1q_f32(wt + 4 * v), vld1q_f32(xt + 4 * v));
        }
    }
    for (int r = 0; r < R; r++) {
        float sum = vaddvq_f32(vaddq_f32(vaddq_f32(acc[r][0], acc[r][1]), vaddq_f32(acc[r][2], acc[r][3])));
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

// The BFDOT tiles, packing and matrix-vector rows, with the portable conversion (which needs
// no bf16 instructions) compiled for NEON here.
static const Bf16Kernels bf16_bfdot_kernels = {"bfdot", bfdot_tile, c_pairs_convert, bfdot_pack_pairs, bfdot_dot_rows,
                                               .sums = BF16_SUMS_BFDOT};

static int cpu_runs_neon(void) { return 1; }

const Backend backend_neon = {
    .name = "neon", .needs = "Advanced SIMD (NEON)", .cpu_runs = cpu_runs_neon, .bf16 = &bf16_portable_kernels,
    .bf16_cost = BF16_COST_UNMEASURED, MATMUL_PRODUCTS, POINTWISE_KERNELS, LAYERNORM_KERNELS,
};

const Backend backend_neon_bf16 = {
    .name = "neon_bf16", .needs = "Advanced SIMD and FEAT_BF16 (BFDOT)", .cpu_runs = platform_cpu_has_arm_bf16,
    .bf16 = &bf16_bfdot_kernels, MATMUL_PRODUCTS, POINTWISE_KERNELS, LAYERNORM_KERNELS,
};
