// The checks of AdamW's update (model/adamw.h).
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../../model/adamw.h"
#include "../reference.h"
#include "check.h"

#define ADAMW_TOL 1e-5
#define PARAMETERS 40
// The hyperparameters as the function gets them, in float, and the reference too
#define BETA1 ((double)0.9f)
#define BETA2 ((double)0.999f)  // PyTorch's default: unlike 0.99, it makes a missing bias correction show at step 1
#define EPS ((double)1e-8f)
#define WEIGHT_DECAY ((double)0.1f)
#define LR ((double)0.01f)

static const char *const PARAM_NAME[] = {"parameter"};

// The known wrong updates of AdamW: no bias correction, weight decay on every parameter or on
// none, the decay added to the gradient (Adam with L2, not AdamW), the decay not scaled by lr.
enum { NO_BIAS_CORRECTION = 1, DECAY_ALL = 2, DECAY_NONE = 4, DECAY_IN_GRADIENT = 8, DECAY_WITHOUT_LR = 16 };

static void adamw_variant(double *p, double *m, double *v, const double *g, const unsigned char *decay, long k,
                          int flags) {
    for (int i = 0; i < PARAMETERS; i++) {
        double wd = flags & DECAY_NONE ? 0.0 : decay[i] || flags & DECAY_ALL ? WEIGHT_DECAY : 0.0;
        double grad = g[i] + (flags & DECAY_IN_GRADIENT ? wd * p[i] : 0.0);
        m[i] = BETA1 * m[i] + (1.0 - BETA1) * grad;
        v[i] = BETA2 * v[i] + (1.0 - BETA2) * grad * grad;
        double mhat = m[i], vhat = v[i];
        if (!(flags & NO_BIAS_CORRECTION)) mhat /= 1.0 - pow(BETA1, (double)k), vhat /= 1.0 - pow(BETA2, (double)k);
        double step = mhat / (sqrt(vhat) + EPS);
        if (flags & DECAY_IN_GRADIENT)
            p[i] -= LR * step;
        else if (flags & DECAY_WITHOUT_LR)
            p[i] -= LR * step + wd * p[i];
        else
            p[i] -= LR * (step + wd * p[i]);
    }
}

// The k-th update (from 1), after k - 1 of the reference's: the learner's update of the
// parameters and moments those left, against the reference's k-th.
static int adamw_case(const char *title, long k, unsigned seed) {
    buffers_reset(seed);
    check_title("%s", title);
    unsigned char decay[PARAMETERS];
    for (int i = 0; i < PARAMETERS; i++) decay[i] = i % 2;  // a matrix's and a bias's, say
    double *p = doubles(PARAMETERS), *m = doubles(PARAMETERS), *v = doubles(PARAMETERS), *g = doubles(PARAMETERS);
    for (int i = 0; i < PARAMETERS; i++) p[i] = uniform(-1.0, 1.0);
    for (long step = 1; step < k; step++) {
        for (int i = 0; i < PARAMETERS; i++) g[i] = uniform(-1.0, 1.0);
        ref_adamw_update(p, m, v, g, decay, PARAMETERS, step, LR, BETA1, BETA2, EPS, WEIGHT_DECAY);
    }
    for (int i = 0; i < PARAMETERS; i++) g[i] = uniform(-1.0, 1.0) * (i < 4 ? 1e-3 : 1.0);  // a few small ones
    float values[4][PARAMETERS];
    for (int i = 0; i < PARAMETERS; i++) {
        values[0][i] = (float)p[i], values[1][i] = (float)m[i], values[2][i] = (float)v[i];
        values[3][i] = (float)g[i];
    }
    float *params = buffer("params", PARAMETERS, values[0], 0.0f, 0.0f, 0);
    float *opt_m = buffer("opt->m", PARAMETERS, values[1], 0.0f, 0.0f, 0);
    float *opt_v = buffer("opt->v", PARAMETERS, values[2], 0.0f, 0.0f, 0);
    float *grads = buffer("grads", PARAMETERS, values[3], 0.0f, 0.0f, 1);
    AdamW opt = {BETA1, BETA2, EPS, WEIGHT_DECAY, 0, PARAMETERS, opt_m, opt_v, k - 1, decay};
    float *params_before = snapshot(params, PARAMETERS), *m_before = snapshot(opt_m, PARAMETERS);
    float *v_before = snapshot(opt_v, PARAMETERS);
    double *grad = doubles_of(grads, PARAMETERS);
    adamw_update(&opt, params, grads, (float)LR);
    if (!buffers_intact()) return 0;
    double *want_p = doubles_of(params_before, PARAMETERS), *want_m = doubles_of(m_before, PARAMETERS);
    double *want_v = doubles_of(v_before, PARAMETERS);
    ref_adamw_update(want_p, want_m, want_v, grad, decay, PARAMETERS, k, LR, BETA1, BETA2, EPS, WEIGHT_DECAY);
    Check c;
    check_init(&c, ADAMW_TOL);
    check_output(&c, "params", params, want_p, params_before, 1, 1, (int[]){PARAMETERS}, PARAM_NAME);
    check_output(&c, "opt->m", opt_m, want_m, m_before, 0, 1, (int[]){PARAMETERS}, PARAM_NAME);
    check_output(&c, "opt->v", opt_v, want_v, v_before, 0, 1, (int[]){PARAMETERS}, PARAM_NAME);
    static const struct {
        int flags;
        const char *what;
    } mistakes[] = {
        {NO_BIAS_CORRECTION,
         "the update without the bias correction: mhat = m / (1 - beta1^k) and vhat = v / (1 - "
         "beta2^k), k = opt->step + 1, undo the pull toward 0 of moments that start at 0"},
        {DECAY_ALL,
         "weight decay on every parameter: only those whose opt->decay[i] is 1 (matrices and embeddings; "
         "not biases or LayerNorm's)"},
        {DECAY_NONE, "no weight decay: p -= lr * wd * p too, where opt->decay[i] is 1"},
        {DECAY_IN_GRADIENT,
         "the decay added to the gradient (Adam with L2) before the moments: AdamW subtracts "
         "lr * wd * p apart from them, decoupled"},
        {DECAY_WITHOUT_LR, "p -= wd * p: the decay is scaled by the learning rate too, lr * wd * p"},
    };
    for (size_t i = 0; i < sizeof(mistakes) / sizeof(mistakes[0]); i++) {
        double *vp = doubles_of(params_before, PARAMETERS), *vm = doubles_of(m_before, PARAMETERS);
        double *vv = doubles_of(v_before, PARAMETERS);
        adamw_variant(vp, vm, vv, grad, decay, k, mistakes[i].flags);
        int moments = mistakes[i].flags & DECAY_IN_GRADIENT;  // the only one that changes them
        check_mistake(&c, mistakes[i].what, vp, moments ? vm : NULL, moments ? vv : NULL, NULL);
    }
    check_factor(&c, -1.0, "the sign: the update goes against the gradient, p -= ...");
    c.nonfinite_hint =
        "at k = opt->step + 1 the bias corrections 1 - beta^k are never 0; with k = opt->step the "
        "first is 1 - beta^0 = 0";
    // (a function that changed nothing is the stub, which check_compare says)
    if (opt.step != k && memcmp(params, params_before, sizeof(float) * PARAMETERS) != 0) {
        check_fail(
            "opt->step is %ld after your update, and should be %ld: count the update (opt->step = k), the "
            "next one's bias correction needs it",
            opt.step, k);
        return 0;
    }
    return check_compare(&c);
}

int check_adamw(void) {
    return adamw_case("the first update (k = 1) of 40 parameters, half of them decayed", 1, 91) &&
           adamw_case("the second update (k = 2), after the reference's first", 2, 92) &&
           adamw_case("the 10th update (k = 10), after 9 of the reference's", 10, 93);
}
