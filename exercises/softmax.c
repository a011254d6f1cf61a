// Exercise: softmax of one row, in place (`make exercise NAME=softmax`; docs/exercises.md).
//
// Write softmax_row: row[j] = exp(scale * row[j]) / (the sum over k < n of exp(scale * row[k]))
// for every j < n. Attention calls it on each query's scores with scale = 1/sqrt(hs).
// exp overflows a float past exp(88.7): subtracting the row's largest value from each
// before exp changes nothing in exact arithmetic and keeps every exp at most 1.
//   row (n): the scores in, the weights out (they sum to 1); scale > 0
//
// The project's solution, if you want to compare afterwards: kernels/plain.c, softmax_row.
#include "../kernels/kernels.h"

void softmax_row(float *row, int n, float scale) {
    // your code here
}
