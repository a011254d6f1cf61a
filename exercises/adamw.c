// Exercise: the AdamW update (`make exercise NAME=adamw`; docs/exercises.md).
//
// Write adamw_update: one step of AdamW over the opt->n parameters, k = opt->step + 1:
//   m = beta1 m + (1 - beta1) g,   v = beta2 v + (1 - beta2) g^2      (opt->m, opt->v, per parameter)
//   mhat = m / (1 - beta1^k),      vhat = v / (1 - beta2^k)           (the bias correction)
//   p -= lr * (mhat / (sqrt(vhat) + eps) + wd * p)                     (wd: weight_decay where decay[i] is 1, else 0)
// then opt->step = k. The moments start at 0, so the bias correction makes the first steps
// as large as later ones; the decay pulls weights toward 0 apart from the gradient (that is
// the W of AdamW).
//   params, grads (opt->n); opt holds beta1, beta2, eps, weight_decay, m, v, decay, step (model/adamw.h)
//
// The project's solution, if you want to compare afterwards: model/adamw.c, adamw_update, and
// the loop it hands each update to: kernels/adamw_step.inc, adamw_step_team.
#include "../model/adamw.h"

void adamw_update(AdamW *opt, float *params, const float *grads, float lr) {
    // your code here
}
