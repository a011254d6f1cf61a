// The checks of causal self-attention, forward and backward (model/layers.h), as the model
// calls them in training: pos0 0, the keys and values in qkv itself, no dropout.
#include <math.h>
#include <string.h>

#include "../../model/layers.h"
#include "../reference.h"
#include "check.h"

#define ATTENTION_TOL 2e-5
#define FD_STEP 1e-5

static const char *const SEQUENCE_POSITION_COLUMN[] = {"sequence", "position", "column"};
static const char *const ATT_NAMES[] = {"sequence", "head", "query", "key"};

// The kernels' workspace the project's attention needs (the learner's may ignore it).
static Kernels *workspace(int t, int hs) {
    char err[ERR_LEN];
    KernelsShape shape = {0, t, hs, 0, 1, 0};
    Kernels *k = kernels_new(PRECISION_FP32, NULL, 0, &shape, err);
    if (!k) check_fail("the checker could not make the kernels' workspace: %s", err);
    return k;
}

// A copy of qkv (B*t rows of 3A) with its parts changed: the queries scaled by q_scale, and
// part `to` (0 queries, 1 keys, 2 values) replaced by part `from`, or those two swapped
static double *qkv_changed(const double *qkv, int rows, int A, double q_scale, int from, int to, int swap) {
    double *c = doubles((size_t)rows * 3 * A);
    memcpy(c, qkv, (size_t)rows * 3 * A * sizeof(double));
    for (int r = 0; r < rows; r++) {
        double *row = c + (size_t)r * 3 * A;
        for (int a = 0; a < A; a++) {
            row[a] *= q_scale;
            if (from == to) continue;
            double x = row[to * A + a];
            row[to * A + a] = row[from * A + a];
            if (swap) row[from * A + a] = x;
        }
    }
    return c;
}

// Attention where the softmax runs over every key of the sequence, later ones too; with
// mask_after, the weights of later keys are then set to 0 (and the others not renormalised).
static void softmax_over_all_keys(double *out, double *att, const double *qkv, int B, int t, int H, int hs,
                                  int mask_after) {
    const int A = H * hs;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < t; i++) {
                const double *q = qkv + (size_t)(b * t + i) * 3 * A + h * hs;
                double *w = att + (((size_t)b * H + h) * t + i) * t, max = -INFINITY, sum = 0.0;
                for (int j = 0; j < t; j++) {
                    const double *key = qkv + (size_t)(b * t + j) * 3 * A + A + h * hs;
                    w[j] = 0.0;
                    for (int d = 0; d < hs; d++) w[j] += q[d] * key[d] / sqrt((double)hs);
                    max = fmax(max, w[j]);
                }
                for (int j = 0; j < t; j++) sum += w[j] = exp(w[j] - max);
                for (int j = 0; j < t; j++) w[j] = mask_after && j > i ? 0.0 : w[j] / sum;
                double *o = out + (size_t)(b * t + i) * A + h * hs;
                for (int d = 0; d < hs; d++) o[d] = 0.0;
                for (int j = 0; j < t; j++)
                    for (int d = 0; d < hs; d++) o[d] += w[j] * qkv[(size_t)(b * t + j) * 3 * A + 2 * A + h * hs + d];
            }
}

// ---------------------------------------------------------------------------------------
// forward

static int attention_case(const char *title, int B, int t, int H, int hs, unsigned seed) {
    buffers_reset(seed);
    check_title("%s", title);
    const int A = H * hs, rows = B * t;
    const size_t nqkv = (size_t)rows * 3 * A, nout = (size_t)rows * A, natt = (size_t)B * H * t * t;
    float *qkv = buffer("qkv", nqkv, NULL, -1.5f, 1.5f, 1);
    float *out = buffer("out", nout, NULL, -1.0f, 1.0f, 0);
    float *att = buffer("att", natt, NULL, -1.0f, 1.0f, 0);
    float *out_before = snapshot(out, nout), *att_before = snapshot(att, natt);
    Kernels *k = workspace(t, hs);
    if (!k) return 0;
    KVRows kv = {qkv + A, qkv + 2 * A, 3 * A, (long)t * 3 * A, 0};  // the keys and values of qkv's own rows
    attention_forward(k, out, att, qkv, &kv, B, 0, t, H, hs, NULL);
    kernels_free(k);
    if (!buffers_intact()) return 0;
    double *x = doubles_of(qkv, nqkv), *want = doubles(nout), *want_att = doubles(natt);
    ref_attention_forward(want, want_att, x, B, t, H, hs, NULL);
    Check c;
    check_init(&c, ATTENTION_TOL);
    check_output(&c, "out", out, want, out_before, 0, 3, (int[]){B, t, A}, SEQUENCE_POSITION_COLUMN);
    check_output(&c, "att", att, want_att, att_before, 0, 4, (int[]){B, H, t, t}, ATT_NAMES);
    static const struct {
        double q_scale_of_sqrt_hs;  // the queries scaled by sqrt(hs) to this power
        int from, to, swap;
        const char *what;
    } changed[] = {
        {1.0, 0, 0, 0,
         "the scores not divided by sqrt(hs): att = softmax(q . k / sqrt(hs)); without it the "
         "softmax is sharper the wider the heads"},
        {-1.0, 0, 0, 0, "the scores divided by hs: they are divided by sqrt(hs)"},
        {0.0, 0, 1, 1,
         "query and key swapped, k_i . q_j: the weight of key j for query i is q_i . k_j, query i "
         "from row i, key j from row j"},
        {0.0, 1, 2, 0, "the values read from the keys' columns: v_j is at + 2A in row j, the keys at + A"},
        {0.0, 0, 1, 0, "the keys read from the queries' columns: k_j is at + A in row j"},
    };
    for (size_t m = 0; m < sizeof(changed) / sizeof(changed[0]); m++) {
        double *v_out = doubles(nout), *v_att = doubles(natt);
        double *v_qkv = qkv_changed(x, rows, A, pow(sqrt((double)hs), changed[m].q_scale_of_sqrt_hs), changed[m].from,
                                    changed[m].to, changed[m].swap);
        ref_attention_forward(v_out, v_att, v_qkv, B, t, H, hs, NULL);
        check_mistake(&c, changed[m].what, v_out, v_att, NULL, NULL);
    }
    double *all_out = doubles(nout), *all_att = doubles(natt), *after_out = doubles(nout), *after_att = doubles(natt);
    softmax_over_all_keys(all_out, all_att, x, B, t, H, hs, 0);
    softmax_over_all_keys(after_out, after_att, x, B, t, H, hs, 1);
    if (t > 1) {
        check_mistake(&c,
                      "attention without the causal mask: query i sees only keys j <= i (its own position and "
                      "earlier), never a later one",
                      all_out, all_att, NULL, NULL);
        check_mistake(&c,
                      "the mask applied after the softmax: later keys' weights set to 0 once the softmax has "
                      "shared 1 among all the keys, so a row's weights no longer sum to 1; leave the later "
                      "keys out of the softmax itself",
                      after_out, after_att, NULL, NULL);
    }
    // att right on and below the diagonal, but not 0 above it
    double *upper_left = doubles_of(att, natt);
    for (size_t r = 0; r < (size_t)B * H; r++)
        for (int i = 0; i < t; i++)
            for (int j = 0; j <= i; j++) upper_left[(r * t + i) * t + j] = want_att[(r * t + i) * t + j];
    check_mistake(&c,
                  "att right on and below the diagonal, but not 0 above it: write att[i][j] = 0 for every later "
                  "key j > i (att is read afterwards: the timeline's pictures, the backward)",
                  NULL, upper_left, NULL, NULL);
    check_factor(&c, sqrt((double)hs), "the scores' 1/sqrt(hs)");
    c.nonfinite_hint = "exp of a large score overflows a float: subtract the row's largest score before exp";
    return check_compare(&c);
}

int check_attention(void) {
    return attention_case("2 sequences of 5 positions, 2 heads of 4", 2, 5, 2, 4, 101) &&
           attention_case("one position, one head of 3 (a query that sees only itself)", 1, 1, 1, 3, 102) &&
           attention_case("one sequence of 7 positions, 3 heads of 2", 1, 7, 3, 2, 103) &&
           attention_case("2 sequences of 64 positions, 2 heads of 32: the training run's shapes", 2, 64, 2, 32, 104);
}

// ---------------------------------------------------------------------------------------
// backward

// The backward with the softmax's backward taken as dS = W * dW, without the subtraction of
// each row's sum of W * dW: added to dqkv.
static void backward_without_row_sum(double *dqkv, const double *dout, const double *qkv, const double *att, int B,
                                     int t, int H, int hs) {
    const int A = H * hs;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < t; i++) {
                const double *g = dout + (size_t)(b * t + i) * A + h * hs;
                const double *q = qkv + (size_t)(b * t + i) * 3 * A + h * hs;
                for (int j = 0; j <= i; j++) {
                    const double *row_j = qkv + (size_t)(b * t + j) * 3 * A + h * hs;
                    double *dq = dqkv + (size_t)(b * t + i) * 3 * A + h * hs;
                    double *dj = dqkv + (size_t)(b * t + j) * 3 * A + h * hs;
                    double w = att[(((size_t)b * H + h) * t + i) * t + j], dw = 0.0;
                    for (int d = 0; d < hs; d++) dw += g[d] * row_j[2 * A + d];
                    for (int d = 0; d < hs; d++) {
                        dq[d] += w * dw * row_j[A + d] / sqrt((double)hs);
                        dj[A + d] += w * dw * q[d] / sqrt((double)hs);
                        dj[2 * A + d] += w * g[d];
                    }
                }
            }
}

typedef struct {
    double *qkv, *out;
    const double *dout;
    int B, t, H, hs;
} AttentionObjective;

static double attention_objective(void *p) {
    AttentionObjective *a = p;
    ref_attention_forward(a->out, NULL, a->qkv, a->B, a->t, a->H, a->hs, NULL);
    double sum = 0.0;
    for (size_t i = 0; i < (size_t)a->B * a->t * a->H * a->hs; i++) sum += a->dout[i] * a->out[i];
    return sum;
}

// Part `part` (0 queries, 1 keys, 2 values) of rows of 3A, as floats or doubles of its own.
static float *part_of(const float *x, int rows, int A, int part) {
    float *p = floats((size_t)rows * A);
    for (int r = 0; r < rows; r++)
        memcpy(p + (size_t)r * A, x + (size_t)r * 3 * A + part * A, (size_t)A * sizeof(float));
    return p;
}

static double *part_of_d(const double *x, int rows, int A, int part) {
    double *p = doubles((size_t)rows * A);
    for (int r = 0; r < rows; r++)
        memcpy(p + (size_t)r * A, x + (size_t)r * 3 * A + part * A, (size_t)A * sizeof(double));
    return p;
}

static int attention_backward_case(const char *title, int B, int t, int H, int hs, int finite, unsigned seed) {
    buffers_reset(seed);
    check_title("%s", title);
    const int A = H * hs, rows = B * t;
    const size_t nqkv = (size_t)rows * 3 * A, nout = (size_t)rows * A, natt = (size_t)B * H * t * t;
    float *qkv = buffer("qkv", nqkv, NULL, -1.5f, 1.5f, 1);
    float *dout = buffer("dout", nout, NULL, -1.0f, 1.0f, 1);
    double *x = doubles_of(qkv, nqkv), *g = doubles_of(dout, nout), *out_d = doubles(nout), *att_d = doubles(natt);
    ref_attention_forward(out_d, att_d, x, B, t, H, hs, NULL);
    float *weights = floats(natt);
    for (size_t i = 0; i < natt; i++) weights[i] = (float)att_d[i];
    float *att = buffer("att", natt, weights, 0.0f, 0.0f, 1);
    float *dqkv = buffer("dqkv", nqkv, NULL, -1.0f, 1.0f, 0);
    float *before = snapshot(dqkv, nqkv);
    Kernels *k = workspace(t, hs);
    if (!k) return 0;
    attention_backward(k, dqkv, dout, qkv, att, B, t, H, hs, NULL);
    kernels_free(k);
    if (!buffers_intact()) return 0;
    double *want = doubles_of(before, nqkv), *grad = doubles(nqkv);
    if (finite) {
        AttentionObjective objective = {x, doubles(nout), g, B, t, H, hs};
        ref_finite_diff(attention_objective, &objective, x, nqkv, FD_STEP, grad);
    } else {
        ref_attention_backward(grad, g, x, B, t, H, hs, NULL);
    }
    double *unscaled = doubles_of(before, nqkv), *no_row_sum = doubles_of(before, nqkv);
    for (size_t i = 0; i < nqkv; i++) {
        want[i] += grad[i];
        unscaled[i] += grad[i] * ((i / A) % 3 == 2 ? 1.0 : sqrt((double)hs));
    }
    backward_without_row_sum(no_row_sum, g, x, doubles_of(att, natt), B, t, H, hs);
    Check c;
    check_init(&c, ATTENTION_TOL * 5);
    const char *names[3] = {"dq", "dk", "dv"};
    const double *unscaled_parts[3], *no_row_sum_parts[3];
    for (int part = 0; part < 3; part++) {
        check_output(&c, names[part], part_of(dqkv, rows, A, part), part_of_d(want, rows, A, part),
                     part_of(before, rows, A, part), 1, 3, (int[]){B, t, A}, SEQUENCE_POSITION_COLUMN);
        unscaled_parts[part] = part_of_d(unscaled, rows, A, part);
        no_row_sum_parts[part] = part_of_d(no_row_sum, rows, A, part);
    }
    if (hs > 1)
        check_mistake(&c,
                      "dq and dk without the 1/sqrt(hs): the scores are q . k / sqrt(hs), so their gradient "
                      "carries it into dq and dk (dv is right)",
                      unscaled_parts[0], unscaled_parts[1], NULL, NULL);
    check_mistake(&c,
                  "the softmax's backward as dS = W * dW: each row's sum of W * dW must be taken off first, "
                  "dS[i][j] = W[i][j] (dW[i][j] - sum over l of W[i][l] dW[i][l]), because raising one weight "
                  "lowers the others",
                  no_row_sum_parts[0], no_row_sum_parts[1], NULL, NULL);
    check_factor(&c, sqrt((double)hs), "the scores' 1/sqrt(hs) left out");
    check_factor(&c, 1.0 / sqrt((double)hs), "the scores' 1/sqrt(hs) taken twice");
    c.hint =
        "(dq, dk and dv are the three parts of each row of dqkv, at columns 0, A and 2A.) dv comes from the "
        "weights alone; dq and dk pass through the softmax's backward and the 1/sqrt(hs): which of them is "
        "right says where to look.";
    return check_compare(&c);
}

int check_attention_backward(void) {
    return attention_backward_case("2 sequences of 5 positions, 2 heads of 4", 2, 5, 2, 4, 0, 111) &&
           attention_backward_case("against central differences of the forward, 4 positions, 2 heads of 3", 1, 4, 2, 3,
                                   1, 112) &&
           attention_backward_case("one position, one head of 3", 1, 1, 1, 3, 0, 113) &&
           attention_backward_case("2 sequences of 64 positions, 2 heads of 32: the training run's shapes", 2, 64, 2,
                                   32, 0, 114);
}
