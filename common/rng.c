#include "rng.h"

#include <math.h>

uint64_t hash_mix64(uint64_t x) {
    x ^= x >> 30;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 27;
    x *= 0x94D049BB133111EBull;
    x ^= x >> 31;
    return x;
}

void rng_seed(Rng *rng, uint64_t seed) { rng->state = seed; }

uint64_t rng_next_u64(Rng *rng) {
    rng->state += 0x9E3779B97F4A7C15ull;
    return hash_mix64(rng->state);
}

float rng_uniform(Rng *rng) { return (float)(rng_next_u64(rng) >> 40) * (1.0f / 16777216.0f); }

uint64_t rng_below(Rng *rng, uint64_t n) {
    // reject the top partial range so every residue is equally likely
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do {
        x = rng_next_u64(rng);
    } while (x >= limit);
    return x % n;
}

double rng_normal(Rng *rng) {
    // u1 in (0, 1] so the log is finite
    double u1 = ((double)(rng_next_u64(rng) >> 11) + 1.0) * (1.0 / 9007199254740992.0);
    double u2 = (double)(rng_next_u64(rng) >> 11) * (1.0 / 9007199254740992.0);
    return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}
