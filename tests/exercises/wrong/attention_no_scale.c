// A deliberately wrong exercises/attention.c for CI (scripts/check_exercises.sh): causal
// attention whose scores are not divided by sqrt(hs). The checker must say so.
#include <math.h>

#include "../../../model/layers.h"

void attention_forward(Kernels *k, float *out, float *att, const float *qkv, const KVRows *kv, int B, int pos0, int t,
                       int H, int hs, const Dropout *drop) {
    const int A = H * hs;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < t; i++) {
                const float *q = qkv + (size_t)(b * t + i) * 3 * A + h * hs;
                float *w = att + (((size_t)b * H + h) * t + i) * t, max = -INFINITY, sum = 0.0f;
                for (int j = 0; j < t; j++) {
                    const float *key = qkv + (size_t)(b * t + j) * 3 * A + A + h * hs;
                    w[j] = 0.0f;
                    for (int d = 0; j <= i && d < hs; d++) w[j] += q[d] * key[d];  // the mistake: no / sqrtf(hs)
                    if (j <= i && w[j] > max) max = w[j];
                }
                for (int j = 0; j <= i; j++) sum += w[j] = expf(w[j] - max);
                float *o = out + (size_t)(b * t + i) * A + h * hs;
                for (int d = 0; d < hs; d++) o[d] = 0.0f;
                for (int j = 0; j <= i; j++) {
                    w[j] /= sum;
                    for (int d = 0; d < hs; d++) o[d] += w[j] * qkv[(size_t)(b * t + j) * 3 * A + 2 * A + h * hs + d];
                }
            }
}
