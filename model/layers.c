// Forward and backward of each layer except the matrix multiply (matmul.c).
// Loops over rows run in parallel; reductions inside a row use `omp simd` so they vectorise
// with a fixed order, giving the same bits on every run and for any thread count.
#include "layers.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fastmath.h"
#include "rng.h"

// ----------------------------------------------------------------------------
// token + position embedding

void encoder_forward(float *out, const int *tokens, const float *wte, const float *wpe, int B, int t, int C) {
#pragma omp parallel for schedule(static)
    for (int n = 0; n < B * t; n++) {
        const float *we = wte + (size_t)tokens[n] * C;
        const float *pe = wpe + (size_t)(n % t) * C;
        float *o = out + (size_t)n * C;
#pragma omp simd
        for (int i = 0; i < C; i++) o[i] = we[i] + pe[i];
    }
}

void encoder_backward(float *dwte, float *dwpe, const float *dout, const int *tokens, int B, int t, int C) {
    // Rows with the same token or position add into the same gradient row, so threads split
    // the channels instead: each thread owns a slice of columns and visits rows in order.
#pragma omp parallel
    {
#pragma omp for schedule(static)
        for (int c0 = 0; c0 < C; c0 += 16) {
            int c1 = c0 + 16 < C ? c0 + 16 : C;
            for (int n = 0; n < B * t; n++) {
                const float *g = dout + (size_t)n * C;
                float *dwe = dwte + (size_t)tokens[n] * C;
                float *dpe = dwpe + (size_t)(n % t) * C;
                for (int i = c0; i < c1; i++) {
                    dwe[i] += g[i];
                    dpe[i] += g[i];
                }
            }
        }
    }
}

// ----------------------------------------------------------------------------
// LayerNorm

void layernorm_forward(float *out, float *mean, float *rstd, const float *inp,
                       const float *weight, const float *bias, int N, int C) {
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        const float *x = inp + (size_t)n * C;
        float *y = out + (size_t)n * C;
        float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
        for (int i = 0; i < C; i++) sum += x[i];
        float m = sum / C;
        float var = 0.0f;
#pragma omp simd reduction(+ : var)
        for (int i = 0; i < C; i++) {
            float d = x[i] - m;
            var += d * d;
        }
        float s = 1.0f / sqrtf(var / C + LAYERNORM_EPS);
#pragma omp simd
        for (int i = 0; i < C; i++) y[i] = (x[i] - m) * s * weight[i] + bias[i];
        mean[n] = m;
        rstd[n] = s;
    }
}

// With xhat = (x - mean) * rstd and g = dout * weight:
//   dx = rstd * (g - mean(g) - xhat * mean(g * xhat)),  dweight += dout * xhat,  dbias += dout
void layernorm_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                        const float *inp, const float *weight, const float *mean,
                        const float *rstd, int N, int C) {
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        const float *x = inp + (size_t)n * C;
        const float *dy = dout + (size_t)n * C;
        float *dx = dinp + (size_t)n * C;
        float m = mean[n], s = rstd[n];
        float g_mean = 0.0f, gx_mean = 0.0f;
#pragma omp simd reduction(+ : g_mean, gx_mean)
        for (int i = 0; i < C; i++) {
            float g = dy[i] * weight[i];
            g_mean += g;
            gx_mean += g * (x[i] - m) * s;
        }
        g_mean /= C;
        gx_mean /= C;
#pragma omp simd
        for (int i = 0; i < C; i++) {
            float xhat = (x[i] - m) * s;
            dx[i] += s * (dy[i] * weight[i] - g_mean - xhat * gx_mean);
        }
    }
    // parameter gradients: sum over rows, threads own channel slices
#pragma omp parallel for schedule(static)
    for (int c0 = 0; c0 < C; c0 += 16) {
        int c1 = c0 + 16 < C ? c0 + 16 : C;
        float dw[16] = {0}, db[16] = {0};
        for (int n = 0; n < N; n++) {
            const float *x = inp + (size_t)n * C;
            const float *dy = dout + (size_t)n * C;
            float m = mean[n], s = rstd[n];
            for (int i = c0; i < c1; i++) {
                dw[i - c0] += dy[i] * (x[i] - m) * s;
                db[i - c0] += dy[i];
            }
        }
        for (int i = c0; i < c1; i++) {
            dweight[i] += dw[i - c0];
            dbias[i] += db[i - c0];
        }
    }
}

// ----------------------------------------------------------------------------
// causal multi-head self-attention
//
// Each (batch, head) is independent and runs on one thread. Its keys (and, in backward, its
// values) are first copied transposed into a (hs, t) panel so that the scores of one query
// against all earlier keys are a vectorised loop over key positions.

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

// panel (hs, t) = the hs-wide slice at `offset` of each of t rows of qkv (row stride 3A)
static void transpose_slice(float *panel, const float *qkv, int t, int stride, int hs) {
    for (int j = 0; j < t; j++) {
        const float *row = qkv + (size_t)j * stride;
        for (int d = 0; d < hs; d++) panel[(size_t)d * t + j] = row[d];
    }
}

void attention_forward(float *out, float *att, const float *qkv, int B, int t, int H, int hs,
                       const Dropout *drop) {
    const int A = H * hs;
    const float scale = 1.0f / sqrtf((float)hs);
    const int use_dropout = drop && drop->p > 0.0f;
    const float keep_scale = use_dropout ? 1.0f / (1.0f - drop->p) : 1.0f;
#pragma omp parallel for collapse(2) schedule(static)
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < H; h++) {
            const float *qkv_b = qkv + (size_t)b * t * 3 * A;
            float *keys_t = thread_scratch((size_t)hs * t);  // (hs, t)
            transpose_slice(keys_t, qkv_b + A + h * hs, t, 3 * A, hs);
            float *att_bh = att + ((size_t)b * H + h) * t * t;
            for (int i = 0; i < t; i++) {
                const float *q = qkv_b + (size_t)i * 3 * A + h * hs;
                float *w = att_bh + (size_t)i * t;
                // scores w_j = q . k_j / sqrt(hs) for j <= i
                for (int j = 0; j <= i; j++) w[j] = 0.0f;
                for (int d = 0; d < hs; d++) {
                    float qd = q[d] * scale;
                    const float *kd = keys_t + (size_t)d * t;
#pragma omp simd
                    for (int j = 0; j <= i; j++) w[j] += qd * kd[j];
                }
                float maxval = -INFINITY;
                for (int j = 0; j <= i; j++) maxval = w[j] > maxval ? w[j] : maxval;
                float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
                for (int j = 0; j <= i; j++) {
                    w[j] = exp_fast(w[j] - maxval);
                    sum += w[j];
                }
                float inv = 1.0f / sum;
#pragma omp simd
                for (int j = 0; j <= i; j++) w[j] *= inv;
                for (int j = i + 1; j < t; j++) w[j] = 0.0f;
                // out_i = sum_j dropout(w_j) v_j
                float *o = out + ((size_t)b * t + i) * A + h * hs;
                for (int d = 0; d < hs; d++) o[d] = 0.0f;
                size_t row_index = (((size_t)b * H + h) * t + i) * t;
                for (int j = 0; j <= i; j++) {
                    float wj = w[j];
                    if (use_dropout)
                        wj = dropout_keep(drop->key, row_index + j, drop->p) ? wj * keep_scale : 0.0f;
                    const float *v = qkv_b + (size_t)j * 3 * A + 2 * A + h * hs;
#pragma omp simd
                    for (int d = 0; d < hs; d++) o[d] += wj * v[d];
                }
            }
        }
    }
}

// With p = softmax weights, p' = dropout(p), dp' = dout . v:
//   dv_j += p'_j dout,  dp = mask * dp',  ds_j = p_j (dp_j - sum_k p_k dp_k),
//   dq += sum_j ds_j k_j / sqrt(hs),  dk_j += ds_j q / sqrt(hs)
void attention_backward(float *dqkv, const float *dout, const float *qkv, const float *att,
                        int B, int t, int H, int hs, const Dropout *drop) {
    const int A = H * hs;
    const float scale = 1.0f / sqrtf((float)hs);
    const int use_dropout = drop && drop->p > 0.0f;
    const float keep_scale = use_dropout ? 1.0f / (1.0f - drop->p) : 1.0f;
#pragma omp parallel for collapse(2) schedule(static)
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < H; h++) {
            const float *qkv_b = qkv + (size_t)b * t * 3 * A;
            float *dqkv_b = dqkv + (size_t)b * t * 3 * A;
            float *scratch = thread_scratch((size_t)(hs + 2) * t);
            float *values_t = scratch;                 // (hs, t)
            float *dw = scratch + (size_t)hs * t;      // (t) gradient of the weights
            float *mask = dw + t;                      // (t) dropout scale of each weight
            transpose_slice(values_t, qkv_b + 2 * A + h * hs, t, 3 * A, hs);
            const float *att_bh = att + ((size_t)b * H + h) * t * t;
            for (int i = 0; i < t; i++) {
                const float *w = att_bh + (size_t)i * t;
                const float *q = qkv_b + (size_t)i * 3 * A + h * hs;
                const float *g = dout + ((size_t)b * t + i) * A + h * hs;
                float *dq = dqkv_b + (size_t)i * 3 * A + h * hs;
                size_t row_index = (((size_t)b * H + h) * t + i) * t;
                for (int j = 0; j <= i; j++)
                    mask[j] = !use_dropout ? 1.0f
                              : dropout_keep(drop->key, row_index + j, drop->p) ? keep_scale : 0.0f;
                // dp'_j = dout . v_j, then through dropout
                for (int j = 0; j <= i; j++) dw[j] = 0.0f;
                for (int d = 0; d < hs; d++) {
                    float gd = g[d];
                    const float *vd = values_t + (size_t)d * t;
#pragma omp simd
                    for (int j = 0; j <= i; j++) dw[j] += gd * vd[j];
                }
                float dot_wdw = 0.0f;
#pragma omp simd reduction(+ : dot_wdw)
                for (int j = 0; j <= i; j++) {
                    dw[j] *= mask[j];
                    dot_wdw += w[j] * dw[j];
                }
                for (int j = 0; j <= i; j++) {
                    float wj = w[j] * mask[j];
                    float ds = w[j] * (dw[j] - dot_wdw) * scale;
                    const float *k = qkv_b + (size_t)j * 3 * A + A + h * hs;
                    float *dk = dqkv_b + (size_t)j * 3 * A + A + h * hs;
                    float *dv = dqkv_b + (size_t)j * 3 * A + 2 * A + h * hs;
#pragma omp simd
                    for (int d = 0; d < hs; d++) {
                        dq[d] += ds * k[d];
                        dk[d] += ds * q[d];
                        dv[d] += wj * g[d];
                    }
                }
            }
        }
    }
}

// ----------------------------------------------------------------------------
// GELU, tanh approximation

#define GELU_SCALE 0.7978845608028654f  // sqrt(2/pi)

void gelu_forward(float *out, const float *inp, int n) {
#pragma omp parallel for simd schedule(static)
    for (int i = 0; i < n; i++) {
        float x = inp[i];
        float u = GELU_SCALE * (x + 0.044715f * x * x * x);
        out[i] = 0.5f * x * (1.0f + tanh_fast(u));
    }
}

// d/dx = 0.5 (1 + tanh u) + 0.5 x (1 - tanh^2 u) sqrt(2/pi) (1 + 3 * 0.044715 x^2)
void gelu_backward(float *dinp, const float *inp, const float *dout, int n) {
#pragma omp parallel for simd schedule(static)
    for (int i = 0; i < n; i++) {
        float x = inp[i];
        float u = GELU_SCALE * (x + 0.044715f * x * x * x);
        float th = tanh_fast(u);
        float du = GELU_SCALE * (1.0f + 3.0f * 0.044715f * x * x);
        float grad = 0.5f * (1.0f + th) + 0.5f * x * (1.0f - th * th) * du;
        dinp[i] += grad * dout[i];
    }
}

// ----------------------------------------------------------------------------
// residual and dropout

void residual_forward(float *out, const float *a, const float *b, int n) {
#pragma omp parallel for simd schedule(static)
    for (int i = 0; i < n; i++) out[i] = a[i] + b[i];
}

void dropout_forward(float *out, const float *inp, int n, const Dropout *drop) {
    if (!drop || drop->p <= 0.0f) {
        if (out != inp) memcpy(out, inp, (size_t)n * sizeof(float));
        return;
    }
    const float keep_scale = 1.0f / (1.0f - drop->p);
#pragma omp parallel for schedule(static)
    for (int i = 0; i < n; i++)
        out[i] = dropout_keep(drop->key, (uint64_t)i, drop->p) ? inp[i] * keep_scale : 0.0f;
}

void dropout_backward(float *dinp, const float *dout, int n, const Dropout *drop) {
    if (!drop || drop->p <= 0.0f) {
#pragma omp parallel for simd schedule(static)
        for (int i = 0; i < n; i++) dinp[i] += dout[i];
        return;
    }
    const float keep_scale = 1.0f / (1.0f - drop->p);
#pragma omp parallel for schedule(static)
    for (int i = 0; i < n; i++)
        if (dropout_keep(drop->key, (uint64_t)i, drop->p)) dinp[i] += dout[i] * keep_scale;
}

// ----------------------------------------------------------------------------
// softmax and cross-entropy

// probs = softmax(logits) for one row; returns log(sum exp(logits - max)) and the max
static void softmax_row(float *probs, const float *logits, int V, float *maxval, float *logsum) {
    float m = -INFINITY;
    for (int v = 0; v < V; v++)
        if (logits[v] > m) m = logits[v];
    float sum = 0.0f;
    for (int v = 0; v < V; v++) {
        probs[v] = expf(logits[v] - m);
        sum += probs[v];
    }
    float inv = 1.0f / sum;
    for (int v = 0; v < V; v++) probs[v] *= inv;
    *maxval = m;
    *logsum = logf(sum);
}

void crossentropy_forward(float *losses, float *probs, const float *logits, const int *targets, int N, int V) {
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        const float *z = logits + (size_t)n * V;
        float m, logsum;
        softmax_row(probs + (size_t)n * V, z, V, &m, &logsum);
        // -log p(target) = log sum exp(z - m) - (z_target - m), without log of a tiny p
        losses[n] = logsum - (z[targets[n]] - m);
    }
}

void crossentropy_backward(float *dlogits, const float *probs, const int *targets, float dloss, int N, int V) {
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        const float *p = probs + (size_t)n * V;
        float *dz = dlogits + (size_t)n * V;
        for (int v = 0; v < V; v++) dz[v] += (p[v] - (v == targets[n] ? 1.0f : 0.0f)) * dloss;
    }
}

void softmax_forward(float *probs, const float *logits, int N, int V) {
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        float m, logsum;
        softmax_row(probs + (size_t)n * V, logits + (size_t)n * V, V, &m, &logsum);
    }
}
