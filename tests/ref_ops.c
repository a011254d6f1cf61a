// Double-precision reference layers and GPT. See ref_ops.h.
#include "ref_ops.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../model/rng.h"

// ---------------------------------------------------------------------------------------
// encoder

void ref_encoder_forward(double *out, const int *tokens, const double *wte, const double *wpe,
                         int B, int t, int C) {
    for (int b = 0; b < B; b++) {
        for (int p = 0; p < t; p++) {
            int token = tokens[b * t + p];
            for (int c = 0; c < C; c++) {
                out[(size_t)(b * t + p) * C + c] = wte[(size_t)token * C + c] + wpe[(size_t)p * C + c];
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
                dwpe[(size_t)p * C + c] += g;
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

// softmax weights of query row i of head h in sequence b over keys j <= i, into w (i+1)
static void attention_weights(double *w, const double *qkv, int b, int i, int h, int t, int H,
                              int hs) {
    int A = H * hs;
    const double *q = qkv + (size_t)(b * t + i) * 3 * A + h * hs;
    double scale = 1.0 / sqrt((double)hs);
    double maxs = -INFINITY;
    for (int j = 0; j <= i; j++) {
        const double *k = qkv + (size_t)(b * t + j) * 3 * A + A + h * hs;
        double s = 0.0;
        for (int d = 0; d < hs; d++) s += q[d] * k[d];
        w[j] = s * scale;
        if (w[j] > maxs) maxs = w[j];
    }
    double sum = 0.0;
    for (int j = 0; j <= i; j++) {
        w[j] = exp(w[j] - maxs);
        sum += w[j];
    }
    for (int j = 0; j <= i; j++) w[j] /= sum;
}

// flat index of weight (b, h, i, j) in the (B, H, t, t) attention tensor
static uint64_t att_index(int b, int h, int i, int j, int t, int H) {
    return (((uint64_t)b * H + h) * t + i) * t + j;
}

void ref_attention_forward(double *out, double *att, const double *qkv, int B, int t, int H,
                           int hs, const Dropout *drop) {
    int A = H * hs;
    double *w = malloc((size_t)t * sizeof(double));
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < H; h++) {
            for (int i = 0; i < t; i++) {
                attention_weights(w, qkv, b, i, h, t, H, hs);
                double *o = out + (size_t)(b * t + i) * A + h * hs;
                for (int d = 0; d < hs; d++) o[d] = 0.0;
                for (int j = 0; j < t; j++) {
                    if (att) att[att_index(b, h, i, j, t, H)] = j <= i ? w[j] : 0.0;
                    if (j > i) continue;
                    const double *v = qkv + (size_t)(b * t + j) * 3 * A + 2 * A + h * hs;
                    double wd = w[j] * dropout_factor(drop, att_index(b, h, i, j, t, H));
                    for (int d = 0; d < hs; d++) o[d] += wd * v[d];
                }
            }
        }
    }
    free(w);
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
                attention_weights(w, qkv, b, i, h, t, H, hs);
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
        dinp[i] += grad * dout[i];
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

const char *const ref_tensor_names[NUM_PARAMETER_TENSORS] = {
    "wte", "wpe", "ln1w", "ln1b", "qkvw", "qkvb", "attprojw", "attprojb",
    "ln2w", "ln2b", "fcw", "fcb", "fcprojw", "fcprojb", "lnfw", "lnfb"};

void ref_gpt_layout(const GPTConfig *cfg, RefLayout *lay) {
    size_t V = cfg->vocab_size, T = cfg->block_size, L = cfg->n_layer, C = cfg->n_embd;
    size_t A = (size_t)cfg->n_head * cfg->head_size;
    size_t sizes[NUM_PARAMETER_TENSORS] = {
        V * C, T * C, L * C, L * C, L * 3 * A * C, cfg->qkv_bias ? L * 3 * A : 0,
        L * C * A, L * C, L * C, L * C, L * 4 * C * C, L * 4 * C, L * C * 4 * C, L * C, C, C};
    size_t offset = 0;
    for (int i = 0; i < NUM_PARAMETER_TENSORS; i++) {
        lay->offset[i] = offset;
        lay->size[i] = sizes[i];
        offset += sizes[i];
    }
    lay->total = offset;
}

static double *zeros(size_t n) { return calloc(n ? n : 1, sizeof(double)); }

double ref_gpt_forward_backward(const GPTConfig *cfg, const double *params, const int *inputs,
                                const int *targets, int B, int t, int training,
                                uint64_t dropout_seed, double *logits_out, double *att_out,
                                double *grads) {
    int V = cfg->vocab_size, L = cfg->n_layer, C = cfg->n_embd, H = cfg->n_head;
    int hs = cfg->head_size, A = H * hs, N = B * t;
    size_t NC = (size_t)N * C;
    RefLayout lay;
    ref_gpt_layout(cfg, &lay);
    const double *wte = params + lay.offset[REF_WTE], *wpe = params + lay.offset[REF_WPE];
    float p = training && cfg->dropout > 0.0f ? cfg->dropout : 0.0f;

    // activations of every layer, (L, ...)
    double *x_in = zeros(L * NC);            // residual stream entering the layer
    double *ln1 = zeros(L * NC);
    double *qkv = zeros((size_t)L * N * 3 * A);
    double *atty = zeros((size_t)L * N * A);
    double *branch1 = zeros(L * NC);         // attn c_proj output
    double *res2 = zeros(L * NC);
    double *ln2 = zeros(L * NC);
    double *fch = zeros((size_t)L * N * 4 * C);
    double *gelu = zeros((size_t)L * N * 4 * C);
    double *branch2 = zeros(L * NC);         // mlp c_proj output
    double *x = zeros(NC), *dropped = zeros(NC), *lnf = zeros(NC);
    double *logits = zeros((size_t)N * V), *probs = zeros((size_t)N * V), *losses = zeros(N);
    size_t att_size = (size_t)B * H * t * t;

    ref_encoder_forward(x, inputs, wte, wpe, B, t, C);
    for (int l = 0; l < L; l++) {
        const double *ln1w = params + lay.offset[REF_LN1W] + (size_t)l * C;
        const double *ln1b = params + lay.offset[REF_LN1B] + (size_t)l * C;
        const double *qkvw = params + lay.offset[REF_QKVW] + (size_t)l * 3 * A * C;
        const double *qkvb = cfg->qkv_bias ? params + lay.offset[REF_QKVB] + (size_t)l * 3 * A : NULL;
        const double *attprojw = params + lay.offset[REF_ATTPROJW] + (size_t)l * C * A;
        const double *attprojb = params + lay.offset[REF_ATTPROJB] + (size_t)l * C;
        const double *ln2w = params + lay.offset[REF_LN2W] + (size_t)l * C;
        const double *ln2b = params + lay.offset[REF_LN2B] + (size_t)l * C;
        const double *fcw = params + lay.offset[REF_FCW] + (size_t)l * 4 * C * C;
        const double *fcb = params + lay.offset[REF_FCB] + (size_t)l * 4 * C;
        const double *fcprojw = params + lay.offset[REF_FCPROJW] + (size_t)l * C * 4 * C;
        const double *fcprojb = params + lay.offset[REF_FCPROJB] + (size_t)l * C;
        Dropout d_att = {p, dropout_key(dropout_seed, l, DROPOUT_ATTN_WEIGHTS), 0};
        Dropout d_res1 = {p, dropout_key(dropout_seed, l, DROPOUT_ATTN_RESIDUAL), 0};  // the whole batch
        Dropout d_res2 = {p, dropout_key(dropout_seed, l, DROPOUT_MLP_RESIDUAL), 0};  // the whole batch
        double *l_x = x_in + l * NC, *l_ln1 = ln1 + l * NC, *l_res2 = res2 + l * NC;
        double *l_qkv = qkv + (size_t)l * N * 3 * A, *l_atty = atty + (size_t)l * N * A;
        double *l_ln2 = ln2 + l * NC, *l_fch = fch + (size_t)l * N * 4 * C;
        double *l_gelu = gelu + (size_t)l * N * 4 * C;
        double *l_b1 = branch1 + l * NC, *l_b2 = branch2 + l * NC;

        memcpy(l_x, x, NC * sizeof(double));
        ref_layernorm_forward(l_ln1, NULL, NULL, l_x, ln1w, ln1b, N, C);
        ref_matmul_forward(l_qkv, l_ln1, qkvw, qkvb, N, C, 3 * A);
        ref_attention_forward(l_atty, att_out ? att_out + l * att_size : NULL, l_qkv, B, t, H, hs,
                              &d_att);
        ref_matmul_forward(l_b1, l_atty, attprojw, attprojb, N, A, C);
        ref_dropout_forward(dropped, l_b1, NC, &d_res1);
        ref_residual_forward(l_res2, l_x, dropped, NC);
        ref_layernorm_forward(l_ln2, NULL, NULL, l_res2, ln2w, ln2b, N, C);
        ref_matmul_forward(l_fch, l_ln2, fcw, fcb, N, C, 4 * C);
        ref_gelu_forward(l_gelu, l_fch, (size_t)N * 4 * C);
        ref_matmul_forward(l_b2, l_gelu, fcprojw, fcprojb, N, 4 * C, C);
        ref_dropout_forward(dropped, l_b2, NC, &d_res2);
        ref_residual_forward(x, l_res2, dropped, NC);
    }
    const double *lnfw = params + lay.offset[REF_LNFW], *lnfb = params + lay.offset[REF_LNFB];
    ref_layernorm_forward(lnf, NULL, NULL, x, lnfw, lnfb, N, C);
    ref_matmul_forward(logits, lnf, wte, NULL, N, C, V);  // weight tying: wte is the head
    ref_crossentropy_forward(losses, probs, logits, targets, N, V);
    double loss = 0.0;
    for (int n = 0; n < N; n++) loss += losses[n];
    loss /= N;
    if (logits_out) memcpy(logits_out, logits, (size_t)N * V * sizeof(double));

    if (grads) {
        memset(grads, 0, lay.total * sizeof(double));
        double *g = grads;
        double *dlosses = zeros(N), *dlogits = zeros((size_t)N * V), *dlnf = zeros(NC);
        double *dx = zeros(NC);         // gradient of the residual stream
        double *dres2 = zeros(NC), *dbranch = zeros(NC), *dln = zeros(NC);
        double *dgelu = zeros((size_t)N * 4 * C), *dfch = zeros((size_t)N * 4 * C);
        double *datty = zeros((size_t)N * A), *dqkv = zeros((size_t)N * 3 * A);
        for (int n = 0; n < N; n++) dlosses[n] = 1.0 / N;
        ref_crossentropy_backward(dlogits, probs, targets, dlosses, N, V);
        ref_matmul_backward(dlnf, g + lay.offset[REF_WTE], NULL, dlogits, lnf, wte, N, C, V);
        ref_layernorm_backward(dx, g + lay.offset[REF_LNFW], g + lay.offset[REF_LNFB], dlnf, x,
                               lnfw, N, C);
        for (int l = L - 1; l >= 0; l--) {
            size_t o3A = (size_t)l * 3 * A;
            const double *ln1w = params + lay.offset[REF_LN1W] + (size_t)l * C;
            const double *qkvw = params + lay.offset[REF_QKVW] + o3A * C;
            const double *attprojw = params + lay.offset[REF_ATTPROJW] + (size_t)l * C * A;
            const double *ln2w = params + lay.offset[REF_LN2W] + (size_t)l * C;
            const double *fcw = params + lay.offset[REF_FCW] + (size_t)l * 4 * C * C;
            const double *fcprojw = params + lay.offset[REF_FCPROJW] + (size_t)l * C * 4 * C;
            Dropout d_att = {p, dropout_key(dropout_seed, l, DROPOUT_ATTN_WEIGHTS), 0};
            Dropout d_res1 = {p, dropout_key(dropout_seed, l, DROPOUT_ATTN_RESIDUAL), 0};
            Dropout d_res2 = {p, dropout_key(dropout_seed, l, DROPOUT_MLP_RESIDUAL), 0};

            // x_out = res2 + dropout(mlp(ln2(res2))); dx holds dL/dx_out
            memcpy(dres2, dx, NC * sizeof(double));
            memset(dbranch, 0, NC * sizeof(double));
            ref_dropout_backward(dbranch, dx, NC, &d_res2);
            memset(dgelu, 0, (size_t)N * 4 * C * sizeof(double));
            ref_matmul_backward(dgelu, g + lay.offset[REF_FCPROJW] + (size_t)l * C * 4 * C,
                                g + lay.offset[REF_FCPROJB] + (size_t)l * C, dbranch,
                                gelu + (size_t)l * N * 4 * C, fcprojw, N, 4 * C, C);
            memset(dfch, 0, (size_t)N * 4 * C * sizeof(double));
            ref_gelu_backward(dfch, fch + (size_t)l * N * 4 * C, dgelu, (size_t)N * 4 * C);
            memset(dln, 0, NC * sizeof(double));
            ref_matmul_backward(dln, g + lay.offset[REF_FCW] + (size_t)l * 4 * C * C,
                                g + lay.offset[REF_FCB] + (size_t)l * 4 * C, dfch,
                                ln2 + l * NC, fcw, N, C, 4 * C);
            ref_layernorm_backward(dres2, g + lay.offset[REF_LN2W] + (size_t)l * C,
                                   g + lay.offset[REF_LN2B] + (size_t)l * C, dln, res2 + l * NC,
                                   ln2w, N, C);

            // res2 = x_in + dropout(attn(ln1(x_in)))
            memcpy(dx, dres2, NC * sizeof(double));
            memset(dbranch, 0, NC * sizeof(double));
            ref_dropout_backward(dbranch, dres2, NC, &d_res1);
            memset(datty, 0, (size_t)N * A * sizeof(double));
            ref_matmul_backward(datty, g + lay.offset[REF_ATTPROJW] + (size_t)l * C * A,
                                g + lay.offset[REF_ATTPROJB] + (size_t)l * C, dbranch,
                                atty + (size_t)l * N * A, attprojw, N, A, C);
            memset(dqkv, 0, (size_t)N * 3 * A * sizeof(double));
            ref_attention_backward(dqkv, datty, qkv + (size_t)l * N * 3 * A, B, t, H, hs, &d_att);
            memset(dln, 0, NC * sizeof(double));
            ref_matmul_backward(dln, g + lay.offset[REF_QKVW] + o3A * C,
                                cfg->qkv_bias ? g + lay.offset[REF_QKVB] + o3A : NULL, dqkv,
                                ln1 + l * NC, qkvw, N, C, 3 * A);
            ref_layernorm_backward(dx, g + lay.offset[REF_LN1W] + (size_t)l * C,
                                   g + lay.offset[REF_LN1B] + (size_t)l * C, dln, x_in + l * NC,
                                   ln1w, N, C);
        }
        ref_encoder_backward(g + lay.offset[REF_WTE], g + lay.offset[REF_WPE], dx, inputs, B, t, C);
        free(dlosses); free(dlogits); free(dlnf); free(dx); free(dres2); free(dbranch);
        free(dln); free(dgelu); free(dfch); free(datty); free(dqkv);
    }
    free(x_in); free(ln1); free(qkv); free(atty); free(branch1); free(res2); free(ln2);
    free(fch); free(gelu); free(branch2); free(x); free(dropped); free(lnf); free(logits);
    free(probs); free(losses);
    return loss;
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
