// Private to the products: what a backend file (backend.h) defines before it includes the
// driver (matmul.inc, matmul_bf16.inc), which cuts every product into its register tiles,
// and what the driver shares between its fp32 and bf16 halves. A backend file first defines
// MR and NR, its register tile's rows and columns, then includes this file, then defines
// the three tile kernels declared below.
#ifndef CHARGPT_MATMUL_KERNELS_H
#define CHARGPT_MATMUL_KERNELS_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "backend.h"
#include "bf16.h"

// a * b + c, in one instruction and one rounding where the target has FMA
#ifdef FP_FAST_FMAF
#define MUL_ADD(a, b, c) fmaf(a, b, c)
#else
#define MUL_ADD(a, b, c) ((a) * (b) + (c))
#endif

#if !defined(MR) || !defined(NR)
#error "a backend defines its register tile, MR x NR, before it includes matmul_kernels.h"
#endif

// a tile's rows share one k range, which reaches MR - 1 past the diagonal for the row at
// its top, and a bf16 pair one more (backend.h's MATMUL_TRIANGLE_BAND)
_Static_assert(MR + 1 <= MATMUL_TRIANGLE_BAND, "a triangle's band holds a tile's reach");

// One register tile, c (MR, NR) = start + sum over k < kc of A(i, k) B(k, j), where
//   A(i, k) = a[i*lda + k] when a_kmajor is 0 (rows of A contiguous in k),
//   A(i, k) = a[k*lda + i] when a_kmajor is 1 (the MR values of one k contiguous),
//   B(k, j) = b[k*ldb + j],
//   start is c's own values when start_row is NULL, else start_row (NR) on every row.
// With half set only columns [0, NR/2) are computed, read and written. Only rows [0, rows)
// are wanted (1 <= rows <= MR): a backend may compute, read and write fewer of the others,
// which then hold what they held (the driver passes fewer than MR only for a tile of its own).
// Every c[i][j] is one chain start + A(i,0)B(0,j) + A(i,1)B(1,j) + ... in k order
// (fused multiply-adds where the instruction set has them), whatever the tile's position
// and rows, and whether half is set. A k-major A, read in place or packed, has the tile ask
// for its steps and B's ahead (tile_prefetch_step).
static void matmul_tile(int kc, const float *a, long lda, int a_kmajor, const float *b, long ldb,
                        float *c, long ldc, const float *start_row, int rows, int half);

// The tile's k step TILE_PREFETCH_STEPS ahead, A's `rows` values (k-major) and B's `columns`,
// asked for before the tile needs them. A weight gradient's A, dout^T read in place, gives a
// tile each step of A from a row of dout of its own: a stride of a few hundred bytes to a few
// KiB, across pages, which the hardware prefetcher does not follow far enough ahead. Packed
// (as small's c_attn and c_fc were, dout's rows 4.5 and 6 KiB apart, until the prefetch made
// reading them in place faster: matmul.inc's top), its panels and B's run over k blocks of
// 512 steps that outgrow L1; asked for ahead, those weight gradients ran 1.08x and 1.07x as
// fast on one thread of an AMD EPYC (Zen 5), the median of 5 runs each (AVX2's 1.00x). The
// addresses are formed as integers: past the end of A or B they are hints for lines never read.
#define TILE_PREFETCH_STEPS 16
static inline __attribute__((always_inline)) void tile_prefetch_step(const float *a, long lda, int rows,
                                                                   const float *b, long ldb, int columns) {
    uintptr_t a_ahead = (uintptr_t)a + (uintptr_t)(TILE_PREFETCH_STEPS * lda) * sizeof(float);
    uintptr_t b_ahead = (uintptr_t)b + (uintptr_t)(TILE_PREFETCH_STEPS * ldb) * sizeof(float);
    __builtin_prefetch((const void *)a_ahead);
    __builtin_prefetch((const void *)(a_ahead + (uintptr_t)(rows - 1) * sizeof(float)));
    __builtin_prefetch((const void *)b_ahead);
    __builtin_prefetch((const void *)(b_ahead + (uintptr_t)(columns - 1) * sizeof(float)));
}

// A full column panel of B = W^T for matmul_tile: dst (K, NR) with dst[k*NR + j] = w[j*ldw + k],
// for the NR rows of W starting at w.
static void matmul_transpose_panel(float *dst, const float *w, long ldw, int K);

// out[o] = (bias ? bias[o] : 0) + w[o, :] . x for o in [o0, o1); w (OC, C), x (C). Asked
// for one row at a time, the x86 kernels prefetch DOT_PREFETCH floats (2 KiB) ahead in W.
#define DOT_PREFETCH 512
static void matmul_dot_rows(float *out, const float *x, const float *w, const float *bias, int C,
                            int o0, int o1);

// ---- the general product that matmul.inc cuts into tiles (its top comment)

// How a product's operands are packed and which tile runs them (backend.h):
//   FORMAT_FP32     fp32 operands as given, panels of floats, matmul_tile;
//   FORMAT_ROUNDED  bf16 operands widened to floats as they are packed (rounded first when
//                   they come in fp32), the two steps of each pair swapped so that
//                   matmul_tile's chain adds a pair as vdpbf16ps does (step 2p + 1, then 2p);
//   FORMAT_PAIRS    bf16 operands in pair-interleaved panels for Bf16Kernels.tile
//                   (matmul_bf16.inc).
// A panel of `width` rows of A (MR) or columns of B (NR) holds every k step of them, steps
// padded to an even count in the bf16 formats, `width` values a step (in FORMAT_PAIRS the
// values of a pair side by side): width * packed_steps elements, a k block from k0 on at
// k0 * width.
enum { FORMAT_FP32 = 0, FORMAT_ROUNDED = 1, FORMAT_PAIRS = 2 };

static inline int packed_steps(int K, int format) { return format == FORMAT_FP32 ? K : K + (K & 1); }
static inline size_t format_element(int format) { return format == FORMAT_PAIRS ? sizeof(bf16) : sizeof(float); }

typedef struct {
    int M, Nc, K;
    const float *a;     // A(i, k) = a[i*lda + k], or a[k*lda + i] when a_kmajor
    long lda;
    int a_kmajor;
    const float *b;     // B(k, j) = b[k*ldb + j] when wt is NULL
    long ldb;
    const float *wt;    // else B = wt^T: B(k, j) = wt[j*ldwt + k]
    long ldwt;
    float *c;           // C(i, j) = c[i*ldc + j]
    long ldc;
    int accumulate;     // 1: C += A B; 0: C = bias + A B
    const float *bias;  // (Nc) or NULL, when !accumulate
    float *a_row_sums;  // (M) or NULL: a_row_sums[i] += A(i, k) for every k (k-major A)
    int triangle;       // MATMUL_LOWER, MATMUL_A_ZERO_ABOVE, MATMUL_A_ZERO_BELOW (backend.h)
    int format;         // FORMAT_*; in the bf16 formats B may come from b16 or wt16, A from a16
    const Bf16Kernels *kern;  // the bf16 formats' conversions, and FORMAT_PAIRS's tile
    const bf16 *b16;    // B(k, j) = b16[k*ldb + j]
    const bf16 *wt16;   // B(k, j) = wt16[j*ldwt + k]
    const bf16 *a16;    // A in bf16, laid out as a, or NULL
    const void *a_panels;  // A packed whole into row panels in the format's layout, or NULL
    const void *b_panels;  // B packed whole into column panels, or NULL
    bf16 *a_keep;       // (M, K) or NULL: receives A (rows contiguous, from a) rounded as it is packed
    PackBuffer *pack;   // the team's buffer for packed operands (matmul_pack_operands)
} Gemm;

// What a tile at column j (nr of NR columns valid) starts from in k block k0: NULL to carry
// on from C, else the bias (padded with zeros into pad when the panel is partial) or zero_row.
static inline const float *gemm_tile_start(const Gemm *g, int j, int nr, int k0, float *pad,
                                           const float *zero_row) {
    if (k0 != 0 || g->accumulate) return NULL;
    if (!g->bias) return zero_row;
    if (nr == NR) return g->bias + j;
    for (int jj = 0; jj < NR; jj++) pad[jj] = jj < nr ? g->bias[j + jj] : 0.0f;
    return pad;
}

// The k steps [*klo, *khi) of block [k0, k0 + kc) that can be non-zero for the tile of rows
// [i, i + mr) at column j under g's triangle; returns 0 when there are none.
static inline int gemm_tile_k_range(const Gemm *g, int i, int mr, int j, int k0, int kc, int *klo,
                                    int *khi) {
    *klo = k0, *khi = k0 + kc;
    if (g->triangle == MATMUL_LOWER && j > i + mr - 1) return 0;
    if (g->triangle == MATMUL_A_ZERO_ABOVE && *khi > i + mr) *khi = i + mr;
    if (g->triangle == MATMUL_A_ZERO_BELOW && *klo < i) *klo = i;
    return *klo < *khi;
}

// The columns of the tile of rows [i, i + mr) at column j (nr of NR valid) to compute: under
// MATMUL_LOWER a tile whose right half lies wholly past the diagonal computes its left half.
static inline int gemm_tile_columns(const Gemm *g, int i, int mr, int j, int nr) {
    return g->triangle == MATMUL_LOWER && nr > NR / 2 && j + NR / 2 > i + mr - 1 ? NR / 2 : nr;
}

// An edge tile (mr <= MR rows, nr <= NR columns valid) is computed in a full (MR, NR) tile
// of its own: loaded from C first when it carries on from C (start NULL), zeros elsewhere...
static inline void gemm_edge_tile_load(float *tile, const float *c, long ldc, int mr, int nr,
                                       const float *start) {
    if (start) return;
    for (int ii = 0; ii < MR; ii++)
        for (int jj = 0; jj < NR; jj++) tile[ii * NR + jj] = ii < mr && jj < nr ? c[(long)ii * ldc + jj] : 0.0f;
}

// ...and its valid part stored back into C.
static inline void gemm_edge_tile_store(float *c, long ldc, const float *tile, int mr, int nr) {
    for (int ii = 0; ii < mr; ii++) memcpy(c + (long)ii * ldc, tile + ii * NR, (size_t)nr * sizeof(float));
}

// Asks for the MR rows of NR floats of a tile of C at c to be brought into the cache (to be
// written), while the tile before it is computed: a tile whose rows are not in the cache
// (a k block after the first reads them) otherwise waits out their latency before its first
// multiply-add.
static inline void gemm_prefetch_tile(const float *c, long ldc) {
    for (int ii = 0; ii < MR; ii++) {
        const char *row = (const char *)(c + ii * ldc);
        for (int b = 0; b < NR * (int)sizeof(float); b += 64) __builtin_prefetch(row + b, 1);
        __builtin_prefetch(row + NR * sizeof(float) - 1, 1);
    }
}

// a_row_sums[i] += A(i, k) for rows [i0, i1) and the k block [k0, k0 + kc) of a k-major A,
// each in k order. The rows go ROW_SUMS_BLOCK at a time, a block's sums held across the k
// steps, a short block's lanes past i1 adding zeros: a task's rows are often fewer than a
// vector's lanes or a few more, which as one loop over them left most adds to scalar code.
#define ROW_SUMS_BLOCK 16
static inline void gemm_add_row_sums(const Gemm *g, int i0, int i1, int k0, int kc) {
    for (int b0 = i0; b0 < i1; b0 += ROW_SUMS_BLOCK) {
        int n = i1 - b0 < ROW_SUMS_BLOCK ? i1 - b0 : ROW_SUMS_BLOCK;
        float *sums = g->a_row_sums + b0, acc[ROW_SUMS_BLOCK];
        for (int i = 0; i < ROW_SUMS_BLOCK; i++) acc[i] = i < n ? sums[i] : 0.0f;
        for (int k = k0; k < k0 + kc; k++) {
            const float *ak = g->a + (long)k * g->lda + b0;
#pragma omp simd
            for (int i = 0; i < ROW_SUMS_BLOCK; i++) acc[i] += i < n ? ak[i] : 0.0f;
        }
        for (int i = 0; i < n; i++) sums[i] = acc[i];
    }
}

// Rows of a k-major operand packed at a time, in one pass over its rows: a group of
// PACK_GROUP_PANELS row panels of A (or as many columns of B).
#define PACK_GROUP_PANELS 20
#define PACK_GROUP_ROWS (PACK_GROUP_PANELS * MR)
_Static_assert(PACK_GROUP_ROWS >= NR, "a group holds at least a column panel of B");

// Team function: packs the B of count products whole into the column panels their tiles
// read, in their format, and their A into row panels where it is in bf16 or k-major and
// wide or with its steps far apart (matmul.inc), in the team's buffer (g->pack, grown as
// needed), adds a k-major A's row sums as it packs it (and clears a_row_sums; else the tasks
// add them), writes A rounded to a_keep where one is given, and points a_panels and b_panels
// at the panels, so that the tasks neither convert the same floats nor pack the same panel
// again and again.
// Returns 1; or 0 without the memory for it (nothing kept: the tasks then pack as they go,
// with the same results).
static int matmul_pack_operands(Gemm *g, int count);

// ---- bf16 pairs, fp32 sums (backend.h, matmul_bf16.inc)

// Rows [i0, i1) x columns [j0, j1) of a product in FORMAT_PAIRS, i0 and j0 on tile
// boundaries, each element's sum in the same order whatever the task.
static void matmul_bf16_task(const Gemm *g, int i0, int i1, int j0, int j1);

// Row panels [q0, q1) of A, or column panels [q0, q1) of B, over all K steps in FORMAT_PAIRS,
// into their places among all the panels, with A's row sums and kept rows as
// matmul_pack_operands says; or A's rows [q0*MR, q1*MR) in bf16 where a_in_rows.
static void pairs_pack_a_panels(bf16 *panels, const Gemm *g, int q0, int q1);
static void pairs_pack_b_panels(bf16 *panels, const Gemm *g, int q0, int q1);

// k steps in a block of a bf16 product; even, so that no pair straddles two blocks. A block
// of a column panel of B (384 x 32 bf16, 24 KiB) stays in L1 while the tiles of a group use it.
#define BF16_KC 384

#endif
