// AdamW with decoupled weight decay on matrices and embeddings only, and gradient clipping
// by global L2 norm.
#ifndef CHARGPT_ADAMW_H
#define CHARGPT_ADAMW_H

#include <stddef.h>

#include "gpt.h"

typedef struct {
    float beta1;         // 0.9
    float beta2;         // 0.99
    float eps;           // 1e-8
    float weight_decay;  // 0.1, applied to tensors whose TensorInfo.decay is 1
    // The optimizer updates parameters [first, first + n) of the model: all of them, or one
    // process's shard when the optimizer state is sharded over processes (ZeRO stage 1).
    size_t first;
    size_t n;
    float *m;            // (n) first moment, same layout as those parameters
    float *v;            // (n) second moment
    long step;           // updates done so far (the update with step k uses k = step + 1)
    unsigned char *decay;  // (n) 1 where weight decay applies
} AdamW;

// Allocates zeroed moments for every parameter of a model. Returns 0 or -1 with err.
int adamw_init(AdamW *opt, const GPT *model, float beta1, float beta2, float eps,
               float weight_decay, char err[ERR_LEN]);
// The same for parameters [first, first + n) only.
int adamw_init_range(AdamW *opt, const GPT *model, size_t first, size_t n, float beta1, float beta2,
                     float eps, float weight_decay, char err[ERR_LEN]);
void adamw_free(AdamW *opt);

// Sum of squares of the gradients, accumulated in double in a fixed order (fixed chunks, their
// sums added in order): its square root is their global L2 norm (model/train_step.h).
double grad_sum_of_squares(const float *grads, size_t n);
// As torch.nn.utils.clip_grad_norm_: when norm > max_norm, scales every gradient by
// max_norm / (norm + 1e-6). max_norm <= 0 turns clipping off.
void grad_clip(float *grads, size_t n, double norm, float max_norm);
// 1 when grad_clip scales gradients of that norm (max_norm > 0 and norm > max_norm), else 0.
int grad_clipped(double norm, float max_norm);

// One update of the optimizer's parameters with learning rate lr:
//   m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2;  mhat = m/(1-b1^k);  vhat = v/(1-b2^k)
//   p -= lr * (mhat / (sqrt(vhat) + eps) + wd * p)        (k = step + 1)
// params and grads hold the opt->n values of parameters [first, first + n).
void adamw_update(AdamW *opt, float *params, const float *grads, float lr);

// The sum of squares of what the last update (made with learning rate lr) subtracted from
// parameters [first, first + n) of the model (the part of them the optimizer holds), worked
// back from the moments it left and the parameters after it (params as adamw_update's):
// with a = mhat / (sqrt(vhat) + eps), the update was lr (a + wd p_before), and
// p_before = (p_after + lr a) / (1 - lr wd). In double; equal to the difference of the
// parameters before and after up to their rounding. 0 before the first update.
double adamw_last_update_sum_of_squares(const AdamW *opt, const float *params, float lr, size_t first, size_t n);

#endif
