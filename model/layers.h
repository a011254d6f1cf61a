// The layers of the GPT, each a forward and a backward function side by side.
//
// Conventions: N rows of C channels, row-major. Every backward here ACCUMULATES (+=) into its
// input gradient and parameter gradients; callers zero what must start at zero. (The
// kernels' linear_backward and gelu_backward write their input gradient instead: no zeroing
// of the largest buffers, nor a read of them, before each.)
// Every function is a team function (parallel.h): inside a parallel region all threads of
// the team call it and share its work; from serial code it runs on the calling thread.
// The linear layers and attention's products are the kernels' (kernels.h), dropout masks
// are hashes (common/rng.h: hash_mix64).
#ifndef CHARGPT_LAYERS_H
#define CHARGPT_LAYERS_H

#include <stdint.h>

#include "../common/rng.h"
#include "../kernels/kernels.h"

// Dropout: element i of a tensor is kept when the hash of first + i under `key` clears p;
// kept values are scaled by 1/(1-p). p == 0 (or key unused) means identity. `first` places
// the tensor in a larger one (a part of a batch): its element i is element first + i there.
typedef struct {
    float p;
    uint64_t key;    // derived from (seed, layer, site) with dropout_key()
    uint64_t first;
} Dropout;

// Dropout sites within a layer.
enum { DROPOUT_ATTN_WEIGHTS = 0, DROPOUT_ATTN_RESIDUAL = 1, DROPOUT_MLP_RESIDUAL = 2 };

// Key for one dropout site of one layer in one step.
uint64_t dropout_key(uint64_t step_seed, int layer, int site);
// 1 when element `index` survives dropout with probability p of zeroing.
static inline int dropout_keep(uint64_t key, uint64_t index, float p) {
    uint64_t h = hash_mix64(key ^ (index * 0x9E3779B97F4A7C15ull));
    // compare the top 24 bits as a uniform in [0,1) against p
    return (float)(h >> 40) * (1.0f / 16777216.0f) >= p;
}

// out[b,t,:] = wte[tokens[b,t],:] + wpe[t,:]
// out (B*t, C), tokens (B, t), wte (V, C), wpe (>=t, C) or NULL (RoPE: no position table)
void encoder_forward(float *out, const int *tokens, const float *wte, const float *wpe, int B, int t, int C);
void encoder_backward(float *dwte, float *dwpe, const float *dout, const int *tokens, int B, int t, int C);

// LayerNorm is the kernels' (kernels.h: layernorm_forward, layernorm_backward), compiled for
// each instruction set, as GELU is.

// Where attention finds the keys and values of one layer: those of sequence b's position j
// at k + b*seq + j*ld and v + b*seq + j*ld, A floats each (head h's from h*hs). In training
// they are the layer's own qkv rows; in cached generation, the cache's (model/gpt.h).
// A pass stores its own keys and values from row `store` (its position, but in a rolling
// cache: model/gpt.h).
typedef struct {
    float *k, *v;
    long ld, seq;
    int store;
} KVRows;

// Causal multi-head self-attention of B sequences of t positions from pos0, their queries,
// keys and values in a packed qkv (B*t, 3A), A = H*hs: q = [0,A), k = [A,2A), v = [2A,3A),
// head h at [h*hs, (h+1)*hs) within each. The keys and values attended to are kv's rows
// [0, pos0 + t) of each sequence; the pass's own go to its rows [kv->store, kv->store + t)
// first, unless kv is qkv's rows themselves. For the query at position i:
// w = softmax_j<=i (q_i . k_j / sqrt(hs)), out_i = sum_j dropout(w)_j v_j.
// out (B*t, A); att (B, H, t, pos0 + t) keeps w before dropout, 0 past the query's position.
// The products run on k's kernels in its precision. Dropout only with pos0 = 0.
void attention_forward(Kernels *k, float *out, float *att, const float *qkv, const KVRows *kv, int B, int pos0, int t,
                       int H, int hs, const Dropout *drop);
// Rotary position embedding (RoPE, Su et al. 2021, as in llama2.c): in each head the pairs
// (x[2i], x[2i+1]) of a query or key at position p turn by the angle p * theta_i,
// theta_i = ROPE_BASE^(-2i/hs), i < hs/2:
//   x'[2i] = x[2i] cos - x[2i+1] sin,   x'[2i+1] = x[2i] sin + x[2i+1] cos
// A rotation keeps lengths and q'.k' = q.R(p_k - p_q)k, so a score depends only on how far
// apart the two positions are: keys cached at their positions stay right as a window slides.
#define ROPE_BASE 10000.0
// cs (t, hs): the cos and sin of the angles of positions [pos0, pos0 + t), (cos, sin) for
// pair i of each row at [2i, 2i+1]. Computed in double, so a far position loses no bits.
void rope_angles(float *cs, long pos0, int t, int hs);
// In place on the queries and keys of qkv (B*t, 3A), each sequence's row i at the angles
// cs + i*hs (its position's).
void rope_forward(float *qkv, const float *cs, int B, int t, int H, int hs);
// The backward: a rotation's gradient is the rotation back (by -angle, its transpose),
// in place on dq and dk in dqkv (B*t, 3A).
void rope_backward(float *dqkv, const float *cs, int B, int t, int H, int hs);

// dqkv (N, 3A) += gradient through attention; needs qkv and att of the forward (pos0 = 0, the
// keys and values qkv's own).
void attention_backward(Kernels *k, float *dqkv, const float *dout, const float *qkv, const float *att, int B, int t,
                        int H, int hs, const Dropout *drop);

// GELU is the kernels' (kernels.h: gelu_forward_slope, gelu_backward_slope): its exp is the
// costliest elementwise work of a step, and it is compiled for each instruction set.

// out = a + b
void residual_forward(float *out, const float *a, const float *b, int n);

// out = dropout(inp); dinp += dropout mask * scale * dout. Element i has index first + i.
void dropout_forward(float *out, const float *inp, int n, const Dropout *drop);
void dropout_backward(float *dinp, const float *dout, int n, const Dropout *drop);

// Softmax over V logits per row, then -log p(target). probs, logits (N, V); losses, targets (N)
void crossentropy_forward(float *losses, float *probs, const float *logits, const int *targets, int N, int V);
// dlogits += (probs - onehot(target)) * dloss, dloss the same for every row (1/N for a mean)
void crossentropy_backward(float *dlogits, const float *probs, const int *targets, float dloss, int N, int V);

// Softmax over V for each row (no targets), for sampling.
void softmax_forward(float *probs, const float *logits, int N, int V);

#endif
