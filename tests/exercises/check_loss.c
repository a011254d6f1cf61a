// The checks of cross-entropy, forward and backward (model/layers.h).
#include <math.h>

#include "../../model/layers.h"
#include "../reference.h"
#include "check.h"

#define LOSS_TOL 1e-5
#define FD_STEP 1e-5

static const char *const ROW_NAME[] = {"row"};
static const char *const ROW_LOGIT[] = {"row", "logit"};

// targets of N rows over V: assorted, the first and the last of the vocabulary among them
static int *some_targets(int N, int V) {
    int t[64];
    for (int n = 0; n < N; n++) t[n] = n == 0 ? 0 : n == 1 ? V - 1 : (int)uniform(0.0, V);
    return int_buffer("targets", (size_t)N, t);
}

// ---------------------------------------------------------------------------------------
// forward

static int crossentropy_case(const char *title, int N, int V, float big, unsigned seed) {
    buffers_reset(seed);
    check_title("%s", title);
    float *values = floats((size_t)N * V);
    for (size_t i = 0; i < (size_t)N * V; i++) values[i] = (float)uniform(-3.0, 3.0);
    if (big != 0.0f) values[0] = values[V + 1] = big;  // one large logit in each of the first two rows
    float *logits = buffer("logits", (size_t)N * V, values, 0.0f, 0.0f, 1);
    int *targets = some_targets(N, V);
    float *losses = buffer("losses", (size_t)N, NULL, -1.0f, 1.0f, 0);
    float *probs = buffer("probs", (size_t)N * V, NULL, -1.0f, 1.0f, 0);
    double *z = doubles_of(logits, (size_t)N * V);
    float *losses_before = snapshot(losses, (size_t)N), *probs_before = snapshot(probs, (size_t)N * V);
    crossentropy_forward(losses, probs, logits, targets, N, V);
    if (!buffers_intact()) return 0;
    double *want_losses = doubles((size_t)N), *want_probs = doubles((size_t)N * V);
    ref_crossentropy_forward(want_losses, want_probs, z, targets, N, V);
    double *logit_only = doubles((size_t)N), *first_target = doubles((size_t)N), *row_zero = doubles((size_t)N);
    for (int n = 0; n < N; n++) {
        logit_only[n] = -z[(size_t)n * V + targets[n]];
        first_target[n] = -log(want_probs[(size_t)n * V + targets[0]]);
        row_zero[n] = -log(want_probs[targets[n]]);
    }
    Check c;
    check_init(&c, LOSS_TOL);
    check_output(&c, "losses", losses, want_losses, losses_before, 0, 1, (int[]){N}, ROW_NAME);
    check_output(&c, "probs", probs, want_probs, probs_before, 0, 2, (int[]){N, V}, ROW_LOGIT);
    check_mistake(&c,
                  "-logits[target]: the loss is -log softmax(logits)[target], which also takes "
                  "log(sum exp(logits)) of the row",
                  logit_only, NULL, NULL, NULL);
    check_mistake(&c, "every row's loss at the first row's target, targets[0]: row n's target is targets[n]",
                  first_target, NULL, NULL, NULL);
    check_mistake(&c, "row n's loss read from the first row's probabilities: row n's are at probs + n * V", row_zero,
                  NULL, NULL, NULL);
    check_factor(&c, -1.0, "the sign: the loss is -log p, positive");
    check_factor(&c, 1.0 / log(2.0), "a log in base 2 (bits): the loss is in nats, logf");
    check_factor(&c, 1.0 / log(10.0), "a log in base 10: the loss is in nats, logf");
    c.nonfinite_hint =
        "exp of a logit past 88.7 overflows a float: subtract the row's largest logit before exp, and "
        "take the loss as log(sum exp(z - max)) - (z_target - max) rather than the log of a "
        "probability that may have rounded to 0";
    return check_compare(&c);
}

int check_crossentropy(void) {
    return crossentropy_case("4 rows of 11 logits", 4, 11, 0.0f, 31) &&
           crossentropy_case("one row of 2 logits", 1, 2, 0.0f, 32) &&
           crossentropy_case("3 rows of 26 logits, one logit of 100 in two of them", 3, 26, 100.0f, 33) &&
           crossentropy_case("64 rows of 65 logits (Shakespeare's vocabulary)", 64, 65, 0.0f, 34);
}

// ---------------------------------------------------------------------------------------
// backward

// objective of central differences: dloss times the sum of the rows' losses
typedef struct {
    double *z, *losses, *probs, dloss;
    const int *targets;
    int N, V;
} LossObjective;

static double loss_objective(void *p) {
    LossObjective *l = p;
    ref_crossentropy_forward(l->losses, l->probs, l->z, l->targets, l->N, l->V);
    double sum = 0.0;
    for (int n = 0; n < l->N; n++) sum += l->losses[n];
    return l->dloss * sum;
}

static int crossentropy_backward_case(const char *title, int N, int V, int finite, unsigned seed) {
    buffers_reset(seed);
    check_title("%s", title);
    const float dloss = 1.0f / N;
    double *z = doubles((size_t)N * V), *p = doubles((size_t)N * V), *losses = doubles((size_t)N);
    for (size_t i = 0; i < (size_t)N * V; i++) z[i] = uniform(-3.0, 3.0);
    int *targets = some_targets(N, V);
    ref_crossentropy_forward(losses, p, z, targets, N, V);
    float *probs_f = floats((size_t)N * V);
    for (size_t i = 0; i < (size_t)N * V; i++) probs_f[i] = (float)p[i];
    float *probs = buffer("probs", (size_t)N * V, probs_f, 0.0f, 0.0f, 1);
    float *dlogits = buffer("dlogits", (size_t)N * V, NULL, -1.0f, 1.0f, 0);
    float *before = snapshot(dlogits, (size_t)N * V);
    crossentropy_backward(dlogits, probs, targets, dloss, N, V);
    if (!buffers_intact()) return 0;
    double *want = doubles_of(before, (size_t)N * V), *grad = doubles((size_t)N * V);
    if (finite) {
        LossObjective objective = {z, losses, doubles((size_t)N * V), dloss, targets, N, V};
        ref_finite_diff(loss_objective, &objective, z, (size_t)N * V, FD_STEP, grad);
    } else {
        double *dlosses = doubles((size_t)N), *probs_d = doubles_of(probs, (size_t)N * V);
        for (int n = 0; n < N; n++) dlosses[n] = dloss;
        ref_crossentropy_backward(grad, probs_d, targets, dlosses, N, V);
    }
    double *no_onehot = doubles_of(before, (size_t)N * V), *first_target = doubles_of(before, (size_t)N * V);
    for (int n = 0; n < N; n++)
        for (int v = 0; v < V; v++) {
            size_t i = (size_t)n * V + v;
            want[i] += grad[i];
            no_onehot[i] += probs[i] * dloss;
            first_target[i] += (probs[i] - (v == targets[0] ? 1.0 : 0.0)) * dloss;
        }
    Check c;
    check_init(&c, LOSS_TOL);
    check_output(&c, "dlogits", dlogits, want, before, 1, 2, (int[]){N, V}, ROW_LOGIT);
    check_mistake(&c, "probs * dloss: the gradient is (probs - onehot(target)) * dloss, 1 less at the target",
                  no_onehot, NULL, NULL, NULL);
    check_mistake(&c, "the 1 taken off at the first row's target, targets[0], in every row", first_target, NULL, NULL,
                  NULL);
    check_factor(&c, -1.0, "the sign: the gradient is probs less the one-hot, p - y");
    check_factor(&c, N, "dloss left out: every row's gradient is scaled by dloss (1/N, the mean over N rows)");
    return check_compare(&c);
}

int check_crossentropy_backward(void) {
    return crossentropy_backward_case("4 rows of 11 logits, dloss 1/4", 4, 11, 0, 41) &&
           crossentropy_backward_case("against central differences of the mean loss, 3 rows of 5", 3, 5, 1, 42) &&
           crossentropy_backward_case("64 rows of 26 logits, dloss 1/64", 64, 26, 0, 43);
}
