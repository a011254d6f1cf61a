// Exercise: cross-entropy, backward (`make exercise NAME=crossentropy_backward`; docs/exercises.md).
//
// Write crossentropy_backward: the gradient of dloss * losses[n] with respect to row n's
// logits is dloss * (probs - onehot(targets[n])), the softmax's output less 1 at the target.
// Add (+=) it into dlogits, as every backward of model/layers.h does. dloss is the same for
// every row: 1/N for the mean over the batch's N characters.
//   dlogits (N, V) added to, probs (N, V) the forward's, targets (N)
//
// The project's solution, if you want to compare afterwards: model/layers.c, crossentropy_backward.
#include "../model/layers.h"

void crossentropy_backward(float *dlogits, const float *probs, const int *targets, float dloss, int N, int V) {
    // your code here
}
