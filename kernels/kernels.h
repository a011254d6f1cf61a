// The kernels: the matrix products of the linear layers and of attention's heads, LayerNorm,
// GELU and softmax, behind the one interface the model (model/) uses, with parallel.h for its threads.
// The model hands over fp32 tensors and their shapes, and the workspace it owns (Kernels)
// holds the run's precision and whatever the kernels keep.
//
// Two kinds of kernels run these calls. The plain kernels (kernels/plain.c,
// CHARGPT_KERNELS=plain) are the textbook loops: the matrix product as three loops, LayerNorm,
// GELU and softmax as their formulas; a learner reads and steps through them. The fast ones are the
// backends (backend.h: portable C; on x86-64 AVX2, AVX-512 and AVX-512 with AVX512_BF16; on
// AArch64 NEON and NEON with FEAT_BF16; their packing, register tiles and copies of the
// weights), one per instruction set, chosen at run time: each function of
// plain.c starts by handing the call to them when they run it (fast.h), and a first reading
// skips that branch.
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
// which kernels: a backend of one instruction set each (portable C, AVX2, NEON, ...) or
// the plain loops, one of which runs them all; the same seed gives the same bits on each
// whatever the thread count, and they differ only in the last bits of sums.

// Chooses the kernels for the program: CHARGPT_KERNELS's when it is set, else the fastest
// backend this CPU runs. Returns 0, or -1 with err when CHARGPT_KERNELS names no kernels, or
// a backend this CPU does not run (the programs then exit with status 2). Without a call the
// kernels are CHARGPT_KERNELS's if this CPU runs them, else the fastest.
int kernels_init(char err[ERR_LEN]);
// Switches to the named kernels (tests, benchmarks): 0, or -1 with err as kernels_init.
// Call it outside parallel regions; workspaces made before keep the kernels they were made
// for: make them again.
int kernels_use(const char *name, char err[ERR_LEN]);
// The kernels in use: "plain", "portable", on x86-64 "avx2", "avx512", "avx512_bf16" or
// "avx512_amx", on AArch64 "neon" or "neon_bf16".
const char *kernels_name(void);
// The kernels this CPU runs, the default choice first (the plain ones last): how many (at
// most max), their names in names; and the same as one text, "avx512_bf16, avx512, avx2,
// portable, plain" on an x86-64 CPU with AVX512_BF16 ("avx512, avx512_bf16, ..." where its
// vdpbf16ps is the slower: dispatch.c; "avx512_amx, avx512_bf16, ..." where Linux lets it use
// AMX), "neon_bf16, neon, portable, plain" on an AArch64 one with FEAT_BF16.
int kernels_available(const char **names, int max);
void kernels_available_text(char *text, size_t n);
// The precision and the kernels running it: "fp32, kernels avx512_bf16", "bf16 (vdpbf16ps),
// kernels avx512_bf16", "bf16 (AMX tiles), kernels avx512_amx", "bf16 (widened to fp32),
// kernels avx2 (CHARGPT_KERNELS)", "bf16 (rounded in the loops), kernels plain (CHARGPT_KERNELS)".
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
// With `pack_weights` 1 a backend keeps the weights packed in fp32 too, as both products of
// a linear layer read them, for passes that run many times on the same weights (a step's
// micro-batches): call kernels_weights_changed before the passes of new weights.
typedef struct {
    int rows, t, hs, threads, training, pack_weights;
} KernelsShape;

// What kernels keep for a model: made for a precision, the model's groups of linear weights
// (at most KERNELS_MAX_GROUPS; they must stay where they are) and its passes (each thread's
// room for heads is allocated when the thread first needs it), on the kernels in use. In bf16
// a backend rounds and packs the weights as they are now (the plain loops round every
// operand as they read it). Returns NULL with err when memory runs out.
typedef struct Kernels Kernels;
Kernels *kernels_new(Precision precision, const LinearWeights *groups, int count, const KernelsShape *shape,
                     char err[ERR_LEN]);
void kernels_free(Kernels *k);
Precision kernels_precision(const Kernels *k);
// The weights changed (an optimizer step): refreshes their rounded and packed copies (in
// fp32 without pack_weights nothing). A team function (parallel.h).
void kernels_weights_changed(Kernels *k);
// With `alone` 1, linear_forward gives each row of its output the bits that a one-row
// linear_forward gives it, whatever N is, until it is called with 0 (generation decodes
// samples together, and each must equal the sample decoded alone). Call it from serial code.
void kernels_rows_alone(Kernels *k, int alone);

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
// from serial code a backend starts a team of its own for a large product (the plain loops
// run on the calling thread). On a bf16 backend a weight must be one of the workspace's (any
// other is used in fp32). k may be NULL: fp32 on the kernels in use.

// bias may be NULL.
void linear_forward(Kernels *k, float *out, const float *inp, const float *weight, const float *bias, int N, int C,
                    int OC);
// The backward of linear_forward: the input's gradient written, the parameters' added to
//   dinp (N, C) = dout (N, OC) @ weight (OC, C),  dweight (OC, C) += dout^T @ inp,
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
// LayerNorm: team functions (parallel.h), the same bits whichever kernels run them (each sum
// over a row in fixed_sum.h's order)

#define LAYERNORM_EPS 1e-5f

// y = (x - mean) * rstd * weight + bias for each row x, rstd = 1/sqrt(var + LAYERNORM_EPS),
// var the biased variance: out, inp (N, C); mean, rstd (N) written; weight, bias (C)
void layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *weight, const float *bias,
                       int N, int C);
// With xhat = (x - mean) * rstd and g = dout * weight, ACCUMULATES (+=)
//   dinp += rstd * (g - mean(g) - xhat * mean(g * xhat)),  dweight += dout * xhat,  dbias += dout
// (the means over a row's C channels, the parameters' sums over the N rows); mean and rstd the forward's
void layernorm_backward(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                        const float *weight, const float *mean, const float *rstd, int N, int C);

// ---------------------------------------------------------------------------------------
// pointwise kernels: team functions (parallel.h) but the softmax of a row, on the calling thread

// GELU, tanh form: out = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), n elements.
void gelu_forward(float *out, const float *inp, int n);
// The same, and GELU'(inp) into slope (which may be inp: in place), with the bits by which
// gelu_backward multiplies dout, so that the backward is gelu_backward_slope's one product.
void gelu_forward_slope(float *out, float *slope, const float *inp, int n);
// dinp = GELU'(inp) * dout; dinp may be dout (in place)
void gelu_backward(float *dinp, const float *inp, const float *dout, int n);
// dinp = slope * dout, slope from gelu_forward_slope: gelu_backward's bits; dinp may be dout
void gelu_backward_slope(float *dinp, const float *slope, const float *dout, int n);
// row[j] = exp((row[j] - max) * scale) / (the sum of the same over j < n), max = row's largest
void softmax_row(float *row, int n, float scale);
// softmax_row's backward: from the weights w of a row of n and their gradients dw (in place),
// the gradients of the row's scores, dw[j] = w[j] (dw[j] - the sum over k of w[k] dw[k]) scale
void softmax_row_backward(float *dw, const float *w, int n, float scale);
// The probabilities of a row of n logits, probs[j] = exp(logits[j] - max) / sum with max the
// largest logit and sum the sum of exp(logits[j] - max); returns log(sum) and gives max, from
// which -log probs[j] = log(sum) - (logits[j] - max) without the log of a tiny probability.
float logits_softmax(float *probs, const float *logits, int n, float *max);

// ---------------------------------------------------------------------------------------
// the optimizer's update: a team function

// One AdamW update's numbers: the learning rate, the moments' decay rates, eps, the weight
// decay, and update k's bias corrections, bias1 = 1 - beta1^k and bias2 = 1 - beta2^k.
typedef struct {
    float lr, beta1, beta2, eps, weight_decay, bias1, bias2;
} AdamWStep;
// For each i < n, g = grads[i], wd the weight decay where decay[i] is 1, else 0:
//   m[i] = beta1 m[i] + (1 - beta1) g;  v[i] = beta2 v[i] + (1 - beta2) g^2
//   params[i] -= lr ((m[i] / bias1) / (sqrt(v[i] / bias2) + eps) + wd params[i])
void adamw_step(float *params, const float *grads, float *m, float *v, const unsigned char *decay, size_t n,
                const AdamWStep *s);

// ---------------------------------------------------------------------------------------
// attention: the products of one head (hs wide), on the calling thread

// A head's operands: t queries (rows ldq apart) at the positions [n - t, n) of a sequence,
// and the keys and values of its positions [0, n) (rows ldkv apart); a query attends to the
// keys at and before its own position. For the backward (which takes t = n) the output
// gradient g (t, hs) rows ldg apart (else NULL). head_begin prepares them once for the
// head's products (a bf16 backend with bf16 dot products rounds them into the thread's room;
// the other kernels round them as they read them) and gives the caller a (t, n) buffer of
// the thread's own, `work`. It returns 0, or -1 when the thread has no room (more threads
// or positions than the workspace was made for, or out of memory).
typedef struct {
    const float *q, *k, *v, *g;
    long ldq, ldkv, ldg;
    int t, n, hs;
    int bf16;                       // 1: every operand of the products is rounded to bf16
    float *work;
    const struct Backend *backend;  // the fast kernels' (NULL: the plain loops run the head)
    void *rounded;                  // theirs: the operands in bf16 (or NULL: the fp32 ones are read)
    int rounds_when_packed;         // theirs: bf16 products on the fp32 operands
} AttentionHead;
int head_begin(Kernels *k, AttentionHead *h, const float *q, long ldq, const float *keys, const float *values,
               long ldkv, const float *g, long ldg, int t, int n, int hs);
// scores (t, n) = Q K^T where a query sees the key (row i, columns j <= n - t + i); what is
// past that is left as anything.
void head_scores(const AttentionHead *h, float *scores);
// out (t, hs), rows ldo apart, = W V for W (t, n) zero past each query's last key.
void head_values(const AttentionHead *h, float *out, long ldo, const float *w);
// The backward of head_values (t = n): dv (t, hs) += W^T g, then dw (t, t) = g V^T on and
// below the diagonal (above: anything). dw may be w's buffer.
void head_values_backward(const AttentionHead *h, float *dv, long ldv, const float *w, float *dw);
// The backward of head_scores (t = n): dq += dS K and dk += dS^T Q, rows ld apart, for dS
// (t, t) lower triangular (zeros above the diagonal).
void head_scores_backward(const AttentionHead *h, float *dq, float *dk, long ld, const float *ds);

#endif
