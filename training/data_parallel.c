#include "data_parallel.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../dist/dist.h"
#include "../model/train_step.h"

int data_parallel_plan(DataParallel *dp, int B, int T, int grad_accum, int zero, size_t num_parameters,
                       char err[ERR_LEN]) {
    memset(dp, 0, sizeof(*dp));
    int N = dist_size();
    if (B % ((long)N * grad_accum) != 0) {
        if (N > 1)
            snprintf(err, ERR_LEN, "--batch-size %d is not divisible by %d processes x --grad-accum %d", B, N,
                     grad_accum);
        else
            snprintf(err, ERR_LEN, "--batch-size %d is not divisible by --grad-accum %d", B, grad_accum);
        return -1;
    }
    // MPI counts are ints
    if (N > 1 && num_parameters > (size_t)2147483647) {
        snprintf(err, ERR_LEN, "%zu parameters are more than the 2^31 - 1 that one MPI message can carry",
                 num_parameters);
        return -1;
    }
    dp->B = B;
    dp->T = T;
    dp->grad_accum = grad_accum;
    dp->zero = zero && N > 1;
    dp->rows = B / (N * grad_accum);
    dp->num_parameters = num_parameters;
    dp->shard_first = 0;
    dp->shard_n = num_parameters;
    if (dp->zero) {
        size_t end;
        dist_share(num_parameters, dist_rank(), &dp->shard_first, &end);
        dp->shard_n = end - dp->shard_first;
    }
    return 0;
}

int data_parallel_init(DataParallel *dp, const GPT *model, AdamW *opt, float beta1, float beta2, float eps,
                       float weight_decay, char err[ERR_LEN]) {
    return adamw_init_range(opt, model, dp->shard_first, dp->shard_n, beta1, beta2, eps, weight_decay, err);
}

void data_parallel_free(DataParallel *dp) { data_parallel_release_optimizer(dp); }

// data_parallel_step's whole-batch case, train_step's
static int whole_batch(const DataParallel *dp) { return dist_size() == 1 && dp->grad_accum == 1; }

int data_parallel_micro_sequences(const DataParallel *dp, const GPTConfig *config, Precision precision) {
    if (!whole_batch(dp)) return 0;
    int sequences = train_step_micro_sequences(config, precision, dp->B);
    return sequences < dp->B ? sequences : 0;
}

// Forward and backward of this process's rows of every micro-batch, in one parallel region;
// returns the sum of their token losses.
static double local_gradients(DataParallel *dp, GPT *model, const int *inputs, const int *targets,
                              uint64_t dropout_seed, int threads) {
    const int T = dp->T, micro = dp->B / dp->grad_accum;
    double loss_sum = 0.0;
#pragma omp parallel num_threads(threads)
    {
        gpt_zero_grad(model);
        for (int k = 0; k < dp->grad_accum; k++) {
            int offset = k * micro + dist_rank() * dp->rows;  // the first global row of this part
            const ForwardPass pass = {
                .training = 1, .dropout_seed = dropout_seed, .batch_offset = offset, .batch_rows = dp->B};
            gpt_forward(model, inputs + (size_t)offset * T, targets + (size_t)offset * T, dp->rows, T, &pass);
            gpt_backward(model);
            if (omp_get_thread_num() == 0) loss_sum += model->loss_sum;
        }
    }
    return loss_sum;
}

double data_parallel_step(DataParallel *dp, GPT *model, AdamW *opt, const int *inputs, const int *targets,
                          uint64_t dropout_seed, float lr, float max_norm) {
    if (whole_batch(dp))  // the whole batch in one step (perhaps in micro-batches: train_step.h)
        return train_step(model, opt, inputs, targets, dp->B, dp->T, dropout_seed, lr, max_norm);

    size_t P = model->num_parameters;
    int threads = tuner_start(&dp->tuner, model, (long)dp->rows * dp->T);
    double loss_sum = local_gradients(dp, model, inputs, targets, dropout_seed, threads);
    tuner_stop(&dp->tuner, 1.0);
    dist_sum_doubles(&loss_sum, 1);
    model->mean_loss = (float)(loss_sum / ((double)dp->B * dp->T));

    // the gradient summed over the processes: all of it, or with ZeRO this process's shard
    if (dp->zero) dist_reduce_scatter_floats(model->grads_memory, P);
    else dist_sum_floats(model->grads_memory, P);
    double norm, sum_of_squares = grad_sum_of_squares(model->grads_memory + dp->shard_first, dp->shard_n);
    if (dp->zero) dist_sum_doubles(&sum_of_squares, 1);  // the shards' sums
    if (!train_step_update(model, opt, sum_of_squares, lr, max_norm, &norm)) return norm;
    if (dp->zero) dist_all_gather_floats(model->params_memory, P);
    gpt_params_changed(model);  // the kernels' copies of the parameters
    return norm;
}

int data_parallel_gather_optimizer(DataParallel *dp, GPT *model, const AdamW *opt, AdamW *copy, const AdamW **full,
                                   char err[ERR_LEN]) {
    *full = NULL;
    if (!dp->zero) {
        if (dist_rank() == 0) *full = opt;
        return 0;
    }
    size_t P = dp->num_parameters;
    int failed = 0;
    if (dist_rank() == 0) {
        dp->full_v = malloc(P * sizeof(float));
        failed = !dp->full_v;
    }
    if (dist_agree(failed, 0).status) {
        data_parallel_release_optimizer(dp);
        snprintf(err, ERR_LEN, "out of memory on rank 0 for the %zu optimizer moments a checkpoint holds", P);
        return -1;
    }
    dist_gather_floats(opt->m, model->grads_memory, P);
    dist_gather_floats(opt->v, dp->full_v, P);
    if (dist_rank() == 0) {
        *copy = *opt;
        copy->first = 0;
        copy->n = P;
        copy->m = model->grads_memory;
        copy->v = dp->full_v;
        copy->decay = NULL;  // a checkpoint keeps the moments and the step only
        *full = copy;
    }
    return 0;
}

void data_parallel_release_optimizer(DataParallel *dp) {
    free(dp->full_v);
    dp->full_v = NULL;
}
