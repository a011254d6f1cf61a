// Exercise: cross-entropy, forward (`make exercise NAME=crossentropy`; docs/exercises.md).
//
// Write crossentropy_forward: for each row n < N, probs = softmax(logits) over its V values,
// and losses[n] = -log(probs[targets[n]]), the loss in nats of predicting the right next
// character. log(sum_v exp(z_v - max)) - (z_target - max) gives the loss without taking the
// log of a probability that rounded to 0.
//   losses (N), probs (N, V), logits (N, V), targets (N), each in [0, V); losses and probs written
//
// The project's solution, if you want to compare afterwards: model/layers.c, crossentropy_forward.
#include "../model/layers.h"

void crossentropy_forward(float *losses, float *probs, const float *logits, const int *targets, int N, int V) {
    // your code here
}
