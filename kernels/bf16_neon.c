// The bf16 kernels with FEAT_BF16's BFDOT (backend.h): the 6x16 register tile of
// backend_neon.c, each pair of A broadcast from a lane (BFDOT by element) against the pairs
// of four columns of B in one vector, which BFDOT adds into each float lane. Built with
// FEAT_BF16's instructions enabled (the Makefile's ISA_FLAGS_*), and used only by the
// neon_bf16 backend, on CPUs that have them.
//
// BFDOT rounds each pair's sum and then c to odd (Bf16Kernels.sums, BF16_SUMS_BFDOT), so these sums
// are not the other backends' bits. BFMMLA, which multiplies a 2x4 block of A by a 4x2 one
// of B, adds each element's two pairs as two BFDOTs in turn (the same bits); it would need
// the panels laid out in 2x4 blocks (or zipped in registers), and whether it beats BFDOT
// by element, which uses the driver's pair-interleaved panels as they are, is for hardware
// to say.
#include <arm_neon.h>
#include <stdint.h>
#include <string.h>

#include "backend.h"

#define MR NEON_MR
#define NR NEON_NR

// acc[i][v] += the pairs of bk[v] dotted with pair `lane` of a, for the nv vectors of row i
#define ROW_BY_LANE(bfdot, i, a, lane) \
    for (int v = 0; v < nv; v++) acc[i][v] = bfdot(acc[i][v], bk[v], a, lane)

// The tile with the number of 4-column vectors (nv, 2 or 4) fixed at compile time.
static inline __attribute__((always_inline)) void tile_body(
    int kp, const bf16 *a, const bf16 *b, float *c, long ldc, const float *start_row, const int nv) {
    float32x4_t acc[MR][4];
    for (int i = 0; i < MR; i++)
        for (int v = 0; v < nv; v++) acc[i][v] = vld1q_f32(start_row ? start_row + 4 * v : c + i * ldc + 4 * v);
    for (int p = 0; p < kp; p++) {
        bfloat16x8_t bk[4];  // pair p of 4 columns each
        for (int v = 0; v < nv; v++) bk[v] = vld1q_bf16((const bfloat16_t *)b + 8 * v);
        bfloat16x8_t a0 = vld1q_bf16((const bfloat16_t *)a);     // the pairs of rows 0-3
        bfloat16x4_t a4 = vld1_bf16((const bfloat16_t *)a + 8);  // and of rows 4-5
        ROW_BY_LANE(vbfdotq_laneq_f32, 0, a0, 0);
        ROW_BY_LANE(vbfdotq_laneq_f32, 1, a0, 1);
        ROW_BY_LANE(vbfdotq_laneq_f32, 2, a0, 2);
        ROW_BY_LANE(vbfdotq_laneq_f32, 3, a0, 3);
        ROW_BY_LANE(vbfdotq_lane_f32, 4, a4, 0);
        ROW_BY_LANE(vbfdotq_lane_f32, 5, a4, 1);
        a += 2 * MR;
        b += 2 * NR;
    }
    for (int i = 0; i < MR; i++)
        for (int v = 0; v < nv; v++) vst1q_f32(c + i * ldc + 4 * v, acc[i][v]);
}

void bfdot_tile(int kp, const bf16 *a, const bf16 *b, float *c, long ldc, const float *start_row, int half) {
    if (half) tile_body(kp, a, b, c, ldc, start_row, 2);
    else tile_body(kp, a, b, c, ldc, start_row, 4);
}

// The pair-interleaved panel (Bf16Kernels.pack_pairs): a transpose of 32-bit words, each
// word a pair, rows past count zeros.
void bfdot_pack_pairs(bf16 *dst, int width, int count, const bf16 *src, long ld, int pairs) {
    for (int p = 0; p < pairs; p++)
        for (int r = 0; r < width; r++) {
            uint32_t pair = 0;
            if (r < count) memcpy(&pair, src + r * ld + 2 * p, sizeof(pair));
            memcpy(dst + ((long)p * width + r) * 2, &pair, sizeof(pair));
        }
}

// R rows of w dotted with x, in the 32 lanes of Bf16Kernels.dot_rows: eight 4-lane
// accumulators over 64-element steps (lanes 0-15 the pairs of its first 32 elements, 16-31
// those of the next 32), the last step's elements past C read as zeros; then lane l plus
// lane 16 + l, and the halving sums, in float.
static inline __attribute__((always_inline)) void dot_rows_body(
    float *out, const bf16 *x, const bf16 *w, const float *bias, int C, const int R) {
    float32x4_t acc[2][8];
    for (int r = 0; r < R; r++)
        for (int v = 0; v < 8; v++) acc[r][v] = vdupq_n_f32(0.0f);
    int i = 0;
    for (; i + 64 <= C; i += 64) {
        bfloat16x8_t xv[8];
        for (int v = 0; v < 8; v++) xv[v] = vld1q_bf16((const bfloat16_t *)x + i + 8 * v);
        for (int r = 0; r < R; r++)
            for (int v = 0; v < 8; v++)
                acc[r][v] = vbfdotq_f32(acc[r][v], vld1q_bf16((const bfloat16_t *)w + (long)r * C + i + 8 * v), xv[v]);
    }
    if (i < C) {  // up to 63 elements left, zero-padded to a step
        bf16 xt[64] = {0}, wt[64] = {0};
        memcpy(xt, x + i, (size_t)(C - i) * sizeof(bf16));
        for (int r = 0; r < R; r++) {
            memcpy(wt, w + (long)r * C + i, (size_t)(C - i) * sizeof(bf16));
            for (int v = 0; v < 8; v++)
                acc[r][v] = vbfdotq_f32(acc[r][v], vld1q_bf16((const bfloat16_t *)wt + 8 * v),
                                        vld1q_bf16((const bfloat16_t *)xt + 8 * v));
        }
    }
    for (int r = 0; r < R; r++) {
        // s[l] = lane l + lane 16 + l, as four vectors of 4 lanes: s[v] = acc[v] + acc[v + 4]
        float32x4_t s[4];
        for (int v = 0; v < 4; v++) s[v] = vaddq_f32(acc[r][v], acc[r][v + 4]);
        // s[l] += s[l + 8], then s[l] += s[l + 4]: whole vectors
        s[0] = vaddq_f32(s[0], s[2]), s[1] = vaddq_f32(s[1], s[3]);
        s[0] = vaddq_f32(s[0], s[1]);
        // s[l] += s[l + 2], then s[0] += s[1], within the last vector
        float32x2_t h = vadd_f32(vget_low_f32(s[0]), vget_high_f32(s[0]));
        float sum = vget_lane_f32(h, 0) + vget_lane_f32(h, 1);
        out[r] = bias ? bias[r] + sum : sum;
    }
}

void bfdot_dot_rows(float *out, const bf16 *x, const bf16 *w, const float *bias, int C, int o0, int o1) {
    int o = o0;
    for (; o + 2 <= o1; o += 2) dot_rows_body(out + o, x, w + (long)o * C, bias ? bias + o : NULL, C, 2);
    for (; o < o1; o++) dot_rows_body(out + o, x, w + (long)o * C, bias ? bias + o : NULL, C, 1);
}
