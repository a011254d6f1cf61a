// The checks of the linear layer, forward and backward (kernels.h).
#include <stddef.h>

#include "../../kernels/kernels.h"
#include "../reference.h"
#include "check.h"

#define LINEAR_TOL 1e-5  // sums of up to 33 products in float
#define FD_STEP 1e-5

static const char *const ROW_OUT[] = {"row", "output"};
static const char *const ROW_IN[] = {"row", "input"};
static const char *const OUT_IN[] = {"output", "input"};
static const char *const OUT_NAME[] = {"output"};

// weight (OC, C) read as if it were (C, OC): transposed[o][c] = weight[c * OC + o]
static double *read_transposed(const double *weight, int C, int OC) {
    double *t = doubles((size_t)OC * C);
    for (int o = 0; o < OC; o++)
        for (int c = 0; c < C; c++) t[(size_t)o * C + c] = weight[(size_t)c * OC + o];
    return t;
}

// ---------------------------------------------------------------------------------------
// forward

static int linear_case(const char *title, int N, int C, int OC, int with_bias, unsigned seed) {
    buffers_reset(seed);
    check_title("%s", title);
    float *inp = buffer("inp", (size_t)N * C, NULL, -1.0f, 1.0f, 1);
    float *weight = buffer("weight", (size_t)OC * C, NULL, -1.0f, 1.0f, 1);
    float *bias = with_bias ? buffer("bias", (size_t)OC, NULL, -1.0f, 1.0f, 1) : NULL;
    float *out = buffer("out", (size_t)N * OC, NULL, -1.0f, 1.0f, 0);
    float *before = snapshot(out, (size_t)N * OC);
    linear_forward(NULL, out, inp, weight, bias, N, C, OC);
    if (!buffers_intact()) return 0;
    double *x = doubles_of(inp, (size_t)N * C), *w = doubles_of(weight, (size_t)OC * C);
    double *b = bias ? doubles_of(bias, (size_t)OC) : NULL, *want = doubles((size_t)N * OC);
    ref_matmul_forward(want, x, w, b, N, C, OC);
    double *transposed = doubles((size_t)N * OC), *no_bias = doubles((size_t)N * OC);
    double *out_transposed = doubles((size_t)N * OC);
    ref_matmul_forward(transposed, x, read_transposed(w, C, OC), b, N, C, OC);
    ref_matmul_forward(no_bias, x, w, NULL, N, C, OC);
    for (int n = 0; n < N; n++)
        for (int o = 0; o < OC; o++) out_transposed[(size_t)o * N + n] = want[(size_t)n * OC + o];
    Check c;
    check_init(&c, LINEAR_TOL);
    check_output(&c, "out", out, want, before, 0, 2, (int[]){N, OC}, ROW_OUT);
    if (C != OC)
        check_mistake(&c,
                      "weight read as (C, OC), weight[c * OC + o]: it is (OC, C), PyTorch's layout, so output "
                      "o's weights are the row weight[o * C + c]",
                      transposed, NULL, NULL, NULL);
    if (bias) check_mistake(&c, "out without the bias: add bias[o] to each output o", no_bias, NULL, NULL, NULL);
    if (N > 1 && OC > 1)
        check_mistake(&c, "out written transposed, out[o * N + n]: out is (N, OC), row n's outputs at out + n * OC",
                      out_transposed, NULL, NULL, NULL);
    if (!bias) c.hint = "bias is NULL in this check (the output head has none): then there is no bias term.";
    return check_compare(&c);
}

int check_linear(void) {
    return linear_case("3 rows of 5 inputs to 4 outputs, with a bias", 3, 5, 4, 1, 51) &&
           linear_case("2 rows of 3 inputs to 6 outputs, bias NULL", 2, 3, 6, 0, 52) &&
           linear_case("one row of one input to one output", 1, 1, 1, 1, 53) &&
           linear_case("17 rows of 33 inputs to 20 outputs, with a bias", 17, 33, 20, 1, 54);
}

// ---------------------------------------------------------------------------------------
// backward

// objective of central differences: sum of dout * out over inp, weight and bias
typedef struct {
    double *x, *w, *b, *out;
    const double *dout;
    int N, C, OC;
} LinearObjective;

static double linear_objective(void *p) {
    LinearObjective *l = p;
    ref_matmul_forward(l->out, l->x, l->w, l->b, l->N, l->C, l->OC);
    double sum = 0.0;
    for (size_t i = 0; i < (size_t)l->N * l->OC; i++) sum += l->dout[i] * l->out[i];
    return sum;
}

// what: 0 every gradient, 1 dweight alone (dinp and dbias NULL); finite: the reference is
// central differences
static int linear_backward_case(const char *title, int N, int C, int OC, int weight_alone, int finite, unsigned seed) {
    buffers_reset(seed);
    check_title("%s", title);
    float *inp = buffer("inp", (size_t)N * C, NULL, -1.0f, 1.0f, 1);
    float *weight = buffer("weight", (size_t)OC * C, NULL, -1.0f, 1.0f, 1);
    float *dout = buffer("dout", (size_t)N * OC, NULL, -1.0f, 1.0f, 1);
    float *dinp = weight_alone ? NULL : buffer("dinp", (size_t)N * C, NULL, -1.0f, 1.0f, 0);
    float *dweight = buffer("dweight", (size_t)OC * C, NULL, -1.0f, 1.0f, 0);
    float *dbias = weight_alone ? NULL : buffer("dbias", (size_t)OC, NULL, -1.0f, 1.0f, 0);
    float *dinp_before = dinp ? snapshot(dinp, (size_t)N * C) : NULL,
          *dweight_before = snapshot(dweight, (size_t)OC * C);
    float *dbias_before = dbias ? snapshot(dbias, (size_t)OC) : NULL;
    linear_backward(NULL, dinp, dweight, dbias, dout, inp, weight, N, C, OC);
    if (!buffers_intact()) return 0;
    double *x = doubles_of(inp, (size_t)N * C), *w = doubles_of(weight, (size_t)OC * C);
    double *g = doubles_of(dout, (size_t)N * OC);
    double *want_dinp = doubles((size_t)N * C), *want_dweight = doubles_of(dweight_before, (size_t)OC * C);
    double *want_dbias = dbias ? doubles_of(dbias_before, (size_t)OC) : NULL;
    if (finite) {
        LinearObjective objective = {x, w, doubles((size_t)OC), doubles((size_t)N * OC), g, N, C, OC};
        double *grad_w = doubles((size_t)OC * C), *grad_b = doubles((size_t)OC);
        ref_finite_diff(linear_objective, &objective, x, (size_t)N * C, FD_STEP, want_dinp);
        ref_finite_diff(linear_objective, &objective, w, (size_t)OC * C, FD_STEP, grad_w);
        ref_finite_diff(linear_objective, &objective, objective.b, (size_t)OC, FD_STEP, grad_b);
        for (size_t i = 0; i < (size_t)OC * C; i++) want_dweight[i] += grad_w[i];
        for (int o = 0; o < OC && want_dbias; o++) want_dbias[o] += grad_b[o];
    } else {
        ref_matmul_backward(want_dinp, want_dweight, want_dbias, g, x, w, N, C, OC);
    }
    // known mistakes: dweight laid out (C, OC); dinp through weight read as (C, OC)
    double *dweight_transposed = doubles_of(dweight_before, (size_t)OC * C);
    double *dinp_transposed = doubles((size_t)N * C), *unused = doubles((size_t)OC * C);
    for (int n = 0; n < N; n++)
        for (int o = 0; o < OC; o++)
            for (int c = 0; c < C; c++)
                dweight_transposed[(size_t)c * OC + o] += g[(size_t)n * OC + o] * x[(size_t)n * C + c];
    ref_matmul_backward(dinp_transposed, unused, NULL, g, x, read_transposed(w, C, OC), N, C, OC);
    Check c;
    check_init(&c, LINEAR_TOL);
    if (dinp) check_output(&c, "dinp", dinp, want_dinp, dinp_before, 0, 2, (int[]){N, C}, ROW_IN);
    check_output(&c, "dweight", dweight, want_dweight, dweight_before, 1, 2, (int[]){OC, C}, OUT_IN);
    if (dbias) check_output(&c, "dbias", dbias, want_dbias, dbias_before, 1, 1, (int[]){OC}, OUT_NAME);
    if (C != OC) {
        check_mistake(&c,
                      "dweight laid out as (C, OC), dweight[c * OC + o]: it is (OC, C) as weight is, "
                      "dweight[o * C + c]",
                      dinp ? NULL : dweight_transposed, dinp ? dweight_transposed : NULL, NULL, NULL);
        if (dinp)
            check_mistake(&c,
                          "dinp through weight read as (C, OC), weight[c * OC + o]: it is (OC, C), so "
                          "dinp[n][c] sums dout[n][o] * weight[o * C + c] over o",
                          dinp_transposed, NULL, NULL, NULL);
    }
    check_factor(&c, -1.0, "the sign");
    check_factor(&c, 2.0, "counted twice");
    if (weight_alone)
        c.hint = "dinp and dbias are NULL in this check (not wanted, as for the output head's bias): skip them then.";
    return check_compare(&c);
}

int check_linear_backward(void) {
    return linear_backward_case("3 rows of 5 inputs to 4 outputs", 3, 5, 4, 0, 0, 61) &&
           linear_backward_case("against central differences of the forward, 2 rows of 3 inputs to 4 outputs", 2, 3, 4,
                                0, 1, 62) &&
           linear_backward_case("dinp and dbias NULL, 4 rows of 3 inputs to 6 outputs", 4, 3, 6, 1, 0, 63) &&
           linear_backward_case("17 rows of 33 inputs to 20 outputs", 17, 33, 20, 0, 0, 64);
}
