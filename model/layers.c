// Forward and backward of each layer except the linear layers, LayerNorm and GELU (the
// kernels') and attention (attention.c).
// Each is a team function (parallel.h): loops over rows are split over the threads of the
// calling team, and every sum has an order of its own, the same for any thread count.
#include "layers.h"

#include <string.h>

#include "../kernels/parallel.h"

// ----------------------------------------------------------------------------
// token + position embedding

void encoder_forward(float *out, const int *tokens, const float *wte, const float *wpe, int B, int t, int C) {
#pragma omp for schedule(static) nowait
    for (int n = 0; n < B * t; n++) {
        const float *we = wte + (size_t)tokens[n] * C;
        float *o = out + (size_t)n * C;
        if (!wpe) {
            memcpy(o, we, (size_t)C * sizeof(float));
            continue;
        }
        const float *pe = wpe + (size_t)(n % t) * C;
#pragma omp simd
        for (int i = 0; i < C; i++) o[i] = we[i] + pe[i];
    }
    team_barrier();
}

void encoder_backward(float *dwte, float *dwpe, const float *dout, const int *tokens, int B, int t, int C) {
    // Rows with the same token or position add into the same gradient row, so threads split
    // the channels instead: each thread owns a slice of columns and visits rows in order.
#pragma omp for schedule(static) nowait
    for (int c0 = 0; c0 < C; c0 += 16) {
        int c1 = c0 + 16 < C ? c0 + 16 : C;
        for (int n = 0; n < B * t; n++) {
            const float *g = dout + (size_t)n * C;
            float *dwe = dwte + (size_t)tokens[n] * C;
#pragma omp simd
            for (int i = c0; i < c1; i++) dwe[i] += g[i];
            if (!dwpe) continue;
            float *dpe = dwpe + (size_t)(n % t) * C;
#pragma omp simd
            for (int i = c0; i < c1; i++) dpe[i] += g[i];
        }
    }
    team_barrier();
}

// ----------------------------------------------------------------------------
// residual and dropout

void residual_forward(float *out, const float *a, const float *b, int n) {
#pragma omp for simd schedule(static) nowait
    for (int i = 0; i < n; i++) out[i] = a[i] + b[i];
    team_barrier();
}

uint64_t dropout_key(uint64_t step_seed, int layer, int site) {
    return hash_mix64(hash_mix64(step_seed) + (uint64_t)layer * 3u + (uint64_t)site + 1u);
}

void dropout_forward(float *out, const float *inp, int n, const Dropout *drop) {
    if (!drop || drop->p <= 0.0f) {
        if (out != inp) {
#pragma omp for simd schedule(static) nowait
            for (int i = 0; i < n; i++) out[i] = inp[i];
            team_barrier();
        }
        return;
    }
    const float keep_scale = 1.0f / (1.0f - drop->p);
#pragma omp for schedule(static) nowait
    for (int i = 0; i < n; i++)
        out[i] = dropout_keep(drop->key, drop->first + (uint64_t)i, drop->p) ? inp[i] * keep_scale : 0.0f;
    team_barrier();
}

void dropout_backward(float *dinp, const float *dout, int n, const Dropout *drop) {
    if (!drop || drop->p <= 0.0f) {
#pragma omp for simd schedule(static) nowait
        for (int i = 0; i < n; i++) dinp[i] += dout[i];
        team_barrier();
        return;
    }
    const float keep_scale = 1.0f / (1.0f - drop->p);
#pragma omp for schedule(static) nowait
    for (int i = 0; i < n; i++)
        if (dropout_keep(drop->key, drop->first + (uint64_t)i, drop->p)) dinp[i] += dout[i] * keep_scale;
    team_barrier();
}

// ----------------------------------------------------------------------------
// softmax and cross-entropy

void crossentropy_forward(float *losses, float *probs, const float *logits, const int *targets, int N, int V) {
#pragma omp for schedule(static) nowait
    for (int n = 0; n < N; n++) {
        const float *z = logits + (size_t)n * V;
        float m, logsum = logits_softmax(probs + (size_t)n * V, z, V, &m);  // the kernels' (kernels.h)
        // -log p(target) = log sum exp(z - m) - (z_target - m), without log of a tiny p
        losses[n] = logsum - (z[targets[n]] - m);
    }
    team_barrier();
}

void crossentropy_backward(float *dlogits, const float *probs, const int *targets, float dloss, int N, int V) {
#pragma omp for schedule(static) nowait
    for (int n = 0; n < N; n++) {
        const float *p = probs + (size_t)n * V;
        float *dz = dlogits + (size_t)n * V;
        for (int v = 0; v < V; v++) dz[v] += (p[v] - (v == targets[n] ? 1.0f : 0.0f)) * dloss;
    }
    team_barrier();
}

void softmax_forward(float *probs, const float *logits, int N, int V) {
#pragma omp for schedule(static) nowait
    for (int n = 0; n < N; n++) {
        float m;
        logits_softmax(probs + (size_t)n * V, logits + (size_t)n * V, V, &m);
    }
    team_barrier();
}
