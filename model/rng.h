// Random numbers: a seeded sequential generator (splitmix64) for initialisation and
// batch sampling, and counter-based hashing for dropout masks, so a mask is a pure function
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

// Dropout sites within a layer.
enum { DROPOUT_ATTN_WEIGHTS = 0, DROPOUT_ATTN_RESIDUAL = 1, DROPOUT_MLP_RESIDUAL = 2 };

// Key for one dropout site of one layer in one step.
uint64_t dropout_key(uint64_t step_seed, int layer, int site);
// 1 when element `index` survives dropout with probability p of zeroing.
static inline int dropout_keep(uint64_t key, uint64_t index, float p) {
    uint64_t h = hash_mix64(key ^ (index * 0x9E3779B97F4A7C15ull));
    // compare the top 24 bits as a uniform in [0,1) against p
    return (float)(h >> 40) * (1.0f / 16777216.0f) >= p;
}

#endif
