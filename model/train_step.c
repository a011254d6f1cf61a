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
        double team_norm = grad_global_norm(model->grads_memory, model->num_parameters);
        if (isfinite(model->mean_loss) && isfinite(team_norm)) {
            grad_clip(model->grads_memory, model->num_parameters, team_norm, max_norm);
            adamw_update(opt, model->params_memory, model->grads_memory, lr);
            gpt_params_changed(model);
        }
        if (omp_get_thread_num() == 0) {
            norm = team_norm;
            model->step_threads = omp_get_num_threads();
        }
    }
    tuner_stop(&model->step_tuner, 1.0);
    return norm;
}
