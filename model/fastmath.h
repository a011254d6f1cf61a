// Vectorisable exp and tanh in plain float arithmetic, for loops under `#pragma omp simd`
// (libm's expf/tanhf are scalar calls). Accuracy: exp about 2 ulp over the clamped range,
// tanh to about 1e-7 absolute. The whole program is built without -ffast-math; these are
// ordinary IEEE operations, so results are the same on every run.
#ifndef CHARGPT_FASTMATH_H
#define CHARGPT_FASTMATH_H

#include <stdint.h>
#include <string.h>

// exp(x) for x in [-87, 88] (clamped outside): x = n ln2 + r with |r| <= ln2/2,
// exp(r) by a degree-6 Taylor polynomial, 2^n built in the exponent bits.
#pragma omp declare simd notinbranch
static inline float exp_fast(float x) {
    x = x < -87.0f ? -87.0f : x;
    x = x > 88.0f ? 88.0f : x;
    const float round_magic = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
    float n = (x * 1.44269504088896341f + round_magic) - round_magic;
    float r = x - n * 0.693145751953125f;      // ln2 split in a high part exact in float
    r = r - n * 1.428606765330187045e-06f;     // and the low remainder
    float p = 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    int32_t bits = ((int32_t)n + 127) << 23;
    float scale;
    memcpy(&scale, &bits, sizeof(scale));
    return p * scale;
}

// tanh(x) = sign(x) (1 - e) / (1 + e), e = exp(-2|x|)
#pragma omp declare simd notinbranch
static inline float tanh_fast(float x) {
    float ax = x < 0.0f ? -x : x;
    float e = exp_fast(-2.0f * ax);
    float r = (1.0f - e) / (1.0f + e);
    return x < 0.0f ? -r : r;
}

#endif
