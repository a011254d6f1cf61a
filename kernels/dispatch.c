// Which kernels run: a backend (backend.h) from the table of those this build has, fastest
// first, that the CPU runs, or the plain loops (plain.c), as CHARGPT_KERNELS says; and the
// fast LayerNorm and pointwise kernels (fast.h), the backend's.
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "fast.h"
#include "kernels.h"

extern const Backend backend_portable;
#if defined(__x86_64__)
extern const Backend backend_avx2, backend_avx512, backend_avx512_bf16;
#if defined(__linux__)
extern const Backend backend_avx512_amx;  // AMX's tiles: Linux only (bf16_avx512.c)
#endif
#define BF16_DOT_BACKEND backend_avx512_bf16
#define BF16_DOT_INSTRUCTIONS "AVX512_BF16's vdpbf16ps"
#elif defined(__aarch64__)
extern const Backend backend_neon, backend_neon_bf16;
#define BF16_DOT_BACKEND backend_neon_bf16
#define BF16_DOT_INSTRUCTIONS "FEAT_BF16's BFDOT"
#elif defined(__wasm__)
extern const Backend backend_wasm_simd128;
#endif

// Fastest first; a new backend is a line here (and its file, backend.h).
static const Backend *const backends[] = {
#if defined(__x86_64__)
#if defined(__linux__)
    &backend_avx512_amx,
#endif
    &backend_avx512_bf16,
    &backend_avx512,
    &backend_avx2,
#elif defined(__aarch64__)
    &backend_neon_bf16,
    &backend_neon,
#elif defined(__wasm__)
    &backend_wasm_simd128,
#endif
    &backend_portable,
};

#define NUM_BACKENDS ((int)(sizeof(backends) / sizeof(backends[0])))
#define PLAIN "plain"  // the plain loops' name: they run on any CPU, after the backends in the lists

static const Backend *active;  // NULL: the plain loops
static int from_environment;   // 1: the kernels in use are CHARGPT_KERNELS's
static pthread_once_t chosen = PTHREAD_ONCE_INIT;

// The first backend of the table this CPU runs, passing over one that is slower here than
// the next (backend.h: with the same bits).
static const Backend *fastest(void) {
    for (int i = 0; i < NUM_BACKENDS; i++)
        if (backends[i]->cpu_runs() &&
            !(backends[i]->slower_than_next && i + 1 < NUM_BACKENDS && backends[i + 1]->cpu_runs() &&
              backends[i]->slower_than_next()))
            return backends[i];
    return &backend_portable;
}

// The backends this CPU runs, the default choice first, then the others in the table's
// order; returns how many (at most max).
static int runnable(const Backend **list, int max) {
    const Backend *first = fastest();
    int n = 0;
    if (max > 0) list[n++] = first;
    for (int i = 0; i < NUM_BACKENDS && n < max; i++)
        if (backends[i] != first && backends[i]->cpu_runs()) list[n++] = backends[i];
    return n;
}

// The names of the kernels (only those this CPU runs, in runnable's order, when only_runnable
// is 1) as one text.
static void names_text(int only_runnable, char *text, size_t n) {
    const Backend *list[NUM_BACKENDS];
    int count = only_runnable ? runnable(list, NUM_BACKENDS) : NUM_BACKENDS;
    text[0] = '\0';
    for (int i = 0; i < count; i++)
        snprintf(text + strlen(text), n - strlen(text), "%s%s", text[0] ? ", " : "",
                 (only_runnable ? list[i] : backends[i])->name);
    snprintf(text + strlen(text), n - strlen(text), ", " PLAIN);
}

// The kernels named `name`, if this CPU runs them: 0 and *b the backend (NULL for the plain
// loops); else -1 with err saying why.
static int named(const char *name, const Backend **b, char err[ERR_LEN]) {
    char known[256];
    *b = NULL;
    if (strcmp(name, PLAIN) == 0) return 0;
    for (int i = 0; i < NUM_BACKENDS; i++) {
        if (strcmp(backends[i]->name, name) != 0) continue;
        if (backends[i]->cpu_runs()) {
            *b = backends[i];
            return 0;
        }
        names_text(1, known, sizeof(known));
        snprintf(err, ERR_LEN, "the %s kernels need %s, which this CPU does not have (it runs: %s)", name,
                 backends[i]->needs, known);
        return -1;
    }
    names_text(0, known, sizeof(known));
    snprintf(err, ERR_LEN, "unknown kernels '%s' (this build has: %s)", name, known);
    return -1;
}

// Without kernels_init: CHARGPT_KERNELS's kernels when this CPU runs them, else the fastest.
static void choose_default(void) {
    char err[ERR_LEN];
    const char *name = getenv("CHARGPT_KERNELS");
    const Backend *b;
    from_environment = name && *name && named(name, &b, err) == 0;
    active = from_environment ? b : fastest();
}

const Backend *kernels_backend(void) {
    pthread_once(&chosen, choose_default);
    return active;
}

int kernels_init(char err[ERR_LEN]) {
    pthread_once(&chosen, choose_default);
    const char *name = getenv("CHARGPT_KERNELS");
    const Backend *b;
    if (!name || !*name) return 0;
    if (named(name, &b, err) != 0) {
        char why[ERR_LEN];
        snprintf(why, ERR_LEN, "CHARGPT_KERNELS: %s", err);
        snprintf(err, ERR_LEN, "%s", why);
        return -1;
    }
    return 0;
}

int kernels_use(const char *name, char err[ERR_LEN]) {
    pthread_once(&chosen, choose_default);
    const Backend *b;
    if (named(name, &b, err) != 0) return -1;
    active = b;
    from_environment = 0;
    return 0;
}

const char *kernels_name(void) {
    const Backend *b = kernels_backend();
    return b ? b->name : PLAIN;
}

int kernels_available(const char **names, int max) {
    const Backend *list[NUM_BACKENDS];
    int count = runnable(list, NUM_BACKENDS), n = 0;
    for (int i = 0; i < count && n < max; i++) names[n++] = list[i]->name;
    if (n < max) names[n++] = PLAIN;
    return n;
}

void kernels_available_text(char *text, size_t n) { names_text(1, text, n); }

int kernels_precision_note(Precision precision, char *text, size_t n) {
    const Backend *b = kernels_backend();
    if (precision != PRECISION_BF16 || !b || !b->bf16_cost) return 0;
#if defined(BF16_DOT_BACKEND)
    int cpu_has_them = BF16_DOT_BACKEND.cpu_runs();
#else
    int cpu_has_them = 0;
#define BF16_DOT_INSTRUCTIONS "bf16 dot-product instructions"
#endif
    snprintf(text, n,
             "note: %s, so the %s kernels widen bf16 operands to fp32 as they pack them and multiply them on their "
             "fp32 tiles: %s",
             !cpu_has_them ? "this CPU has no bf16 dot-product instructions (" BF16_DOT_INSTRUCTIONS ")"
             : b == fastest() ? "this CPU's bf16 dot products (" BF16_DOT_INSTRUCTIONS ") run fewer FLOPs a second "
                                "than its fp32 multiply-adds"
                              : "this CPU's bf16 dot products (" BF16_DOT_INSTRUCTIONS ") go unused by the kernels "
                                "CHARGPT_KERNELS chose",
             b->name, b->bf16_cost);
    return 1;
}

void precision_describe(Precision precision, char *text, size_t n) {
    const Backend *b = kernels_backend();
    char products[32] = "";
    if (precision == PRECISION_BF16)
        snprintf(products, sizeof(products), " (%s)", b ? b->bf16->name : "rounded in the loops");
    snprintf(text, n, "%s%s, kernels %s%s", precision_name(precision), products, kernels_name(),
             from_environment ? " (CHARGPT_KERNELS)" : "");
}

void fast_layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *weight,
                            const float *bias, int N, int C) {
    kernels_backend()->layernorm(out, mean, rstd, inp, weight, bias, N, C);
}

void fast_layernorm_backward(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                             const float *weight, const float *mean, const float *rstd, int N, int C) {
    kernels_backend()->layernorm_gradient(dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C);
}

void fast_gelu_forward(float *out, float *slope, const float *inp, int n) {
    kernels_backend()->gelu(out, slope, inp, n);
}

void fast_gelu_backward(float *dinp, const float *inp, const float *dout, int n) {
    kernels_backend()->gelu_gradient(dinp, inp, dout, n);
}

void fast_gelu_backward_slope(float *dinp, const float *slope, const float *dout, int n) {
    kernels_backend()->gelu_slope_gradient(dinp, slope, dout, n);
}

void fast_softmax_row(float *row, int n, float scale) { kernels_backend()->row_softmax(row, n, scale); }

void fast_softmax_row_backward(float *dw, const float *w, int n, float scale) {
    kernels_backend()->row_softmax_gradient(dw, w, n, scale);
}

float fast_logits_softmax(float *probs, const float *logits, int n, float *max) {
    return kernels_backend()->softmax_logsum(probs, logits, n, max);
}

void fast_adamw_step(float *params, const float *grads, float *m, float *v, const unsigned char *decay, size_t n,
                     const AdamWStep *s) {
    kernels_backend()->adamw(params, grads, m, v, decay, n, s);
}
