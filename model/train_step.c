#include "train_step.h"

#include <math.h>
#include <omp.h>
#include <time.h>

#include "parallel.h"

// The team size of the steps of the current run (parallel.h), kept for one model and
// batch shape at a time.
static ThreadTuner tuner;
static struct {
    const GPT *model;
    int B, t, max_threads;
} tuned;

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

double train_step(GPT *model, AdamW *opt, const int *inputs, const int *targets, int B, int t,
                  float lr, float max_norm) {
    int max_threads = omp_get_max_threads();
    if (tuned.model != model || tuned.B != B || tuned.t != t || tuned.max_threads != max_threads) {
        tuner_init(&tuner, max_threads);
        tuned.model = model;
        tuned.B = B;
        tuned.t = t;
        tuned.max_threads = max_threads;
    }
    double norm = 0.0, start = now_seconds();
#pragma omp parallel num_threads(tuner_next(&tuner))
    {
        gpt_forward(model, inputs, targets, B, t);
        gpt_backward(model);
        // every thread gets the same loss and norm, so all take the same branch
        double team_norm = grad_global_norm(model->grads_memory, model->num_parameters);
        if (isfinite(model->mean_loss) && isfinite(team_norm)) {
            grad_clip(model->grads_memory, model->num_parameters, team_norm, max_norm);
            adamw_update(opt, model->params_memory, model->grads_memory, lr);
        }
        if (omp_get_thread_num() == 0) norm = team_norm;
    }
    tuner_record(&tuner, now_seconds() - start);
    return norm;
}
