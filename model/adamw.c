// AdamW and gradient clipping, as team functions (parallel.h).
#include "adamw.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/platform.h"
#include "../kernels/fixed_sum.h"
#include "../kernels/parallel.h"

int adamw_init(AdamW *opt, const GPT *model, float beta1, float beta2, float eps,
               float weight_decay, char err[ERR_LEN]) {
    return adamw_init_range(opt, model, 0, model->num_parameters, beta1, beta2, eps, weight_decay, err);
}

int adamw_init_range(AdamW *opt, const GPT *model, size_t first, size_t n, float beta1, float beta2,
                     float eps, float weight_decay, char err[ERR_LEN]) {
    memset(opt, 0, sizeof(*opt));
    opt->beta1 = beta1;
    opt->beta2 = beta2;
    opt->eps = eps;
    opt->weight_decay = weight_decay;
    opt->first = first;
    opt->n = n;
    opt->m = gpt_alloc_floats(n);  // aligned as the parameters: whole vectors for the kernels
    opt->v = gpt_alloc_floats(n);
    opt->decay = calloc(n ? n : 1, 1);
    if (!opt->m || !opt->v || !opt->decay) {
        snprintf(err, ERR_LEN, "out of memory for the optimizer state of %zu parameters", n);
        adamw_free(opt);
        return -1;
    }
    // each tensor's decay flag over the part of it in the range
    int count = gpt_num_tensors(&model->config);
    for (int i = 0; i < count; i++) {
        TensorInfo info;
        gpt_tensor_info(&model->config, i, &info);
        size_t begin = info.offset > first ? info.offset : first;
        size_t end = info.offset + info.size < first + n ? info.offset + info.size : first + n;
        if (begin < end) memset(opt->decay + (begin - first), info.decay, end - begin);
    }
    return 0;
}

void adamw_free(AdamW *opt) {
    platform_aligned_free(opt->m);
    platform_aligned_free(opt->v);
    free(opt->decay);
    memset(opt, 0, sizeof(*opt));
}

// Sum of squares in double over fixed chunks (each in fixed_sum.h's lanes), the chunk sums
// added in order: the result does not depend on the number of threads.
#define NORM_CHUNK 4096

static double chunk_sum_of_squares(const float *grads, size_t n, size_t k) {
    size_t end = (k + 1) * NORM_CHUNK < n ? (k + 1) * NORM_CHUNK : n;
    return sum_squares_double(grads + k * NORM_CHUNK, (long)(end - k * NORM_CHUNK));
}

// Every thread of the team returns the sum of squares. The chunk sums go to a buffer the
// first thread allocates for the team; without one, every thread sums all the chunks.
static double sum_of_squares_team(const float *grads, size_t n) {
    size_t chunks = (n + NORM_CHUNK - 1) / NORM_CHUNK;
    double *sums = team_share(omp_get_thread_num() == 0 ? malloc(chunks * sizeof(double)) : NULL);
    if (sums) {
#pragma omp for schedule(static) nowait
        for (size_t k = 0; k < chunks; k++) sums[k] = chunk_sum_of_squares(grads, n, k);
        team_barrier();
    }
    double total = 0.0;
    for (size_t k = 0; k < chunks; k++) total += sums ? sums[k] : chunk_sum_of_squares(grads, n, k);
    team_barrier();  // every thread has read the sums
    if (omp_get_thread_num() == 0) free(sums);
    return total;
}

double grad_sum_of_squares(const float *grads, size_t n) {
    if (in_team()) return sum_of_squares_team(grads, n);
    double sum = 0.0;
#pragma omp parallel
    {
        double mine = sum_of_squares_team(grads, n);
        if (omp_get_thread_num() == 0) sum = mine;
    }
    return sum;
}

static void clip_team(float *grads, size_t n, float scale) {
#pragma omp for simd schedule(static) nowait
    for (size_t i = 0; i < n; i++) grads[i] *= scale;
    team_barrier();
}

int grad_clipped(double norm, float max_norm) { return max_norm > 0.0f && norm > max_norm; }

void grad_clip(float *grads, size_t n, double norm, float max_norm) {
    if (!grad_clipped(norm, max_norm)) return;
    float scale = (float)(max_norm / (norm + 1e-6));
    if (in_team()) {
        clip_team(grads, n, scale);
        return;
    }
#pragma omp parallel
    clip_team(grads, n, scale);
}

// The update k = step over the team (the per-parameter loop: kernels.h's adamw_step).
static void update_team(const AdamW *opt, float *params, const float *grads, float lr, long step) {
    AdamWStep s = {.lr = lr, .beta1 = opt->beta1, .beta2 = opt->beta2, .eps = opt->eps,
                   .weight_decay = opt->weight_decay, .bias1 = 1.0f - powf(opt->beta1, (float)step),
                   .bias2 = 1.0f - powf(opt->beta2, (float)step)};
    adamw_step(params, grads, opt->m, opt->v, opt->decay, opt->n, &s);
}

void adamw_update(AdamW *opt, float *params, const float *grads, float lr) {
    long step = opt->step + 1;
    if (in_team()) {
        update_team(opt, params, grads, lr, step);  // ends when every thread has read opt->step
        if (omp_get_thread_num() == 0) opt->step = step;
        team_barrier();
        return;
    }
#pragma omp parallel
    update_team(opt, params, grads, lr, step);
    opt->step = step;
}

double adamw_last_update_sum_of_squares(const AdamW *opt, const float *params, float lr, size_t first, size_t n) {
    if (opt->step < 1) return 0.0;
    size_t begin = first > opt->first ? first : opt->first;
    size_t end = first + n < opt->first + opt->n ? first + n : opt->first + opt->n;
    const double bias1 = 1.0 - pow(opt->beta1, (double)opt->step), bias2 = 1.0 - pow(opt->beta2, (double)opt->step);
    double sum = 0.0;
    for (size_t g = begin; g < end; g++) {
        size_t i = g - opt->first;
        double a = (opt->m[i] / bias1) / (sqrt(opt->v[i] / bias2) + opt->eps);
        double wd = opt->decay[i] ? opt->weight_decay : 0.0;
        double before = (params[i] + lr * a) / (1.0 - lr * wd);
        double update = lr * (a + wd * before);
        sum += update * update;
    }
    return sum;
}
