// Exercise: causal self-attention, forward (`make exercise NAME=attention`; docs/exercises.md).
//
// Write attention_forward. For each of the B sequences and each of the H heads, one head's
// causal attention over the sequence's t positions: with q_i, k_j, v_j the head's query, key
// and value vectors (hs floats each) at positions i and j,
//   att[i][j] = softmax over j <= i of (q_i . k_j / sqrt(hs)),  0 for j > i (a later key)
//   out_i     = the sum over j <= i of att[i][j] v_j
//   qkv (B*t, 3A), A = H*hs: row b*t + i holds position i's A queries, then its A keys, then
//       its A values, head h's hs of each at h*hs within them (q_i of head h is at
//       qkv[(b*t + i)*3A + h*hs], its key at + A, its value at + 2A)
//   out (B*t, A) written, head h's output at h*hs in each row
//   att (B, H, t, t) written: att[((b*H + h)*t + i)*t + j], 0 above the diagonal
// The checks and the training run call it with pos0 = 0, the keys and values in qkv itself
// (kv points into qkv) and no dropout (drop NULL or drop->p = 0): you may ignore k, kv, pos0
// and drop. (The project's version also serves generation's key/value cache, where pos0 > 0.)
//
// The project's solution, if you want to compare afterwards: model/attention.c,
// attention_forward, which hands each head's products to kernels/plain.c's head_scores,
// softmax_row and head_values.
#include "../model/layers.h"

void attention_forward(Kernels *k, float *out, float *att, const float *qkv, const KVRows *kv, int B, int pos0, int t,
                       int H, int hs, const Dropout *drop) {
    // your code here
}
