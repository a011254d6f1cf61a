// bfloat16: the upper 16 bits of an IEEE float (sign, the same 8 exponent bits, 7 of the 23
// fraction bits), the operand type of the bf16 matrix products (matmul.h).
//
// Every path converts as AVX512_BF16's vcvtne2ps2bf16 does, so all of them round the same
// way: to nearest, ties to even; zeros and denormals become the zero of their sign (the
// instruction treats denormal inputs as zero); infinities stay; a NaN stays a NaN, made
// quiet. A bf16 keeps 8 significant bits, so the conversion's relative error is at most
// 2^-9, and the product of two bf16 values has at most 16 significant bits: it is exact in
// float (unless it falls below float's normal range, 2^-126).
#ifndef CHARGPT_BF16_H
#define CHARGPT_BF16_H

#include <stdint.h>
#include <string.h>

typedef uint16_t bf16;

#pragma omp declare simd notinbranch
static inline bf16 bf16_from_float(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof(u));
    if ((u & 0x7F800000u) == 0) return (bf16)((u >> 16) & 0x8000u);           // zero, denormal
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) return (bf16)((u >> 16) | 0x0040u);  // NaN
    // adding 0x7FFF, plus the lowest kept bit, carries into the kept bits exactly when the
    // dropped bits are above half, or half with the kept part odd
    return (bf16)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

#pragma omp declare simd notinbranch
static inline float bf16_to_float(bf16 h) {
    uint32_t u = (uint32_t)h << 16;
    float x;
    memcpy(&x, &u, sizeof(x));
    return x;
}

#endif
