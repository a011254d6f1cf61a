// The train/validation split of the token stream and the batches drawn from it.
#ifndef CHARGPT_BATCH_H
#define CHARGPT_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include "../common/errors.h"
#include "../common/rng.h"

// Views into one token array (not owned): train = tokens[0, train_len),
// val = tokens[train_len, train_len + val_len). A task's (data/task.h) has no train split (its
// batches are made at each step) and marks the part of val its accuracy counts.
typedef struct {
    const int *train;
    size_t train_len;
    const int *val;
    size_t val_len;
    const unsigned char *val_scored;  // (val_len): 1 where a task's token is predictable, or NULL
} Dataset;

// Puts the first (1 - val_fraction) of the n tokens (rounded down) in train and the rest in
// val. val_fraction is in [0, 1); 0 means no validation split (val_len 0). Each split in use
// must hold at least block_size + 1 tokens (one window of inputs plus the shifted target).
int dataset_split(Dataset *d, const int *tokens, size_t n, float val_fraction, int block_size,
                  char err[ERR_LEN]);

// B windows of T + 1 tokens from train at offsets uniform in [0, train_len - T - 1]:
// inputs (B, T) = window[0, T), targets (B, T) = window[1, T]. Needs train_len >= T + 1.
void dataset_train_batch(const Dataset *d, Rng *rng, int B, int T, int *inputs, int *targets);

// Batch batch_index of a fixed evaluation set of num_batches * B windows of val, spread
// evenly from its start to its end: window k of K starts at k * (val_len - T - 1) / (K - 1).
// The same windows at every call; needs val_len >= T + 1.
void dataset_val_batch(const Dataset *d, int batch_index, int num_batches, int B, int T,
                       int *inputs, int *targets);
// Where window k of those K windows starts in val.
size_t dataset_val_start(const Dataset *d, uint64_t k, uint64_t K, int T);

#endif
