// The double-precision reference: every layer, then the whole GPT. See reference.h.
#include "reference.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../common/rng.h"

// ---------------------------------------------------------------------------------------
// encoder

void ref_encoder_forward(double *out, const int *tokens, const double *wte, const double *wpe,
                         int B, int t, int C) {
    for (int b = 0; b < B; b++) {
        for (int p = 0; p < t; p++) {
            int token = tokens[b * t + p];
            for (int c = 0; c < C; c++) {
                out[(size_t)(b * t + p) * C + c] = wte[(size_t)token * C + c] + (wpe ? wpe[(size_t)p * C + c] : 0.0);
            }
        }
    }
}

void ref_encoder_backward(double *dwte, double *dwpe, const double *dout, const int *tokens,
                          int B, int t, int C) {
    for (int b = 0; b < B; b++) {
        for (int p = 0; p < t; p++) {
            int token = tokens[b * t + p];
            for (int c = 0; c < C; c++) {
                double g = dout[(size_t)(b * t + p) * C + c];
                dwte[(size_t)token * C + c] += g;
                if (dwpe) dwpe[(size_t)p * C + c] += g;
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// layernorm

// mean and 1/sqrt(biased variance + eps) of one row
static void row_stats(const double *x, int C, double *mean, double *rstd) {
    double m = 0.0;
    for (int c = 0; c < C; c++) m += x[c];
    m /= C;
    double var = 0.0;
    for (int c = 0; c < C; c++) var += (x[c] - m) * (x[c] - m);
    var /= C;
    *mean = m;
    *rstd = 1.0 / sqrt(var + (double)LAYERNORM_EPS);
}

void ref_layernorm_forward(double *out, double *mean, double *rstd, const double *inp,
                           const double *weight, const double *bias, int N, int C) {
    for (int n = 0; n < N; n++) {
        const double *x = inp + (size_t)n * C;
        double m, r;
        row_stats(x, C, &m, &r);
        for (int c = 0; c < C; c++) out[(size_t)n * C + c] = (x[c] - m) * r * weight[c] + bias[c];
        if (mean) mean[n] = m;
        if (rstd) rstd[n] = r;
    }
}

void ref_layernorm_backward(double *dinp, double *dweight, double *dbias, const double *dout,
                            const double *inp, const double *weight, int N, int C) {
    for (int n = 0; n < N; n++) {
        const double *x = inp + (size_t)n * C;
        const double *g = dout + (size_t)n * C;
        double m, r;
        row_stats(x, C, &m, &r);
        // with xhat = (x - m) r and dxhat = g w:
        // dx = r (dxhat - mean(dxhat) - xhat mean(dxhat xhat))
        double mean_dxhat = 0.0, mean_dxhat_xhat = 0.0;
        for (int c = 0; c < C; c++) {
            double xhat = (x[c] - m) * r;
            double dxhat = g[c] * weight[c];
            mean_dxhat += dxhat;
            mean_dxhat_xhat += dxhat * xhat;
        }
        mean_dxhat /= C;
        mean_dxhat_xhat /= C;
        for (int c = 0; c < C; c++) {
            double xhat = (x[c] - m) * r;
            double dxhat = g[c] * weight[c];
            dinp[(size_t)n * C + c] += r * (dxhat - mean_dxhat - xhat * mean_dxhat_xhat);
            dweight[c] += g[c] * xhat;
            dbias[c] += g[c];
        }
    }
}

// ---------------------------------------------------------------------------------------
// matmul

void ref_matmul_forward(double *out, const double *inp, const double *weight, const double *bias,
                        int N, int C, int OC) {
    for (int n = 0; n < N; n++) {
        for (int o = 0; o < OC; o++) {
            double acc = bias ? bias[o] : 0.0;
            for (int c = 0; c < C; c++) acc += inp[(size_t)n * C + c] * weight[(size_t)o * C + c];
            out[(size_t)n * OC + o] = acc;
        }
    }
}

void ref_matmul_backward(double *dinp, double *dweight, double *dbias, const double *dout,
                         const double *inp, const double *weight, int N, int C, int OC) {
    if (dinp) memset(dinp, 0, (size_t)N * C * sizeof(double));
    for (int n = 0; n < N; n++) {
        for (int o = 0; o < OC; o++) {
            double g = dout[(size_t)n * OC + o];
            for (int c = 0; c < C; c++) {
                if (dinp) dinp[(size_t)n * C + c] += g * weight[(size_t)o * C + c];
                dweight[(size_t)o * C + c] += g * inp[(size_t)n * C + c];
            }
            if (dbias) dbias[o] += g;
        }
    }
}

// ---------------------------------------------------------------------------------------
// dropout

// the factor element `index` is multiplied by: 0 when dropped, 1/(1-p) when kept
static double dropout_factor(const Dropout *drop, uint64_t index) {
    if (!drop || drop->p == 0.0f) return 1.0;
    return dropout_keep(drop->key, drop->first + index, drop->p) ? 1.0 / (1.0 - (double)drop->p) : 0.0;
}

void ref_dropout_forward(double *out, const double *inp, size_t n, const Dropout *drop) {
    for (size_t i = 0; i < n; i++) out[i] = inp[i] * dropout_factor(drop, i);
}

void ref_dropout_backward(double *dinp, const double *dout, size_t n, const Dropout *drop) {
    for (size_t i = 0; i < n; i++) dinp[i] += dout[i] * dropout_factor(drop, i);
}

// ---------------------------------------------------------------------------------------
// attention

// rope: pair k of the query or key at position p turned by p * ROPE_BASE^(-2k/hs); back
// (the transpose) with sign -1
static void rope_turn(double *qkv, int B, int t, int H, int hs, double sign) {
    const int A = H * hs;
    for (int b = 0; b < B; b++)
        for (int p = 0; p < t; p++)
            for (int h = 0; h < 2 * H; h++) {  // H query heads, then H key heads
                double *x = qkv + (size_t)(b * t + p) * 3 * A + (size_t)h * hs;
                for (int k = 0; k < hs / 2; k++) {
                    double angle = p * pow(ROPE_BASE, -2.0 * k / hs);
                    double c = cos(angle), s = sign * sin(angle), x0 = x[2 * k], x1 = x[2 * k + 1];
                    x[2 * k] = c * x0 - s * x1;
                    x[2 * k + 1] = s * x0 + c * x1;
                }
            }
}

void ref_rope_forward(double *qkv, int B, int t, int H, int hs) { rope_turn(qkv, B, t, H, hs, 1.0); }

void ref_rope_backward(double *dqkv, int B, int t, int H, int hs) { rope_turn(dqkv, B, t, H, hs, -1.0); }

// softmax weights of query row i of head h in sequence b over keys first <= j <= i, into
// w[first, i] (w holds i+1)
static void attention_weights(double *w, const double *qkv, int b, int i, int h, int t, int H,
                              int hs, int first) {
    int A = H * hs;
    const double *q = qkv + (size_t)(b * t + i) * 3 * A + h * hs;
    double scale = 1.0 / sqrt((double)hs);
    double maxs = -INFINITY;
    for (int j = first; j <= i; j++) {
        const double *k = qkv + (size_t)(b * t + j) * 3 * A + A + h * hs;
        double s = 0.0;
        for (int d = 0; d < hs; d++) s += q[d] * k[d];
        w[j] = s * scale;
        if (w[j] > maxs) maxs = w[j];
    }
    double sum = 0.0;
    for (int j = first; j <= i; j++) {
        w[j] = exp(w[j] - maxs);
        sum += w[j];
    }
    for (int j = first; j <= i; j++) w[j] /= sum;
}

// flat index of weight (b, h, i, j) in the (B, H, t, t) attention tensor
static uint64_t att_index(int b, int h, int i, int j, int t, int H) {
    return (((uint64_t)b * H + h) * t + i) * t + j;
}

// ref_attention_forward where query i sees only the last `window` keys, j > i - window
static void attention_forward_window(double *out, double *att, const double *qkv, int B, int t, int H, int hs,
                                     int window, const Dropout *drop) {
    int A = H * hs;
    double *w = malloc((size_t)t * sizeof(double));
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < H; h++) {
            for (int i = 0; i < t; i++) {
                int first = i - window + 1 > 0 ? i - window + 1 : 0;
                attention_weights(w, qkv, b, i, h, t, H, hs, first);
                double *o = out + (size_t)(b * t + i) * A + h * hs;
                for (int d = 0; d < hs; d++) o[d] = 0.0;
                for (int j = 0; j < t; j++) {
                    if (att) att[att_index(b, h, i, j, t, H)] = j <= i && j >= first ? w[j] : 0.0;
                    if (j > i || j < first) continue;
                    const double *v = qkv + (size_t)(b * t + j) * 3 * A + 2 * A + h * hs;
                    double wd = w[j] * dropout_factor(drop, att_index(b, h, i, j, t, H));
                    for (int d = 0; d < hs; d++) o[d] += wd * v[d];
                }
            }
        }
    }
    free(w);
}

void ref_attention_forward(double *out, double *att, const double *qkv, int B, int t, int H,
                           int hs, const Dropout *drop) {
    attention_forward_window(out, att, qkv, B, t, H, hs, t, drop);
}

void ref_attention_backward(double *dqkv, const double *dout, const double *qkv, int B, int t,
                            int H, int hs, const Dropout *drop) {
    int A = H * hs;
    double scale = 1.0 / sqrt((double)hs);
    double *w = malloc((size_t)t * sizeof(double));
    double *dw = malloc((size_t)t * sizeof(double));
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < H; h++) {
            for (int i = 0; i < t; i++) {
                attention_weights(w, qkv, b, i, h, t, H, hs, 0);
                const double *g = dout + (size_t)(b * t + i) * A + h * hs;
                // through out_i = sum_j f_j w_j v_j (f the dropout factor):
                // dv_j += f_j w_j g, dw_j = f_j (g . v_j)
                for (int j = 0; j <= i; j++) {
                    const double *v = qkv + (size_t)(b * t + j) * 3 * A + 2 * A + h * hs;
                    double *dv = dqkv + (size_t)(b * t + j) * 3 * A + 2 * A + h * hs;
                    double f = dropout_factor(drop, att_index(b, h, i, j, t, H));
                    double gv = 0.0;
                    for (int d = 0; d < hs; d++) {
                        gv += g[d] * v[d];
                        dv[d] += f * w[j] * g[d];
                    }
                    dw[j] = f * gv;
                }
                // softmax: ds_j = w_j (dw_j - sum_k w_k dw_k)
                double wdw = 0.0;
                for (int j = 0; j <= i; j++) wdw += w[j] * dw[j];
                // scores s_j = scale q_i . k_j
                const double *q = qkv + (size_t)(b * t + i) * 3 * A + h * hs;
                double *dq = dqkv + (size_t)(b * t + i) * 3 * A + h * hs;
                for (int j = 0; j <= i; j++) {
                    double ds = w[j] * (dw[j] - wdw);
                    const double *k = qkv + (size_t)(b * t + j) * 3 * A + A + h * hs;
                    double *dk = dqkv + (size_t)(b * t + j) * 3 * A + A + h * hs;
                    for (int d = 0; d < hs; d++) {
                        dq[d] += ds * scale * k[d];
                        dk[d] += ds * scale * q[d];
                    }
                }
            }
        }
    }
    free(w);
    free(dw);
}

// ---------------------------------------------------------------------------------------
// gelu, residual

#define GELU_S 0.7978845608028654  // sqrt(2/pi)

void ref_gelu_forward(double *out, const double *inp, size_t n) {
    for (size_t i = 0; i < n; i++) {
        double x = inp[i];
        out[i] = 0.5 * x * (1.0 + tanh(GELU_S * (x + 0.044715 * x * x * x)));
    }
}

void ref_gelu_backward(double *dinp, const double *inp, const double *dout, size_t n) {
    for (size_t i = 0; i < n; i++) {
        double x = inp[i];
        double th = tanh(GELU_S * (x + 0.044715 * x * x * x));
        double du = GELU_S * (1.0 + 3.0 * 0.044715 * x * x);  // d/dx of the tanh argument
        double grad = 0.5 * (1.0 + th) + 0.5 * x * (1.0 - th * th) * du;
        dinp[i] = grad * dout[i];
    }
}

void ref_residual_forward(double *out, const double *a, const double *b, size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = a[i] + b[i];
}

void ref_residual_backward(double *da, double *db, const double *dout, size_t n) {
    for (size_t i = 0; i < n; i++) {
        da[i] += dout[i];
        db[i] += dout[i];
    }
}

// ---------------------------------------------------------------------------------------
// softmax, cross-entropy

void ref_softmax_forward(double *probs, const double *logits, int N, int V) {
    for (int n = 0; n < N; n++) {
        const double *x = logits + (size_t)n * V;
        double *p = probs + (size_t)n * V;
        double maxv = -INFINITY;
        for (int v = 0; v < V; v++) if (x[v] > maxv) maxv = x[v];
        double sum = 0.0;
        for (int v = 0; v < V; v++) {
            p[v] = exp(x[v] - maxv);
            sum += p[v];
        }
        for (int v = 0; v < V; v++) p[v] /= sum;
    }
}

void ref_crossentropy_forward(double *losses, double *probs, const double *logits,
                              const int *targets, int N, int V) {
    ref_softmax_forward(probs, logits, N, V);
    for (int n = 0; n < N; n++) losses[n] = -log(probs[(size_t)n * V + targets[n]]);
}

void ref_crossentropy_backward(double *dlogits, const double *probs, const int *targets,
                               const double *dlosses, int N, int V) {
    for (int n = 0; n < N; n++) {
        for (int v = 0; v < V; v++) {
            double onehot = v == targets[n] ? 1.0 : 0.0;
            dlogits[(size_t)n * V + v] += (probs[(size_t)n * V + v] - onehot) * dlosses[n];
        }
    }
}

// ---------------------------------------------------------------------------------------
// the whole GPT

static double *zeros(size_t n) { return calloc(n ? n : 1, sizeof(double)); }

// The sizes of a forward over tokens (B, t): N = B t rows, C channels, H heads of hs,
// A = H hs the heads' width, V the vocabulary; and the model whose layout the parameters have.
typedef struct {
    const GPT *model;
    const GPTConfig *cfg;
    int B, t, N, C, H, hs, A, V;
    int window;             // attention sees the last `window` positions (t: all before it)
    float p;                // dropout's probability (0: off)
    uint64_t dropout_seed;  // the key of layer l's site s is dropout_key(dropout_seed, l, s)
} RefShape;

// Where a tensor of the model (a pointer into its params_memory) starts in the vector of
// doubles laid out as the model's (parameters or gradients).
static size_t at(const RefShape *m, const float *tensor) { return (size_t)(tensor - m->model->params_memory); }

// Dropout at layer l's site (DROPOUT_ATTN_WEIGHTS, DROPOUT_ATTN_RESIDUAL, DROPOUT_MLP_RESIDUAL),
// its mask indexed over the whole batch.
static Dropout block_dropout(const RefShape *m, int l, int site) {
    return (Dropout){m->p, dropout_key(m->dropout_seed, l, site), 0};
}

// The model's hooks (model/gpt.h: ForwardHooks) in double: edit e of rows of `width` values,
// ld_x apart from x (N of them; row n at position n % t), made as the hook says, or zeroed
// when `zero` is 1 (the gradient of an edited row, which the backward takes as a constant).
static void edit(const RefShape *m, const ActivationEdit *e, double *x, int ld_x, int width, int zero) {
    for (int n = 0; n < m->N; n++) {
        if (e->positions && !e->positions[n % m->t]) continue;
        for (int d = 0; d < width; d++)
            x[(size_t)n * ld_x + d] = zero || !e->rows ? 0.0 : (double)e->rows[(size_t)n * e->ld + d];
    }
}

// The hooks' edits of layer l's heads' outputs in x (N, A), the attention's output (zero 0)
// or its gradient (zero 1).
static void edit_heads(const RefShape *m, int l, double *x, int zero) {
    const ForwardHooks *h = m->model->hooks;
    for (int i = 0; h && i < h->n_heads; i++)
        if (h->heads[i].layer == l) edit(m, &h->heads[i], x + h->heads[i].head * m->hs, m->A, m->hs, zero);
}

// The hooks' edits of the residual stream entering block l (0..L), x (N, C), or its gradient.
static void edit_stream(const RefShape *m, int l, double *x, int zero) {
    const ForwardHooks *h = m->model->hooks;
    for (int i = 0; h && i < h->n_residual; i++)
        if (h->residual[i].layer == l) edit(m, &h->residual[i], x, m->C, m->C, zero);
}

// What one block's forward keeps for its backward.
typedef struct {
    double *x_in;  // (N, C) the residual stream entering the block
    double *ln1;   // (N, C) ln_1(x_in)
    double *qkv;   // (N, 3A) c_attn(ln1): queries, keys and values of every head
    double *atty;  // (N, A) the heads' outputs, side by side
    double *res2;  // (N, C) x_in + dropout(attn's c_proj(atty))
    double *ln2;   // (N, C) ln_2(res2)
    double *fch;   // (N, 4C) the MLP's c_fc(ln2)
    double *gelu;  // (N, 4C) gelu(fch)
} RefBlockActs;

static RefBlockActs block_acts_alloc(const RefShape *m) {
    size_t N = (size_t)m->N;
    return (RefBlockActs){zeros(N * m->C), zeros(N * m->C), zeros(N * 3 * m->A), zeros(N * m->A),
                          zeros(N * m->C), zeros(N * m->C), zeros(N * 4 * m->C), zeros(N * 4 * m->C)};
}

static void block_acts_free(RefBlockActs *a) {
    free(a->x_in), free(a->ln1), free(a->qkv), free(a->atty);
    free(a->res2), free(a->ln2), free(a->fch), free(a->gelu);
}

// Block l, pre-LayerNorm:  res2 = x + dropout(c_proj(attention(c_attn(ln_1(x)))))
//                          x    = res2 + dropout(c_proj(gelu(c_fc(ln_2(res2)))))
// x (N, C) in and out; att (B, H, t, t) gets the attention weights when not NULL; branch
// (N, C) is scratch.
static void block_forward(const RefShape *m, const double *params, int l, double *x, RefBlockActs *a,
                          double *att, double *branch) {
    const int N = m->N, C = m->C, A = m->A;
    const size_t NC = (size_t)N * C;
    BlockParams w = gpt_layer_params(&m->model->params, m->cfg, l);
    Dropout d_att = block_dropout(m, l, DROPOUT_ATTN_WEIGHTS), d_res1 = block_dropout(m, l, DROPOUT_ATTN_RESIDUAL);
    Dropout d_res2 = block_dropout(m, l, DROPOUT_MLP_RESIDUAL);
    memcpy(a->x_in, x, NC * sizeof(double));
    ref_layernorm_forward(a->ln1, NULL, NULL, a->x_in, params + at(m, w.ln1w), params + at(m, w.ln1b), N, C);
    ref_matmul_forward(a->qkv, a->ln1, params + at(m, w.qkvw), w.qkvb ? params + at(m, w.qkvb) : NULL, N, C, 3 * A);
    if (m->cfg->position == POSITION_ROPE) ref_rope_forward(a->qkv, m->B, m->t, m->H, m->hs);
    attention_forward_window(a->atty, att, a->qkv, m->B, m->t, m->H, m->hs, m->window, &d_att);
    edit_heads(m, l, a->atty, 0);
    ref_matmul_forward(branch, a->atty, params + at(m, w.attprojw), params + at(m, w.attprojb), N, A, C);
    ref_dropout_forward(branch, branch, NC, &d_res1);
    ref_residual_forward(a->res2, a->x_in, branch, NC);
    ref_layernorm_forward(a->ln2, NULL, NULL, a->res2, params + at(m, w.ln2w), params + at(m, w.ln2b), N, C);
    ref_matmul_forward(a->fch, a->ln2, params + at(m, w.fcw), params + at(m, w.fcb), N, C, 4 * C);
    ref_gelu_forward(a->gelu, a->fch, (size_t)N * 4 * C);
    ref_matmul_forward(branch, a->gelu, params + at(m, w.fcprojw), params + at(m, w.fcprojb), N, 4 * C, C);
    ref_dropout_forward(branch, branch, NC, &d_res2);
    ref_residual_forward(x, a->res2, branch, NC);
}

// The backward of block_forward: dx (N, C) holds d(loss)/d(the block's output) and becomes
// d(loss)/d(its input); the parameters' gradients are added to grads.
static void block_backward(const RefShape *m, const double *params, double *grads, int l, double *dx,
                           const RefBlockActs *a) {
    const int N = m->N, C = m->C, A = m->A;
    const size_t NC = (size_t)N * C;
    BlockParams w = gpt_layer_params(&m->model->params, m->cfg, l);
    Dropout d_att = block_dropout(m, l, DROPOUT_ATTN_WEIGHTS), d_res1 = block_dropout(m, l, DROPOUT_ATTN_RESIDUAL);
    Dropout d_res2 = block_dropout(m, l, DROPOUT_MLP_RESIDUAL);
    double *dres2 = zeros(NC), *dbranch = zeros(NC), *dln = zeros(NC);
    double *dgelu = zeros((size_t)N * 4 * C), *dfch = zeros((size_t)N * 4 * C);
    double *datty = zeros((size_t)N * A), *dqkv = zeros((size_t)N * 3 * A);

    // x = res2 + dropout(mlp(ln_2(res2))): the residual passes dx on to res2
    memcpy(dres2, dx, NC * sizeof(double));
    ref_dropout_backward(dbranch, dx, NC, &d_res2);
    ref_matmul_backward(dgelu, grads + at(m, w.fcprojw), grads + at(m, w.fcprojb), dbranch, a->gelu,
                        params + at(m, w.fcprojw), N, 4 * C, C);
    ref_gelu_backward(dfch, a->fch, dgelu, (size_t)N * 4 * C);
    ref_matmul_backward(dln, grads + at(m, w.fcw), grads + at(m, w.fcb), dfch, a->ln2, params + at(m, w.fcw), N, C,
                        4 * C);
    ref_layernorm_backward(dres2, grads + at(m, w.ln2w), grads + at(m, w.ln2b), dln, a->res2, params + at(m, w.ln2w),
                           N, C);

    // res2 = x_in + dropout(attn(ln_1(x_in))): the residual passes dres2 on to x_in
    memcpy(dx, dres2, NC * sizeof(double));
    memset(dbranch, 0, NC * sizeof(double));
    ref_dropout_backward(dbranch, dres2, NC, &d_res1);
    ref_matmul_backward(datty, grads + at(m, w.attprojw), grads + at(m, w.attprojb), dbranch, a->atty,
                        params + at(m, w.attprojw), N, A, C);
    edit_heads(m, l, datty, 1);
    ref_attention_backward(dqkv, datty, a->qkv, m->B, m->t, m->H, m->hs, &d_att);
    if (m->cfg->position == POSITION_ROPE) ref_rope_backward(dqkv, m->B, m->t, m->H, m->hs);
    ref_matmul_backward(dln, grads + at(m, w.qkvw), w.qkvb ? grads + at(m, w.qkvb) : NULL, dqkv, a->ln1,
                        params + at(m, w.qkvw), N, C, 3 * A);
    ref_layernorm_backward(dx, grads + at(m, w.ln1w), grads + at(m, w.ln1b), dln, a->x_in, params + at(m, w.ln1w), N,
                           C);
    free(dres2), free(dbranch), free(dln), free(dgelu), free(dfch), free(datty), free(dqkv);
}

// The head and the loss, backward: from d(mean loss)/d(loss of each token), 1/N, to the
// gradient of the residual stream leaving the last block, into dx (N, C); the tied head adds
// to wte's gradient.
static void head_backward(const RefShape *m, const double *params, double *grads, const double *x_last,
                          const double *lnf, const double *probs, const int *targets, double *dx) {
    const int N = m->N, C = m->C, V = m->V;
    const ParameterTensors *p = &m->model->params;
    double *dlosses = zeros(N), *dlogits = zeros((size_t)N * V), *dlnf = zeros((size_t)N * C);
    for (int n = 0; n < N; n++) dlosses[n] = 1.0 / N;
    ref_crossentropy_backward(dlogits, probs, targets, dlosses, N, V);
    ref_matmul_backward(dlnf, grads + at(m, p->wte), NULL, dlogits, lnf, params + at(m, p->wte), N, C, V);
    ref_layernorm_backward(dx, grads + at(m, p->lnfw), grads + at(m, p->lnfb), dlnf, x_last, params + at(m, p->lnfw),
                           N, C);
    free(dlosses), free(dlogits), free(dlnf);
}

// The GPT: tokens (and learned positions) embedded, L blocks, a final LayerNorm, the head
// tied to the token embedding (logits = lnf @ wte^T), cross-entropy (with targets); then,
// with grads, every step back. Attention sees the last `window` positions.
static double gpt_forward_backward(const GPT *model, const double *params, const int *inputs, const int *targets,
                                   int B, int t, int window, int training, uint64_t dropout_seed, double *logits_out,
                                   double *att_out, double *grads) {
    const GPTConfig *cfg = &model->config;
    RefShape m = {model, cfg, B, t, B * t, cfg->n_embd, cfg->n_head, cfg->head_size, cfg->n_head * cfg->head_size,
                  cfg->vocab_size, window, training && cfg->dropout > 0.0f ? cfg->dropout : 0.0f, dropout_seed};
    const ParameterTensors *p = &model->params;
    const int N = m.N, C = m.C, V = m.V, L = cfg->n_layer;
    const size_t NC = (size_t)N * C, att_size = (size_t)B * m.H * t * t;
    RefBlockActs *acts = calloc((size_t)(L > 0 ? L : 1), sizeof(RefBlockActs));
    double *x = zeros(NC), *branch = zeros(NC), *lnf = zeros(NC);
    double *logits = zeros((size_t)N * V), *probs = zeros((size_t)N * V), *losses = zeros(N);

    const double *wpe = p->wpe ? params + at(&m, p->wpe) : NULL;  // NULL: RoPE turns q and k instead
    ref_encoder_forward(x, inputs, params + at(&m, p->wte), wpe, B, t, C);
    for (int l = 0; l < L; l++) {
        acts[l] = block_acts_alloc(&m);
        edit_stream(&m, l, x, 0);
        block_forward(&m, params, l, x, &acts[l], att_out ? att_out + l * att_size : NULL, branch);
    }
    edit_stream(&m, L, x, 0);
    ref_layernorm_forward(lnf, NULL, NULL, x, params + at(&m, p->lnfw), params + at(&m, p->lnfb), N, C);
    ref_matmul_forward(logits, lnf, params + at(&m, p->wte), NULL, N, C, V);  // weight tying: wte is the head
    if (targets) ref_crossentropy_forward(losses, probs, logits, targets, N, V);
    double loss = 0.0;
    for (int n = 0; n < N; n++) loss += losses[n];
    loss /= N;
    if (logits_out) memcpy(logits_out, logits, (size_t)N * V * sizeof(double));

    if (grads) {
        memset(grads, 0, model->num_parameters * sizeof(double));
        double *dx = zeros(NC);  // the gradient of the residual stream
        head_backward(&m, params, grads, x, lnf, probs, targets, dx);
        edit_stream(&m, L, dx, 1);
        for (int l = L - 1; l >= 0; l--) {
            block_backward(&m, params, grads, l, dx, &acts[l]);
            edit_stream(&m, l, dx, 1);
        }
        ref_encoder_backward(grads + at(&m, p->wte), p->wpe ? grads + at(&m, p->wpe) : NULL, dx, inputs, B, t, C);
        free(dx);
    }
    for (int l = 0; l < L; l++) block_acts_free(&acts[l]);
    free(acts), free(x), free(branch), free(lnf), free(logits), free(probs), free(losses);
    return loss;
}

double ref_gpt_forward_backward(const GPT *model, const double *params, const int *inputs, const int *targets,
                                int B, int t, int training, uint64_t dropout_seed, double *logits_out, double *att_out,
                                double *grads) {
    return gpt_forward_backward(model, params, inputs, targets, B, t, t, training, dropout_seed, logits_out, att_out,
                                grads);
}

void ref_gpt_sliding_logits(const GPT *model, const double *params, const int *inputs, int t, int window,
                            double *logits) {
    gpt_forward_backward(model, params, inputs, NULL, 1, t, window, 0, 0, logits, NULL, NULL);
}

// ---------------------------------------------------------------------------------------
// AdamW

void ref_adamw_update(double *params, double *m, double *v, const double *grads, const unsigned char *decay, size_t n,
                      long k, double lr, double beta1, double beta2, double eps, double weight_decay) {
    double bias1 = 1.0 - pow(beta1, (double)k), bias2 = 1.0 - pow(beta2, (double)k);
    for (size_t i = 0; i < n; i++) {
        m[i] = beta1 * m[i] + (1.0 - beta1) * grads[i];
        v[i] = beta2 * v[i] + (1.0 - beta2) * grads[i] * grads[i];
        double wd = decay[i] ? weight_decay : 0.0;
        params[i] -= lr * ((m[i] / bias1) / (sqrt(v[i] / bias2) + eps) + wd * params[i]);
    }
}

// ---------------------------------------------------------------------------------------
// test helpers

void ref_to_double(double *dst, const float *src, size_t n) {
    for (size_t i = 0; i < n; i++) dst[i] = src[i];
}

void ref_finite_diff(RefObjective f, void *ctx, double *x, size_t n, double h, double *grad) {
    for (size_t i = 0; i < n; i++) {
        double saved = x[i];
        x[i] = saved + h;
        double up = f(ctx);
        x[i] = saved - h;
        double down = f(ctx);
        x[i] = saved;
        grad[i] = (up - down) / (2.0 * h);
    }
}
