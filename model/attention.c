// Causal multi-head self-attention, forward and backward (declared in layers.h).
//
// Team functions (parallel.h): each (batch, head) pair is independent and runs on one
// thread. Within it, the products S = Q K^T, O = P V and their gradients are small matrix
// products computed over the causal triangle only, by one register-tiled kernel
// (tile_product) on row blocks of TILE_ROWS queries. Every output element is summed in a
// fixed order, so results do not depend on the thread count.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fastmath.h"
#include "layers.h"
#include "parallel.h"
#include "rng.h"

#define TILE_ROWS 8
#define TILE_COLS 16

// out[r][c] (+)= sum_k a[r*lda + k] * b[k*ldb + c] for r < rows <= TILE_ROWS and
// c < cols <= TILE_COLS. The accumulators stay in registers; with full tiles the compiler
// turns the c loop into one vector FMA per row (MUL_ADD, fastmath.h).
static inline void tile_product(float *out, int ldo, const float *a, int lda, const float *b, int ldb,
                                int depth, int rows, int cols, int accumulate) {
    float acc[TILE_ROWS][TILE_COLS] = {{0}};
    if (rows == TILE_ROWS && cols == TILE_COLS) {
        for (int k = 0; k < depth; k++) {
            const float *bk = b + (size_t)k * ldb;
            for (int r = 0; r < TILE_ROWS; r++) {
                float ar = a[(size_t)r * lda + k];
#pragma omp simd
                for (int c = 0; c < TILE_COLS; c++) acc[r][c] = MUL_ADD(ar, bk[c], acc[r][c]);
            }
        }
    } else {
        for (int k = 0; k < depth; k++) {
            const float *bk = b + (size_t)k * ldb;
            for (int r = 0; r < rows; r++) {
                float ar = a[(size_t)r * lda + k];
                for (int c = 0; c < cols; c++) acc[r][c] = MUL_ADD(ar, bk[c], acc[r][c]);
            }
        }
    }
    for (int r = 0; r < rows; r++) {
        float *o = out + (size_t)r * ldo;
        if (accumulate)
            for (int c = 0; c < cols; c++) o[c] += acc[r][c];
        else
            for (int c = 0; c < cols; c++) o[c] = acc[r][c];
    }
}

// Causal version for query-by-key products, out (t, t) from b (depth, t): row i only needs
// keys j <= i, so each row block [r0, r0 + TILE_ROWS) stops after the column chunk that
// holds column r0 + TILE_ROWS - 1. Chunks are full width where the t columns allow, so
// some entries above the diagonal are computed too (the callers overwrite them).
static void causal_scores(float *out, int ldo, const float *a, int lda, const float *b, int ldb, int t, int depth) {
    for (int r0 = 0; r0 < t; r0 += TILE_ROWS) {
        int rows = t - r0 < TILE_ROWS ? t - r0 : TILE_ROWS;
        for (int c0 = 0; c0 < r0 + rows; c0 += TILE_COLS)
            tile_product(out + (size_t)r0 * ldo + c0, ldo, a + (size_t)r0 * lda, lda, b + c0, ldb, depth, rows,
                         t - c0 < TILE_COLS ? t - c0 : TILE_COLS, 0);
    }
}

// Causal version for weights-by-rows products: out row i = sum over j <= i of w[i][j] * b[j];
// each row block only runs over the keys up to its last row (weights above the diagonal are 0).
static void causal_weighted_sum(float *out, int ldo, const float *w, int ldw, const float *b, int ldb, int t,
                                int width, int accumulate) {
    for (int r0 = 0; r0 < t; r0 += TILE_ROWS) {
        int rows = t - r0 < TILE_ROWS ? t - r0 : TILE_ROWS;
        for (int c0 = 0; c0 < width; c0 += TILE_COLS)
            tile_product(out + (size_t)r0 * ldo + c0, ldo, w + (size_t)r0 * ldw, ldw, b + c0, ldb, r0 + rows, rows,
                         width - c0 < TILE_COLS ? width - c0 : TILE_COLS, accumulate);
    }
}

// Transposed-causal: out row j = sum over i >= j of w[i][j] * b[i], given wt = w^T (row j of
// wt holds column j of w). Row block [r0, r0 + rows) starts its sum at i = r0.
static void causal_weighted_sum_transposed(float *out, int ldo, const float *wt, int ldw, const float *b, int ldb,
                                           int t, int width) {
    for (int r0 = 0; r0 < t; r0 += TILE_ROWS) {
        int rows = t - r0 < TILE_ROWS ? t - r0 : TILE_ROWS;
        for (int c0 = 0; c0 < width; c0 += TILE_COLS)
            tile_product(out + (size_t)r0 * ldo + c0, ldo, wt + (size_t)r0 * ldw + r0, ldw, b + (size_t)r0 * ldb + c0,
                         ldb, t - r0, rows, width - c0 < TILE_COLS ? width - c0 : TILE_COLS, 1);
    }
}

// A per-thread scratch buffer of at least n floats, grown on first use and then reused.
static float *thread_scratch(size_t n) {
    static _Thread_local float *buffer = NULL;
    static _Thread_local size_t capacity = 0;
    if (n > capacity) {
        free(buffer);
        buffer = malloc(n * sizeof(float));
        capacity = buffer ? n : 0;
    }
    return buffer;
}

// panel (hs, t) = transpose of the hs-wide slices of t rows with stride `stride`
static void transpose_rows(float *panel, const float *rows, int t, int stride, int hs) {
    for (int j = 0; j < t; j++)
        for (int d = 0; d < hs; d++) panel[(size_t)d * t + j] = rows[(size_t)j * stride + d];
}

// dst (t, t) = transpose of src (t, t), lower triangle of src only (upper part of dst zero)
static void transpose_lower(float *dst, const float *src, int t) {
    for (int j = 0; j < t; j++) {
        for (int i = 0; i < j; i++) dst[(size_t)j * t + i] = 0.0f;
        for (int i = j; i < t; i++) dst[(size_t)j * t + i] = src[(size_t)i * t + j];
    }
}

// The weights after dropout: dst = mask * src / (1 - p) over the lower triangle.
static void dropout_weights(float *dst, const float *src, int t, size_t base_index, const Dropout *drop) {
    const float keep_scale = 1.0f / (1.0f - drop->p);
    for (int i = 0; i < t; i++)
        for (int j = 0; j < t; j++) {
            size_t k = (size_t)i * t + j;
            dst[k] = j <= i && dropout_keep(drop->key, base_index + k, drop->p) ? src[k] * keep_scale : 0.0f;
        }
}

void attention_forward(float *out, float *att, const float *qkv, int B, int t, int H, int hs,
                       const Dropout *drop) {
    const int A = H * hs;
    const float scale = 1.0f / sqrtf((float)hs);
    const int use_dropout = drop && drop->p > 0.0f;
#pragma omp for collapse(2) schedule(dynamic, 1) nowait
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < H; h++) {
            const float *q = qkv + (size_t)b * t * 3 * A + h * hs;  // rows of stride 3A
            const float *k = q + A;
            const float *v = q + 2 * A;
            float *scratch = thread_scratch((size_t)hs * t + (use_dropout ? (size_t)t * t : 0));
            float *keys_t = scratch;  // (hs, t)
            float *w = att + ((size_t)b * H + h) * t * t;  // (t, t)
            transpose_rows(keys_t, k, t, 3 * A, hs);
            // scores = Q K^T, then a scaled, max-subtracted softmax over j <= i per row
            causal_scores(w, t, q, 3 * A, keys_t, t, t, hs);
            for (int i = 0; i < t; i++) {
                float *row = w + (size_t)i * t;
                float maxval = -INFINITY;
#pragma omp simd reduction(max : maxval)
                for (int j = 0; j <= i; j++) maxval = row[j] > maxval ? row[j] : maxval;
                float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
                for (int j = 0; j <= i; j++) {
                    row[j] = exp_fast((row[j] - maxval) * scale);
                    sum += row[j];
                }
                float inv = 1.0f / sum;
#pragma omp simd
                for (int j = 0; j <= i; j++) row[j] *= inv;
                for (int j = i + 1; j < t; j++) row[j] = 0.0f;
            }
            // out = dropout(W) V
            const float *weights = w;
            if (use_dropout) {
                float *dropped = scratch + (size_t)hs * t;
                dropout_weights(dropped, w, t, ((size_t)b * H + h) * t * t, drop);
                weights = dropped;
            }
            causal_weighted_sum(out + (size_t)b * t * A + h * hs, A, weights, t, v, 3 * A, t, hs, 0);
        }
    }
    team_barrier();
}

// With W the softmax weights, W' = dropout(W), O = W' V:
//   dV = W'^T dO,  dW' = dO V^T,  dW = mask * dW',  dS_ij = W_ij (dW_ij - sum_k W_ik dW_ik),
//   dQ = dS K / sqrt(hs),  dK = dS^T Q / sqrt(hs)
void attention_backward(float *dqkv, const float *dout, const float *qkv, const float *att,
                        int B, int t, int H, int hs, const Dropout *drop) {
    const int A = H * hs;
    const float scale = 1.0f / sqrtf((float)hs);
    const int use_dropout = drop && drop->p > 0.0f;
    const float keep_scale = use_dropout ? 1.0f / (1.0f - drop->p) : 1.0f;
#pragma omp for collapse(2) schedule(dynamic, 1) nowait
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < H; h++) {
            const float *q = qkv + (size_t)b * t * 3 * A + h * hs;
            const float *k = q + A;
            const float *v = q + 2 * A;
            float *dq = dqkv + (size_t)b * t * 3 * A + h * hs;
            float *dk = dq + A;
            float *dv = dq + 2 * A;
            const float *g = dout + (size_t)b * t * A + h * hs;  // dO rows of stride A
            const float *w = att + ((size_t)b * H + h) * t * t;
            float *scratch = thread_scratch((size_t)hs * t + 2 * (size_t)t * t);
            float *values_t = scratch;                     // (hs, t)
            float *dw = values_t + (size_t)hs * t;         // (t, t) dW', then dS
            float *transposed = dw + (size_t)t * t;        // (t, t) W'^T, then dS^T
            size_t base_index = ((size_t)b * H + h) * t * t;
            // dV = W'^T dO
            if (use_dropout) {
                dropout_weights(dw, w, t, base_index, drop);
                transpose_lower(transposed, dw, t);
            } else {
                transpose_lower(transposed, w, t);
            }
            causal_weighted_sum_transposed(dv, 3 * A, transposed, t, g, A, t, hs);
            // dW' = dO V^T, through dropout, then softmax backward (scaled for the scores)
            transpose_rows(values_t, v, t, 3 * A, hs);
            causal_scores(dw, t, g, A, values_t, t, t, hs);
            for (int i = 0; i < t; i++) {
                const float *wi = w + (size_t)i * t;
                float *dwi = dw + (size_t)i * t;
                if (use_dropout)
                    for (int j = 0; j <= i; j++)
                        dwi[j] = dropout_keep(drop->key, base_index + (size_t)i * t + j, drop->p) ? dwi[j] * keep_scale : 0.0f;
                float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
                for (int j = 0; j <= i; j++) dot += wi[j] * dwi[j];
#pragma omp simd
                for (int j = 0; j <= i; j++) dwi[j] = wi[j] * (dwi[j] - dot) * scale;
                for (int j = i + 1; j < t; j++) dwi[j] = 0.0f;
            }
            // dQ = dS K,  dK = dS^T Q
            causal_weighted_sum(dq, 3 * A, dw, t, k, 3 * A, t, hs, 1);
            transpose_lower(transposed, dw, t);
            causal_weighted_sum_transposed(dk, 3 * A, transposed, t, q, 3 * A, t, hs);
        }
    }
    team_barrier();
}
