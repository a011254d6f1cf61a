// The checks of GELU (forward, backward) and of a softmax row (kernels.h).
#include <math.h>

#include "../../kernels/kernels.h"
#include "../reference.h"
#include "check.h"

#define GELU_TOL 2e-6  // float's tanhf and a few products: about 1e-7 of the largest value
#define SOFTMAX_TOL 1e-5  // a sum of n exps in float
#define FD_STEP 1e-5  // central differences in double: error about h^2 + 1e-16 / h

static const char *const I_NAME[] = {"i"};
#define SQRT_2_OVER_PI 0.7978845608028654

// GELU with its constants as given, and its derivative: the known wrong versions are these
// with one constant off (tanh's argument a (x + c x^p))
static double gelu_with(double x, double a, double c, double p) {
    return 0.5 * x * (1.0 + tanh(a * (x + c * pow(x, p))));
}
static double gelu_erf(double x) { return 0.5 * x * (1.0 + erf(x / sqrt(2.0))); }

// ---------------------------------------------------------------------------------------
// forward

static int gelu_case(const char *title, const float *values, int n, unsigned seed) {
    buffers_reset(seed);
    check_title("%s", title);
    float *inp = buffer("inp", (size_t)n, values, -5.0f, 5.0f, 1);
    float *out = buffer("out", (size_t)n, NULL, -1.0f, 1.0f, 0);
    float *before = snapshot(out, (size_t)n);
    gelu_forward(out, inp, n);
    if (!buffers_intact()) return 0;
    double *x = doubles_of(inp, (size_t)n), *want = doubles((size_t)n);
    ref_gelu_forward(want, x, (size_t)n);
    double *relu = doubles((size_t)n), *erf_form = doubles((size_t)n), *square = doubles((size_t)n);
    double *no_scale = doubles((size_t)n);
    for (int i = 0; i < n; i++) {
        relu[i] = x[i] > 0.0 ? x[i] : 0.0;
        erf_form[i] = gelu_erf(x[i]);
        square[i] = 0.5 * x[i] * (1.0 + tanh(SQRT_2_OVER_PI * (x[i] + 0.044715 * x[i] * x[i])));
        no_scale[i] = gelu_with(x[i], 1.0, 0.044715, 3.0);
    }
    Check c;
    check_init(&c, GELU_TOL);
    check_output(&c, "out", out, want, before, 0, 1, (int[]){n}, I_NAME);
    check_mistake(&c, "ReLU, max(0, x); GELU is 0.5 x (1 + tanh(...)), smooth around 0", relu, NULL, NULL, NULL);
    check_mistake(&c,
                  "the exact GELU, 0.5 x (1 + erf(x / sqrt 2)); GPT-2 (and this model's checkpoints) use "
                  "the tanh form, which differs from it by up to 3e-4",
                  erf_form, NULL, NULL, NULL);
    check_mistake(&c, "GELU with 0.044715 x^2 in tanh's argument; it is 0.044715 x^3", square, NULL, NULL, NULL);
    check_mistake(&c, "GELU without the sqrt(2/pi) = 0.79788 that multiplies tanh's argument", no_scale, NULL, NULL,
                  NULL);
    check_factor(&c, 2.0, "the 0.5 in front is missing");
    c.nonfinite_hint =
        "tanh computed from exp overflows when exp's argument passes 88.7 (inf / inf is NaN): tanhf "
        "from <math.h> does not";
    return check_compare(&c);
}

int check_gelu(void) {
    static const float large[] = {-30.0f, -10.0f, -4.0f, -1e-3f, 0.0f, 1e-3f, 4.0f, 10.0f, 30.0f};
    return gelu_case("forward, 64 values from -5 to 5", NULL, 64, 1) && gelu_case("forward, one value", NULL, 1, 2) &&
           gelu_case("forward, values up to 30 in size (tanh at its limits)", large, 9, 3);
}

// ---------------------------------------------------------------------------------------
// backward

// objective of central differences: sum_i dout_i GELU(x_i)
typedef struct {
    const double *dout;
    double *x, *out;
    int n;
} GeluObjective;

static double gelu_objective(void *p) {
    GeluObjective *g = p;
    ref_gelu_forward(g->out, g->x, (size_t)g->n);
    double sum = 0.0;
    for (int i = 0; i < g->n; i++) sum += g->dout[i] * g->out[i];
    return sum;
}

// in_place: dinp is dout, as gpt.c calls it; finite: the reference is central differences
static int gelu_backward_case(const char *title, int n, int in_place, int finite, unsigned seed) {
    buffers_reset(seed);
    check_title("%s", title);
    float *inp = buffer("inp", (size_t)n, NULL, -5.0f, 5.0f, 1);
    float *dout = buffer(in_place ? "dout (which is dinp)" : "dout", (size_t)n, NULL, -1.0f, 1.0f, !in_place);
    float *dinp = in_place ? dout : buffer("dinp", (size_t)n, NULL, -1.0f, 1.0f, 0);
    double *x = doubles_of(inp, (size_t)n), *g = doubles_of(dout, (size_t)n), *want = doubles((size_t)n);
    float *before = snapshot(dinp, (size_t)n);
    gelu_backward(dinp, inp, dout, n);
    if (!buffers_intact()) return 0;
    if (finite) {
        GeluObjective objective = {g, x, doubles((size_t)n), n};
        ref_finite_diff(gelu_objective, &objective, x, (size_t)n, FD_STEP, want);
    } else {
        ref_gelu_backward(want, x, g, (size_t)n);
    }
    double *no_dout = doubles((size_t)n), *no_tanh_term = doubles((size_t)n), *erf_form = doubles((size_t)n);
    for (int i = 0; i < n; i++) {
        double th = tanh(SQRT_2_OVER_PI * (x[i] + 0.044715 * x[i] * x[i] * x[i]));
        double phi = exp(-0.5 * x[i] * x[i]) / sqrt(2.0 * M_PI);
        no_dout[i] = g[i] != 0.0 ? want[i] / g[i] : 0.0;
        no_tanh_term[i] = 0.5 * (1.0 + th) * g[i];
        erf_form[i] = (0.5 * (1.0 + erf(x[i] / sqrt(2.0))) + x[i] * phi) * g[i];
    }
    Check c;
    check_init(&c, finite ? 1e-5 : GELU_TOL * 4);
    check_output(&c, "dinp", dinp, want, before, 0, 1, (int[]){n}, I_NAME);
    check_mistake(&c, "GELU'(x) alone: the chain rule multiplies it by dout, the gradient arriving from above", no_dout,
                  NULL, NULL, NULL);
    check_mistake(&c,
                  "0.5 (1 + tanh u) dout alone: the derivative of the product 0.5 x (1 + tanh u) has a second "
                  "term, 0.5 x (1 - tanh^2 u) du/dx",
                  no_tanh_term, NULL, NULL, NULL);
    check_mistake(&c,
                  "the derivative of the exact (erf) GELU; the forward is the tanh form, so its derivative is "
                  "the tanh form's",
                  erf_form, NULL, NULL, NULL);
    check_factor(&c, 2.0, "counted twice, or the 0.5 in front left out of one term");
    c.nonfinite_hint = "tanh computed from exp overflows when exp's argument passes 88.7: use tanhf";
    if (in_place)
        c.hint =
            "This check passes dinp and dout as one array, as the model does (gpt.c): read dout[i] (and "
            "anything else you need of it) before you write dinp[i].";
    return check_compare(&c);
}

int check_gelu_backward(void) {
    return gelu_backward_case("backward, 64 values from -5 to 5", 64, 0, 0, 11) &&
           gelu_backward_case("backward against central differences of GELU, 16 values", 16, 0, 1, 12) &&
           gelu_backward_case("backward in place (dinp is dout, as the model calls it), 64 values", 64, 1, 0, 13);
}

// ---------------------------------------------------------------------------------------
// softmax

static int softmax_case(const char *title, const float *values, int n, float scale, unsigned seed) {
    buffers_reset(seed);
    check_title("%s", title);
    float *row = buffer("row", (size_t)n, values, -3.0f, 3.0f, 0);
    float *before = snapshot(row, (size_t)n);
    double *x = doubles_of(row, (size_t)n), *scaled = doubles((size_t)n), *want = doubles((size_t)n);
    for (int j = 0; j < n; j++) scaled[j] = x[j] * scale;
    softmax_row(row, n, scale);
    if (!buffers_intact()) return 0;
    ref_softmax_forward(want, scaled, 1, n);
    double *unscaled = doubles((size_t)n), *divided = doubles((size_t)n), *unnormalised = doubles((size_t)n);
    ref_softmax_forward(unscaled, x, 1, n);
    double max = -INFINITY;
    for (int j = 0; j < n; j++) {
        divided[j] = x[j] / scale;
        max = fmax(max, x[j]);
    }
    ref_softmax_forward(divided, divided, 1, n);
    for (int j = 0; j < n; j++) unnormalised[j] = exp((x[j] - max) * scale);
    Check c;
    check_init(&c, SOFTMAX_TOL);
    check_output(&c, "row", row, want, before, 0, 1, (int[]){n}, (const char *const[]){"j"});
    if (scale != 1.0f) {
        check_mistake(&c,
                      "the softmax of the scores without the scale: exp(scale * row[j]); attention passes "
                      "1/sqrt(hs) there",
                      unscaled, NULL, NULL, NULL);
        check_mistake(&c, "the softmax of row[j] / scale: the scores are multiplied by scale", divided, NULL, NULL,
                      NULL);
    }
    check_mistake(&c, "exp((row[j] - max) * scale) not divided by their sum: the weights must sum to 1", unnormalised,
                  NULL, NULL, NULL);
    c.nonfinite_hint =
        "exp of a value past 88.7 is infinity in float, and infinity / infinity is NaN: subtract the "
        "row's largest value before exp";
    return check_compare(&c);
}

int check_softmax(void) {
    static const float large[] = {100.0f, 99.0f, 50.0f, -20.0f, 100.0f, 0.0f};
    return softmax_case("a row of 7 scores, scale 1", NULL, 7, 1.0f, 21) &&
           softmax_case("one score (the first query sees only itself)", NULL, 1, 0.5f, 22) &&
           softmax_case("16 scores, scale 1/sqrt(8), as attention with heads of 8 calls it", NULL, 16,
                        1.0f / sqrtf(8.0f), 23) &&
           softmax_case("scores up to 100 (exp(100) overflows a float)", large, 6, 1.0f, 24) &&
           softmax_case("100 scores, scale 0.25", NULL, 100, 0.25f, 25);
}
