// The bf16 products (matmul.h): matmul.c's tasks, with both operands packed into bf16.
// For each block of BF16_KC k steps, a task converts the rows of A it covers, a group of
// BF16_GROUP_PANELS row panels at a time, into pair-interleaved panels (the MR values of a
// row panel at k = 2p and 2p + 1 side by side); then for each NR-column panel it packs B
// (a bf16 weight or an fp32 activation) the same way and runs the register tiles
// (Bf16Kernels.tile) over the group. Every element of C gets its pairs in k order, blocks
// fixed by K alone, so results do not depend on the task or the thread count.
#include <string.h>

#include "matmul.h"
#include "matmul_kernels.h"
#include "parallel.h"

#define BF16_GROUP_PANELS 8  // row panels of A packed at a time: 8 x 14 x 256 bf16 = 56 KiB

static int force_portable;

const Bf16Kernels *bf16_kernels(void) {
#if defined(MATMUL_HAVE_BF16_AVX512)
    if (!force_portable && bf16_avx512_supported()) return &bf16_avx512_kernels;
#endif
    return &bf16_portable_kernels;
}

void matmul_bf16_force_portable(int portable) { force_portable = portable; }

const char *matmul_bf16_path(void) { return bf16_kernels()->name; }

void matmul_convert_bf16(bf16 *dst, const float *src, size_t n) {
    const size_t chunk = 1 << 16;
    const Bf16Kernels *kern = bf16_kernels();
    long chunks = (long)((n + chunk - 1) / chunk);
    if (in_team()) {
#pragma omp for schedule(static) nowait
        for (long c = 0; c < chunks; c++) {
            size_t i = (size_t)c * chunk;
            kern->convert(dst + i, src + i, (long)(n - i < chunk ? n - i : chunk));
        }
        team_barrier();
        return;
    }
    kern->convert(dst, src, (long)n);
}

static int min_int(int a, int b) { return a < b ? a : b; }

// The packed layout of both operands, for `width` rows of A (MR) or columns of B (NR):
// dst[(p*width + r)*2 + e] = operand r at k step 2p + e, zero past `count` or past kc.

// From operands contiguous in k (rows of A, rows of W for B = W^T), r's values at
// src + r*ld, in fp32 (f) or bf16 (h): each pair of a row is one 32-bit word.
static void pack_k_contiguous(bf16 *dst, int width, int count, const float *f, const bf16 *h, long ld,
                              int kc, const Bf16Kernels *kern) {
    bf16 row[BF16_KC];
    int kp = (kc + 1) / 2, full = kc / 2;
    for (int r = 0; r < width; r++) {
        if (r >= count) {
            for (int p = 0; p < kp; p++) dst[(p * width + r) * 2] = dst[(p * width + r) * 2 + 1] = 0;
            continue;
        }
        const bf16 *src = h ? h + r * ld : row;
        if (f) kern->convert(row, f + r * ld, kc);
        for (int p = 0; p < full; p++) memcpy(dst + (p * width + r) * 2, src + 2 * p, 2 * sizeof(bf16));
        if (kc & 1) {
            dst[(full * width + r) * 2] = src[kc - 1];
            dst[(full * width + r) * 2 + 1] = 0;
        }
    }
}

// From k-major operands (A^T, B = inp or W): step k's values of every r at src + k*ld.
static void pack_k_major(bf16 *dst, int width, int count, const float *f, const bf16 *h, long ld, int kc,
                         const Bf16Kernels *kern) {
    bf16 row[2][NR > MR ? NR : MR];
    int kp = (kc + 1) / 2;
    for (int p = 0; p < kp; p++) {
        for (int e = 0; e < 2; e++) {
            int k = 2 * p + e;
            bf16 *r = row[e];
            if (k >= kc) memset(r, 0, (size_t)count * sizeof(bf16));
            else if (f) kern->convert(r, f + k * ld, count);
            else memcpy(r, h + k * ld, (size_t)count * sizeof(bf16));
        }
        bf16 *d = dst + (long)p * width * 2;
        for (int r = 0; r < count; r++) {
            d[2 * r] = row[0][r];
            d[2 * r + 1] = row[1][r];
        }
        for (int r = count; r < width; r++) d[2 * r] = d[2 * r + 1] = 0;
    }
}

// Row panel [i, i + MR) of A over k steps [k0, k0 + kc).
static void pack_a_panel(bf16 *dst, const Gemm *g, int i, int k0, int kc, const Bf16Kernels *kern) {
    int mr = min_int(MR, g->M - i);
    if (g->a_kmajor) pack_k_major(dst, MR, mr, g->a + (long)k0 * g->lda + i, NULL, g->lda, kc, kern);
    else pack_k_contiguous(dst, MR, mr, g->a + (long)i * g->lda + k0, NULL, g->lda, kc, kern);
}

// Column panel [j, j + NR) of B over k steps [k0, k0 + kc).
static void pack_b_panel(bf16 *dst, const Gemm *g, int j, int k0, int kc, const Bf16Kernels *kern) {
    int nr = min_int(NR, g->Nc - j);
    if (g->wt16) pack_k_contiguous(dst, NR, nr, NULL, g->wt16 + (long)j * g->ldwt + k0, g->ldwt, kc, kern);
    else if (g->wt) pack_k_contiguous(dst, NR, nr, g->wt + (long)j * g->ldwt + k0, NULL, g->ldwt, kc, kern);
    else if (g->b16) pack_k_major(dst, NR, nr, NULL, g->b16 + (long)k0 * g->ldb + j, g->ldb, kc, kern);
    else pack_k_major(dst, NR, nr, g->b + (long)k0 * g->ldb + j, NULL, g->ldb, kc, kern);
}

void matmul_bf16_task(const Gemm *g, int i0, int i1, int j0, int j1) {
    static const float zero_row[NR] __attribute__((aligned(64)));
    bf16 apack[BF16_GROUP_PANELS * MR * BF16_KC] __attribute__((aligned(64)));
    bf16 bpack[BF16_KC * NR] __attribute__((aligned(64)));
    float ctile[MR * NR] __attribute__((aligned(64)));  // a partial tile of C
    float start_pad[NR] __attribute__((aligned(64)));   // bias of a partial column panel
    const Bf16Kernels *kern = bf16_kernels();
    int M = g->M, Nc = g->Nc, K = g->K;
    int nkb = (K + BF16_KC - 1) / BF16_KC;
    int kcb = (K + nkb - 1) / nkb;
    kcb += kcb & 1;  // blocks of an even number of steps, fixed by K alone
    for (int k0 = 0; k0 < K; k0 += kcb) {
        int kc = min_int(kcb, K - k0), kp = (kc + 1) / 2;
        long panel = (long)kp * MR * 2;  // bf16 in a packed row panel
        for (int g0 = i0; g0 < i1; g0 += BF16_GROUP_PANELS * MR) {
            int g1 = min_int(i1, g0 + BF16_GROUP_PANELS * MR);
            for (int i = g0; i < g1; i += MR) pack_a_panel(apack + (i - g0) / MR * panel, g, i, k0, kc, kern);
            for (int j = j0; j < j1; j += NR) {
                int nr = min_int(NR, Nc - j);
                pack_b_panel(bpack, g, j, k0, kc, kern);
                const float *start = NULL;  // NULL: carry on from C
                if (k0 == 0 && !g->accumulate) {
                    start = g->bias ? g->bias + j : zero_row;
                    if (g->bias && nr < NR) {
                        for (int jj = 0; jj < NR; jj++) start_pad[jj] = jj < nr ? g->bias[j + jj] : 0.0f;
                        start = start_pad;
                    }
                }
                for (int i = g0; i < g1; i += MR) {
                    int mr = min_int(MR, M - i);
                    // the pairs [plo, phi) of this block that can be non-zero for these rows;
                    // a pair that straddles the triangle's edge multiplies a zero of A
                    int klo = k0, khi = k0 + kc;
                    if (g->triangle == MATMUL_LOWER && j > i + mr - 1) continue;
                    if (g->triangle == MATMUL_A_ZERO_ABOVE && khi > i + mr) khi = i + mr;
                    if (g->triangle == MATMUL_A_ZERO_BELOW && klo < i) klo = i;
                    if (klo >= khi) continue;
                    int plo = (klo - k0) / 2, phi = (khi - k0 + 1) / 2;
                    const bf16 *a = apack + (i - g0) / MR * panel + (long)plo * MR * 2;
                    const bf16 *b = bpack + (long)plo * NR * 2;
                    float *c = g->c + (long)i * g->ldc + j;
                    if (mr == MR && nr == NR) {
                        kern->tile(phi - plo, a, b, c, g->ldc, start, 0);
                        continue;
                    }
                    if (!start)
                        for (int ii = 0; ii < MR; ii++)
                            for (int jj = 0; jj < NR; jj++)
                                ctile[ii * NR + jj] = ii < mr && jj < nr ? c[(long)ii * g->ldc + jj] : 0.0f;
                    kern->tile(phi - plo, a, b, ctile, NR, start, nr <= NR / 2);
                    for (int ii = 0; ii < mr; ii++)
                        memcpy(c + (long)ii * g->ldc, ctile + ii * NR, (size_t)nr * sizeof(float));
                }
            }
        }
        // dbias in fp32, as matmul.c sums it: one task per row block
        if (g->a_row_sums && j0 == 0) {
            float *sums = g->a_row_sums;
            for (int k = k0; k < k0 + kc; k++) {
                const float *ak = g->a + (long)k * g->lda;
                for (int i = i0; i < i1; i++) sums[i] += ak[i];
            }
        }
    }
}
