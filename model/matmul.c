// Matrix multiply for the linear layers. All three products are one general product
//   C (M, Nc) = start + A (M, K) @ B (K, Nc)
// cut into MR x NR register tiles (matmul_kernels.h) over blocks of at most KC_MAX k steps:
//   forward  out     = bias + inp @ W^T:  A = inp (rows contiguous),  B = W^T (packed)
//   dinp     dinp   += dout @ W:          A = dout (rows contiguous), B = W
//   dweight  dweight += dout^T @ inp:     A = dout^T (k-major),       B = inp
// Only W^T is copied (into column panels of NR); every other operand is read in place,
// with the last partial panels copied into zero-padded scratch on the stack.
//
// Threads split the output into rectangular tasks; each element of C is finished by one
// kernel sequence whose k order does not depend on the task, so results are the same for
// any number of threads. A forward of a handful of rows (generation) is a matrix-vector
// product over the rows of W instead.
//
// Not reentrant: the packed W^T buffer is shared, so call from one thread at a time.
#include <stdlib.h>
#include <string.h>
#include <omp.h>

#include "matmul.h"
#include "matmul_kernels.h"

#define KC_MAX 256           // k steps per pass: a (KC_MAX, NR) panel of B stays in L1
#define TASK_ROW_PANELS 16   // a task covers at most this many MR-row panels ...
#define TASK_COL_PANELS 8    // ... and this many NR-column panels ...
#define TASKS_PER_THREAD 4   // ... and is made smaller until each thread has this many
#define GEMV_MAX_ROWS 10     // forwards with at most this many rows use matmul_dot_rows
#define DOT_ROWS_CHUNK 32    // rows of W per parallel chunk of a matrix-vector product
#define PARALLEL_MIN_MACS 65536L  // smaller products run on one thread

typedef struct {
    int M, Nc, K;
    const float *a;     // A(i, k) = a[i*lda + k], or a[k*lda + i] when a_kmajor
    long lda;
    int a_kmajor;
    const float *b;     // B(k, j) = b[k*ldb + j] when bpack is NULL
    long ldb;
    float *bpack;       // else B in column panels: B(k, p*NR + j) at bpack[(p*K + k)*NR + j]
    float *c;           // C(i, j) = c[i*ldc + j]
    long ldc;
    int accumulate;     // 1: C += A B; 0: C = bias + A B
    const float *bias;  // (Nc) or NULL, when !accumulate
    float *a_row_sums;  // (M) or NULL: a_row_sums[i] += A(i, k) for every k (k-major A)
} Gemm;

static const float zero_row[NR] __attribute__((aligned(64)));

static int min_int(int a, int b) { return a < b ? a : b; }

// ----------------------------------------------------------------------------
// the packed W^T, kept between calls and grown when a larger one is needed

static float *bpack_buf;
static size_t bpack_cap;  // floats

static float *bpack_buffer(size_t n) {
    if (n > bpack_cap) {
        free(bpack_buf);
        size_t bytes = (n * sizeof(float) + 63) / 64 * 64;
        bpack_buf = aligned_alloc(64, bytes);
        bpack_cap = bpack_buf ? n : 0;
    }
    return bpack_buf;
}

__attribute__((destructor)) static void free_bpack_buffer(void) { free(bpack_buf); }

// Column panel p of B = W^T: dst (K, NR) with dst[k*NR + j] = W[p*NR + j, k], zero for
// rows of W past OC. W (OC, K).
static void pack_wt_panel(float *dst, const float *w, int p, int K, int OC) {
    int j0 = p * NR, nr = min_int(NR, OC - j0);
    const float *src = w + (long)j0 * K;
    if (nr == NR) {
        matmul_transpose_panel(dst, src, K, K);
        return;
    }
    for (int k = 0; k < K; k++)
        for (int j = 0; j < NR; j++) dst[(long)k * NR + j] = j < nr ? src[(long)j * K + k] : 0.0f;
}

// ----------------------------------------------------------------------------
// the tiled product

// Rows [i0, i1) x columns [j0, j1) of C, i0 and j0 on panel boundaries.
static void gemm_task(const Gemm *g, int i0, int i1, int j0, int j1) {
    float apad[MR * KC_MAX] __attribute__((aligned(64)));  // last row panel, zero-padded
    float bpad[KC_MAX * NR] __attribute__((aligned(64)));  // last column panel of B
    float ctile[MR * NR] __attribute__((aligned(64)));     // a partial tile of C
    float start_pad[NR] __attribute__((aligned(64)));      // bias of a partial column panel
    int M = g->M, Nc = g->Nc, K = g->K;
    int nkb = (K + KC_MAX - 1) / KC_MAX;
    int kcb = (K + nkb - 1) / nkb;  // k blocks of equal size, fixed by K alone
    int i_edge = M - M % MR;        // first row of the partial row panel (M if none)
    for (int k0 = 0; k0 < K; k0 += kcb) {
        int kc = min_int(kcb, K - k0);
        long lda_edge = 0;
        if (i1 > i_edge) {
            int mr = M - i_edge;
            if (g->a_kmajor) {
                for (int k = 0; k < kc; k++)
                    for (int i = 0; i < MR; i++)
                        apad[k * MR + i] = i < mr ? g->a[(long)(k0 + k) * g->lda + i_edge + i] : 0.0f;
                lda_edge = MR;
            } else {
                for (int i = 0; i < MR; i++)
                    for (int k = 0; k < kc; k++)
                        apad[i * kc + k] = i < mr ? g->a[(long)(i_edge + i) * g->lda + k0 + k] : 0.0f;
                lda_edge = kc;
            }
        }
        for (int j = j0; j < j1; j += NR) {
            int nr = min_int(NR, Nc - j);
            const float *b;
            long ldb;
            if (g->bpack) {
                b = g->bpack + ((long)(j / NR) * K + k0) * NR;
                ldb = NR;
            } else if (nr == NR) {
                b = g->b + (long)k0 * g->ldb + j;
                ldb = g->ldb;
            } else {
                for (int k = 0; k < kc; k++)
                    for (int jj = 0; jj < NR; jj++)
                        bpad[k * NR + jj] = jj < nr ? g->b[(long)(k0 + k) * g->ldb + j + jj] : 0.0f;
                b = bpad;
                ldb = NR;
            }
            const float *start = NULL;  // NULL: carry on from C
            if (k0 == 0 && !g->accumulate) {
                start = g->bias ? g->bias + j : zero_row;
                if (g->bias && nr < NR) {
                    for (int jj = 0; jj < NR; jj++) start_pad[jj] = jj < nr ? g->bias[j + jj] : 0.0f;
                    start = start_pad;
                }
            }
            for (int i = i0; i < i1; i += MR) {
                int mr = min_int(MR, M - i);
                const float *a;
                long lda;
                if (i == i_edge) {
                    a = apad;
                    lda = lda_edge;
                } else {
                    a = g->a_kmajor ? g->a + (long)k0 * g->lda + i : g->a + (long)i * g->lda + k0;
                    lda = g->lda;
                }
                float *c = g->c + (long)i * g->ldc + j;
                if (mr == MR && nr == NR) {
                    matmul_tile(kc, a, lda, g->a_kmajor, b, ldb, c, g->ldc, start, 0);
                    continue;
                }
                if (!start)
                    for (int ii = 0; ii < MR; ii++)
                        for (int jj = 0; jj < NR; jj++)
                            ctile[ii * NR + jj] = ii < mr && jj < nr ? c[(long)ii * g->ldc + jj] : 0.0f;
                matmul_tile(kc, a, lda, g->a_kmajor, b, ldb, ctile, NR, start, nr <= NR / 2);
                for (int ii = 0; ii < mr; ii++)
                    memcpy(c + (long)ii * g->ldc, ctile + ii * NR, (size_t)nr * sizeof(float));
            }
        }
        // The row sums, while this k block of A is in cache: one task per row block.
        if (g->a_row_sums && j0 == 0) {
            float *sums = g->a_row_sums;
            for (int k = k0; k < k0 + kc; k++) {
                const float *ak = g->a + (long)k * g->lda;
                for (int i = i0; i < i1; i++) sums[i] += ak[i];
            }
        }
    }
}

// C = start + A B over all tasks. When wt is given, B = wt^T is packed first (wt (Nc, K)).
// Tasks are a grid of row parts x column parts; part p of n panels in `parts` parts covers
// panels [p*n/parts, (p+1)*n/parts).
static void gemm_run(const Gemm *g, const float *wt) {
    int row_panels = (g->M + MR - 1) / MR, col_panels = (g->Nc + NR - 1) / NR;
    int rows_per_part = min_int(TASK_ROW_PANELS, row_panels);
    int cols_per_part = min_int(TASK_COL_PANELS, col_panels);
    int want_tasks = omp_get_max_threads() > 1 ? TASKS_PER_THREAD * omp_get_max_threads() : 1;
    for (;;) {  // halve the longer side of a task until there are enough tasks
        int tasks = ((row_panels + rows_per_part - 1) / rows_per_part) *
                    ((col_panels + cols_per_part - 1) / cols_per_part);
        if (tasks >= want_tasks || (rows_per_part == 1 && cols_per_part == 1)) break;
        if (rows_per_part >= cols_per_part) rows_per_part = (rows_per_part + 1) / 2;
        else cols_per_part = (cols_per_part + 1) / 2;
    }
    int row_parts = (row_panels + rows_per_part - 1) / rows_per_part;
    int col_parts = (col_panels + cols_per_part - 1) / cols_per_part;
    int tasks = row_parts * col_parts;
    long macs = (long)g->M * g->Nc * g->K;
#pragma omp parallel if (macs >= PARALLEL_MIN_MACS)
    {
        if (wt) {
#pragma omp for schedule(static)
            for (int p = 0; p < col_panels; p++)
                pack_wt_panel(g->bpack + (long)p * g->K * NR, wt, p, g->K, g->Nc);
        }
#pragma omp for schedule(dynamic, 1)
        for (int t = 0; t < tasks; t++) {
            int rp = t / col_parts, cp = t % col_parts;
            int i0 = (int)((long)rp * row_panels / row_parts) * MR;
            int i1 = min_int(g->M, (int)((long)(rp + 1) * row_panels / row_parts) * MR);
            int j0 = (int)((long)cp * col_panels / col_parts) * NR;
            int j1 = min_int(g->Nc, (int)((long)(cp + 1) * col_panels / col_parts) * NR);
            gemm_task(g, i0, i1, j0, j1);
        }
    }
}

// ----------------------------------------------------------------------------
// the public functions

void matmul_forward_rows(float *out, const float *inp, const float *weight, const float *bias,
                         int N, int C, int OC) {
    int chunks = (OC + DOT_ROWS_CHUNK - 1) / DOT_ROWS_CHUNK;
    long macs = (long)N * C * OC;
#pragma omp parallel for schedule(static) if (macs >= PARALLEL_MIN_MACS)
    for (int ch = 0; ch < chunks; ch++) {
        int o0 = ch * DOT_ROWS_CHUNK, o1 = min_int(OC, o0 + DOT_ROWS_CHUNK);
        for (int n = 0; n < N; n++)
            matmul_dot_rows(out + (long)n * OC, inp + (long)n * C, weight, bias, C, o0, o1);
    }
}

void matmul_forward(float *out, const float *inp, const float *weight, const float *bias,
                    int N, int C, int OC) {
    if (N <= 0 || OC <= 0) return;
    int col_panels = (OC + NR - 1) / NR;
    float *bpack = NULL;
    if (N > GEMV_MAX_ROWS && C > 0) bpack = bpack_buffer((size_t)col_panels * C * NR);
    if (!bpack) {  // few rows, or no memory for the packed W^T
        matmul_forward_rows(out, inp, weight, bias, N, C, OC);
        return;
    }
    Gemm g = {.M = N, .Nc = OC, .K = C, .a = inp, .lda = C, .a_kmajor = 0, .bpack = bpack,
              .c = out, .ldc = OC, .accumulate = 0, .bias = bias};
    gemm_run(&g, weight);
}

void matmul_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                     const float *inp, const float *weight, int N, int C, int OC) {
    if (N <= 0 || C <= 0 || OC <= 0) return;
    if (dinp) {
        Gemm g = {.M = N, .Nc = C, .K = OC, .a = dout, .lda = OC, .a_kmajor = 0, .b = weight,
                  .ldb = C, .c = dinp, .ldc = C, .accumulate = 1};
        gemm_run(&g, NULL);
    }
    // dbias[o] += dout[0, o] + dout[1, o] + ... is the row sum of A = dout^T
    Gemm g = {.M = OC, .Nc = C, .K = N, .a = dout, .lda = OC, .a_kmajor = 1, .b = inp,
              .ldb = C, .c = dweight, .ldc = C, .accumulate = 1, .a_row_sums = dbias};
    gemm_run(&g, NULL);
}

const char *matmul_kernel_name(void) { return MATMUL_KERNEL_NAME; }
