// The tests' oracle: every layer of the network and the whole GPT, forward and backward, in
// plain double precision. Written to be checked, not to be fast: simple loops over the shapes
// given in the comments, nothing cached that can be recomputed, each backward beside its
// forward, the whole model in one function (ref_gpt_forward_backward) that reads top to
// bottom like the architecture. The float model (model/) and its kernels (kernels/: the plain
// loops of kernels/plain.c and the fast backends) are what the programs run; this is what
// they are held to.
//
// How the tests use it:
//   tests/test_ops.c      each backward here against central finite differences of its
//                         forward; then every float layer against it, forward and backward,
//                         and AdamW's update
//   tests/test_kernels.c  the pointwise kernels (GELU, softmax) of every backend against it
//   tests/test_model.c    the whole float model against ref_gpt_forward_backward (loss,
//                         logits, every gradient, with and without dropout), and that
//                         function's gradient against finite differences
//   tests/exercises/      a learner's version of a layer (exercises/) against it
//                         (docs/exercises.md)
// (The whole float model is also checked against PyTorch through a committed fixture:
// tests/test_torch_parity.c.)
//
// Conventions follow the kernels: N rows of C channels, row-major; every backward
// ACCUMULATES (+=) into its gradients, but for the input gradients of the linear layer and
// GELU, which it writes (=). Dropout uses the same mask function as the kernels,
// dropout_keep(key, index, p) from model/layers.h; a NULL Dropout or p == 0 is the identity.
// The parameters are the model's, in its layout (model/gpt.h), as doubles.
#ifndef CHARGPT_REFERENCE_H
#define CHARGPT_REFERENCE_H

#include <stddef.h>
#include <stdint.h>

#include "../model/gpt.h"
#include "../model/layers.h"

// out[b,t,:] = wte[tokens[b,t],:] + wpe[t,:]; out (B*t, C); wpe NULL (RoPE): no position term
void ref_encoder_forward(double *out, const int *tokens, const double *wte, const double *wpe,
                         int B, int t, int C);
void ref_encoder_backward(double *dwte, double *dwpe, const double *dout, const int *tokens,
                          int B, int t, int C);

// y = (x - mean) / sqrt(var + LAYERNORM_EPS) * weight + bias; out, inp (N, C); mean, rstd (N)
void ref_layernorm_forward(double *out, double *mean, double *rstd, const double *inp,
                           const double *weight, const double *bias, int N, int C);
// recomputes the statistics from inp
void ref_layernorm_backward(double *dinp, double *dweight, double *dbias, const double *dout,
                            const double *inp, const double *weight, int N, int C);

// out (N, OC) = inp (N, C) @ weight (OC, C)^T + bias (OC); bias may be NULL
void ref_matmul_forward(double *out, const double *inp, const double *weight, const double *bias,
                        int N, int C, int OC);
// dinp = dout @ weight (written), dweight += dout^T @ inp, dbias += dout's row sums;
// dinp, dbias may be NULL
void ref_matmul_backward(double *dinp, double *dweight, double *dbias, const double *dout,
                         const double *inp, const double *weight, int N, int C, int OC);

// Causal attention on packed qkv (B*t, 3A), A = H*hs. out (B*t, A); att (B, H, t, t) the
// softmax weights before dropout, 0 above the diagonal. Dropout on the weights uses the
// flat (B, H, t, t) index of each weight.
void ref_attention_forward(double *out, double *att, const double *qkv, int B, int t, int H,
                           int hs, const Dropout *drop);
// RoPE (model/layers.h) on the queries and keys of qkv (B*t, 3A), in place, sequence row p at
// position p: pair k of each head turns by p * ROPE_BASE^(-2k/hs). The backward turns dqkv's
// back by the same angles (the rotation's transpose).
void ref_rope_forward(double *qkv, int B, int t, int H, int hs);
void ref_rope_backward(double *dqkv, int B, int t, int H, int hs);
// recomputes the weights from qkv
void ref_attention_backward(double *dqkv, const double *dout, const double *qkv, int B, int t,
                            int H, int hs, const Dropout *drop);

// GELU, tanh form
void ref_gelu_forward(double *out, const double *inp, size_t n);
// dinp = GELU'(inp) * dout (written)
void ref_gelu_backward(double *dinp, const double *inp, const double *dout, size_t n);

// out = a + b; da += dout, db += dout
void ref_residual_forward(double *out, const double *a, const double *b, size_t n);
void ref_residual_backward(double *da, double *db, const double *dout, size_t n);

// out = inp * keep / (1 - p), keep = dropout_keep(key, i, p)
void ref_dropout_forward(double *out, const double *inp, size_t n, const Dropout *drop);
void ref_dropout_backward(double *dinp, const double *dout, size_t n, const Dropout *drop);

// probs = softmax(logits) per row, losses = -log probs[target]; logits, probs (N, V)
void ref_crossentropy_forward(double *losses, double *probs, const double *logits,
                              const int *targets, int N, int V);
// dlogits += (probs - onehot(target)) * dlosses[row]
void ref_crossentropy_backward(double *dlogits, const double *probs, const int *targets,
                               const double *dlosses, int N, int V);
void ref_softmax_forward(double *probs, const double *logits, int N, int V);

// One AdamW update (model/adamw.h) of n parameters, the k-th (from 1), in double:
//   m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2;  mhat = m/(1-b1^k);  vhat = v/(1-b2^k)
//   p -= lr (mhat / (sqrt(vhat) + eps) + wd p), wd = weight_decay where decay[i] is 1, else 0
// params, m and v updated in place.
void ref_adamw_update(double *params, double *m, double *v, const double *grads, const unsigned char *decay, size_t n,
                      long k, double lr, double beta1, double beta2, double eps, double weight_decay);

// The whole GPT in double, on parameters laid out as model's (model/gpt.h; params holds
// model->num_parameters doubles, each where params_memory holds its float): returns the mean
// cross-entropy of tokens (B, t) against targets. Only model's config, layout and hooks
// (model/gpt.h) are read, not its weights: a head's output edited (zeroed or replaced) before
// c_proj, the residual stream entering a block replaced, each edited row passing no gradient
// back. Dropout is active when training is set and the config's dropout > 0, with
// the key of layer l and site s being dropout_key(dropout_seed, l, s). logits (B*t, V) and
// att (L, B, H, t, t) receive the logits and attention weights when non-NULL; grads
// (num_parameters, the same layout), when non-NULL, is overwritten with the gradient of the
// mean loss for every parameter.
double ref_gpt_forward_backward(const GPT *model, const double *params, const int *inputs, const int *targets,
                                int B, int t, int training, uint64_t dropout_seed, double *logits, double *att,
                                double *grads);

// The logits (t, V) of one sequence of t tokens (t may pass block_size with RoPE) where every
// layer's attention sees only the last `window` positions, its own included: what a RoPE
// model's rolling cache computes past the block (model/gpt.h).
void ref_gpt_sliding_logits(const GPT *model, const double *params, const int *inputs, int t, int window,
                            double *logits);

// Helpers for the tests built on this reference.
void ref_to_double(double *dst, const float *src, size_t n);
// objective of some parameters x that the function reads through ctx
typedef double (*RefObjective)(void *ctx);
// grad[i] = (f(x + h e_i) - f(x - h e_i)) / 2h for each of the n elements of x (restored after)
void ref_finite_diff(RefObjective f, void *ctx, double *x, size_t n, double h, double *grad);

#endif
