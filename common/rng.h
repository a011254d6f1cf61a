// Random numbers: a seeded sequential generator (splitmix64) for initialisation, batch
// sampling and sampling text, and its bijective mix (hash_mix64), from which the model's
// dropout masks are hashed (model/layers.h: dropout_keep), so that a mask is a pure function
// of (key, element index) and the backward pass can recompute it.
#ifndef CHARGPT_RNG_H
#define CHARGPT_RNG_H

#include <stdint.h>

typedef struct {
    uint64_t state;  // the whole state: saving it in a checkpoint resumes the stream exactly
} Rng;

void rng_seed(Rng *rng, uint64_t seed);
uint64_t rng_next_u64(Rng *rng);
// uniform in [0, 1) with 24 random bits
float rng_uniform(Rng *rng);
// uniform integer in [0, n), n > 0, without modulo bias
uint64_t rng_below(Rng *rng, uint64_t n);
// standard normal (Box-Muller), computed in double
double rng_normal(Rng *rng);

// splitmix64's finaliser: a bijective 64-bit mix
uint64_t hash_mix64(uint64_t x);

#endif
