#include "circuits.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../model/layers.h"
#include "../common/rng.h"
#include "eigen.h"

// ----------------------------------------------------------------------------
// small dense algebra in double, row-major

// out (m x n) = a (m x k) b (k x n)
static void mat_mul(double *out, const double *a, const double *b, int m, int k, int n) {
    for (int i = 0; i < m; i++) {
        double *o = out + (size_t)i * n;
        for (int j = 0; j < n; j++) o[j] = 0.0;
        for (int p = 0; p < k; p++) {
            double x = a[(size_t)i * k + p];
            const double *row = b + (size_t)p * n;
            for (int j = 0; j < n; j++) o[j] += x * row[j];
        }
    }
}

// out (m x n) = a (m x k) b^T, b (n x k)
static void mat_mul_bt(double *out, const double *a, const double *b, int m, int k, int n) {
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double s = 0.0;
            for (int p = 0; p < k; p++) s += a[(size_t)i * k + p] * b[(size_t)j * k + p];
            out[(size_t)i * n + j] = s;
        }
}

// out (m x n) = a^T b, a (k x m), b (k x n)
static void mat_mul_at(double *out, const double *a, const double *b, int m, int k, int n) {
    for (size_t i = 0; i < (size_t)m * n; i++) out[i] = 0.0;
    for (int p = 0; p < k; p++)
        for (int i = 0; i < m; i++) {
            double x = a[(size_t)p * m + i];
            for (int j = 0; j < n; j++) out[(size_t)i * n + j] += x * b[(size_t)p * n + j];
        }
}

// sum of x[i] y[i] over n: the Frobenius inner product of two matrices of n entries
static double frobenius_dot(const double *x, const double *y, size_t n) {
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += x[i] * y[i];
    return s;
}

// ----------------------------------------------------------------------------
// scores

double copying_score(const double *re, const double *im, int n) {
    double sum = 0.0, moduli = 0.0;
    for (int k = 0; k < n; k++) sum += re[k], moduli += hypot(re[k], im[k]);
    return moduli > 0.0 ? sum / moduli : NAN;
}

int product_copying_score(const double *p, const double *q, int V, int r, double *score) {
    int n = V < r ? V : r;
    double *m = malloc(((size_t)n * n + 2 * (size_t)n) * sizeof(double));
    if (!m) return -1;
    if (V <= r) mat_mul(m, p, q, V, r, V);  // P Q (V x V)
    else mat_mul(m, q, p, r, V, r);         // Q P (r x r)
    double *re = m + (size_t)n * n, *im = re + n;
    int rc = eigenvalues(m, n, re, im);
    if (rc == 0) *score = copying_score(re, im, n);
    free(m);
    return rc;
}

// The share of rows of m (V x V) whose largest entry (the first of equal ones) is on the diagonal.
static double diagonal_share(const double *m, int V) {
    int hits = 0;
    for (int a = 0; a < V; a++) {
        const double *row = m + (size_t)a * V;
        int best = 0;
        for (int b = 1; b < V; b++)
            if (row[b] > row[best]) best = b;
        hits += best == a;
    }
    return (double)hits / V;
}

// Gram matrices (r x r) of the factors: left^T left for a left factor (C x r), right right^T for
// a right factor (r x C).
static void gram_left(double *g, const double *left, int C, int r) { mat_mul_at(g, left, left, r, C, r); }
static void gram_right(double *g, const double *right, int C, int r) { mat_mul_bt(g, right, right, r, C, r); }

// The composition score with work (6 r r doubles) given.
static double composition_score_in(const double *a1, const double *a2, const double *b1, const double *b2, int C,
                                   int r, double *work) {
    size_t rr = (size_t)r * r;
    double *ga = work, *gb = ga + rr, *m = gb + rr, *x = m + rr, *y = x + rr, *g = y + rr;
    gram_left(ga, a1, C, r);      // A1^T A1
    gram_right(gb, b2, C, r);     // B2 B2^T
    mat_mul(m, a2, b1, r, C, r);  // M = A2 B1
    // |A1 M B2|^2 = tr(M^T A1^T A1 M B2 B2^T) = <ga M, M gb>, the Gram matrices being symmetric
    mat_mul(x, ga, m, r, r, r);
    mat_mul(y, m, gb, r, r, r);
    double product = frobenius_dot(x, y, rr);
    gram_right(g, a2, C, r);
    double norm_a = frobenius_dot(ga, g, rr);  // |A1 A2|^2 = tr(A1^T A1 A2 A2^T)
    gram_left(g, b1, C, r);
    double norm_b = frobenius_dot(g, gb, rr);  // |B1 B2|^2
    return norm_a > 0.0 && norm_b > 0.0 ? sqrt(fmax(product, 0.0) / (norm_a * norm_b)) : NAN;
}

int composition_score(const double *a1, const double *a2, const double *b1, const double *b2, int C, int r,
                      double *score) {
    double *work = malloc(6 * (size_t)r * r * sizeof(double));
    if (!work) return -1;
    *score = composition_score_in(a1, a2, b1, b2, C, r, work);
    free(work);
    return 0;
}

int composition_baseline(int C, int r, int samples, uint64_t seed, double *mean) {
    size_t factor = (size_t)C * r;
    double *f = malloc((4 * factor + 6 * (size_t)r * r) * sizeof(double));
    if (!f) return -1;
    Rng rng;
    rng_seed(&rng, seed);
    double sum = 0.0;
    for (int s = 0; s < samples; s++) {
        for (size_t i = 0; i < 4 * factor; i++) f[i] = rng_normal(&rng);
        sum += composition_score_in(f, f + factor, f + 2 * factor, f + 3 * factor, C, r, f + 4 * factor);
    }
    free(f);
    *mean = sum / samples;
    return 0;
}

// ----------------------------------------------------------------------------
// the model's pieces in double

// out (N x OC) = in (N x K) w^T + b, w (OC x K) and b (OC, or NULL) the model's floats
static void linear_double(double *out, const double *in, const float *w, const float *b, int N, int K, int OC) {
    for (int i = 0; i < N; i++)
        for (int o = 0; o < OC; o++) {
            double s = b ? b[o] : 0.0;
            for (int k = 0; k < K; k++) s += in[(size_t)i * K + k] * w[(size_t)o * K + k];
            out[(size_t)i * OC + o] = s;
        }
}

// out (N x C) = LayerNorm(in) row by row, with scale w and bias b
static void layernorm_double(double *out, const double *in, const float *w, const float *b, int N, int C) {
    for (int i = 0; i < N; i++) {
        const double *x = in + (size_t)i * C;
        double mean = 0.0, var = 0.0;
        for (int c = 0; c < C; c++) mean += x[c];
        mean /= C;
        for (int c = 0; c < C; c++) var += (x[c] - mean) * (x[c] - mean);
        double rstd = 1.0 / sqrt(var / C + (double)LAYERNORM_EPS);
        for (int c = 0; c < C; c++) out[(size_t)i * C + c] = (x[c] - mean) * rstd * w[c] + b[c];
    }
}

// x (N x C) += c_proj(GELU(c_fc(ln_2(x)))) of block p; ln (N x C) and hidden (N x 4C) scratch
static void mlp_add(double *x, const BlockParams *p, int N, int C, double *ln, double *hidden) {
    layernorm_double(ln, x, p->ln2w, p->ln2b, N, C);
    linear_double(hidden, ln, p->fcw, p->fcb, N, C, 4 * C);
    for (size_t i = 0; i < (size_t)N * 4 * C; i++) {  // GELU, tanh form, as the model's
        double u = hidden[i];
        hidden[i] = 0.5 * u * (1.0 + tanh(sqrt(2.0 / M_PI) * (u + 0.044715 * u * u * u)));
    }
    double *out = ln;
    linear_double(out, hidden, p->fcprojw, p->fcprojb, N, 4 * C, C);
    for (size_t i = 0; i < (size_t)N * C; i++) x[i] += out[i];
}

// One head's matrices, x W convention: wq, wk, wv (C x hs) with ln_1's scale folded in, the
// transposes wq_t, wk_t (hs x C) of the first two, wo (hs x C), and wq_raw, wk_raw, wv_raw
// (C x hs) without the scale.
typedef struct {
    double *wq, *wk, *wv, *wo, *wq_t, *wk_t, *wq_raw, *wk_raw, *wv_raw;
} HeadMatrices;
#define HEAD_MATRICES 9

static void head_matrices(HeadMatrices *m, const GPT *model, int l, int h) {
    const GPTConfig *c = &model->config;
    const int C = c->n_embd, hs = c->head_size, A = c->n_head * hs;
    BlockParams p = gpt_layer_params(&model->params, c, l);
    for (int k = 0; k < C; k++)
        for (int j = 0; j < hs; j++) {
            double g = p.ln1w[k];
            double q = p.qkvw[(size_t)(h * hs + j) * C + k], key = p.qkvw[(size_t)(A + h * hs + j) * C + k];
            double v = p.qkvw[(size_t)(2 * A + h * hs + j) * C + k];
            m->wq[k * hs + j] = m->wq_t[j * C + k] = g * q;
            m->wk[k * hs + j] = m->wk_t[j * C + k] = g * key;
            m->wv[k * hs + j] = g * v;
            m->wq_raw[k * hs + j] = q;
            m->wk_raw[k * hs + j] = key;
            m->wv_raw[k * hs + j] = v;
            m->wo[j * C + k] = p.attprojw[(size_t)k * A + h * hs + j];
        }
}

// ----------------------------------------------------------------------------
// the circuits

// The floats and doubles kept (Circuits' arrays) and the doubles of scratch, for config c.
static void circuits_sizes(const GPTConfig *c, size_t *kept_floats, size_t *kept_doubles, size_t *scratch) {
    size_t heads = (size_t)c->n_layer * c->n_head, V = c->vocab_size, C = c->n_embd, hs = c->head_size;
    size_t T = c->position == POSITION_LEARNED ? (size_t)c->block_size : 0, rows = V > T ? V : T;
    *kept_floats = heads * (4 * V * V + 2 * T * T);
    *kept_doubles = heads * 4 + 3 * heads * heads;
    *scratch = heads * HEAD_MATRICES * C * hs + (2 * V + T) * C + 2 * (V + T) * C + (V + T) * 4 * C + 2 * rows * hs +
               hs * V + rows * rows + 6 * hs * hs;
}

double circuits_bytes(const GPTConfig *c) {
    size_t floats, doubles, scratch;
    circuits_sizes(c, &floats, &doubles, &scratch);
    return (double)floats * sizeof(float) + ((double)doubles + scratch) * sizeof(double);
}

// What circuits_compute works in.
typedef struct {
    HeadMatrices *heads;  // (L, H)
    double *embedding;    // (V, C) W_E
    double *unembedding;  // (V, C) W_U^T with ln_f's scale: row v is diag(gf) W_U's column v
    double *positions;    // (T, C) W_pos
    // (V + T, C): the extended embeddings before the current layer, the characters' (each
    // plus the positions' mean) then the positions' (each plus the characters' mean)
    double *stream;
    double *normed;       // (V + T, C) the stream through the layer's ln_1 (the MLP's scratch after)
    double *hidden;       // (V + T, 4C)
    double *p, *p2, *q;   // (rows, hs) (rows, hs) (hs, V), rows = max(V, T)
    double *m;            // (rows, rows)
    double *work;         // 6 hs hs
} CircuitScratch;

static void float_copy(float *dst, const double *src, size_t n) {
    for (size_t i = 0; i < n; i++) dst[i] = (float)src[i];
}

// out (n x n, floats) = (x wq)(x wk)^T for x (n x C): a QK circuit
static void qk_circuit(float *out, CircuitScratch *s, const double *x, const double *wq, const double *wk, int n, int C,
                       int hs) {
    mat_mul(s->p, x, wq, n, C, hs);
    mat_mul(s->p2, x, wk, n, C, hs);
    mat_mul_bt(s->m, s->p, s->p2, n, hs, n);
    float_copy(out, s->m, (size_t)n * n);
}

// Head (l, h)'s OV and QK circuits, raw and extended (the layer's ln_1 of the extended
// embeddings in s->normed), and the OV circuits' scores.
static int head_circuits(Circuits *out, CircuitScratch *s, const GPTConfig *c, int l, int h) {
    const int V = c->vocab_size, C = c->n_embd, hs = c->head_size, T = out->positions;
    const size_t at = (size_t)l * c->n_head + h, VV = (size_t)V * V, TT = (size_t)T * T;
    const HeadMatrices *m = &s->heads[at];
    mat_mul_bt(s->q, m->wo, s->unembedding, hs, C, V);  // W_O diag(gf) W_U (hs x V)
    for (int extended = 0; extended < 2; extended++) {
        // the rows the head reads: its ln_1's output (scale and bias: the unscaled matrices),
        // or the embeddings (ln_1's scale folded into the matrices)
        const double *chars = extended ? s->normed : s->embedding, *positions = extended ? s->normed + (size_t)V * C : s->positions;
        const double *wq = extended ? m->wq_raw : m->wq, *wk = extended ? m->wk_raw : m->wk, *wv = extended ? m->wv_raw : m->wv;
        mat_mul(s->p, chars, wv, V, C, hs);
        mat_mul(s->m, s->p, s->q, V, hs, V);
        float_copy((extended ? out->ov : out->ov_raw) + at * VV, s->m, VV);
        (extended ? out->ov_diagonal_share : out->ov_diagonal_share_raw)[at] = diagonal_share(s->m, V);
        if (product_copying_score(s->p, s->q, V, hs, &(extended ? out->ov_copying_score : out->ov_copying_score_raw)[at]))
            return -1;
        qk_circuit((extended ? out->qk_characters : out->qk_characters_raw) + at * VV, s, chars, wq, wk, V, C, hs);
        if (T > 0)
            qk_circuit((extended ? out->qk_positions : out->qk_positions_raw) + at * TT, s, positions, wq, wk, T, C, hs);
    }
    return 0;
}
// The Q-, K- and V-composition of every head into every head of a later layer.
static void compositions(Circuits *out, const CircuitScratch *s, const GPTConfig *c) {
    const int L = c->n_layer, H = c->n_head, C = c->n_embd, hs = c->head_size;
    const size_t heads = (size_t)L * H;
    for (size_t a = 0; a < heads; a++)
        for (size_t b = 0; b < heads; b++) {
            size_t at = a * heads + b;
            out->composition_q[at] = out->composition_k[at] = out->composition_v[at] = 0.0;
            if ((int)(b / H) <= (int)(a / H)) continue;
            const HeadMatrices *x = &s->heads[a], *y = &s->heads[b];
            out->composition_q[at] = composition_score_in(x->wv, x->wo, y->wq, y->wk_t, C, hs, s->work);
            out->composition_k[at] = composition_score_in(x->wv, x->wo, y->wk, y->wq_t, C, hs, s->work);
            out->composition_v[at] = composition_score_in(x->wv, x->wo, y->wv, y->wo, C, hs, s->work);
        }
}

// Lays out the scratch in one block of doubles.
static void scratch_layout(CircuitScratch *s, double *d, const GPTConfig *c, int T) {
    const size_t heads = (size_t)c->n_layer * c->n_head, V = c->vocab_size, C = c->n_embd, hs = c->head_size;
    const size_t rows = V > (size_t)T ? V : (size_t)T;
    for (size_t i = 0; i < heads; i++) {
        double **field = (double **)&s->heads[i];
        for (int k = 0; k < HEAD_MATRICES; k++, d += C * hs) field[k] = d;
    }
    s->embedding = d, d += V * C;
    s->unembedding = d, d += V * C;
    s->positions = d, d += (size_t)T * C;
    s->stream = d, d += (V + T) * C;
    s->normed = d, d += (V + T) * C;
    s->hidden = d, d += (V + T) * 4 * C;
    s->p = d, d += rows * hs;
    s->p2 = d, d += rows * hs;
    s->q = d, d += hs * V;
    s->m = d, d += rows * rows;
    s->work = d;
}

// Lays out out's arrays in its block.
static void circuits_layout(Circuits *out, const GPTConfig *c, int T) {
    const size_t heads = (size_t)c->n_layer * c->n_head, VV = (size_t)c->vocab_size * c->vocab_size;
    double *d = out->memory;
    out->ov_copying_score = d, d += heads;
    out->ov_copying_score_raw = d, d += heads;
    out->ov_diagonal_share = d, d += heads;
    out->ov_diagonal_share_raw = d, d += heads;
    out->composition_q = d, d += heads * heads;
    out->composition_k = d, d += heads * heads;
    out->composition_v = d, d += heads * heads;
    float *f = (float *)d;
    out->ov = f, f += heads * VV;
    out->ov_raw = f, f += heads * VV;
    out->qk_characters = f, f += heads * VV;
    out->qk_characters_raw = f, f += heads * VV;
    out->qk_positions = T > 0 ? f : NULL, f += heads * T * T;
    out->qk_positions_raw = T > 0 ? f : NULL;
}

// The extended embeddings before the first layer (CircuitScratch's stream): each character's
// embedding plus the mean of the positions' (none for RoPE), each position's plus the mean of
// the characters'.
static void extended_embeddings(CircuitScratch *s, int V, int T, int C) {
    for (int k = 0; k < C; k++) {
        double mean_position = 0.0, mean_char = 0.0;
        for (int t = 0; t < T; t++) mean_position += s->positions[(size_t)t * C + k];
        for (int v = 0; v < V; v++) mean_char += s->embedding[(size_t)v * C + k];
        mean_position = T > 0 ? mean_position / T : 0.0;
        for (int v = 0; v < V; v++) s->stream[(size_t)v * C + k] = s->embedding[(size_t)v * C + k] + mean_position;
        for (int t = 0; t < T; t++) s->stream[(size_t)(V + t) * C + k] = s->positions[(size_t)t * C + k] + mean_char / V;
    }
}

int circuits_compute(Circuits *out, const GPT *model, uint64_t seed, char err[ERR_LEN]) {
    const GPTConfig *c = &model->config;
    const int L = c->n_layer, H = c->n_head, V = c->vocab_size, C = c->n_embd;
    const int T = c->position == POSITION_LEARNED ? c->block_size : 0;
    size_t floats, doubles, scratch_doubles;
    circuits_sizes(c, &floats, &doubles, &scratch_doubles);
    *out = (Circuits){.n_layer = L, .n_head = H, .vocab_size = V, .positions = T, .baseline_seed = seed};
    out->memory = malloc(doubles * sizeof(double) + floats * sizeof(float));
    CircuitScratch s;
    s.heads = malloc((size_t)L * H * sizeof(HeadMatrices));
    double *scratch = malloc(scratch_doubles * sizeof(double));
    int rc = -1;
    snprintf(err, ERR_LEN, "out of memory for the circuits");
    if (out->memory && s.heads && scratch) {
        circuits_layout(out, c, T);
        scratch_layout(&s, scratch, c, T);
        const ParameterTensors *p = &model->params;
        for (size_t i = 0; i < (size_t)V * C; i++) {
            s.embedding[i] = p->wte[i];
            s.unembedding[i] = (double)p->wte[i] * p->lnfw[i % C];
        }
        for (size_t i = 0; i < (size_t)T * C; i++) s.positions[i] = p->wpe[i];
        extended_embeddings(&s, V, T, C);
        rc = 0;
        for (int l = 0; l < L && rc == 0; l++) {
            BlockParams bp = gpt_layer_params(p, c, l);
            layernorm_double(s.normed, s.stream, bp.ln1w, bp.ln1b, V + T, C);
            for (int h = 0; h < H && rc == 0; h++) {
                head_matrices(&s.heads[l * H + h], model, l, h);
                rc = head_circuits(out, &s, c, l, h);
            }
            mlp_add(s.stream, &bp, V + T, C, s.normed, s.hidden);
        }
        if (rc != 0) snprintf(err, ERR_LEN, "the eigenvalues of an OV circuit could not be computed (out of memory, or "
                              "the QR steps did not converge)");
        else compositions(out, &s, c);
        if (rc == 0 && composition_baseline(C, c->head_size, COMPOSITION_BASELINE_SAMPLES, seed,
                                            &out->composition_baseline) != 0) {
            snprintf(err, ERR_LEN, "out of memory for the circuits");
            rc = -1;
        }
    }
    free(s.heads);
    free(scratch);
    if (rc != 0) circuits_free(out);
    return rc;
}

void circuits_free(Circuits *c) {
    free(c->memory);
    c->memory = NULL;
}
