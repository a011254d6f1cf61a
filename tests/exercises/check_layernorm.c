// The checks of LayerNorm, forward and backward (model/layers.h).
#include <math.h>

#include "../../model/layers.h"
#include "../reference.h"
#include "check.h"

#define LAYERNORM_TOL 1e-5
// Rows far from 0: a float mean of values near 300 is off by about 1e-5, and x - mean by as
// much, which LayerNorm scales up by 1/std; computed as E[x^2] - mean^2, the variance loses
// most of its digits instead.
#define FAR_ROW_TOL 2e-4
#define FD_STEP 1e-5

static const char *const ROW_CHANNEL[] = {"row", "channel"};
static const char *const ROW_NAME[] = {"row"};
static const char *const CHANNEL_NAME[] = {"channel"};

// How a row is filled
enum { ROWS_RANDOM, ROWS_CONSTANT_FIRST, ROWS_FAR };

static float *layernorm_input(int N, int C, int kind) {
    float *x = floats((size_t)N * C);
    for (int n = 0; n < N; n++)
        for (int c = 0; c < C; c++) {
            float v = (float)uniform(-2.0, 2.0);
            if (kind == ROWS_CONSTANT_FIRST && n == 0) v = 0.75f;
            if (kind == ROWS_FAR) v = 300.0f + (float)uniform(-1.0, 1.0);
            x[(size_t)n * C + c] = v;
        }
    return x;
}

// LayerNorm's known wrong versions: the variance divided by C - 1; the 1e-5 outside the
// square root; (out holds these, mean and rstd what they would be)
static void layernorm_variant(double *out, double *rstd, const double *x, const double *w, const double *b, int N,
                              int C, int unbiased, int eps_outside) {
    for (int n = 0; n < N; n++) {
        const double *row = x + (size_t)n * C;
        double m = 0.0, var = 0.0;
        for (int c = 0; c < C; c++) m += row[c];
        m /= C;
        for (int c = 0; c < C; c++) var += (row[c] - m) * (row[c] - m);
        var /= unbiased && C > 1 ? C - 1 : C;
        double s = eps_outside ? 1.0 / (sqrt(var) + LAYERNORM_EPS) : 1.0 / sqrt(var + LAYERNORM_EPS);
        for (int c = 0; c < C; c++) out[(size_t)n * C + c] = (row[c] - m) * s * w[c] + b[c];
        rstd[n] = s;
    }
}

// ---------------------------------------------------------------------------------------
// forward

static int layernorm_case(const char *title, int N, int C, int kind, unsigned seed) {
    buffers_reset(seed);
    check_title("%s", title);
    float *inp = buffer("inp", (size_t)N * C, layernorm_input(N, C, kind), 0.0f, 0.0f, 1);
    float *weight = buffer("weight", (size_t)C, NULL, 0.5f, 1.5f, 1);
    float *bias = buffer("bias", (size_t)C, NULL, -1.0f, 1.0f, 1);
    float *out = buffer("out", (size_t)N * C, NULL, -1.0f, 1.0f, 0);
    float *mean = buffer("mean", (size_t)N, NULL, -1.0f, 1.0f, 0);
    float *rstd = buffer("rstd", (size_t)N, NULL, -1.0f, 1.0f, 0);
    float *out_before = snapshot(out, (size_t)N * C), *mean_before = snapshot(mean, (size_t)N);
    float *rstd_before = snapshot(rstd, (size_t)N);
    layernorm_forward(out, mean, rstd, inp, weight, bias, N, C);
    if (!buffers_intact()) return 0;
    double *x = doubles_of(inp, (size_t)N * C), *w = doubles_of(weight, (size_t)C), *b = doubles_of(bias, (size_t)C);
    double *want = doubles((size_t)N * C), *want_mean = doubles((size_t)N), *want_rstd = doubles((size_t)N);
    ref_layernorm_forward(want, want_mean, want_rstd, x, w, b, N, C);
    double *unbiased = doubles((size_t)N * C), *unbiased_rstd = doubles((size_t)N);
    double *eps_outside = doubles((size_t)N * C), *eps_outside_rstd = doubles((size_t)N);
    double *std = doubles((size_t)N), *normalised = doubles((size_t)N * C), *ones = doubles((size_t)C);
    double *zeros = doubles((size_t)C);
    layernorm_variant(unbiased, unbiased_rstd, x, w, b, N, C, 1, 0);
    layernorm_variant(eps_outside, eps_outside_rstd, x, w, b, N, C, 0, 1);
    for (int c = 0; c < C; c++) ones[c] = 1.0;
    ref_layernorm_forward(normalised, NULL, NULL, x, ones, zeros, N, C);
    for (int n = 0; n < N; n++) std[n] = 1.0 / want_rstd[n];
    Check c;
    check_init(&c, kind == ROWS_FAR ? FAR_ROW_TOL : LAYERNORM_TOL);
    check_output(&c, "out", out, want, out_before, 0, 2, (int[]){N, C}, ROW_CHANNEL);
    check_output(&c, "mean", mean, want_mean, mean_before, 0, 1, (int[]){N}, ROW_NAME);
    check_output(&c, "rstd", rstd, want_rstd, rstd_before, 0, 1, (int[]){N}, ROW_NAME);
    check_mistake(&c,
                  "LayerNorm with the variance divided by C - 1 (the unbiased estimate, PyTorch's "
                  "var(unbiased=True)); LayerNorm divides by C",
                  unbiased, NULL, unbiased_rstd, NULL);
    check_mistake(&c, "1 / (sqrt(var) + 1e-5): the 1e-5 goes inside the square root, 1 / sqrt(var + 1e-5)", eps_outside,
                  NULL, eps_outside_rstd, NULL);
    check_mistake(&c,
                  "rstd holds sqrt(var + 1e-5), the standard deviation; rstd is its reciprocal, "
                  "1 / sqrt(var + 1e-5), which the backward multiplies by",
                  NULL, NULL, std, NULL);
    check_mistake(&c, "(x - mean) * rstd without weight and bias: out = (x - mean) * rstd * weight[c] + bias[c]",
                  normalised, NULL, NULL, NULL);
    c.nonfinite_hint =
        "a constant row's variance is 0, so 1 / sqrt(var) is infinite: the 1e-5 (LAYERNORM_EPS) "
        "goes inside the square root";
    if (kind == ROWS_FAR)
        c.hint =
            "These rows are near 300 with a spread of 1. The variance taken as the mean of x^2 less the "
            "mean squared loses most of its digits there (both are near 90000, a float keeps 7 digits): "
            "take the mean first, then the mean of (x - mean)^2.";
    return check_compare(&c);
}

int check_layernorm(void) {
    return layernorm_case("4 rows of 7 channels", 4, 7, ROWS_RANDOM, 71) &&
           layernorm_case("a constant row (its variance is 0) and a random one, 8 channels", 2, 8, ROWS_CONSTANT_FIRST,
                          72) &&
           layernorm_case("3 rows of 64 channels near 300 (a spread of 1 far from 0)", 3, 64, ROWS_FAR, 73) &&
           layernorm_case("32 rows of 64 channels, the training run's width", 32, 64, ROWS_RANDOM, 74);
}

// ---------------------------------------------------------------------------------------
// backward

// LayerNorm's backward without a term, into dinp (added) or dweight (added)
enum { WITHOUT_MEAN_G = 1, WITHOUT_XHAT_TERM = 2, WITHOUT_WEIGHT = 4, DWEIGHT_OF_X = 8 };

static void layernorm_backward_variant(double *dinp, double *dweight, const double *dout, const double *x,
                                       const double *w, const double *mean, const double *rstd, int N, int C,
                                       int flags) {
    for (int n = 0; n < N; n++) {
        const double *row = x + (size_t)n * C, *dy = dout + (size_t)n * C;
        double g_mean = 0.0, gx_mean = 0.0;
        for (int c = 0; c < C; c++) {
            double g = dy[c] * (flags & WITHOUT_WEIGHT ? 1.0 : w[c]);
            g_mean += g / C;
            gx_mean += g * (row[c] - mean[n]) * rstd[n] / C;
        }
        for (int c = 0; c < C; c++) {
            double xhat = (row[c] - mean[n]) * rstd[n], g = dy[c] * (flags & WITHOUT_WEIGHT ? 1.0 : w[c]);
            dinp[(size_t)n * C + c] += rstd[n] * (g - (flags & WITHOUT_MEAN_G ? 0.0 : g_mean) -
                                                  (flags & WITHOUT_XHAT_TERM ? 0.0 : xhat * gx_mean));
            dweight[c] += dy[c] * (flags & DWEIGHT_OF_X ? row[c] : xhat);
        }
    }
}

typedef struct {
    double *x, *w, *b, *out;
    const double *dout;
    int N, C;
} LayernormObjective;

static double layernorm_objective(void *p) {
    LayernormObjective *l = p;
    ref_layernorm_forward(l->out, NULL, NULL, l->x, l->w, l->b, l->N, l->C);
    double sum = 0.0;
    for (size_t i = 0; i < (size_t)l->N * l->C; i++) sum += l->dout[i] * l->out[i];
    return sum;
}

static int layernorm_backward_case(const char *title, int N, int C, int finite, unsigned seed) {
    buffers_reset(seed);
    check_title("%s", title);
    float *inp = buffer("inp", (size_t)N * C, NULL, -2.0f, 2.0f, 1);
    float *weight = buffer("weight", (size_t)C, NULL, 0.5f, 1.5f, 1);
    float *dout = buffer("dout", (size_t)N * C, NULL, -1.0f, 1.0f, 1);
    double *x = doubles_of(inp, (size_t)N * C), *w = doubles_of(weight, (size_t)C),
           *g = doubles_of(dout, (size_t)N * C);
    double *out = doubles((size_t)N * C), *mean_d = doubles((size_t)N), *rstd_d = doubles((size_t)N);
    double *b = doubles((size_t)C);
    ref_layernorm_forward(out, mean_d, rstd_d, x, w, b, N, C);
    float *stats = floats((size_t)N);
    for (int n = 0; n < N; n++) stats[n] = (float)mean_d[n];
    float *mean = buffer("mean", (size_t)N, stats, 0.0f, 0.0f, 1);
    for (int n = 0; n < N; n++) stats[n] = (float)rstd_d[n];
    float *rstd = buffer("rstd", (size_t)N, stats, 0.0f, 0.0f, 1);
    float *dinp = buffer("dinp", (size_t)N * C, NULL, -1.0f, 1.0f, 0);
    float *dweight = buffer("dweight", (size_t)C, NULL, -1.0f, 1.0f, 0);
    float *dbias = buffer("dbias", (size_t)C, NULL, -1.0f, 1.0f, 0);
    float *dinp_before = snapshot(dinp, (size_t)N * C), *dweight_before = snapshot(dweight, (size_t)C);
    float *dbias_before = snapshot(dbias, (size_t)C);
    layernorm_backward(dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C);
    if (!buffers_intact()) return 0;
    double *want_dinp = doubles_of(dinp_before, (size_t)N * C), *want_dweight = doubles_of(dweight_before, (size_t)C);
    double *want_dbias = doubles_of(dbias_before, (size_t)C);
    if (finite) {
        LayernormObjective objective = {x, w, b, out, g, N, C};
        double *grad_x = doubles((size_t)N * C), *grad_w = doubles((size_t)C), *grad_b = doubles((size_t)C);
        ref_finite_diff(layernorm_objective, &objective, x, (size_t)N * C, FD_STEP, grad_x);
        ref_finite_diff(layernorm_objective, &objective, w, (size_t)C, FD_STEP, grad_w);
        ref_finite_diff(layernorm_objective, &objective, b, (size_t)C, FD_STEP, grad_b);
        for (size_t i = 0; i < (size_t)N * C; i++) want_dinp[i] += grad_x[i];
        for (int c = 0; c < C; c++) want_dweight[c] += grad_w[c], want_dbias[c] += grad_b[c];
    } else {
        ref_layernorm_backward(want_dinp, want_dweight, want_dbias, g, x, w, N, C);
    }
    static const struct {
        int flags, output;  // which output the mistake shows in: 0 dinp, 1 dweight
        const char *what;
    } mistakes[] = {
        {WITHOUT_MEAN_G, 0,
         "dinp without the - mean(g) term: shifting x shifts the row's mean, which the forward "
         "subtracts"},
        {WITHOUT_XHAT_TERM, 0,
         "dinp without the - xhat * mean(g * xhat) term: scaling x changes the row's "
         "variance, which the forward divides by"},
        {WITHOUT_MEAN_G | WITHOUT_XHAT_TERM, 0,
         "dinp = rstd * g alone, as if the mean and the variance did not "
         "depend on x: both terms are missing"},
        {WITHOUT_WEIGHT, 0, "dinp with g = dout: the gradient reaching xhat is dout * weight"},
        {DWEIGHT_OF_X, 1, "dweight += dout * x: the weight multiplies xhat = (x - mean) * rstd, not x"},
    };
    Check c;
    check_init(&c, LAYERNORM_TOL * 4);
    check_output(&c, "dinp", dinp, want_dinp, dinp_before, 1, 2, (int[]){N, C}, ROW_CHANNEL);
    check_output(&c, "dweight", dweight, want_dweight, dweight_before, 1, 1, (int[]){C}, CHANNEL_NAME);
    check_output(&c, "dbias", dbias, want_dbias, dbias_before, 1, 1, (int[]){C}, CHANNEL_NAME);
    for (size_t m = 0; m < sizeof(mistakes) / sizeof(mistakes[0]); m++) {
        double *v_dinp = doubles_of(dinp_before, (size_t)N * C), *v_dweight = doubles_of(dweight_before, (size_t)C);
        layernorm_backward_variant(v_dinp, v_dweight, g, x, w, mean_d, rstd_d, N, C, mistakes[m].flags);
        check_mistake(&c, mistakes[m].what, mistakes[m].output == 0 ? v_dinp : NULL,
                      mistakes[m].output == 1 ? v_dweight : NULL, NULL, NULL);
    }
    check_factor(&c, -1.0, "the sign");
    return check_compare(&c);
}

int check_layernorm_backward(void) {
    return layernorm_backward_case("4 rows of 7 channels", 4, 7, 0, 81) &&
           layernorm_backward_case("against central differences of the forward, 3 rows of 5 channels", 3, 5, 1, 82) &&
           layernorm_backward_case("32 rows of 64 channels, the training run's width", 32, 64, 0, 83);
}
