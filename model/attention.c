// Causal multi-head self-attention, forward and backward (declared in layers.h).
//
// Team functions (parallel.h): each (batch, head) pair is independent and runs on one
// thread. Within it, the products S = Q K^T, O = W V and their gradients are the kernels'
// (kernels.h: head_scores, head_values and their backwards), which skip what the causal
// mask zeroes, and so are a row's softmax and its backward (softmax_row and
// softmax_row_backward). Every output element is summed in a fixed order, so results do not
// depend on the thread count.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../kernels/kernels.h"
#include "../kernels/parallel.h"
#include "layers.h"

// The weights after dropout: dst = mask * src / (1 - p) over the lower triangle (a training
// pass: its t queries at positions [0, t)).
static void dropout_weights(float *dst, const float *src, int t, size_t base_index, const Dropout *drop) {
    const float keep_scale = 1.0f / (1.0f - drop->p);
    for (int i = 0; i < t; i++)
        for (int j = 0; j < t; j++) {
            size_t k = (size_t)i * t + j;
            dst[k] = j <= i && dropout_keep(drop->key, base_index + k, drop->p) ? src[k] * keep_scale : 0.0f;
        }
}

// A head without room for its work (kernels.h: head_begin) writes NaN into its rows of out
// (t, cols, rows ld apart), so that the loss shows the failure rather than a wrong number.
static void fill_nan(float *out, long ld, int t, int cols) {
    for (int i = 0; i < t; i++)
        for (int j = 0; j < cols; j++) out[i * ld + j] = NAN;
}

// The pass's keys and values (rows of qkv, B sequences of t) into kv's rows [store, store + t).
static void store_keys_values(const KVRows *kv, const float *qkv, int B, int t, int A) {
#pragma omp for schedule(static) nowait
    for (int r = 0; r < B * t; r++) {
        int b = r / t, i = r % t;
        const float *row = qkv + (size_t)r * 3 * A;
        memcpy(kv->k + b * kv->seq + (kv->store + i) * kv->ld, row + A, (size_t)A * sizeof(float));
        memcpy(kv->v + b * kv->seq + (kv->store + i) * kv->ld, row + 2 * A, (size_t)A * sizeof(float));
    }
    team_barrier();
}

// ----------------------------------------------------------------------------
// rotary position embedding

void rope_angles(float *cs, long pos0, int t, int hs) {
    for (int i = 0; i < t; i++)
        for (int k = 0; k < hs / 2; k++) {
            double angle = (double)(pos0 + i) * pow(ROPE_BASE, -2.0 * k / hs);
            cs[(size_t)i * hs + 2 * k] = (float)cos(angle);
            cs[(size_t)i * hs + 2 * k + 1] = (float)sin(angle);
        }
}

// Turns the pairs of the queries and keys (the first 2A floats of each row of qkv, 2H heads
// of hs) of B sequences of t rows by their positions' angles times `sign` (1: forward, -1:
// back); row i of each sequence at angles cs + i*hs.
static void rotate_queries_keys(float *qkv, const float *cs, int B, int t, int H, int hs, float sign) {
    const size_t ld = (size_t)3 * H * hs;
#pragma omp for schedule(static) nowait
    for (int r = 0; r < B * t; r++) {
        const float *a = cs + (size_t)(r % t) * hs;
        for (int h = 0; h < 2 * H; h++) {
            float *p = qkv + r * ld + (size_t)h * hs;
#pragma omp simd
            for (int k = 0; k < hs; k += 2) {
                float c = a[k], s = sign * a[k + 1], x0 = p[k], x1 = p[k + 1];
                p[k] = x0 * c - x1 * s;
                p[k + 1] = x0 * s + x1 * c;
            }
        }
    }
    team_barrier();
}

void rope_forward(float *qkv, const float *cs, int B, int t, int H, int hs) {
    rotate_queries_keys(qkv, cs, B, t, H, hs, 1.0f);
}

// x' = R x, so dx = R^T dx': the same rotation by the opposite angle.
void rope_backward(float *dqkv, const float *cs, int B, int t, int H, int hs) {
    rotate_queries_keys(dqkv, cs, B, t, H, hs, -1.0f);
}

// ----------------------------------------------------------------------------
// attention

void attention_forward(Kernels *k, float *out, float *att, const float *qkv, const KVRows *kv, int B, int pos0, int t,
                       int H, int hs, const Dropout *drop) {
    const int A = H * hs, n = pos0 + t;  // n: the keys of the last query
    const float scale = 1.0f / sqrtf((float)hs);
    const int use_dropout = drop && drop->p > 0.0f;
    if (kv->k != qkv + A) store_keys_values(kv, qkv, B, t, A);
    team_tasks_begin(&(int){B * H}, 1);  // one task per head of each sequence (parallel.h)
    for (int task; (task = team_task_next()) >= 0;) {
        int b = task / H, h = task % H;
        const float *q = qkv + (size_t)b * t * 3 * A + h * hs;  // rows of stride 3A
        const float *keys = kv->k + b * kv->seq + h * hs, *values = kv->v + b * kv->seq + h * hs;
        float *w = att + ((size_t)b * H + h) * t * n;  // (t, n)
        float *o = out + (size_t)b * t * A + h * hs;
        AttentionHead head;
        if (head_begin(k, &head, q, 3 * A, keys, values, kv->ld, NULL, 0, t, n, hs) != 0) {
            fill_nan(o, A, t, hs);
            continue;
        }
        // scores = Q K^T, then the softmax of each row's scaled scores over the keys at and
        // before the query's position pos0 + i
        head_scores(&head, w);
        for (int i = 0; i < t; i++) {
            float *row = w + (size_t)i * n;
            softmax_row(row, pos0 + i + 1, scale);
            for (int j = pos0 + i + 1; j < n; j++) row[j] = 0.0f;
        }
        // out = dropout(W) V
        const float *weights = w;
        if (use_dropout) {
            dropout_weights(head.work, w, t, drop->first + ((size_t)b * H + h) * t * t, drop);
            weights = head.work;
        }
        head_values(&head, o, A, weights);
    }
    team_barrier();
}

// With W the softmax weights, W' = dropout(W), O = W' V:
//   dV = W'^T dO,  dW' = dO V^T,  dW = mask * dW',  dS_ij = W_ij (dW_ij - sum_k W_ik dW_ik),
//   dQ = dS K / sqrt(hs),  dK = dS^T Q / sqrt(hs)
// W' and dS are lower triangular, so their products skip what is above the diagonal.
void attention_backward(Kernels *k, float *dqkv, const float *dout, const float *qkv, const float *att, int B, int t,
                        int H, int hs, const Dropout *drop) {
    const int A = H * hs;
    const float scale = 1.0f / sqrtf((float)hs);
    const int use_dropout = drop && drop->p > 0.0f;
    const float keep_scale = use_dropout ? 1.0f / (1.0f - drop->p) : 1.0f;
    team_tasks_begin(&(int){B * H}, 1);
    for (int task; (task = team_task_next()) >= 0;) {
        int b = task / H, h = task % H;
        const float *q = qkv + (size_t)b * t * 3 * A + h * hs;
        float *dq = dqkv + (size_t)b * t * 3 * A + h * hs;
        const float *g = dout + (size_t)b * t * A + h * hs;  // dO rows of stride A
        const float *w = att + ((size_t)b * H + h) * t * t;
        size_t base_index = (use_dropout ? drop->first : 0) + ((size_t)b * H + h) * t * t;
        AttentionHead head;
        if (head_begin(k, &head, q, 3 * A, q + A, q + 2 * A, 3 * A, g, A, t, t, hs) != 0) {
            fill_nan(dq, 3 * A, t, hs);
            continue;
        }
        // dV = W'^T dO, then dW' = dO V^T into the thread's work (where W' was)
        const float *weights = w;
        if (use_dropout) {
            dropout_weights(head.work, w, t, base_index, drop);
            weights = head.work;
        }
        float *dw = head.work;
        head_values_backward(&head, dq + 2 * A, 3 * A, weights, dw);
        // through dropout, then softmax backward (scaled for the scores)
        for (int i = 0; i < t; i++) {
            const float *wi = w + (size_t)i * t;
            float *dwi = dw + (size_t)i * t;
            if (use_dropout)
                for (int j = 0; j <= i; j++)
                    dwi[j] = dropout_keep(drop->key, base_index + (size_t)i * t + j, drop->p) ? dwi[j] * keep_scale : 0.0f;
            softmax_row_backward(dwi, wi, i + 1, scale);
            for (int j = i + 1; j < t; j++) dwi[j] = 0.0f;
        }
        // dQ = dS K,  dK = dS^T Q
        head_scores_backward(&head, dq, dq + A, 3 * A, dw);
    }
    team_barrier();
}
