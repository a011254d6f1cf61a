// Sums of floats in an order the source fixes, not the compiler: SUM_LANES partial sums, lane
// l taking terms l, l + SUM_LANES, l + 2 SUM_LANES, ..., then the lanes added in one tree. A
// compiler vectorises the lanes as they are written (nothing to reassociate), so every
// compiler and instruction set gives the same bits. An `omp simd reduction` leaves the order
// to the compiler: gcc's for x86-64's baseline (4 lanes, the tail into the first) and clang's
// for WebAssembly (its lanes interleaved) differ in the last bits, and the page's training
// (web/) would drift from ./train's by 1e-4 in 200 steps.
#ifndef CHARGPT_FIXED_SUM_H
#define CHARGPT_FIXED_SUM_H

#define SUM_LANES 16

// The lanes' total: lane l + lane l + 8, then + 4, + 2, + 1 apart. (Unrolled and each step a
// vector: gcc had kept the tree a loop of single floats through memory, whose steps waited on
// each other's stores.)
static inline float sum_lanes(float lanes[SUM_LANES]) {
#pragma GCC unroll 4
    for (int half = SUM_LANES / 2; half >= 1; half /= 2)
#pragma omp simd
        for (int l = 0; l < half; l++) lanes[l] += lanes[l + half];
    return lanes[0];
}

// x[0] + ... + x[n - 1]
static inline float sum_fixed(const float *x, int n) {
    float lanes[SUM_LANES] = {0};
    int i = 0;
    for (; i + SUM_LANES <= n; i += SUM_LANES)
#pragma omp simd
        for (int l = 0; l < SUM_LANES; l++) lanes[l] += x[i + l];
    for (int l = 0; i + l < n; l++) lanes[l] += x[i + l];
    return sum_lanes(lanes);
}

// x[0] y[0] + ... + x[n - 1] y[n - 1]
static inline float dot_fixed(const float *x, const float *y, int n) {
    float lanes[SUM_LANES] = {0};
    int i = 0;
    for (; i + SUM_LANES <= n; i += SUM_LANES)
#pragma omp simd
        for (int l = 0; l < SUM_LANES; l++) lanes[l] += x[i + l] * y[i + l];
    for (int l = 0; i + l < n; l++) lanes[l] += x[i + l] * y[i + l];
    return sum_lanes(lanes);
}

// x[0]^2 + ... + x[n - 1]^2 in double: SUM_LANES / 2 lanes of doubles (the bytes of SUM_LANES
// floats), lane l taking the terms l, l + SUM_LANES / 2, ..., then the lanes added in a tree
static inline double sum_squares_double(const float *x, long n) {
    enum { LANES = SUM_LANES / 2 };
    double lanes[LANES] = {0};
    long i = 0;
    for (; i + LANES <= n; i += LANES)
#pragma omp simd
        for (int l = 0; l < LANES; l++) lanes[l] += (double)x[i + l] * x[i + l];
    for (int l = 0; i + l < n; l++) lanes[l] += (double)x[i + l] * x[i + l];
    for (int half = LANES / 2; half >= 1; half /= 2)
        for (int l = 0; l < half; l++) lanes[l] += lanes[l + half];
    return lanes[0];
}

#endif
