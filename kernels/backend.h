// A backend: the kernels of one instruction set, as the table of functions that the
// workspace (workspace.c) and the dispatcher (dispatch.c) call. Private to kernels/.
//
// Each backend is one file, kernels/backend_<name>.c, compiled with its instruction set's
// flags (the Makefile's ISA_FLAGS_*): it defines its register tile MR x NR and the tile
// kernels (matmul_kernels.h says what each must do), then includes the one source of the
// products' driver (matmul.inc, matmul_bf16.inc: blocking, packing, tasks over the threads),
// of the portable bf16 kernels (bf16_portable.inc), of the pointwise kernels (pointwise.inc)
// and of LayerNorm (layernorm.inc), so that these are compiled once per instruction set, and
// fills a Backend. Adding a backend is adding such a file, its flags, and a line in dispatch.c.
//
// The products are matrix multiplies for linear layers, PyTorch's layout: weight (OC, C),
// out = inp @ weight^T + bias. Cache-blocked and register-tiled. The team functions among
// them (parallel.h) share the work among the threads of a team when called by every thread
// of one, and start a team of their own for a large product when called from serial code.
// Results do not depend on the thread count.
//
// The products of the linear layers pack their operands whole, once per product, into the
// team's buffer (PackBuffer), and the tasks run the tiles on the packed panels.
//
// Each product also comes in bf16 (the *_bf16 functions): every operand rounded to bf16
// (bf16.h), the weight taken from its rounded copy, activations rounded as they are packed,
// and every sum in fp32, pairs of products added as AVX512_BF16's vdpbf16ps adds them:
// c = (c + a[2p+1] b[2p+1]) + a[2p] b[2p], k in pairs from the start (an odd K ends with a
// zero). With vdpbf16ps where the backend has it; else on the fp32 tiles, the operands
// widened to floats once, as they are packed, and each pair's two steps swapped (the
// product of two bf16 is exact in float, so a fused multiply-add of it rounds as the
// addition does). The results are the same bits, except where a sum or a product falls
// below 2^-126 (float's smallest normal): vdpbf16ps flushes such a sum to zero, and a
// product there is rounded before it is added on a backend without FMA (portable) and not
// on one with it (matmul_kernels.h).
// Arm's BFDOT cannot add them so: it adds a pair's two products first and rounds to odd
// (Bf16Kernels), so the neon_bf16 backend's sums differ from the others' in their last
// bits, within the bound the tests derive for that rounding.
#ifndef CHARGPT_BACKEND_H
#define CHARGPT_BACKEND_H

#include <stddef.h>

#include "bf16.h"
#include "kernels.h"

// A buffer for a team's packed operands, grown as products need it (one team at a time).
typedef struct {
    void *data;
    size_t capacity;  // bytes
} PackBuffer;

// The small products of attention's heads, on the calling thread:
//   c (M, N) = A (M, K) @ B (K, N), or c += with MATMUL_ADD,
// A(i, k) = a[i*lda + k], or a[k*lda + i] with MATMUL_A_T (a holds A transposed);
// B(k, j) = b[k*ldb + j], or b[j*ldb + k] with MATMUL_B_T.
// At most one triangle flag says which work can be skipped, without changing any result:
//   MATMUL_LOWER         only c(i, j) with j <= i is wanted (tiles that cross the diagonal
//                        write some of what is above it, which the caller overwrites)
//   MATMUL_A_ZERO_ABOVE  A(i, k) is 0 for k > i (MATMUL_ADD not needed)
//   MATMUL_A_ZERO_BELOW  A(i, k) is 0 for k < i (only with MATMUL_ADD)
// The result never depends on A(i, k) more than MATMUL_TRIANGLE_BAND past the diagonal on
// the side a flag says is zero (k > i + band, or k < i - band): there A may hold anything,
// even NaN; only the zeros within the band must be there.
// Each c(i, j) is one chain over k in order, as in the linear layers' products; but for one
// row of A without a triangle flag (a decoder step's query) and MATMUL_B_T, each c(0, j) is
// a dot product summed as the matrix-vector product of a linear layer sums it.
#define MATMUL_TRIANGLE_BAND 16
enum {
    MATMUL_A_T = 1,
    MATMUL_B_T = 2,
    MATMUL_ADD = 4,
    MATMUL_LOWER = 8,
    MATMUL_A_ZERO_ABOVE = 16,
    MATMUL_A_ZERO_BELOW = 32,
};

typedef struct Bf16Kernels Bf16Kernels;
// A tile of the bf16 kernels (Bf16Kernels.tile, below).
typedef void Bf16Tile(int kp, const bf16 *a, const bf16 *b, float *c, long ldc, const float *start_row, int half);
// The same tile with A's MR rows read where they lie, lda bf16 apart (Bf16Kernels.tile_rows).
typedef void Bf16RowsTile(int kp, const bf16 *a, long lda, const bf16 *b, float *c, long ldc, const float *start_row,
                          int half);

// The bf16 kernels of one instruction set. With bf16 dot-product instructions, tile and
// pack_pairs run its products on pairs of bf16 (FORMAT_PAIRS); without them both are NULL
// and the products run on the backend's fp32 tile (FORMAT_ROUNDED). Every c[i][j] below
// gets the pairs p of its sum in order, each added as vdpbf16ps adds it:
//   c = (c + A(i, 2p+1) B(2p+1, j)) + A(i, 2p) B(2p, j),
// each addition rounded to nearest even (the product of two bf16 is exact in float unless
// below 2^-126). vdpbf16ps also treats a denormal c as zero and flushes a sum below 2^-126
// to zero; the fp32 tiles and the portable C keep denormals, which is the only difference
// between them (operands are never denormal: bf16_from_float makes denormals zero).
//
// Kernels with sums BF16_SUMS_BFDOT add each pair as Arm's BFDOT (and BFMMLA) do instead, in
// their standard behaviour (without FEAT_EBF16's FPCR.EBF, which no one sets here):
//   c = odd(c + odd(A(i, 2p) B(2p, j) + A(i, 2p+1) B(2p+1, j))),
// odd() rounding to odd (an inexact result keeps the truncated value with its last bit
// set: an error below one unit in the last place, 2^-23 relative, where rounding to
// nearest errs by half of one), denormal inputs and results flushed to zero. No sequence
// of these instructions rounds to nearest, so such sums differ from the others' in their
// last bits; the tests bound them with BFDOT's unit 2^-23.
//
// Kernels with sums BF16_SUMS_AMX add the pairs 16 at a time as AMX's TDPBF16PS does
// (bf16_avx512.c): one pair as c + (the pair's sum rounded), rounded; more in an order of its
// own. Their sums differ from the others' in their last bits, within the bound of unit 2^-24.
struct Bf16Kernels {
    const char *name;  // how the products run: "vdpbf16ps", "bfdot", "AMX tiles", "widened to fp32"
    // One register tile (MR, NR as for matmul_tile) over kp pairs of packed operands:
    //   A(i, 2p + e) = a[(p*MR + i)*2 + e]   (pair p of the MR rows together)
    //   B(2p + e, j) = b[(p*NR + j)*2 + e]   (pair p of the NR columns together)
    // c (MR, NR) = start + the pairs; start_row and half as for matmul_tile.
    Bf16Tile *tile;
    // dst[i] = bf16_from_float(src[i]) for i < n
    void (*convert)(bf16 *dst, const float *src, long n);
    // The pair-interleaved panel of `width` rows whose pairs are contiguous in memory: for
    // p < pairs and r < width, dst[(p*width + r)*2 + e] = src[r*ld + 2p + e] when r < count,
    // else 0 (a transpose of 32-bit words).
    void (*pack_pairs)(bf16 *dst, int width, int count, const bf16 *src, long ld, int pairs);
    // out[o] = (bias ? bias[o] : 0) + w[o, :] . x for o in [o0, o1); w (OC, C), x (C).
    // Each row's sum runs in 32 lanes: lane l < 16 takes the pairs of elements (64s + 2l,
    // 64s + 2l + 1) for s = 0, 1, ..., lane 16 + l the pairs 32 elements further, added as
    // tile adds a pair (elements past C are zeros); then s[l] = lane l + lane 16 + l, and
    // s[l] += s[l + h] for l < h, h = 8, 4, 2, 1, gives the sum s[0].
    void (*dot_rows)(float *out, const bf16 *x, const bf16 *w, const float *bias, int C, int o0,
                     int o1);
    int sums;  // BF16_SUMS_*: how the tile adds each pair
    // NULL, or a layout of A of the tile's own (AMX's: each block of 16 pairs as 16 pairs of
    // row 0, then of row 1, ...): lay_out_a turns the full blocks of a packed row panel of kp
    // pairs into it in place, and tile_laid_out is tile on such a panel (the same bits).
    void (*lay_out_a)(bf16 *a, int kp);
    Bf16Tile *tile_laid_out;
    // NULL, or tile on an A of bf16 rows as they lie, the pairs of a row its 32-bit words:
    // A(i, 2p + e) = a[i*lda + 2p + e] (the same bits as tile on those rows packed).
    Bf16RowsTile *tile_rows;
};
// How a Bf16Kernels' tile adds the pairs: as vdpbf16ps (above), as BFDOT (above), or as AMX's
// TDPBF16PS adds 16 at a time (bf16_avx512.c): its own bits, within the bound of the first.
enum { BF16_SUMS_VDPBF16PS = 0, BF16_SUMS_BFDOT = 1, BF16_SUMS_AMX = 2 };

typedef struct Backend Backend;
struct Backend {
    const char *name;        // as CHARGPT_KERNELS names it: "portable", "avx2", "avx512", "avx512_bf16",
                             // "avx512_amx", "neon" or "neon_bf16"
    const char *needs;       // the instructions it needs, for messages
    int (*cpu_runs)(void);   // whether this CPU (and its operating system) runs them
    const Bf16Kernels *bf16;  // the bf16 tiles and conversions its bf16 products use
    // Without bf16 dot-product instructions: what a bf16 training step costs against an fp32
    // one on these kernels (BF16_COST_*), for kernels_precision_note; NULL with them.
    const char *bf16_cost;
    // NULL, or whether on this CPU the next backend of the table (the same fp32 kernels,
    // bf16 products of the same bits without bf16 dot products) is the faster one: the
    // default choice then passes this one over (dispatch.c).
    int (*slower_than_next)(void);

    // out (N, OC) = inp (N, C) @ weight (OC, C)^T + bias (OC); bias may be NULL. buf (or NULL:
    // the tasks pack as they go) receives the packed operands; weight_panels, when not NULL,
    // is weight packed by pack_weight_fp32, so that the product does not pack it again.
    void (*forward)(float *out, const float *inp, const float *weight, const void *weight_panels, const float *bias,
                    int N, int C, int OC, PackBuffer *buf);
    // The same as one matrix-vector product per row of inp: each row of out has the bits that
    // a one-row forward gives it, whatever N is.
    void (*forward_rows)(float *out, const float *inp, const float *weight, const float *bias, int N, int C, int OC);
    // Backward of forward, as kernels.h's linear_backward: dinp (N, C) = dout (N, OC) @ weight
    // (OC, C), written; dweight (OC, C) += dout^T @ inp, dbias (OC) += the sum of dout's rows;
    // dinp and dbias may be NULL (not wanted); weight_panels as for forward.
    void (*backward)(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                     const float *weight, const void *weight_panels, int N, int C, int OC, PackBuffer *buf);
    void (*small)(float *c, long ldc, const float *a, long lda, const float *b, long ldb, int M, int N, int K,
                  int flags);
    // small in bf16 on fp32 operands, each rounded to bf16 as the product packs it, on the fp32
    // tile (the bf16 products of attention's heads on a backend without bf16 dot products).
    void (*small_rounded)(float *c, long ldc, const float *a, long lda, const float *b, long ldb, int M, int N, int K,
                          int flags);

    // The same with bf16 operands, packed in buf: weight is the bf16 copy of the (OC, C)
    // weight, weight_panels (when not NULL) the same packed by pack_weight_bf16, so that the
    // product does not pack it again. keep16 (N, C), when not NULL, receives inp rounded to
    // bf16 as the product packs it; returns 1 when it did (0: buf had no room).
    int (*forward_bf16)(const Backend *b, float *out, const float *inp, bf16 *keep16, const bf16 *weight,
                        const void *weight_panels, const float *bias, int N, int C, int OC, PackBuffer *buf);
    void (*forward_rows_bf16)(const Backend *b, float *out, const float *inp, const bf16 *weight, const float *bias,
                              int N, int C, int OC);
    // The backward, its input in fp32 (inp) or already rounded to bf16 (inp16, the other NULL).
    void (*backward_bf16)(const Backend *b, float *dinp, float *dweight, float *dbias, const float *dout,
                          const float *inp, const bf16 *inp16, const bf16 *weight, int N, int C, int OC,
                          PackBuffer *buf);
    // small with operands already rounded (bf16_from_float of each).
    void (*small_bf16)(const Backend *b, float *c, long ldc, const bf16 *a, long lda, const bf16 *b16, long ldb,
                       int M, int N, int K, int flags);
    // Bytes of a packed (OC, C) bf16 weight, and the packing: weight_panels = the column panels
    // of weight^T that forward_bf16's product reads, from the fp32 weight and its bf16 copy
    // weight16 (the same values); a team function.
    size_t (*weight_panels_bytes)(const Backend *b, int C, int OC);
    void (*pack_weight_bf16)(const Backend *b, void *weight_panels, const float *weight, const bf16 *weight16, int C,
                             int OC);
    // Bytes of a packed (OC, C) fp32 weight, and the packing (a team function): the column
    // panels of weight^T that forward's product reads, then those of weight that the input
    // gradient's product (dinp = dout @ weight) reads, each as the product would pack it.
    size_t (*fp32_weight_panels_bytes)(int C, int OC);
    void (*pack_weight_fp32)(void *weight_panels, const float *weight, int C, int OC);
    // dst[i] = bf16_from_float(src[i]) for i < n; a team function.
    void (*convert_bf16)(const Backend *b, bf16 *dst, const float *src, size_t n);
    // dst (rows, cols), rows ldd bf16 apart, = bf16_from_float of the rows of src, ld floats
    // apart, on the calling thread.
    void (*convert_bf16_rows)(const Backend *b, bf16 *dst, long ldd, const float *src, long ld, int rows, int cols);

    // LayerNorm (layernorm.inc), kernels.h's layernorm_forward and layernorm_backward (team
    // functions).
    void (*layernorm)(float *out, float *mean, float *rstd, const float *inp, const float *weight, const float *bias,
                      int N, int C);
    void (*layernorm_gradient)(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                               const float *weight, const float *mean, const float *rstd, int N, int C);
    // The pointwise kernels (pointwise.inc), kernels.h's gelu_forward (slope NULL) and
    // gelu_forward_slope, gelu_backward, gelu_backward_slope (team functions), softmax_row,
    // softmax_row_backward and logits_softmax (on the calling thread).
    void (*gelu)(float *out, float *slope, const float *inp, int n);
    void (*gelu_gradient)(float *dinp, const float *inp, const float *dout, int n);
    void (*gelu_slope_gradient)(float *dinp, const float *slope, const float *dout, int n);
    void (*row_softmax)(float *row, int n, float scale);
    void (*row_softmax_gradient)(float *dw, const float *w, int n, float scale);
    float (*softmax_logsum)(float *probs, const float *logits, int n, float *max);
    // kernels.h's adamw_step (adamw_step.inc; a team function).
    void (*adamw)(float *params, const float *grads, float *m, float *v, const unsigned char *decay, size_t n,
                  const AdamWStep *s);
};

// A backend's bf16_cost: as measured on x86 (docs/precision.md gives the command), or on AArch64, where
// no one has measured it yet, what x86 suggests.
#define BF16_COST_MEASURED(times)                                                                \
    "a training step in bf16 takes " times " the time of one in fp32 on them (measured on x86 " \
    "with these kernels forced); --precision fp32 is faster here"
#define BF16_COST_UNMEASURED                                                                      \
    "a training step in bf16 likely takes longer than one in fp32 on them, as it does on x86 "    \
    "(1.1 to 1.2 times there; not yet measured on ARM hardware): --precision fp32 is likely faster here"

// The register tile of the AVX-512 backend (backend_avx512.c), which its vdpbf16ps kernels
// (bf16_avx512.c, built with flags of their own) share.
#define AVX512_MR 14  // rows: one broadcast each
#define AVX512_NR 32  // columns: two 16-float vectors
extern const Bf16Kernels bf16_avx512_kernels;
// The same tiles on AMX's tile registers (bf16_avx512.c, Linux only), and whether this CPU has
// them and the operating system lets this process use them (asked for once).
extern const Bf16Kernels bf16_amx_kernels;
int bf16_amx_usable(void);
// Whether vdpbf16ps multiplies and adds fewer FLOPs a second than the fp32 multiply-adds on
// this CPU (BF16_DOT_SLOW_SHARE of them): measured once, in a fraction of a millisecond.
int bf16_avx512_dots_slow(void);
#define BF16_DOT_SLOW_SHARE 0.75

// The register tile of the NEON backends (backend_neon.c), which their BFDOT kernels
// (bf16_neon.c, built with FEAT_BF16's instructions enabled) share: 24 of AArch64's 32
// vector registers hold accumulators.
#define NEON_MR 6   // rows: two registers of A, 4 + 2 lanes
#define NEON_NR 16  // columns: four 4-float vectors
// Bf16Kernels.tile, pack_pairs and dot_rows with BFDOT (bf16_neon.c)
void bfdot_tile(int kp, const bf16 *a, const bf16 *b, float *c, long ldc, const float *start_row, int half);
void bfdot_pack_pairs(bf16 *dst, int width, int count, const bf16 *src, long ld, int pairs);
void bfdot_dot_rows(float *out, const bf16 *x, const bf16 *w, const float *bias, int C, int o0, int o1);

// The backend in use (dispatch.c): the one kernels_init or kernels_use chose, else the
// fastest this CPU runs; NULL when the plain loops (plain.c) were chosen.
const Backend *kernels_backend(void);

#endif
