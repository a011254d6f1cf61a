#include "train_step.h"

#include <math.h>
#include <omp.h>

#include "../kernels/parallel.h"

int train_step_threads(const GPT *model) { return model->step_threads; }

double train_step(GPT *model, AdamW *opt, const int *inputs, const int *targets, int B, int t,
                  uint64_t dropout_seed, float lr, float max_norm) {
    const ForwardPass pass = {.training = 1, .dropout_seed = dropout_seed};
    double norm = 0.0;
#pragma omp parallel num_threads(tuner_start(&model->step_tuner, model, (long)B * t))
    {
        gpt_zero_grad(model);
        gpt_forward(model, inputs, targets, B, t, &pass);
        gpt_backward(model);
        // every thread gets the same loss and norm, so all take the same branch
        double team_norm;
        double sum_of_squares = grad_sum_of_squares(model->grads_memory, model->num_parameters);
        if (train_step_update(model, opt, sum_of_squares, lr, max_norm, &team_norm)) gpt_params_changed(model);
        if (omp_get_thread_num() == 0) {
            norm = team_norm;
            model->step_threads = omp_get_num_threads();
        }
    }
    tuner_stop(&model->step_tuner, 1.0);
    return norm;
}

int train_step_update(GPT *model, AdamW *opt, double sum_of_squares, float lr, float max_norm, double *norm) {
    *norm = sqrt(sum_of_squares);
    if (!isfinite(model->mean_loss) || !isfinite(*norm)) return 0;
    float *params = model->params_memory + opt->first, *grads = model->grads_memory + opt->first;
    grad_clip(grads, opt->n, *norm, max_norm);
    adamw_update(opt, params, grads, lr);
    return 1;
}
