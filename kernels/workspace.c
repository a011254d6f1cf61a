// The kernels' workspace (kernels.h): each thread's room for the heads of attention and, for
// a backend (backend.h), what its products keep: in bf16 the weights rounded and packed, the
// layers' inputs as their forwards rounded them, the team's buffer of packed operands. And
// the fast linear layers and attention heads (fast.h) on top of the backend's products.
#include "kernels.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/platform.h"
#include "backend.h"
#include "bf16.h"
#include "fast.h"
#include "parallel.h"

// What a thread keeps for attention's heads, allocated by the thread when it first needs it:
// a (t, t) buffer of floats for the caller, then in bf16 on bf16 dot products the head's
// operands rounded (HeadBf16).
typedef struct {
    float *data;
} ThreadRoom;

struct Kernels {
    const Backend *backend;                   // the one in use when it was made (its layout of panels);
                                              // NULL: the plain loops (nothing kept but the rooms)
    Precision precision;
    int rows_alone;                           // kernels_rows_alone
    int count;                                // groups of weights
    LinearWeights groups[KERNELS_MAX_GROUPS];
    int matrices;                             // weights in all groups
    KernelsShape shape;
    // bf16: every weight rounded (weights16) and packed for its forward (panels, in the
    // backend's bf16 format), and the input its latest forward rounded (inputs16: rows x cols
    // each, from the pointer `read` with `read_rows` rows; read_rows 0 while it holds none).
    // fp32 with shape.pack_weights: every weight packed for its two products (panels,
    // pack_weight_fp32), nothing else.
    bf16 *weights16, *inputs16;
    unsigned char *panels;
    struct {
        const float *read;
        int read_rows;
    } *kept;
    PackBuffer pack;                          // the team's packed operands
    ThreadRoom *room;                         // per thread
};

// ---------------------------------------------------------------------------------------
// sizes

// A head's operands in bf16: q, k, v and the output gradient g (t, hs) each, and two (t, t)
// matrices (the weights after dropout and the scores' gradient).
static size_t head_bf16_count(int t, int hs) { return (size_t)4 * t * hs + (size_t)2 * t * t; }

// Whether a head's bf16 products on backend b read operands rounded into the thread's room
// (on bf16 dot products), rather than round the fp32 ones as they pack them (or, b NULL, as
// the plain loops read them).
static int heads_convert(Precision precision, const Backend *b) {
    return precision == PRECISION_BF16 && b && b->bf16->tile;
}

// Floats of a thread's room: the caller's (t, t), then the bf16 operands (two in a float).
static size_t room_floats(Precision precision, const Backend *b, int t, int hs) {
    return (size_t)t * t + (heads_convert(precision, b) ? (head_bf16_count(t, hs) + 1) / 2 : 0);
}

static size_t matrix_floats(const LinearWeights *w) { return (size_t)w->rows * w->cols; }

// Whether a workspace on backend b keeps the weights packed: in bf16, and in fp32 where its
// shape asks for it.
static int keeps_panels(Precision precision, const Backend *b, const KernelsShape *shape) {
    return b && (precision == PRECISION_BF16 || shape->pack_weights);
}

// Bytes of one weight of w packed: for the bf16 forward, or for both fp32 products.
static size_t panels_bytes(Precision precision, const Backend *b, const LinearWeights *w) {
    return precision == PRECISION_BF16 ? b->weight_panels_bytes(b, w->cols, w->rows)
                                       : b->fp32_weight_panels_bytes(w->cols, w->rows);
}

KernelsMemory kernels_memory(Precision precision, const LinearWeights *groups, int count, const KernelsShape *shape) {
    int rows = shape->rows, training = shape->training;
    const Backend *b = kernels_backend();
    KernelsMemory m = {0.0, 0.0, (double)shape->threads * room_floats(precision, b, shape->t, shape->hs) * sizeof(float)};
    if (!b) return m;  // the plain loops keep and pack nothing
    int bf16 = precision == PRECISION_BF16;
    // bytes of an element of packed operands: fp32, or bf16 where the products run on bf16 pairs
    double element = bf16 && b->bf16->tile ? sizeof(bf16) : sizeof(float);
    double packed = 0.0;  // elements of the largest product's packed operands
    for (int g = 0; g < count; g++) {
        const LinearWeights *w = &groups[g];
        double OC = w->rows, C = w->cols;
        if (keeps_panels(precision, b, shape)) m.weights += (double)w->count * panels_bytes(precision, b, w);
        if (bf16) {
            m.weights += (double)w->count * matrix_floats(w) * sizeof(bf16);
            if (training) m.inputs += (double)w->count * rows * C * sizeof(bf16);
        }
        // rows and columns padded to panels of at most 32 and k to an even number: a forward
        // packs its weight in fp32 and its input in bf16 (where the weight comes packed); a
        // backward its output gradient once for dweight and in bf16 once more for dinp, its
        // input and its weight
        double weight = (OC + 32) * (C + 32), forward = bf16 ? rows * (C + 32) : weight;
        double backward = rows * ((bf16 ? 2 : 1) * OC + C + 3 * 32) + 2 * weight;
        packed = fmax(packed, training ? fmax(forward, backward) : forward);
    }
    m.work += packed * element;
    return m;
}

// ---------------------------------------------------------------------------------------
// the workspace

void kernels_free(Kernels *k) {
    if (!k) return;
    free(k->weights16);
    platform_aligned_free(k->panels);
    free(k->inputs16);
    free(k->kept);
    free(k->pack.data);
    if (k->room)
        for (int i = 0; i < k->shape.threads; i++) free(k->room[i].data);
    free(k->room);
    free(k);
}

Kernels *kernels_new(Precision precision, const LinearWeights *groups, int count, const KernelsShape *shape,
                     char err[ERR_LEN]) {
    Kernels *k = calloc(1, sizeof(*k));
    if (!k || count > KERNELS_MAX_GROUPS) {
        snprintf(err, ERR_LEN, k ? "more than %d groups of linear weights" : "out of memory for the kernels' workspace",
                 KERNELS_MAX_GROUPS);
        free(k);
        return NULL;
    }
    k->backend = kernels_backend();
    k->precision = precision;
    k->count = count;
    k->shape = *shape;
    if (k->shape.threads <= 0) k->shape.threads = 4 * omp_get_num_procs();
    if (k->shape.threads < omp_get_max_threads()) k->shape.threads = omp_get_max_threads();
    if (!shape->training) k->shape.rows = 0;  // no input kept for a backward
    size_t rows = (size_t)k->shape.rows, weights = 0, panel_bytes = 0, inputs = 0;
    for (int g = 0; g < count; g++) {
        const LinearWeights *w = &groups[g];
        k->groups[g] = *w;
        k->matrices += w->count;
        weights += w->count * matrix_floats(w);
        if (keeps_panels(precision, k->backend, shape)) panel_bytes += w->count * panels_bytes(precision, k->backend, w);
        inputs += w->count * rows * w->cols;
    }
    int ok = (k->room = calloc((size_t)k->shape.threads, sizeof(ThreadRoom))) != NULL;
    if (ok && keeps_panels(precision, k->backend, shape)) {
        k->panels = platform_aligned_alloc(64, (panel_bytes + 64) / 64 * 64);
        ok = k->panels != NULL;
    }
    if (ok && precision == PRECISION_BF16 && k->backend) {
        k->weights16 = malloc(weights * sizeof(bf16) + 64);
        k->inputs16 = malloc(inputs * sizeof(bf16) + 64);
        k->kept = calloc((size_t)k->matrices + 1, sizeof(*k->kept));
        ok = k->weights16 && k->inputs16 && k->kept;
    }
    if (!ok) {
        snprintf(err, ERR_LEN, "out of memory for the kernels' workspace (%s, %d rows)", precision_name(precision),
                 shape->rows);
        kernels_free(k);
        return NULL;
    }
    kernels_weights_changed(k);
    return k;
}

Precision kernels_precision(const Kernels *k) { return k->precision; }

int kernels_fast(const Kernels *k) { return (k ? k->backend : kernels_backend()) != NULL; }

void kernels_rows_alone(Kernels *k, int alone) { k->rows_alone = alone; }

void kernels_weights_changed(Kernels *k) {
    if (!k->panels) return;
    const Backend *b = k->backend;
    int in_bf16 = k->precision == PRECISION_BF16;
    bf16 *copy = k->weights16;  // bf16 only: the rounded copy, which the bf16 panels are packed from
    unsigned char *panels = k->panels;
    for (int g = 0; g < k->count; g++) {
        const LinearWeights *w = &k->groups[g];
        size_t n = matrix_floats(w), per = panels_bytes(k->precision, b, w);
        if (in_bf16) b->convert_bf16(b, copy, w->first, w->count * n);
        for (int l = 0; l < w->count; l++) {
            if (in_bf16) b->pack_weight_bf16(b, panels + l * per, w->first + l * n, copy + l * n, w->cols, w->rows);
            else b->pack_weight_fp32(panels + l * per, w->first + l * n, w->cols, w->rows);
        }
        if (in_bf16) copy += w->count * n;
        panels += w->count * per;
    }
}

// The index of weight among the workspace's, its shape, its rounded copy, packed panels and
// kept input; in fp32 (pack_weights) only the panels, copy NULL; index -1 and every pointer
// NULL when it is none of them (or the workspace keeps no copies: fp32 without pack_weights,
// or the plain loops). A NULL copy: the weight's products run in fp32.
typedef struct {
    int index, rows, cols;
    const bf16 *copy;
    const unsigned char *panels;
    bf16 *input;
} WeightCopies;

static const WeightCopies no_copies = {-1, 0, 0, NULL, NULL, NULL};

static WeightCopies weight_copies(const Kernels *k, const float *weight) {
    if (!k || !k->panels) return no_copies;
    int index = 0;
    size_t copy_at = 0, panels_at = 0, input_at = 0;  // where group g's start
    for (int g = 0; g < k->count; g++) {
        const LinearWeights *w = &k->groups[g];
        size_t n = matrix_floats(w), per = panels_bytes(k->precision, k->backend, w);
        size_t input = (size_t)k->shape.rows * w->cols;
        if (weight >= w->first && weight < w->first + w->count * n && (size_t)(weight - w->first) % n == 0) {
            size_t l = (size_t)(weight - w->first) / n;
            WeightCopies c = {index + (int)l, w->rows, w->cols, NULL, k->panels + panels_at + l * per, NULL};
            if (k->weights16) c.copy = k->weights16 + copy_at + l * n;
            if (k->inputs16) c.input = k->inputs16 + input_at + l * input;
            return c;
        }
        index += w->count;
        copy_at += w->count * n;
        panels_at += w->count * per;
        input_at += w->count * input;
    }
    return no_copies;
}

// ---------------------------------------------------------------------------------------
// linear layers

void fast_linear_forward(Kernels *k, float *out, const float *inp, const float *weight, const float *bias, int N,
                         int C, int OC) {
    WeightCopies w = weight_copies(k, weight);
    if (w.cols != C || w.rows != OC) w = no_copies;  // another shape: not the weight it seemed
    const Backend *b = k ? k->backend : kernels_backend();
    if (k && k->rows_alone) {  // each row as one matrix-vector product
        if (!w.copy) b->forward_rows(out, inp, weight, bias, N, C, OC);
        else b->forward_rows_bf16(b, out, inp, w.copy, bias, N, C, OC);
        return;
    }
    if (!w.copy) {  // in fp32, with its panels where the workspace keeps them
        b->forward(out, inp, weight, w.panels, bias, N, C, OC, k ? &k->pack : NULL);
        return;
    }
    bf16 *keep = N <= k->shape.rows ? w.input : NULL;
    int kept = b->forward_bf16(b, out, inp, keep, w.copy, w.panels, bias, N, C, OC, &k->pack);
    if (omp_get_thread_num() == 0) {
        k->kept[w.index].read = inp;
        k->kept[w.index].read_rows = kept ? N : 0;
    }
}

void fast_linear_backward(Kernels *k, float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                          const float *weight, int N, int C, int OC) {
    WeightCopies w = weight_copies(k, weight);
    if (w.cols != C || w.rows != OC) w = no_copies;  // another shape: not the weight it seemed
    const Backend *b = k ? k->backend : kernels_backend();
    if (!w.copy) {
        b->backward(dinp, dweight, dbias, dout, inp, weight, w.panels, N, C, OC, k ? &k->pack : NULL);
        return;
    }
    int kept = k->kept[w.index].read_rows == N && (!inp || k->kept[w.index].read == inp);
    b->backward_bf16(b, dinp, dweight, dbias, dout, kept ? NULL : inp, kept ? w.input : NULL, w.copy, N, C, OC,
                     &k->pack);
}

int linear_input_kept(const Kernels *k, const float *weight, int N) {
    WeightCopies w = weight_copies(k, weight);
    return w.copy && k->kept[w.index].read_rows == N;
}

// ---------------------------------------------------------------------------------------
// attention heads

// A head's operands in bf16, in the thread's room after the caller's floats: q, g (t, hs),
// k, v (n, hs) and the (t, n) weights after dropout (w) and scores' gradient (ds).
typedef struct {
    bf16 *q, *k, *v, *g, *w, *ds;
} HeadBf16;

static HeadBf16 head_bf16(const AttentionHead *h) {
    HeadBf16 b;
    size_t th = (size_t)h->t * h->hs, nh = (size_t)h->n * h->hs;
    b.q = h->rounded;
    b.k = b.q + th;
    b.v = b.k + nh;
    b.g = b.v + nh;
    b.w = b.g + th;
    b.ds = b.w + (size_t)h->t * h->n;
    return b;
}

// dst (t, n) = bf16 of src (t, n), zero past each query's last key: where the queries start
// at position 0 (a lower triangle), each row up to the diagonal and the band of zeros after
// it that the products may read (MATMUL_TRIANGLE_BAND), what is further right left as it is,
// as the products' results do not depend on it; else whole rows.
static void weights_to_bf16(const Backend *b, bf16 *dst, const float *src, int t, int n) {
    for (int i = 0; i < t; i++) {
        int cols = n > t || i + 1 + MATMUL_TRIANGLE_BAND >= n ? n : i + 1 + MATMUL_TRIANGLE_BAND;
        b->convert_bf16_rows(b, dst + (size_t)i * n, n, src + (size_t)i * n, n, 1, cols);
    }
}

int head_begin(Kernels *k, AttentionHead *h, const float *q, long ldq, const float *keys, const float *values,
               long ldkv, const float *g, long ldg, int t, int n, int hs) {
    int thread = omp_get_thread_num();
    *h = (AttentionHead){q, keys, values, g, ldq, ldkv, ldg, t, n, hs, k->precision == PRECISION_BF16, NULL,
                         k->backend, NULL, 0};
    if (thread >= k->shape.threads || t > n || n > k->shape.t || hs > k->shape.hs) return -1;
    ThreadRoom *room = &k->room[thread];  // the thread's own: no other thread touches it
    size_t floats = room_floats(k->precision, k->backend, k->shape.t, k->shape.hs);
    if (!room->data && !(room->data = malloc(floats * sizeof(float)))) return -1;
    h->work = room->data;
    if (!k->backend) return 0;  // the plain loops round what they read
    h->rounds_when_packed = k->precision == PRECISION_BF16 && !heads_convert(k->precision, k->backend);
    if (!heads_convert(k->precision, k->backend)) return 0;
    h->rounded = h->work + (size_t)k->shape.t * k->shape.t;
    HeadBf16 b = head_bf16(h);
    const Backend *kb = k->backend;
    kb->convert_bf16_rows(kb, b.q, hs, q, ldq, t, hs);
    kb->convert_bf16_rows(kb, b.k, hs, keys, ldkv, n, hs);
    kb->convert_bf16_rows(kb, b.v, hs, values, ldkv, n, hs);
    if (g) kb->convert_bf16_rows(kb, b.g, hs, g, ldg, t, hs);
    return 0;
}

// A product of a head on fp32 operands: in fp32, or in bf16 rounding them as it packs them.
static void head_product(const AttentionHead *h, float *c, long ldc, const float *a, long lda, const float *b,
                         long ldb, int M, int N, int K, int flags) {
    const Backend *kb = h->backend;
    (h->rounds_when_packed ? kb->small_rounded : kb->small)(c, ldc, a, lda, b, ldb, M, N, K, flags);
}

// The triangle flags (backend.h) of a head's forward products: where the queries start at
// position 0, what lies past the diagonal can be skipped; else every product is whole.
static int scores_flags(const AttentionHead *h) { return MATMUL_B_T | (h->t == h->n ? MATMUL_LOWER : 0); }
static int values_flags(const AttentionHead *h) { return h->t == h->n ? MATMUL_A_ZERO_ABOVE : 0; }

void fast_head_scores(const AttentionHead *h, float *scores) {
    const Backend *kb = h->backend;
    int t = h->t, n = h->n, hs = h->hs;
    if (!h->rounded) {
        head_product(h, scores, n, h->q, h->ldq, h->k, h->ldkv, t, n, hs, scores_flags(h));
        return;
    }
    HeadBf16 b = head_bf16(h);
    kb->small_bf16(kb, scores, n, b.q, hs, b.k, hs, t, n, hs, scores_flags(h));
}

void fast_head_values(const AttentionHead *h, float *out, long ldo, const float *w) {
    const Backend *kb = h->backend;
    int t = h->t, n = h->n, hs = h->hs;
    if (!h->rounded) {
        head_product(h, out, ldo, w, n, h->v, h->ldkv, t, hs, n, values_flags(h));
        return;
    }
    HeadBf16 b = head_bf16(h);
    weights_to_bf16(kb, b.w, w, t, n);
    kb->small_bf16(kb, out, ldo, b.w, n, b.v, hs, t, hs, n, values_flags(h));
}

void fast_head_values_backward(const AttentionHead *h, float *dv, long ldv, const float *w, float *dw) {
    const Backend *kb = h->backend;
    int t = h->t, hs = h->hs;
    if (!h->rounded) {
        head_product(h, dv, ldv, w, t, h->g, h->ldg, t, hs, t, MATMUL_A_T | MATMUL_A_ZERO_BELOW | MATMUL_ADD);
        head_product(h, dw, t, h->g, h->ldg, h->v, h->ldkv, t, t, hs, MATMUL_B_T | MATMUL_LOWER);
        return;
    }
    HeadBf16 b = head_bf16(h);
    weights_to_bf16(kb, b.w, w, t, t);
    kb->small_bf16(kb, dv, ldv, b.w, t, b.g, hs, t, hs, t, MATMUL_A_T | MATMUL_A_ZERO_BELOW | MATMUL_ADD);
    kb->small_bf16(kb, dw, t, b.g, hs, b.v, hs, t, t, hs, MATMUL_B_T | MATMUL_LOWER);
}

void fast_head_scores_backward(const AttentionHead *h, float *dq, float *dk, long ld, const float *ds) {
    const Backend *kb = h->backend;
    int t = h->t, hs = h->hs;
    if (!h->rounded) {
        head_product(h, dq, ld, ds, t, h->k, h->ldkv, t, hs, t, MATMUL_A_ZERO_ABOVE | MATMUL_ADD);
        head_product(h, dk, ld, ds, t, h->q, h->ldq, t, hs, t, MATMUL_A_T | MATMUL_A_ZERO_BELOW | MATMUL_ADD);
        return;
    }
    HeadBf16 b = head_bf16(h);
    weights_to_bf16(kb, b.ds, ds, t, t);
    kb->small_bf16(kb, dq, ld, b.ds, t, b.k, hs, t, hs, t, MATMUL_A_ZERO_ABOVE | MATMUL_ADD);
    kb->small_bf16(kb, dk, ld, b.ds, t, b.q, hs, t, hs, t, MATMUL_A_T | MATMUL_A_ZERO_BELOW | MATMUL_ADD);
}
