// The fast kernels behind kernels.h's calls: every function of kernels/plain.c starts with
// one branch, which hands the call to its fast_ version here when a backend (backend.h) runs
// it rather than the plain loops. Private to kernels/: workspace.c holds the fast linear
// layers and attention heads, dispatch.c LayerNorm, the pointwise kernels and which backend
// runs.
#ifndef CHARGPT_FAST_H
#define CHARGPT_FAST_H

#include "kernels.h"

// 1 when a backend runs the kernels of workspace k (the one it was made for), or without k
// (NULL) of the program (the kernels in use); 0 when the plain loops do.
int kernels_fast(const Kernels *k);

void fast_linear_forward(Kernels *k, float *out, const float *inp, const float *weight, const float *bias, int N,
                         int C, int OC);
void fast_linear_backward(Kernels *k, float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                          const float *weight, int N, int C, int OC);

void fast_layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *weight,
                            const float *bias, int N, int C);
void fast_layernorm_backward(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                             const float *weight, const float *mean, const float *rstd, int N, int C);
void fast_gelu_forward(float *out, float *slope, const float *inp, int n);
void fast_gelu_backward(float *dinp, const float *inp, const float *dout, int n);
void fast_gelu_backward_slope(float *dinp, const float *slope, const float *dout, int n);
void fast_softmax_row(float *row, int n, float scale);
void fast_softmax_row_backward(float *dw, const float *w, int n, float scale);
float fast_logits_softmax(float *probs, const float *logits, int n, float *max);
void fast_adamw_step(float *params, const float *grads, float *m, float *v, const unsigned char *decay, size_t n,
                     const AdamWStep *s);

void fast_head_scores(const AttentionHead *h, float *scores);
void fast_head_values(const AttentionHead *h, float *out, long ldo, const float *w);
void fast_head_values_backward(const AttentionHead *h, float *dv, long ldv, const float *w, float *dw);
void fast_head_scores_backward(const AttentionHead *h, float *dq, float *dk, long ld, const float *ds);

#endif
