// Exercise: causal self-attention, backward (`make exercise NAME=attention_backward`; docs/exercises.md).
//
// Write attention_backward, the gradients of the forward (exercises/attention.c has its
// shapes) given dout, the gradient of out, and att, the forward's weights W. For each
// sequence and head, with g_i = dout's row i (the head's hs):
//   dv_j += sum over i >= j of W[i][j] g_i              (out_i = sum_j W[i][j] v_j)
//   dW[i][j] = g_i . v_j                                  for j <= i
//   dS[i][j] = W[i][j] (dW[i][j] - sum over l <= i of W[i][l] dW[i][l])   (softmax's backward)
//   dq_i += sum over j <= i of dS[i][j] k_j / sqrt(hs),   dk_j += sum over i >= j of dS[i][j] q_i / sqrt(hs)
// dq, dk and dv are dqkv's rows laid out as qkv's (queries, keys, values) and are added to (+=).
//   dqkv, qkv (B*t, 3A); dout (B*t, A); att (B, H, t, t)
// The checks and the training run call it without dropout (drop NULL or drop->p = 0): you
// may ignore k and drop.
//
// The project's solution, if you want to compare afterwards: model/attention.c,
// attention_backward, with kernels/plain.c's head_values_backward and head_scores_backward.
#include "../model/layers.h"

void attention_backward(Kernels *k, float *dqkv, const float *dout, const float *qkv, const float *att, int B, int t,
                        int H, int hs, const Dropout *drop) {
    // your code here
}
