// The kernels: every computation whose code depends on the instruction set or on the
// precision of the run, behind the one interface the model (model/) uses, with parallel.h for
// its threads. The matrix products of the linear layers and of attention's heads, their
// packing and tiling, and in bf16 the rounded copies of the weights and of the layers'
// inputs all live here; the model hands over fp32 tensors and their shapes, and the
// workspace it owns (Kernels) holds the run's precision and whatever the kernels keep.
//
// Precision. In fp32 every product is fp32. In bf16 (mixed precision) every operand of a
// product is rounded to bfloat16 (to nearest, ties to even) and every sum kept in fp32:
// the workspace keeps each linear weight rounded and packed as the forward reads it
// (refreshed by kernels_weights_changed after each optimizer step), and each linear layer's
// input as its forward rounded it, for the weight gradient of its backward. The model's
// master weights, gradients and every other layer stay fp32.
//
// Every function here gives the same bits for any number of threads.
#ifndef CHARGPT_KERNELS_H
#define CHARGPT_KERNELS_H

#include <stddef.h>

#include "../common/errors.h"

typedef enum { PRECISION_FP32 = 0, PRECISION_BF16 = 1 } Precision;

// "fp32" or "bf16" to a Precision; returns 0, or -1 for anything else.
int precision_parse(const char *text, Precision *precision);
const char *precision_name(Precision precision);

// ---------------------------------------------------------------------------------------
// backends: the kernels of one instruction set each (portable C, AVX2, AVX-512, ...), one of
// which runs them all; the same seed gives the same bits on a backend whatever the thread
// count, and the backends differ only in the last bits of sums.

// Chooses the backend for the program: CHARGPT_KERNELS's when it is set, else the fastest
// this CPU runs. Returns 0, or -1 with err when CHARGPT_KERNELS names no backend, or one this
// CPU does not run (the programs then exit with status 2). Without a call the kernels take
// CHARGPT_KERNELS's backend if this CPU runs it, else the fastest.
int kernels_init(char err[ERR_LEN]);
// Switches to the named backend (tests, benchmarks): 0, or -1 with err as kernels_init.
// Call it outside parallel regions; workspaces made before keep the layout of the backend
// they were made for: make them again.
int kernels_use(const char *name, char err[ERR_LEN]);
// The backend in use: "portable", "avx2", "avx512" or "avx512_bf16".
const char *kernels_name(void);
// The backends this CPU runs, fastest first: how many (at most max), their names in names;
// and the same as one text, "avx512_bf16, avx512, avx2, portable".
int kernels_available(const char **names, int max);
void kernels_available_text(char *text, size_t n);
// The precision and the kernels running it: "fp32, kernels avx512_bf16", "bf16 (vdpbf16ps),
// kernels avx512_bf16", "bf16 (widened to fp32), kernels avx2 (CHARGPT_KERNELS)".
void precision_describe(Precision precision, char *text, size_t n);
// For bf16 on kernels without bf16 dot-product instructions: a note for the user, what the
// CPU lacks and what bf16 costs there, and 1; else 0 (nothing to say).
int kernels_precision_note(Precision precision, char *text, size_t n);

// ---------------------------------------------------------------------------------------
// the workspace

// Weights of linear layers (out = in @ weight^T): `count` matrices (rows, cols), one after
// the other from `first`.
typedef struct {
    const float *first;
    int count, rows, cols;
} LinearWeights;
#define KERNELS_MAX_GROUPS 8

// The passes a workspace serves: up to `rows` rows, attention heads of up to t positions of
// hs, on threads numbered below `threads` (0: below as many as a team may have here, 4 per
// core or omp_get_max_threads() if more); with `training` 1 backwards follow the forwards.
typedef struct {
    int rows, t, hs, threads, training;
} KernelsShape;

// What kernels keep for a model: made for a precision, the model's groups of linear weights
// (at most KERNELS_MAX_GROUPS; they must stay where they are) and its passes (each thread's
// room for heads is allocated when the thread first needs it). In bf16 it rounds and packs
// the weights as they are now. Returns NULL with err when memory runs out.
typedef struct Kernels Kernels;
Kernels *kernels_new(Precision precision, const LinearWeights *groups, int count, const KernelsShape *shape,
                     char err[ERR_LEN]);
void kernels_free(Kernels *k);
Precision kernels_precision(const Kernels *k);
// The weights changed (an optimizer step): refreshes their rounded and packed copies (in
// fp32 nothing). A team function (parallel.h).
void kernels_weights_changed(Kernels *k);

// The memory kernels_new allocates for these arguments and what its products then allocate:
// the weights' copies, the layers' rounded inputs, and the rest (the team's packed operands,
// each thread's room for heads).
typedef struct {
    double weights;
    double inputs;
    double work;
} KernelsMemory;
KernelsMemory kernels_memory(Precision precision, const LinearWeights *groups, int count, const KernelsShape *shape);

// ---------------------------------------------------------------------------------------
// linear layers, PyTorch's layout: out (N, OC) = inp (N, C) @ weight (OC, C)^T + bias (OC)
//
// Team functions (parallel.h): called by every thread of a team they share the work; called
// from serial code they start a team of their own for a large product. In bf16 a weight must
// be one of the workspace's (any other is used in fp32). k may be NULL: fp32 on the backend
// in use.

// bias may be NULL.
void linear_forward(Kernels *k, float *out, const float *inp, const float *weight, const float *bias, int N, int C,
                    int OC);
// The same as one matrix-vector product per row of inp: each row of out has the bits that a
// one-row linear_forward gives it, whatever N is (generation decodes samples together and
// each must equal the sample decoded alone).
void linear_forward_rows(Kernels *k, float *out, const float *inp, const float *weight, const float *bias, int N,
                         int C, int OC);
// The backward of linear_forward, accumulating:
//   dinp (N, C) += dout (N, OC) @ weight (OC, C),  dweight (OC, C) += dout^T @ inp,
//   dbias (OC) += the sum of dout's rows;
// dinp and dbias may be NULL (not wanted). inp must hold what the layer's latest forward
// read (a bf16 workspace may use the copy that forward rounded instead), or be NULL when
// linear_input_kept says the workspace kept that copy.
void linear_backward(Kernels *k, float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                     const float *weight, int N, int C, int OC);
// 1 when the latest forward of weight's layer, over N rows, left the workspace a copy of its
// input for the backward (in bf16, rounded), so that the caller need not keep the input or
// make it again; else 0.
int linear_input_kept(const Kernels *k, const float *weight, int N);

// ---------------------------------------------------------------------------------------
// pointwise kernels: team functions (parallel.h) but softmax_row, on the calling thread

// GELU, tanh form: out = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), n elements.
void gelu_forward(float *out, const float *inp, int n);
// dinp += GELU'(inp) * dout
void gelu_backward(float *dinp, const float *inp, const float *dout, int n);
// row[j] = exp((row[j] - max) * scale) / (the sum of the same over j < n), max = row's largest
void softmax_row(float *row, int n, float scale);

// ---------------------------------------------------------------------------------------
// attention: the products of one head (t positions, head size hs), on the calling thread

// A head's operands: queries, keys and values (t, hs) rows ld floats apart, and for the
// backward the output gradient g (t, hs) rows ldg apart (else NULL). head_begin prepares
// them once for the head's products (in bf16 on bf16 dot products, rounded into the
// thread's room; without them the products round them as they pack them) and gives the
// caller a (t, t) buffer of the thread's own, `work`. It returns 0, or -1 when the thread
// has no room (more threads than the workspace was made for, or out of memory).
typedef struct {
    const float *q, *k, *v, *g;
    long ld, ldg;
    int t, hs;
    float *work;
    void *rounded;                  // the operands in bf16 (or NULL: the fp32 ones are read)
    int rounds_when_packed;         // bf16 products on the fp32 operands
    const struct Backend *backend;  // the kernels' own
} AttentionHead;
int head_begin(Kernels *k, AttentionHead *h, const float *q, const float *keys, const float *v, long ld,
               const float *g, long ldg, int t, int hs);
// scores (t, t) = Q K^T on and below the diagonal (row i, columns j <= i); what is above is
// left as anything.
void head_scores(const AttentionHead *h, float *scores);
// out (t, hs), rows ldo apart, = W V for W (t, t) lower triangular (zeros above the diagonal).
void head_values(const AttentionHead *h, float *out, long ldo, const float *w);
// The backward of head_values: dv (t, hs) += W^T g, then dw (t, t) = g V^T on and below the
// diagonal (above: anything). dw may be w's buffer.
void head_values_backward(const AttentionHead *h, float *dv, long ldv, const float *w, float *dw);
// The backward of head_scores: dq += dS K and dk += dS^T Q, rows ld apart, for dS (t, t)
// lower triangular (zeros above the diagonal).
void head_scores_backward(const AttentionHead *h, float *dq, float *dk, long ld, const float *ds);

#endif
