// Which backend (backend.h) runs the kernels: the table of those this build has, fastest
// first, the CPU's answer to what it runs, and CHARGPT_KERNELS.
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "kernels.h"

extern const Backend backend_portable;
#if defined(__x86_64__)
extern const Backend backend_avx2, backend_avx512, backend_avx512_bf16;
#endif

// Fastest first; a new backend is a line here (and its file, backend.h).
static const Backend *const backends[] = {
#if defined(__x86_64__)
    &backend_avx512_bf16,
    &backend_avx512,
    &backend_avx2,
#endif
    &backend_portable,
};
#define NUM_BACKENDS ((int)(sizeof(backends) / sizeof(backends[0])))

static const Backend *active;
static int from_environment;  // 1: the backend in use is CHARGPT_KERNELS's
static pthread_once_t chosen = PTHREAD_ONCE_INIT;

static const Backend *fastest(void) {
    for (int i = 0; i < NUM_BACKENDS; i++)
        if (backends[i]->cpu_runs()) return backends[i];
    return &backend_portable;
}

// The names of the backends (only those this CPU runs, when runnable is 1) as one text.
static void names_text(int runnable, char *text, size_t n) {
    text[0] = '\0';
    for (int i = 0; i < NUM_BACKENDS; i++)
        if (!runnable || backends[i]->cpu_runs())
            snprintf(text + strlen(text), n - strlen(text), "%s%s", text[0] ? ", " : "", backends[i]->name);
}

// The backend named `name` if this CPU runs it; else NULL with err saying why.
static const Backend *named(const char *name, char err[ERR_LEN]) {
    char known[256];
    for (int i = 0; i < NUM_BACKENDS; i++) {
        if (strcmp(backends[i]->name, name) != 0) continue;
        if (backends[i]->cpu_runs()) return backends[i];
        names_text(1, known, sizeof(known));
        snprintf(err, ERR_LEN, "the %s kernels need %s, which this CPU does not have (it runs: %s)", name,
                 backends[i]->needs, known);
        return NULL;
    }
    names_text(0, known, sizeof(known));
    snprintf(err, ERR_LEN, "unknown kernels '%s' (this build has: %s)", name, known);
    return NULL;
}

// Without kernels_init: CHARGPT_KERNELS's backend when this CPU runs it, else the fastest.
static void choose_default(void) {
    char err[ERR_LEN];
    const char *name = getenv("CHARGPT_KERNELS");
    const Backend *b = name && *name ? named(name, err) : NULL;
    active = b ? b : fastest();
    from_environment = b != NULL;
}

const Backend *kernels_backend(void) {
    pthread_once(&chosen, choose_default);
    return active;
}

int kernels_init(char err[ERR_LEN]) {
    pthread_once(&chosen, choose_default);
    const char *name = getenv("CHARGPT_KERNELS");
    if (!name || !*name) return 0;
    if (!named(name, err)) {
        char why[ERR_LEN];
        snprintf(why, ERR_LEN, "CHARGPT_KERNELS: %s", err);
        snprintf(err, ERR_LEN, "%s", why);
        return -1;
    }
    return 0;
}

int kernels_use(const char *name, char err[ERR_LEN]) {
    pthread_once(&chosen, choose_default);
    const Backend *b = named(name, err);
    if (!b) return -1;
    active = b;
    from_environment = 0;
    return 0;
}

const char *kernels_name(void) { return kernels_backend()->name; }

int kernels_available(const char **names, int max) {
    int n = 0;
    for (int i = 0; i < NUM_BACKENDS && n < max; i++)
        if (backends[i]->cpu_runs()) names[n++] = backends[i]->name;
    return n;
}

void kernels_available_text(char *text, size_t n) { names_text(1, text, n); }

int kernels_precision_note(Precision precision, char *text, size_t n) {
    const Backend *b = kernels_backend();
    if (precision != PRECISION_BF16 || !b->bf16_cost) return 0;
    int cpu_has_them = 0;
#if defined(__x86_64__)
    cpu_has_them = backend_avx512_bf16.cpu_runs();
#endif
    snprintf(text, n,
             "note: %s, so the %s kernels widen bf16 operands to fp32 as they pack them and multiply them on their "
             "fp32 tiles: a training step in bf16 takes %s the time of one in fp32 on them (measured on a Xeon "
             "with these kernels forced); --precision fp32 is faster here",
             cpu_has_them ? "this CPU's bf16 dot products (AVX512_BF16) go unused by the kernels CHARGPT_KERNELS chose"
                          : "this CPU has no bf16 dot-product instructions (AVX512_BF16's vdpbf16ps)",
             b->name, b->bf16_cost);
    return 1;
}

void precision_describe(Precision precision, char *text, size_t n) {
    const Backend *b = kernels_backend();
    char products[32] = "";
    if (precision == PRECISION_BF16) snprintf(products, sizeof(products), " (%s)", b->bf16->name);
    snprintf(text, n, "%s%s, kernels %s%s", precision_name(precision), products, b->name,
             from_environment ? " (CHARGPT_KERNELS)" : "");
}

void gelu_forward(float *out, const float *inp, int n) { kernels_backend()->gelu_forward(out, inp, n); }

void gelu_backward(float *dinp, const float *inp, const float *dout, int n) {
    kernels_backend()->gelu_backward(dinp, inp, dout, n);
}

void softmax_row(float *row, int n, float scale) { kernels_backend()->softmax_row(row, n, scale); }
