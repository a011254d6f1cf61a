// Tests of the layers: (a) the double reference's backward against central finite
// differences of its forward, for every op; (b) every float kernel against the reference,
// forward and backward (which must accumulate, or for the linear layer's input and GELU
// write, as kernels.h says), on awkward shapes, and AdamW's update.
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/rng.h"
#include "../kernels/kernels.h"
#include "../model/adamw.h"
#include "../model/layers.h"
#include "reference.h"
#include "test.h"

#define FD_STEP 1e-5     // central differences in double: error ~ h^2 + 1e-16/h
#define FD_TOL 1e-6      // reference backward vs finite differences
#define KERNEL_TOL 1e-4  // float kernel vs double reference

// ---------------------------------------------------------------------------------------
// helpers

static void fill_uniform_d(double *x, size_t n, Rng *rng, double lo, double hi) {
    for (size_t i = 0; i < n; i++) x[i] = lo + (hi - lo) * rng_uniform(rng);
}

static double *rand_doubles(size_t n, Rng *rng, double lo, double hi) {
    double *x = malloc((n ? n : 1) * sizeof(double));
    fill_uniform_d(x, n, rng, lo, hi);
    return x;
}

static float *rand_floats(size_t n, Rng *rng, float lo, float hi) {
    float *x = malloc((n ? n : 1) * sizeof(float));
    for (size_t i = 0; i < n; i++) x[i] = lo + (hi - lo) * rng_uniform(rng);
    return x;
}

static double *doubles_of(const float *x, size_t n) {
    double *d = malloc((n ? n : 1) * sizeof(double));
    ref_to_double(d, x, n);
    return d;
}

static float *copy_floats(const float *x, size_t n) {
    float *c = malloc((n ? n : 1) * sizeof(float));
    memcpy(c, x, n * sizeof(float));
    return c;
}

static double dot(const double *a, const double *b, size_t n) {
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

// relative error of the analytic gradient against central differences of f over x
static double fd_error(RefObjective f, void *ctx, double *x, const double *grad, size_t n) {
    double *fd = malloc((n ? n : 1) * sizeof(double));
    ref_finite_diff(f, ctx, x, n, FD_STEP, fd);
    double err = rel_error_dd(grad, fd, n);
    free(fd);
    return err;
}

static double max2(double a, double b) { return a > b ? a : b; }

static void report(const char *what, double err) { printf("    %-56s max rel err %.2e\n", what, err); }

// ---------------------------------------------------------------------------------------
// (a) reference backward vs finite differences, objective sum_i w_i out_i with random w

typedef struct {
    int B, t, C;
    const int *tokens;
    double *wte, *wpe, *w, *out;
} EncoderCase;

static double encoder_objective(void *p) {
    EncoderCase *c = p;
    ref_encoder_forward(c->out, c->tokens, c->wte, c->wpe, c->B, c->t, c->C);
    return dot(c->w, c->out, (size_t)c->B * c->t * c->C);
}

TEST(ops_ref_encoder_grad) {
    Rng rng;
    rng_seed(&rng, 1);
    int B = 2, t = 3, C = 4, V = 5, T = 4;
    int tokens[6] = {1, 4, 1, 0, 1, 3};  // repeated tokens accumulate
    size_t n = (size_t)B * t * C;
    EncoderCase c = {B, t, C, tokens, rand_doubles((size_t)V * C, &rng, -1, 1),
                     rand_doubles((size_t)T * C, &rng, -1, 1), rand_doubles(n, &rng, -1, 1),
                     calloc(n, sizeof(double))};
    double *dwte = calloc((size_t)V * C, sizeof(double)), *dwpe = calloc((size_t)T * C, sizeof(double));
    ref_encoder_backward(dwte, dwpe, c.w, tokens, B, t, C);
    double e1 = fd_error(encoder_objective, &c, c.wte, dwte, (size_t)V * C);
    double e2 = fd_error(encoder_objective, &c, c.wpe, dwpe, (size_t)T * C);
    report("encoder dwte, dwpe vs finite diff", max2(e1, e2));
    CHECK(e1 <= FD_TOL && e2 <= FD_TOL, "encoder: dwte err %.3g, dwpe err %.3g", e1, e2);
    free(c.wte); free(c.wpe); free(c.w); free(c.out); free(dwte); free(dwpe);
}

typedef struct {
    int N, C;
    double *inp, *weight, *bias, *w, *out;
} LayernormCase;

static double layernorm_objective(void *p) {
    LayernormCase *c = p;
    ref_layernorm_forward(c->out, NULL, NULL, c->inp, c->weight, c->bias, c->N, c->C);
    return dot(c->w, c->out, (size_t)c->N * c->C);
}

TEST(ops_ref_layernorm_grad) {
    Rng rng;
    rng_seed(&rng, 2);
    int N = 3, C = 5;
    size_t n = (size_t)N * C;
    LayernormCase c = {N, C, rand_doubles(n, &rng, -1, 2), rand_doubles(C, &rng, 0.5, 1.5),
                       rand_doubles(C, &rng, -1, 1), rand_doubles(n, &rng, -1, 1),
                       calloc(n, sizeof(double))};
    double *dinp = calloc(n, sizeof(double)), *dw = calloc(C, sizeof(double));
    double *db = calloc(C, sizeof(double));
    ref_layernorm_backward(dinp, dw, db, c.w, c.inp, c.weight, N, C);
    double e1 = fd_error(layernorm_objective, &c, c.inp, dinp, n);
    double e2 = fd_error(layernorm_objective, &c, c.weight, dw, C);
    double e3 = fd_error(layernorm_objective, &c, c.bias, db, C);
    report("layernorm dinp, dweight, dbias vs finite diff", max2(e1, max2(e2, e3)));
    CHECK(e1 <= FD_TOL && e2 <= FD_TOL && e3 <= FD_TOL,
          "layernorm: dinp %.3g dweight %.3g dbias %.3g", e1, e2, e3);
    free(c.inp); free(c.weight); free(c.bias); free(c.w); free(c.out);
    free(dinp); free(dw); free(db);
}

typedef struct {
    int N, C, OC;
    double *inp, *weight, *bias, *w, *out;
} MatmulCase;

static double matmul_objective(void *p) {
    MatmulCase *c = p;
    ref_matmul_forward(c->out, c->inp, c->weight, c->bias, c->N, c->C, c->OC);
    return dot(c->w, c->out, (size_t)c->N * c->OC);
}

TEST(ops_ref_matmul_grad) {
    Rng rng;
    rng_seed(&rng, 3);
    int N = 3, C = 4, OC = 5;
    MatmulCase c = {N, C, OC, rand_doubles((size_t)N * C, &rng, -1, 1),
                    rand_doubles((size_t)OC * C, &rng, -1, 1), rand_doubles(OC, &rng, -1, 1),
                    rand_doubles((size_t)N * OC, &rng, -1, 1),
                    calloc((size_t)N * OC, sizeof(double))};
    double *dinp = calloc((size_t)N * C, sizeof(double));
    double *dweight = calloc((size_t)OC * C, sizeof(double)), *dbias = calloc(OC, sizeof(double));
    ref_matmul_backward(dinp, dweight, dbias, c.w, c.inp, c.weight, N, C, OC);
    double e1 = fd_error(matmul_objective, &c, c.inp, dinp, (size_t)N * C);
    double e2 = fd_error(matmul_objective, &c, c.weight, dweight, (size_t)OC * C);
    double e3 = fd_error(matmul_objective, &c, c.bias, dbias, OC);
    report("matmul dinp, dweight, dbias vs finite diff", max2(e1, max2(e2, e3)));
    CHECK(e1 <= FD_TOL && e2 <= FD_TOL && e3 <= FD_TOL,
          "matmul: dinp %.3g dweight %.3g dbias %.3g", e1, e2, e3);
    free(c.inp); free(c.weight); free(c.bias); free(c.w); free(c.out);
    free(dinp); free(dweight); free(dbias);
}

typedef struct {
    int B, t, H, hs;
    Dropout drop;
    double *qkv, *w, *out;
} AttentionCase;

static double attention_objective(void *p) {
    AttentionCase *c = p;
    ref_attention_forward(c->out, NULL, c->qkv, c->B, c->t, c->H, c->hs, &c->drop);
    return dot(c->w, c->out, (size_t)c->B * c->t * c->H * c->hs);
}

TEST(ops_ref_attention_grad) {
    // {B, t, H, hs, dropout p}
    const struct { int B, t, H, hs; float p; } cases[] = {
        {2, 4, 2, 3, 0.0f}, {2, 5, 2, 3, 0.3f}, {1, 1, 2, 3, 0.0f}, {3, 3, 1, 5, 0.5f}};
    double worst = 0.0;
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        Rng rng;
        rng_seed(&rng, 40 + k);
        int B = cases[k].B, t = cases[k].t, H = cases[k].H, hs = cases[k].hs, A = H * hs;
        size_t nqkv = (size_t)B * t * 3 * A, nout = (size_t)B * t * A;
        AttentionCase c = {B, t, H, hs, {cases[k].p, 0x1234 + k, 1000 * k}, rand_doubles(nqkv, &rng, -1, 1),
                           rand_doubles(nout, &rng, -1, 1), calloc(nout, sizeof(double))};
        double *dqkv = calloc(nqkv, sizeof(double));
        ref_attention_backward(dqkv, c.w, c.qkv, B, t, H, hs, &c.drop);
        double e = fd_error(attention_objective, &c, c.qkv, dqkv, nqkv);
        worst = max2(worst, e);
        CHECK(e <= FD_TOL, "attention B=%d t=%d H=%d hs=%d p=%.1f: dqkv err %.3g", B, t, H, hs,
              cases[k].p, e);
        free(c.qkv); free(c.w); free(c.out); free(dqkv);
    }
    report("attention dqkv (incl. dropout 0.3, 0.5) vs finite diff", worst);
}

typedef struct {
    int B, t, H, hs;
    double *qkv, *w, *out;
} RopeCase;

static double rope_objective(void *p) {
    RopeCase *c = p;
    size_t n = (size_t)c->B * c->t * 3 * c->H * c->hs;
    memcpy(c->out, c->qkv, n * sizeof(double));
    ref_rope_forward(c->out, c->B, c->t, c->H, c->hs);
    return dot(c->w, c->out, n);
}

// RoPE's shapes: {B, t, H, hs}, hs even; t past 20 turns the fastest pair more than 3 times
static const struct { int B, t, H, hs; } rope_shapes[] = {{2, 5, 2, 4}, {1, 23, 3, 6}, {3, 1, 1, 2}, {2, 9, 2, 16}};

TEST(ops_ref_rope_grad) {
    double worst = 0.0;
    for (size_t k = 0; k < sizeof(rope_shapes) / sizeof(rope_shapes[0]); k++) {
        Rng rng;
        rng_seed(&rng, 60 + k);
        int B = rope_shapes[k].B, t = rope_shapes[k].t, H = rope_shapes[k].H, hs = rope_shapes[k].hs;
        size_t n = (size_t)B * t * 3 * H * hs;
        RopeCase c = {B, t, H, hs, rand_doubles(n, &rng, -1, 1), rand_doubles(n, &rng, -1, 1), calloc(n, sizeof(double))};
        double *dqkv = malloc(n * sizeof(double));
        memcpy(dqkv, c.w, n * sizeof(double));
        ref_rope_backward(dqkv, B, t, H, hs);  // in place: the gradient of out = rope(qkv)
        double e = fd_error(rope_objective, &c, c.qkv, dqkv, n);
        worst = max2(worst, e);
        CHECK(e <= FD_TOL, "rope B=%d t=%d H=%d hs=%d: dqkv err %.3g", B, t, H, hs, e);
        // a rotation keeps each pair's length, and position 0 does not turn
        double moved = 0.0;
        rope_objective(&c);
        for (int d = 0; d < 2 * H * hs; d++) moved = max2(moved, fabs(c.out[d] - c.qkv[d]));
        CHECK(moved == 0.0, "rope B=%d t=%d: position 0 moved by %.3g", B, t, moved);
        free(c.qkv); free(c.w); free(c.out); free(dqkv);
    }
    report("rope dqkv vs finite diff", worst);
}

typedef struct {
    size_t n;
    double *inp, *w, *out;
} GeluCase;

static double gelu_objective(void *p) {
    GeluCase *c = p;
    ref_gelu_forward(c->out, c->inp, c->n);
    return dot(c->w, c->out, c->n);
}

TEST(ops_ref_gelu_grad) {
    Rng rng;
    rng_seed(&rng, 5);
    size_t n = 64;
    GeluCase c = {n, rand_doubles(n, &rng, -5, 5), rand_doubles(n, &rng, -1, 1),
                  calloc(n, sizeof(double))};
    double *dinp = calloc(n, sizeof(double));
    ref_gelu_backward(dinp, c.inp, c.w, n);
    double e = fd_error(gelu_objective, &c, c.inp, dinp, n);
    report("gelu dinp vs finite diff", e);
    CHECK(e <= FD_TOL, "gelu: dinp err %.3g", e);
    // GELU of known points: 0 -> 0, large x -> x, large -x -> 0
    double pts[3] = {0.0, 10.0, -10.0}, out[3];
    ref_gelu_forward(out, pts, 3);
    CHECK(out[0] == 0.0 && fabs(out[1] - 10.0) < 1e-12 && fabs(out[2]) < 1e-12,
          "gelu(0, 10, -10) = %g %g %g", out[0], out[1], out[2]);
    free(c.inp); free(c.w); free(c.out); free(dinp);
}

typedef struct {
    size_t n;
    Dropout drop;
    double *a, *b, *w, *out;
} ElementwiseCase;

static double residual_objective(void *p) {
    ElementwiseCase *c = p;
    ref_residual_forward(c->out, c->a, c->b, c->n);
    return dot(c->w, c->out, c->n);
}

static double dropout_objective(void *p) {
    ElementwiseCase *c = p;
    ref_dropout_forward(c->out, c->a, c->n, &c->drop);
    return dot(c->w, c->out, c->n);
}

TEST(ops_ref_residual_dropout_grad) {
    Rng rng;
    rng_seed(&rng, 6);
    size_t n = 50;
    ElementwiseCase c = {n, {0.3f, 99, 12345}, rand_doubles(n, &rng, -1, 1), rand_doubles(n, &rng, -1, 1),
                         rand_doubles(n, &rng, -1, 1), calloc(n, sizeof(double))};
    double *da = calloc(n, sizeof(double)), *db = calloc(n, sizeof(double));
    ref_residual_backward(da, db, c.w, n);
    double e1 = fd_error(residual_objective, &c, c.a, da, n);
    double e2 = fd_error(residual_objective, &c, c.b, db, n);
    double *dinp = calloc(n, sizeof(double));
    ref_dropout_backward(dinp, c.w, n, &c.drop);
    double e3 = fd_error(dropout_objective, &c, c.a, dinp, n);
    report("residual, dropout(0.3) vs finite diff", max2(e1, max2(e2, e3)));
    CHECK(e1 <= FD_TOL && e2 <= FD_TOL, "residual: da %.3g db %.3g", e1, e2);
    CHECK(e3 <= FD_TOL, "dropout: dinp %.3g", e3);
    free(c.a); free(c.b); free(c.w); free(c.out); free(da); free(db); free(dinp);
}

typedef struct {
    int N, V;
    const int *targets;
    double *logits, *w, *losses, *probs;
} CrossentropyCase;

static double crossentropy_objective(void *p) {
    CrossentropyCase *c = p;
    ref_crossentropy_forward(c->losses, c->probs, c->logits, c->targets, c->N, c->V);
    return dot(c->w, c->losses, c->N);
}

TEST(ops_ref_crossentropy_grad) {
    Rng rng;
    rng_seed(&rng, 7);
    int N = 4, V = 6;
    int targets[4] = {0, 5, 2, 2};
    CrossentropyCase c = {N, V, targets, rand_doubles((size_t)N * V, &rng, -3, 3),
                          rand_doubles(N, &rng, -1, 1), calloc(N, sizeof(double)),
                          calloc((size_t)N * V, sizeof(double))};
    crossentropy_objective(&c);
    double *dlogits = calloc((size_t)N * V, sizeof(double));
    ref_crossentropy_backward(dlogits, c.probs, targets, c.w, N, V);
    double e = fd_error(crossentropy_objective, &c, c.logits, dlogits, (size_t)N * V);
    report("crossentropy dlogits vs finite diff", e);
    CHECK(e <= FD_TOL, "crossentropy: dlogits err %.3g", e);
    free(c.logits); free(c.w); free(c.losses); free(c.probs); free(dlogits);
}

// ---------------------------------------------------------------------------------------
// (b) float kernels vs the reference. Gradient buffers start from random values in both, so
// a kernel that overwrites instead of accumulating fails.

TEST(ops_encoder_kernel) {
    const struct { int B, t, C, V, T; } cases[] = {{3, 7, 8, 11, 9}, {1, 1, 8, 3, 4}, {2, 16, 40, 5, 16}};
    double worst_f = 0.0, worst_b = 0.0;
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        Rng rng;
        rng_seed(&rng, 100 + k);
        int B = cases[k].B, t = cases[k].t, C = cases[k].C, V = cases[k].V, T = cases[k].T;
        size_t n = (size_t)B * t * C, nte = (size_t)V * C, npe = (size_t)T * C;
        int *tokens = malloc((size_t)B * t * sizeof(int));
        for (int i = 0; i < B * t; i++) tokens[i] = (int)rng_below(&rng, V);
        float *wte = rand_floats(nte, &rng, -1, 1), *wpe = rand_floats(npe, &rng, -1, 1);
        float *dout = rand_floats(n, &rng, -1, 1), *out = malloc(n * sizeof(float));
        float *dwte = rand_floats(nte, &rng, -1, 1), *dwpe = rand_floats(npe, &rng, -1, 1);
        double *wte_d = doubles_of(wte, nte), *wpe_d = doubles_of(wpe, npe);
        double *dout_d = doubles_of(dout, n), *out_d = malloc(n * sizeof(double));
        double *dwte_d = doubles_of(dwte, nte), *dwpe_d = doubles_of(dwpe, npe);

        encoder_forward(out, tokens, wte, wpe, B, t, C);
        ref_encoder_forward(out_d, tokens, wte_d, wpe_d, B, t, C);
        encoder_backward(dwte, dwpe, dout, tokens, B, t, C);
        ref_encoder_backward(dwte_d, dwpe_d, dout_d, tokens, B, t, C);
        double ef = rel_error_fd(out, out_d, n);
        double eb = max2(rel_error_fd(dwte, dwte_d, nte), rel_error_fd(dwpe, dwpe_d, npe));
        worst_f = max2(worst_f, ef);
        worst_b = max2(worst_b, eb);
        CHECK(ef <= KERNEL_TOL && eb <= KERNEL_TOL, "encoder B=%d t=%d C=%d: fwd %.3g bwd %.3g",
              B, t, C, ef, eb);
        free(tokens); free(wte); free(wpe); free(dout); free(out); free(dwte); free(dwpe);
        free(wte_d); free(wpe_d); free(dout_d); free(out_d); free(dwte_d); free(dwpe_d);
    }
    report("encoder kernel forward", worst_f);
    report("encoder kernel backward (accumulating)", worst_b);
}

// LayerNorm on every backend this CPU runs and the plain loops (kernels.h)
TEST(ops_layernorm_kernel) {
    const struct { int N, C; } cases[] = {{21, 8}, {1, 8}, {37, 67}, {5, 256}, {16, 48}, {40, 128}, {3, 5}};
    double worst_f = 0.0, worst_b = 0.0;
    EACH_BACKEND(bk, backends, num_backends)
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        Rng rng;
        rng_seed(&rng, 200 + k);
        int N = cases[k].N, C = cases[k].C;
        size_t n = (size_t)N * C;
        float *inp = rand_floats(n, &rng, -1.5f, 2.5f);  // rows with a non-zero mean
        float *weight = rand_floats(C, &rng, 0.5f, 1.5f), *bias = rand_floats(C, &rng, -1, 1);
        float *out = malloc(n * sizeof(float)), *mean = malloc(N * sizeof(float));
        float *rstd = malloc(N * sizeof(float)), *dout = rand_floats(n, &rng, -1, 1);
        float *dinp = rand_floats(n, &rng, -1, 1), *dweight = rand_floats(C, &rng, -1, 1);
        float *dbias = rand_floats(C, &rng, -1, 1);
        double *inp_d = doubles_of(inp, n), *weight_d = doubles_of(weight, C);
        double *bias_d = doubles_of(bias, C), *dout_d = doubles_of(dout, n);
        double *out_d = malloc(n * sizeof(double)), *mean_d = malloc(N * sizeof(double));
        double *rstd_d = malloc(N * sizeof(double)), *dinp_d = doubles_of(dinp, n);
        double *dweight_d = doubles_of(dweight, C), *dbias_d = doubles_of(dbias, C);

        layernorm_forward(out, mean, rstd, inp, weight, bias, N, C);
        ref_layernorm_forward(out_d, mean_d, rstd_d, inp_d, weight_d, bias_d, N, C);
        layernorm_backward(dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C);
        ref_layernorm_backward(dinp_d, dweight_d, dbias_d, dout_d, inp_d, weight_d, N, C);
        double ef = max2(rel_error_fd(out, out_d, n),
                         max2(rel_error_fd(mean, mean_d, N), rel_error_fd(rstd, rstd_d, N)));
        double eb = max2(rel_error_fd(dinp, dinp_d, n),
                         max2(rel_error_fd(dweight, dweight_d, C), rel_error_fd(dbias, dbias_d, C)));
        worst_f = max2(worst_f, ef);
        worst_b = max2(worst_b, eb);
        CHECK(ef <= KERNEL_TOL && eb <= KERNEL_TOL, "%s layernorm N=%d C=%d: fwd %.3g bwd %.3g", backends[bk], N,
              C, ef, eb);
        free(inp); free(weight); free(bias); free(out); free(mean); free(rstd); free(dout);
        free(dinp); free(dweight); free(dbias); free(inp_d); free(weight_d); free(bias_d);
        free(dout_d); free(out_d); free(mean_d); free(rstd_d); free(dinp_d); free(dweight_d);
        free(dbias_d);
    }
    test_restore_backend();
    report("layernorm kernel forward (out, mean, rstd)", worst_f);
    report("layernorm kernel backward (accumulating)", worst_b);
}

TEST(ops_rope_kernel) {
    double worst_f = 0.0, worst_b = 0.0;
    for (size_t k = 0; k < sizeof(rope_shapes) / sizeof(rope_shapes[0]); k++) {
        Rng rng;
        rng_seed(&rng, 260 + k);
        int B = rope_shapes[k].B, t = rope_shapes[k].t, H = rope_shapes[k].H, hs = rope_shapes[k].hs;
        size_t n = (size_t)B * t * 3 * H * hs;
        float *qkv = rand_floats(n, &rng, -1, 1), *dqkv = rand_floats(n, &rng, -1, 1);
        float *cs = malloc((size_t)t * hs * sizeof(float));
        double *qkv_d = doubles_of(qkv, n), *dqkv_d = doubles_of(dqkv, n);
        rope_angles(cs, 0, t, hs);
        rope_forward(qkv, cs, B, t, H, hs);
        ref_rope_forward(qkv_d, B, t, H, hs);
        rope_backward(dqkv, cs, B, t, H, hs);
        ref_rope_backward(dqkv_d, B, t, H, hs);
        double ef = rel_error_fd(qkv, qkv_d, n), eb = rel_error_fd(dqkv, dqkv_d, n);
        worst_f = max2(worst_f, ef);
        worst_b = max2(worst_b, eb);
        CHECK(ef <= KERNEL_TOL && eb <= KERNEL_TOL, "rope B=%d t=%d H=%d hs=%d: fwd %.3g bwd %.3g", B, t, H, hs, ef, eb);
        // a far position (a rolling cache's) turns pair 0 by its own angle, 1000003 radians
        float far[16];
        rope_angles(far, 1000003, 1, hs);
        CHECK(fabs(far[0] - cos(1000003.0)) < 1e-6 && fabs(far[1] - sin(1000003.0)) < 1e-6,
              "rope_angles at position 1000003: pair 0 (%g, %g), want (%g, %g)", far[0], far[1], cos(1000003.0),
              sin(1000003.0));
        free(qkv); free(dqkv); free(cs); free(qkv_d); free(dqkv_d);
    }
    report("rope forward (q and k turned)", worst_f);
    report("rope backward (turned back)", worst_b);
}

// Shapes around the tiling of matmul.inc (register tiles up to 14 x 32, k blocks of 256,
// tasks of 16 x 8 tiles, a matrix-vector path for 1-2 rows), none a multiple of all of them.
static const struct { int N, C, OC; } matmul_shapes[] = {
    {1, 8, 3}, {2, 300, 270}, {21, 8, 24}, {21, 13, 45}, {7, 8, 8}, {14, 32, 32},
    {15, 33, 31}, {37, 64, 33}, {64, 64, 64}, {3, 100, 1}, {130, 300, 270}, {17, 512, 96},
    {517, 40, 50}, {250, 600, 97}};
#define NUM_MATMUL_SHAPES (sizeof(matmul_shapes) / sizeof(matmul_shapes[0]))

TEST(ops_matmul_kernel) {
    double worst_f = 0.0, worst_b = 0.0;
    for (size_t k = 0; k < NUM_MATMUL_SHAPES; k++) {
        int N = matmul_shapes[k].N, C = matmul_shapes[k].C, OC = matmul_shapes[k].OC;
        size_t ni = (size_t)N * C, nw = (size_t)OC * C, no = (size_t)N * OC;
        // variant 0: bias and dinp; 1: no bias, no dinp; 2: bias, dbias NULL
        for (int variant = 0; variant < 3; variant++) {
            Rng rng;
            rng_seed(&rng, 300 + 10 * k + variant);
            float *inp = rand_floats(ni, &rng, -1, 1), *weight = rand_floats(nw, &rng, -1, 1);
            float *bias = variant == 1 ? NULL : rand_floats(OC, &rng, -1, 1);
            float *out = malloc(no * sizeof(float)), *dout = rand_floats(no, &rng, -1, 1);
            float *dinp = variant == 1 ? NULL : rand_floats(ni, &rng, -1, 1);
            float *dweight = rand_floats(nw, &rng, -1, 1);
            float *dbias = variant == 0 ? rand_floats(OC, &rng, -1, 1) : NULL;
            double *inp_d = doubles_of(inp, ni), *weight_d = doubles_of(weight, nw);
            double *bias_d = bias ? doubles_of(bias, OC) : NULL;
            double *out_d = malloc(no * sizeof(double)), *dout_d = doubles_of(dout, no);
            double *dinp_d = dinp ? doubles_of(dinp, ni) : NULL;
            double *dweight_d = doubles_of(dweight, nw);
            double *dbias_d = dbias ? doubles_of(dbias, OC) : NULL;

            linear_forward(NULL, out, inp, weight, bias, N, C, OC);
            ref_matmul_forward(out_d, inp_d, weight_d, bias_d, N, C, OC);
            linear_backward(NULL, dinp, dweight, dbias, dout, inp, weight, N, C, OC);
            ref_matmul_backward(dinp_d, dweight_d, dbias_d, dout_d, inp_d, weight_d, N, C, OC);
            double ef = rel_error_fd(out, out_d, no);
            double eb = rel_error_fd(dweight, dweight_d, nw);
            if (dinp) eb = max2(eb, rel_error_fd(dinp, dinp_d, ni));
            if (dbias) eb = max2(eb, rel_error_fd(dbias, dbias_d, OC));
            worst_f = max2(worst_f, ef);
            worst_b = max2(worst_b, eb);
            CHECK(ef <= KERNEL_TOL && eb <= KERNEL_TOL,
                  "matmul N=%d C=%d OC=%d variant %d: fwd %.3g bwd %.3g", N, C, OC, variant, ef, eb);
            free(inp); free(weight); free(bias); free(out); free(dout); free(dinp); free(dweight);
            free(dbias); free(inp_d); free(weight_d); free(bias_d); free(out_d); free(dout_d);
            free(dinp_d); free(dweight_d); free(dbias_d);
        }
    }
    report("matmul kernel forward", worst_f);
    report("matmul kernel backward", worst_b);
}

// kernels.h promises results independent of the thread count: 1 and 2 threads, same bits
TEST(ops_matmul_thread_independent) {
    int saved = omp_get_max_threads();
    int same = 1;
    for (size_t k = 0; k < NUM_MATMUL_SHAPES; k++) {
        int N = matmul_shapes[k].N, C = matmul_shapes[k].C, OC = matmul_shapes[k].OC;
        size_t ni = (size_t)N * C, nw = (size_t)OC * C, no = (size_t)N * OC;
        Rng rng;
        rng_seed(&rng, 400 + k);
        float *inp = rand_floats(ni, &rng, -1, 1), *weight = rand_floats(nw, &rng, -1, 1);
        float *bias = rand_floats(OC, &rng, -1, 1), *dout = rand_floats(no, &rng, -1, 1);
        float *grads0 = rand_floats(ni + nw + OC, &rng, -1, 1);
        float *out[2], *g[2];
        for (int r = 0; r < 2; r++) {
            omp_set_num_threads(r + 1);
            out[r] = malloc(no * sizeof(float));
            g[r] = copy_floats(grads0, ni + nw + OC);
            linear_forward(NULL, out[r], inp, weight, bias, N, C, OC);
            linear_backward(NULL, g[r], g[r] + ni, g[r] + ni + nw, dout, inp, weight, N, C, OC);
        }
        int ok = memcmp(out[0], out[1], no * sizeof(float)) == 0 &&
                 memcmp(g[0], g[1], (ni + nw + OC) * sizeof(float)) == 0;
        CHECK(ok, "matmul N=%d C=%d OC=%d differs between 1 and 2 threads", N, C, OC);
        same &= ok;
        free(inp); free(weight); free(bias); free(dout); free(grads0);
        for (int r = 0; r < 2; r++) { free(out[r]); free(g[r]); }
    }
    omp_set_num_threads(saved);
    printf("    matmul 1 vs 2 threads: %s\n", same ? "bit-identical" : "DIFFERENT");
}

// attention on every backend this CPU runs (its head products are the kernels')
TEST(ops_attention_kernel) {
    // head_size != C/n_head is natural here: attention only sees H and hs
    const struct { int B, t, H, hs; float p; } cases[] = {
        {3, 7, 3, 5, 0.0f}, {2, 1, 2, 4, 0.0f}, {1, 16, 4, 8, 0.0f}, {3, 7, 2, 6, 0.3f},
        {2, 1, 3, 4, 0.3f}, {2, 33, 1, 17, 0.3f}, {4, 9, 2, 16, 0.3f}};
    double worst_f = 0.0, worst_b = 0.0;
    const char *backends[TEST_MAX_BACKENDS];
    int num_backends = test_backends(backends);
    for (int bk = 0; bk < num_backends; bk++)
    if (test_use_backend(backends[bk]))
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        Rng rng;
        rng_seed(&rng, 500 + k);
        int B = cases[k].B, t = cases[k].t, H = cases[k].H, hs = cases[k].hs, A = H * hs;
        Dropout drop = {cases[k].p, dropout_key(77, (int)k, DROPOUT_ATTN_WEIGHTS), 4096 * k};  // a part of a larger batch when k > 0
        size_t nqkv = (size_t)B * t * 3 * A, nout = (size_t)B * t * A, natt = (size_t)B * H * t * t;
        float *qkv = rand_floats(nqkv, &rng, -1.5f, 1.5f), *out = malloc(nout * sizeof(float));
        float *att = malloc(natt * sizeof(float)), *dout = rand_floats(nout, &rng, -1, 1);
        float *dqkv = rand_floats(nqkv, &rng, -1, 1);
        double *qkv_d = doubles_of(qkv, nqkv), *out_d = malloc(nout * sizeof(double));
        double *att_d = malloc(natt * sizeof(double)), *dout_d = doubles_of(dout, nout);
        double *dqkv_d = doubles_of(dqkv, nqkv);

        char err[ERR_LEN];
        KernelsShape shape = {0, t, hs, 0, 1, 0};
        Kernels *kern = kernels_new(PRECISION_FP32, NULL, 0, &shape, err);
        if (!CHECK(kern, "%s", err)) return;
        KVRows own = {qkv + A, qkv + 2 * A, 3 * A, (long)t * 3 * A, 0};  // the keys and values of qkv's rows
        attention_forward(kern, out, att, qkv, &own, B, 0, t, H, hs, &drop);
        ref_attention_forward(out_d, att_d, qkv_d, B, t, H, hs, &drop);
        attention_backward(kern, dqkv, dout, qkv, att, B, t, H, hs, &drop);
        kernels_free(kern);
        ref_attention_backward(dqkv_d, dout_d, qkv_d, B, t, H, hs, &drop);
        double ef = max2(rel_error_fd(out, out_d, nout), rel_error_fd(att, att_d, natt));
        double eb = rel_error_fd(dqkv, dqkv_d, nqkv);
        int zeros_above = 1;
        for (size_t r = 0; r < (size_t)B * H; r++)
            for (int i = 0; i < t; i++)
                for (int j = i + 1; j < t; j++) zeros_above &= att[(r * t + i) * t + j] == 0.0f;
        worst_f = max2(worst_f, ef);
        worst_b = max2(worst_b, eb);
        CHECK(ef <= KERNEL_TOL && eb <= KERNEL_TOL,
              "%s attention B=%d t=%d H=%d hs=%d p=%.1f: fwd %.3g bwd %.3g", backends[bk], B, t, H, hs,
              cases[k].p, ef, eb);
        CHECK(zeros_above, "attention B=%d t=%d: att not exactly 0 above the diagonal", B, t);
        free(qkv); free(out); free(att); free(dout); free(dqkv);
        free(qkv_d); free(out_d); free(att_d); free(dout_d); free(dqkv_d);
    }
    test_restore_backend();
    report("attention kernel forward (out, att)", worst_f);
    report("attention kernel backward (accumulating)", worst_b);
}

// attention's queries at positions further on, reading keys and values from a cache as
// cached generation does, on every backend: a sequence's positions run in parts (a first
// window, then a part of several positions, then one at a time), each pass adding its keys
// and values to a cache of its own layout, give each position the output and weights of the
// whole sequence run at once (the reference's)
TEST(ops_attention_cached_positions) {
    const int B = 2, T = 11, H = 2, hs = 5, A = H * hs, parts[] = {4, 3, 1, 1, 1, 1};
    double worst = 0.0;
    Rng rng;
    rng_seed(&rng, 901);
    size_t nqkv = (size_t)B * T * 3 * A;
    float *qkv = rand_floats(nqkv, &rng, -1.5f, 1.5f);
    double *qkv_d = doubles_of(qkv, nqkv), *out_d = malloc((size_t)B * T * A * sizeof(double));
    double *att_d = malloc((size_t)B * H * T * T * sizeof(double));
    ref_attention_forward(out_d, att_d, qkv_d, B, T, H, hs, NULL);
    float *cache = malloc((size_t)B * T * 2 * A * sizeof(float)), *rows = malloc(nqkv * sizeof(float));
    float *out = malloc((size_t)B * T * A * sizeof(float)), *att = malloc((size_t)B * H * T * T * sizeof(float));
    KVRows kv = {cache, cache + A, 2 * A, (long)T * 2 * A, 0};
    EACH_BACKEND(bk, names, count) {
        char err[ERR_LEN];
        KernelsShape shape = {0, T, hs, 0, 0, 0};
        Kernels *kern = kernels_new(PRECISION_FP32, NULL, 0, &shape, err);
        if (!CHECK(kern, "%s", err)) break;
        memset(cache, 0xff, (size_t)B * T * 2 * A * sizeof(float));  // NaN: what a pass does not write
        double e = 0.0;
        for (int p = 0, pos0 = 0; p < (int)(sizeof(parts) / sizeof(parts[0])); pos0 += parts[p++]) {
            int t = parts[p], n = pos0 + t;
            for (int b = 0; b < B; b++)  // the part's rows of each sequence, one after the other
                memcpy(rows + (size_t)b * t * 3 * A, qkv + ((size_t)b * T + pos0) * 3 * A, (size_t)t * 3 * A * 4);
            kv.store = pos0;  // the part's keys and values after the ones before it
            attention_forward(kern, out, att, rows, &kv, B, pos0, t, H, hs, NULL);
            for (int b = 0; b < B; b++)
                for (int i = 0; i < t; i++) {
                    const float *o = out + ((size_t)b * t + i) * A;
                    const double *want = out_d + ((size_t)b * T + pos0 + i) * A;
                    for (int a = 0; a < A; a++) e = max2(e, fabs(o[a] - want[a]));
                    for (int h = 0; h < H; h++)
                        for (int j = 0; j < n; j++)  // weights past the query's position: exactly 0
                            e = max2(e, fabs(att[(((size_t)b * H + h) * t + i) * n + j] -
                                             att_d[(((size_t)b * H + h) * T + pos0 + i) * T + j]));
                }
        }
        kernels_free(kern);
        worst = max2(worst, e);
        CHECK(e <= KERNEL_TOL, "%s: attention in parts through a cache differs from the whole sequence by %.3g",
              names[bk], e);
    }
    test_restore_backend();
    report("attention in parts through a cache (abs)", worst);
    free(qkv), free(qkv_d), free(out_d), free(att_d), free(cache), free(rows), free(out), free(att);
}

TEST(ops_gelu_kernel) {
    Rng rng;
    rng_seed(&rng, 600);
    size_t n = 1001;
    float *inp = rand_floats(n, &rng, -6, 6);
    float specials[] = {0.0f, -0.0f, 1e-6f, -1e-6f, 20.0f, -20.0f, 50.0f, -50.0f, 3.0f, -3.0f};
    memcpy(inp, specials, sizeof(specials));
    float *out = malloc(n * sizeof(float)), *dout = rand_floats(n, &rng, -1, 1);
    float *dinp = rand_floats(n, &rng, -1, 1);
    double *inp_d = doubles_of(inp, n), *out_d = malloc(n * sizeof(double));
    double *dout_d = doubles_of(dout, n), *dinp_d = doubles_of(dinp, n);
    gelu_forward(out, inp, (int)n);
    ref_gelu_forward(out_d, inp_d, n);
    gelu_backward(dinp, inp, dout, (int)n);
    ref_gelu_backward(dinp_d, inp_d, dout_d, n);
    double ef = rel_error_fd(out, out_d, n), eb = rel_error_fd(dinp, dinp_d, n);
    report("gelu kernel forward", ef);
    report("gelu kernel backward (written over dinp)", eb);
    CHECK(ef <= KERNEL_TOL && eb <= KERNEL_TOL, "gelu: fwd %.3g bwd %.3g", ef, eb);
    free(inp); free(out); free(dout); free(dinp); free(inp_d); free(out_d); free(dout_d); free(dinp_d);
}

TEST(ops_residual_kernel) {
    Rng rng;
    rng_seed(&rng, 700);
    size_t n = 1003;
    float *a = rand_floats(n, &rng, -1, 1), *b = rand_floats(n, &rng, -1, 1);
    float *out = malloc(n * sizeof(float));
    residual_forward(out, a, b, (int)n);
    int exact = 1;
    for (size_t i = 0; i < n; i++) exact &= out[i] == a[i] + b[i];
    CHECK(exact, "residual_forward is not the float sum a + b");
    free(a); free(b); free(out);
}

TEST(ops_dropout_kernel) {
    const float ps[] = {0.0f, 0.3f, 0.9f};
    double worst = 0.0;
    for (size_t k = 0; k < sizeof(ps) / sizeof(ps[0]); k++) {
        Rng rng;
        rng_seed(&rng, 800 + k);
        size_t n = 1001;
        Dropout drop = {ps[k], dropout_key(5, 1, DROPOUT_MLP_RESIDUAL), 7};
        float *inp = rand_floats(n, &rng, -1, 1), *out = malloc(n * sizeof(float));
        float *dout = rand_floats(n, &rng, -1, 1), *dinp = rand_floats(n, &rng, -1, 1);
        double *inp_d = doubles_of(inp, n), *out_d = malloc(n * sizeof(double));
        double *dout_d = doubles_of(dout, n), *dinp_d = doubles_of(dinp, n);
        dropout_forward(out, inp, (int)n, &drop);
        ref_dropout_forward(out_d, inp_d, n, &drop);
        dropout_backward(dinp, dout, (int)n, &drop);
        ref_dropout_backward(dinp_d, dout_d, n, &drop);
        double e = max2(rel_error_fd(out, out_d, n), rel_error_fd(dinp, dinp_d, n));
        worst = max2(worst, e);
        CHECK(e <= KERNEL_TOL, "dropout p=%.1f: err %.3g", ps[k], e);
        if (ps[k] == 0.0f) CHECK(memcmp(out, inp, n * sizeof(float)) == 0, "dropout p=0 is not the identity");
        free(inp); free(out); free(dout); free(dinp); free(inp_d); free(out_d); free(dout_d); free(dinp_d);
    }
    report("dropout kernel forward and backward", worst);
}

TEST(ops_crossentropy_kernel) {
    const struct { int N, V; } cases[] = {{21, 11}, {1, 3}, {5, 65}, {7, 2}};
    double worst_f = 0.0, worst_b = 0.0;
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        Rng rng;
        rng_seed(&rng, 900 + k);
        int N = cases[k].N, V = cases[k].V;
        size_t n = (size_t)N * V;
        int *targets = malloc(N * sizeof(int));
        for (int i = 0; i < N; i++) targets[i] = (int)rng_below(&rng, V);
        float *logits = rand_floats(n, &rng, -4, 4), *probs = malloc(n * sizeof(float));
        float *losses = malloc(N * sizeof(float)), *dlogits = rand_floats(n, &rng, -1, 1);
        float *sm = malloc(n * sizeof(float));
        double *logits_d = doubles_of(logits, n), *probs_d = malloc(n * sizeof(double));
        double *losses_d = malloc(N * sizeof(double)), *dlogits_d = doubles_of(dlogits, n);
        double *dlosses_d = malloc(N * sizeof(double));
        for (int i = 0; i < N; i++) dlosses_d[i] = (double)(1.0f / N);

        crossentropy_forward(losses, probs, logits, targets, N, V);
        ref_crossentropy_forward(losses_d, probs_d, logits_d, targets, N, V);
        crossentropy_backward(dlogits, probs, targets, 1.0f / N, N, V);
        ref_crossentropy_backward(dlogits_d, probs_d, targets, dlosses_d, N, V);
        softmax_forward(sm, logits, N, V);
        double ef = max2(rel_error_fd(losses, losses_d, N),
                         max2(rel_error_fd(probs, probs_d, n), rel_error_fd(sm, probs_d, n)));
        double eb = rel_error_fd(dlogits, dlogits_d, n);
        worst_f = max2(worst_f, ef);
        worst_b = max2(worst_b, eb);
        CHECK(ef <= KERNEL_TOL && eb <= KERNEL_TOL, "crossentropy N=%d V=%d: fwd %.3g bwd %.3g",
              N, V, ef, eb);
        free(targets); free(logits); free(probs); free(losses); free(dlogits); free(sm);
        free(logits_d); free(probs_d); free(losses_d); free(dlogits_d); free(dlosses_d);
    }
    report("crossentropy/softmax kernel forward", worst_f);
    report("crossentropy kernel backward (accumulating)", worst_b);
}

// Three updates of AdamW's float update against the reference's in double: parameters and
// both moments, half the parameters decayed, from the second update on with moments of its own.
TEST(ops_adamw_update) {
    Rng rng;
    rng_seed(&rng, 950);
    const size_t n = 37;
    const float lr = 0.01f;
    AdamW opt = {.beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f, .weight_decay = 0.1f, .n = n};
    opt.m = calloc(n, sizeof(float));
    opt.v = calloc(n, sizeof(float));
    opt.decay = malloc(n);
    for (size_t i = 0; i < n; i++) opt.decay[i] = i % 2;
    float *params = rand_floats(n, &rng, -1, 1);
    double *params_d = doubles_of(params, n), *m_d = calloc(n, sizeof(double)), *v_d = calloc(n, sizeof(double));
    double worst = 0.0;
    for (long k = 1; k <= 3; k++) {
        float *grads = rand_floats(n, &rng, -1, 1);
        double *grads_d = doubles_of(grads, n);
        adamw_update(&opt, params, grads, lr);
        ref_adamw_update(params_d, m_d, v_d, grads_d, opt.decay, n, k, lr, opt.beta1, opt.beta2, opt.eps,
                         opt.weight_decay);
        double e = max2(rel_error_fd(params, params_d, n), max2(rel_error_fd(opt.m, m_d, n), rel_error_fd(opt.v, v_d, n)));
        worst = max2(worst, e);
        CHECK(e <= KERNEL_TOL, "AdamW update %ld: error %.3g", k, e);
        CHECK(opt.step == k, "AdamW's step after update %ld: %ld", k, opt.step);
        free(grads);
        free(grads_d);
    }
    report("AdamW update, three steps", worst);
    free(opt.m); free(opt.v); free(opt.decay); free(params); free(params_d); free(m_d); free(v_d);
}
