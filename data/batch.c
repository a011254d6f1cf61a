#include "batch.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// The shortest decimal that reads back as f, as a double: 0.1f (0.100000001490116...)
// becomes 0.1, so that a 10% split of 1000 characters gives 900 for training, not 899.
static double float_as_decimal(float f) {
    char buf[32];
    for (int digits = 1; digits <= 9; digits++) {
        snprintf(buf, sizeof(buf), "%.*g", digits, (double)f);
        if (strtof(buf, NULL) == f) return strtod(buf, NULL);
    }
    return (double)f;
}

int dataset_split(Dataset *d, const int *tokens, size_t n, float val_fraction, int block_size,
                  char err[ERR_LEN]) {
    memset(d, 0, sizeof(*d));
    if (!(val_fraction >= 0.0f && val_fraction < 1.0f)) {
        snprintf(err, ERR_LEN, "--val-fraction must be in [0, 1), got %g", (double)val_fraction);
        return -1;
    }
    if (block_size < 1) {
        snprintf(err, ERR_LEN, "--block-size must be at least 1, got %d", block_size);
        return -1;
    }
    // rounded down, like nanoGPT's int(0.9 * n)
    size_t train_len = (size_t)floor((1.0 - float_as_decimal(val_fraction)) * (double)n);
    if (train_len > n) train_len = n;
    size_t val_len = n - train_len;
    size_t need = (size_t)block_size + 1;
    if (train_len < need) {
        snprintf(err, ERR_LEN, "the training split is too short: it has %zu characters (of %zu "
                 "in the corpus) but block size %d needs at least %zu; use a smaller "
                 "--block-size or --val-fraction", train_len, n, block_size, need);
        return -1;
    }
    if (val_fraction > 0.0f && val_len < need) {
        snprintf(err, ERR_LEN, "the validation split is too short: it has %zu characters (of "
                 "%zu in the corpus) but block size %d needs at least %zu; use a smaller "
                 "--block-size, a larger --val-fraction, or --val-fraction 0 for no "
                 "validation", val_len, n, block_size, need);
        return -1;
    }
    d->train = tokens;
    d->train_len = train_len;
    d->val = tokens + train_len;
    d->val_len = val_len;
    return 0;
}

// Copies the window tokens[start, start + T] into one row of inputs and targets.
static void copy_window(const int *tokens, size_t start, int T, int *inputs, int *targets) {
    memcpy(inputs, tokens + start, (size_t)T * sizeof(int));
    memcpy(targets, tokens + start + 1, (size_t)T * sizeof(int));
}

void dataset_train_batch(const Dataset *d, Rng *rng, int B, int T, int *inputs, int *targets) {
    // train_len - T possible starts: 0 .. train_len - T - 1
    uint64_t num_starts = d->train_len - (size_t)T;
    for (int b = 0; b < B; b++) {
        size_t start = (size_t)rng_below(rng, num_starts);
        copy_window(d->train, start, T, inputs + (size_t)b * T, targets + (size_t)b * T);
    }
}

size_t dataset_val_start(const Dataset *d, uint64_t k, uint64_t K, int T) {
    uint64_t last_start = d->val_len - (size_t)T - 1;  // the last window ends the split
    return (size_t)(K > 1 ? k * last_start / (K - 1) : 0);
}

void dataset_val_batch(const Dataset *d, int batch_index, int num_batches, int B, int T,
                       int *inputs, int *targets) {
    uint64_t total = (uint64_t)num_batches * (uint64_t)B;  // K windows in the evaluation set
    for (int b = 0; b < B; b++) {
        uint64_t k = (uint64_t)batch_index * (uint64_t)B + (uint64_t)b;
        copy_window(d->val, dataset_val_start(d, k, total, T), T, inputs + (size_t)b * T, targets + (size_t)b * T);
    }
}
