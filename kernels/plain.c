// The plain kernels (kernels.h), CHARGPT_KERNELS=plain: each product and function as the
// textbook writes it, a loop per index, no packing, no tiles, nothing kept. They are what the
// fast backends compute, and a learner can read them and step through them in a debugger.
//
// Each function's first lines hand the call to the fast kernels (fast.h) when a backend runs
// them, as it does unless CHARGPT_KERNELS=plain: skip that branch on a first reading.
//
// Every output element is one sum in a fixed order, written by one thread, so the results are
// the same bits for any number of threads; the team functions share rows among the threads
// of a team with `omp for` (parallel.h) and run on the calling thread from serial code.
// In bf16 every operand of a product is rounded to bfloat16 (bf16.h) as it is read, and
// every sum is kept in float.
#include <math.h>
#include <stddef.h>

#include "adamw_step.inc"
#include "bf16.h"
#include "fast.h"
#include "fixed_sum.h"
#include "kernels.h"
#include "parallel.h"

// An operand of a product: x in fp32, x rounded to bfloat16 in bf16.
static inline float operand(float x, int bf16) { return bf16 ? bf16_to_float(bf16_from_float(x)) : x; }

static int in_bf16(const Kernels *k) { return k && kernels_precision(k) == PRECISION_BF16; }

// ---------------------------------------------------------------------------------------
// linear layers: out (N, OC) = inp (N, C) @ weight (OC, C)^T + bias (OC)

void linear_forward(Kernels *k, float *out, const float *inp, const float *weight, const float *bias, int N, int C,
                    int OC) {
    if (kernels_fast(k)) {
        fast_linear_forward(k, out, inp, weight, bias, N, C, OC);
        return;
    }
    const int bf16 = in_bf16(k);
    // out[n][o] = bias[o] + the sum over c of inp[n][c] weight[o][c]
#pragma omp for schedule(static) nowait
    for (int n = 0; n < N; n++) {
        const float *x = inp + (size_t)n * C;
        for (int o = 0; o < OC; o++) {
            const float *w = weight + (size_t)o * C;
            float sum = 0.0f;
            if (bf16)
                for (int c = 0; c < C; c++) sum += operand(x[c], 1) * operand(w[c], 1);
            else
#pragma omp simd reduction(+ : sum)
                for (int c = 0; c < C; c++) sum += x[c] * w[c];
            if (bias) sum += bias[o];
            out[(size_t)n * OC + o] = sum;
        }
    }
    team_barrier();
}

// The two products of the backward, the first written, the second added to what the
// weight's gradient holds:
//   dinp (N, C) = dout (N, OC) @ weight (OC, C),   dweight (OC, C) += dout^T @ inp,
// and dbias (OC) += the sum of dout's rows (in float, dout as it is).
void linear_backward(Kernels *k, float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                     const float *weight, int N, int C, int OC) {
    if (kernels_fast(k)) {
        fast_linear_backward(k, dinp, dweight, dbias, dout, inp, weight, N, C, OC);
        return;
    }
    const int bf16 = in_bf16(k);
    // dinp[n][c] = the sum over o of dout[n][o] weight[o][c]; a row of dinp is one thread's
    if (dinp) {
#pragma omp for schedule(static) nowait
        for (int n = 0; n < N; n++) {
            float *dx = dinp + (size_t)n * C;
            for (int c = 0; c < C; c++) dx[c] = 0.0f;
            for (int o = 0; o < OC; o++) {
                float d = operand(dout[(size_t)n * OC + o], bf16);
                const float *w = weight + (size_t)o * C;
                for (int c = 0; c < C; c++) dx[c] += d * operand(w[c], bf16);
            }
        }
    }
    // dweight[o][c] += the sum over n of dout[n][o] inp[n][c]; dbias[o] += the sum over n of
    // dout[n][o]; a row of dweight is one thread's
#pragma omp for schedule(static) nowait
    for (int o = 0; o < OC; o++) {
        float *dw = dweight + (size_t)o * C;
        for (int n = 0; n < N; n++) {
            float g = dout[(size_t)n * OC + o], d = operand(g, bf16);
            const float *x = inp + (size_t)n * C;
            for (int c = 0; c < C; c++) dw[c] += d * operand(x[c], bf16);
            if (dbias) dbias[o] += g;
        }
    }
    team_barrier();
}

// ---------------------------------------------------------------------------------------
// LayerNorm. Each sum over a row is in fixed_sum.h's order: term i into lane i % SUM_LANES,
// then the lanes' tree (sum_lanes); the fast kernels keep that order, and give these loops'
// bits. (clang would fuse a multiply and an add into one rounding: told not to.)
#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

// For each row x: its mean m and biased variance v over the C channels, then
// y = (x - m) * rstd * weight + bias, rstd = 1 / sqrt(v + eps)
void layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *weight, const float *bias,
                       int N, int C) {
    if (kernels_fast(NULL)) {
        fast_layernorm_forward(out, mean, rstd, inp, weight, bias, N, C);
        return;
    }
#pragma omp for schedule(static) nowait
    for (int n = 0; n < N; n++) {
        const float *x = inp + (size_t)n * C;
        float m = sum_fixed(x, C) / C;
        float squares[SUM_LANES] = {0};  // the sum of (x - m)^2
        for (int i = 0; i < C; i++) squares[i % SUM_LANES] += (x[i] - m) * (x[i] - m);
        float s = 1.0f / sqrtf(sum_lanes(squares) / C + LAYERNORM_EPS);
        float *y = out + (size_t)n * C;
        for (int i = 0; i < C; i++) y[i] = (x[i] - m) * s * weight[i] + bias[i];
        mean[n] = m;
        rstd[n] = s;
    }
    team_barrier();
}

// With xhat = (x - mean) * rstd and g = dout * weight, for each row
//   dinp += rstd * (g - mean(g) - xhat * mean(g * xhat)),
// and for each channel, over the rows: dweight += dout * xhat, dbias += dout
void layernorm_backward(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                        const float *weight, const float *mean, const float *rstd, int N, int C) {
    if (kernels_fast(NULL)) {
        fast_layernorm_backward(dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C);
        return;
    }
#pragma omp for schedule(static) nowait
    for (int n = 0; n < N; n++) {
        const float *x = inp + (size_t)n * C, *dy = dout + (size_t)n * C;
        float *dx = dinp + (size_t)n * C, m = mean[n], s = rstd[n];
        float g_sum[SUM_LANES] = {0}, gx_sum[SUM_LANES] = {0};  // the sums of g and g * xhat
        for (int i = 0; i < C; i++) {
            float g = dy[i] * weight[i];
            g_sum[i % SUM_LANES] += g;
            gx_sum[i % SUM_LANES] += g * (x[i] - m) * s;
        }
        float g_mean = sum_lanes(g_sum) / C, gx_mean = sum_lanes(gx_sum) / C;
        for (int i = 0; i < C; i++) {
            float xhat = (x[i] - m) * s;
            dx[i] += s * (dy[i] * weight[i] - g_mean - xhat * gx_mean);
        }
    }
    // the parameters' gradients, sums over the rows in order: a channel is one thread's
#pragma omp for schedule(static) nowait
    for (int c = 0; c < C; c++) {
        float dw = 0.0f, db = 0.0f;
        for (int n = 0; n < N; n++) {
            float dy = dout[(size_t)n * C + c];
            dw += dy * (inp[(size_t)n * C + c] - mean[n]) * rstd[n];
            db += dy;
        }
        dweight[c] += dw;
        dbias[c] += db;
    }
    team_barrier();
}

#ifdef __clang__
#pragma STDC FP_CONTRACT DEFAULT
#endif

// ---------------------------------------------------------------------------------------
// GELU (tanh form) and softmax

#define GELU_SCALE 0.7978845608028654f  // sqrt(2/pi)

// GELU(x) = 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3)
static float gelu_of(float x) { return 0.5f * x * (1.0f + tanhf(GELU_SCALE * (x + 0.044715f * x * x * x))); }

// its derivative, GELU'(x) = 0.5 (1 + tanh u) + 0.5 x (1 - tanh^2 u) du/dx,
// du/dx = sqrt(2/pi) (1 + 3 * 0.044715 x^2)
static float gelu_slope_of(float x) {
    float th = tanhf(GELU_SCALE * (x + 0.044715f * x * x * x));
    float du = GELU_SCALE * (1.0f + 3.0f * 0.044715f * x * x);
    return 0.5f * (1.0f + th) + 0.5f * x * (1.0f - th * th) * du;
}

void gelu_forward(float *out, const float *inp, int n) {
    if (kernels_fast(NULL)) {
        fast_gelu_forward(out, NULL, inp, n);
        return;
    }
#pragma omp for schedule(static) nowait
    for (int i = 0; i < n; i++) out[i] = gelu_of(inp[i]);
    team_barrier();
}

void gelu_forward_slope(float *out, float *slope, const float *inp, int n) {
    if (kernels_fast(NULL)) {
        fast_gelu_forward(out, slope, inp, n);
        return;
    }
#pragma omp for schedule(static) nowait
    for (int i = 0; i < n; i++) {
        float x = inp[i];
        out[i] = gelu_of(x);
        slope[i] = gelu_slope_of(x);
    }
    team_barrier();
}

void gelu_backward(float *dinp, const float *inp, const float *dout, int n) {
    if (kernels_fast(NULL)) {
        fast_gelu_backward(dinp, inp, dout, n);
        return;
    }
#pragma omp for schedule(static) nowait
    for (int i = 0; i < n; i++) dinp[i] = gelu_slope_of(inp[i]) * dout[i];
    team_barrier();
}

void gelu_backward_slope(float *dinp, const float *slope, const float *dout, int n) {
    if (kernels_fast(NULL)) {
        fast_gelu_backward_slope(dinp, slope, dout, n);
        return;
    }
#pragma omp for schedule(static) nowait
    for (int i = 0; i < n; i++) dinp[i] = slope[i] * dout[i];
    team_barrier();
}

// row[j] = exp((row[j] - max) * scale) / the sum of the same over the row; on the calling thread
void softmax_row(float *row, int n, float scale) {
    if (kernels_fast(NULL)) {
        fast_softmax_row(row, n, scale);
        return;
    }
    float max = -INFINITY;
    for (int j = 0; j < n; j++)
        if (row[j] > max) max = row[j];
    float sum = 0.0f;
    for (int j = 0; j < n; j++) {
        row[j] = expf((row[j] - max) * scale);
        sum += row[j];
    }
    for (int j = 0; j < n; j++) row[j] /= sum;
}

// dw[j] = w[j] (dw[j] - dot) scale, dot = the sum of w[k] dw[k] (in fixed_sum.h's order, which
// the fast kernels keep); on the calling thread
void softmax_row_backward(float *dw, const float *w, int n, float scale) {
    if (kernels_fast(NULL)) {
        fast_softmax_row_backward(dw, w, n, scale);
        return;
    }
    float dot = dot_fixed(w, dw, n);
    for (int j = 0; j < n; j++) dw[j] = w[j] * (dw[j] - dot) * scale;
}

// probs[j] = exp(logits[j] - max) / sum, sum = the sum of exp(logits[j] - max); returns
// log(sum) and gives max; on the calling thread
float logits_softmax(float *probs, const float *logits, int n, float *max) {
    if (kernels_fast(NULL)) return fast_logits_softmax(probs, logits, n, max);
    float m = -INFINITY;
    for (int j = 0; j < n; j++)
        if (logits[j] > m) m = logits[j];
    float sum = 0.0f;
    for (int j = 0; j < n; j++) {
        probs[j] = expf(logits[j] - m);
        sum += probs[j];
    }
    float inv = 1.0f / sum;
    for (int j = 0; j < n; j++) probs[j] *= inv;
    *max = m;
    return logf(sum);
}

// ---------------------------------------------------------------------------------------
// AdamW's update: adamw_step.inc's loop, which the backends compile with their vector width

void adamw_step(float *params, const float *grads, float *m, float *v, const unsigned char *decay, size_t n,
                const AdamWStep *s) {
    if (kernels_fast(NULL)) {
        fast_adamw_step(params, grads, m, v, decay, n, s);
        return;
    }
    adamw_step_team(params, grads, m, v, decay, n, s);
}

// ---------------------------------------------------------------------------------------
// attention: the products of one head (head_begin in workspace.c), on the calling thread.
// Query i is at position n - t + i and sees the keys j <= n - t + i.

void head_scores(const AttentionHead *h, float *scores) {
    if (h->backend) {
        fast_head_scores(h, scores);
        return;
    }
    const int first = h->n - h->t;
    // scores[i][j] = q_i . k_j
    for (int i = 0; i < h->t; i++) {
        const float *q = h->q + (size_t)i * h->ldq;
        for (int j = 0; j <= first + i; j++) {
            const float *key = h->k + (size_t)j * h->ldkv;
            float dot = 0.0f;
            for (int d = 0; d < h->hs; d++) dot += operand(q[d], h->bf16) * operand(key[d], h->bf16);
            scores[(size_t)i * h->n + j] = dot;
        }
    }
}

void head_values(const AttentionHead *h, float *out, long ldo, const float *w) {
    if (h->backend) {
        fast_head_values(h, out, ldo, w);
        return;
    }
    const int first = h->n - h->t;
    // out_i = the sum over j of w[i][j] v_j
    for (int i = 0; i < h->t; i++) {
        float *o = out + (size_t)i * ldo;
        for (int d = 0; d < h->hs; d++) o[d] = 0.0f;
        for (int j = 0; j <= first + i; j++) {
            float wij = operand(w[(size_t)i * h->n + j], h->bf16);
            const float *v = h->v + (size_t)j * h->ldkv;
            for (int d = 0; d < h->hs; d++) o[d] += wij * operand(v[d], h->bf16);
        }
    }
}

void head_values_backward(const AttentionHead *h, float *dv, long ldv, const float *w, float *dw) {
    if (h->backend) {
        fast_head_values_backward(h, dv, ldv, w, dw);
        return;
    }
    const int t = h->t;
    // dv_j += the sum over i >= j of w[i][j] g_i
    for (int j = 0; j < t; j++) {
        float *dvj = dv + (size_t)j * ldv;
        for (int i = j; i < t; i++) {
            float wij = operand(w[(size_t)i * t + j], h->bf16);
            const float *g = h->g + (size_t)i * h->ldg;
            for (int d = 0; d < h->hs; d++) dvj[d] += wij * operand(g[d], h->bf16);
        }
    }
    // then dw[i][j] = g_i . v_j (into w's buffer, perhaps: w is read no more)
    for (int i = 0; i < t; i++) {
        const float *g = h->g + (size_t)i * h->ldg;
        for (int j = 0; j <= i; j++) {
            const float *v = h->v + (size_t)j * h->ldkv;
            float dot = 0.0f;
            for (int d = 0; d < h->hs; d++) dot += operand(g[d], h->bf16) * operand(v[d], h->bf16);
            dw[(size_t)i * t + j] = dot;
        }
    }
}

void head_scores_backward(const AttentionHead *h, float *dq, float *dk, long ld, const float *ds) {
    if (h->backend) {
        fast_head_scores_backward(h, dq, dk, ld, ds);
        return;
    }
    const int t = h->t;
    // dq_i += the sum over j <= i of ds[i][j] k_j
    for (int i = 0; i < t; i++) {
        float *dqi = dq + (size_t)i * ld;
        for (int j = 0; j <= i; j++) {
            float s = operand(ds[(size_t)i * t + j], h->bf16);
            const float *key = h->k + (size_t)j * h->ldkv;
            for (int d = 0; d < h->hs; d++) dqi[d] += s * operand(key[d], h->bf16);
        }
    }
    // dk_j += the sum over i >= j of ds[i][j] q_i
    for (int j = 0; j < t; j++) {
        float *dkj = dk + (size_t)j * ld;
        for (int i = j; i < t; i++) {
            float s = operand(ds[(size_t)i * t + j], h->bf16);
            const float *q = h->q + (size_t)i * h->ldq;
            for (int d = 0; d < h->hs; d++) dkj[d] += s * operand(q[d], h->bf16);
        }
    }
}
