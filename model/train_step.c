#include "train_step.h"

#include <math.h>
#include <omp.h>
#include <string.h>

#include "../kernels/parallel.h"

int train_step_threads(const GPT *model) { return model->step_threads; }

int train_step_micro_sequences(const GPTConfig *config, Precision precision, int B) {
    if (precision != PRECISION_FP32) return B;
    for (int s = 1; s <= B / MICRO_BATCHES_MIN; s++)
        if (B % s == 0 && (long)s * config->block_size >= (long)MICRO_BATCH_ROWS_PER_CHANNEL * config->n_embd)
            return s;
    return B;
}

// Micro-batch m of the step on the calling thread alone (a team of its own, whose team
// functions share nothing with the other threads'): forward and backward on the thread's
// view, into micro-batch m's own gradients.
static void micro_batch_gradients(GPT *view, MicroBatches *micro, int m, const int *inputs, const int *targets, int B,
                                  int t, uint64_t dropout_seed) {
    const int first = m * micro->sequences;  // its first sequence in the batch
    const ForwardPass pass = {.training = 1, .dropout_seed = dropout_seed, .batch_offset = first, .batch_rows = B};
    gpt_view_gradients(view, micro->gradients + (size_t)m * view->num_parameters);
#pragma omp parallel num_threads(1)
    {
        gpt_zero_grad(view);
        gpt_forward(view, inputs + (size_t)first * t, targets + (size_t)first * t, micro->sequences, t, &pass);
        gpt_backward(view);
    }
    micro->loss_sums[m] = view->loss_sum;
}

// The micro-batches' gradients added up in micro-batch order into the model's (a team
// function), and their losses into its mean loss. A block of SUM_BLOCK parameters at a time,
// one micro-batch after another into the block's sums while they stay in the cache: each
// pass is a loop the compiler vectorises (the loop over micro-batches inside the loop over
// parameters ran one float at a time, 2.7% of the lesson's step).
#define SUM_BLOCK 1024
static void add_micro_batches(GPT *model, const MicroBatches *micro, int B, int t) {
    const size_t P = model->num_parameters;
    const float *g = micro->gradients;
    float *sum = model->grads_memory;
#pragma omp for schedule(static) nowait
    for (size_t i0 = 0; i0 < P; i0 += SUM_BLOCK) {
        size_t n = P - i0 < SUM_BLOCK ? P - i0 : SUM_BLOCK;
        float *s = sum + i0;
        memcpy(s, g + i0, n * sizeof(float));
        for (int m = 1; m < micro->count; m++) {
            const float *gm = g + (size_t)m * P + i0;
#pragma omp simd
            for (size_t i = 0; i < n; i++) s[i] += gm[i];
        }
    }
    if (omp_get_thread_num() == 0) {
        double loss_sum = 0.0;
        for (int m = 0; m < micro->count; m++) loss_sum += micro->loss_sums[m];
        model->loss_sum = loss_sum;
        model->mean_loss = (float)(loss_sum / ((double)B * t));
    }
    team_barrier();
}

// The step's gradients and mean loss from its micro-batches, each run by one thread, which
// takes the next one left when it is done (each has its own team's tasks inside: parallel.h).
// A team function.
static void micro_batches_gradients(GPT *model, MicroBatches *micro, const int *inputs, const int *targets, int B,
                                    int t, uint64_t dropout_seed) {
    GPT *view = &micro->views[omp_get_thread_num()];
    // the view's packed weights (its kernels' pack_weights) packed from this step's weights,
    // once for all the micro-batches this thread takes
#pragma omp parallel num_threads(1)
    gpt_params_changed(view);
    if (omp_get_thread_num() == 0) micro->next = 0;
    team_barrier();
    for (;;) {
        int m;
#pragma omp atomic capture
        m = micro->next++;
        if (m >= micro->count) break;
        micro_batch_gradients(view, micro, m, inputs, targets, B, t, dropout_seed);
    }
    team_barrier();
    add_micro_batches(model, micro, B, t);
}

double train_step(GPT *model, AdamW *opt, const int *inputs, const int *targets, int B, int t,
                  uint64_t dropout_seed, float lr, float max_norm) {
    MicroBatches *micro = model->micro && model->micro->count * model->micro->sequences == B ? model->micro : NULL;
    int threads = tuner_start(&model->step_tuner, model, (long)B * t);
    if (micro && threads > micro->threads) threads = micro->threads;
    double norm = 0.0;
#pragma omp parallel num_threads(threads)
    {
        if (micro) {
            micro_batches_gradients(model, micro, inputs, targets, B, t, dropout_seed);
        } else {
            const ForwardPass pass = {.training = 1, .dropout_seed = dropout_seed};
            gpt_zero_grad(model);
            gpt_forward(model, inputs, targets, B, t, &pass);
            gpt_backward(model);
        }
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
