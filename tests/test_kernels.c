// Tests of the kernels' fp32 products on every backend this CPU runs and on the plain loops
// (kernels.h, backend.h): the linear layers against a plain double-precision triple loop on
// awkward and model shapes, what they add to and what they write, NULL gradients, rows
// computed alone, bit-identical results for any thread count, attention's heads (queries at
// the start of a sequence or further on) and the backends' small products with each of their
// flags; the pointwise kernels against the double reference; LayerNorm's bits the same on
// every backend; and how the kernels are chosen.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <omp.h>

#include "../kernels/backend.h"
#include "../kernels/kernels.h"
#include "reference.h"
#include "test.h"

typedef struct {
    int N, C, OC;
} Shape;

// Sizes that are multiples of no tile or vector width, rows of one, tiny channel counts,
// more than one k block (a forward's over C, of odd length last; a weight gradient's over N),
// two model shapes (tiny fcproj, small output head), a W of over 512 KiB, whose
// matrix-vector product reads its rows one at a time, and weight gradients whose output
// gradient's rows lie over 4 KiB apart, which one reads in place, and exactly 4 KiB apart,
// which one packs (matmul.inc).
static const Shape awkward_shapes[] = {
    {1, 8, 1},     {1, 7, 13},    {1, 384, 65},   {2, 17, 33},    {3, 8, 5},
    {7, 13, 129},  {13, 129, 17}, {17, 33, 383},  {33, 383, 65},  {65, 1, 7},
    {127, 65, 33}, {129, 127, 1}, {383, 17, 127}, {300, 300, 31}, {14, 32, 32},
    {768, 512, 128}, {2048, 384, 65}, {3, 383, 449}, {29, 1031, 45}, {37, 40, 1100},
    {37, 40, 1024},
};
#define NUM_SHAPES ((int)(sizeof(awkward_shapes) / sizeof(awkward_shapes[0])))

static double *to_double(const float *p, size_t n) {
    double *d = malloc(n * sizeof(double));
    for (size_t i = 0; i < n; i++) d[i] = p[i];
    return d;
}

// The double reference's linear forward (tests/reference.h) on the float operands.
static void ref_forward(double *out, const float *inp, const float *w, const float *bias, int N, int C, int OC) {
    double *inp_d = to_double(inp, (size_t)N * C), *w_d = to_double(w, (size_t)OC * C);
    double *bias_d = bias ? to_double(bias, (size_t)OC) : NULL;
    ref_matmul_forward(out, inp_d, w_d, bias_d, N, C, OC);
    free(inp_d), free(w_d), free(bias_d);
}

// And its backward: dinp written, dweight and dbias added to.
static void ref_backward(double *dinp, double *dweight, double *dbias, const float *dout, const float *inp,
                         const float *w, int N, int C, int OC) {
    double *dout_d = to_double(dout, (size_t)N * OC), *inp_d = to_double(inp, (size_t)N * C);
    double *w_d = to_double(w, (size_t)OC * C);
    ref_matmul_backward(dinp, dweight, dbias, dout_d, inp_d, w_d, N, C, OC);
    free(dout_d), free(inp_d), free(w_d);
}

// Inputs and (non-zero) starting gradients for one shape.
typedef struct {
    int N, C, OC;
    float *inp, *w, *bias, *dout, *dinp, *dweight, *dbias;
} Problem;

static Problem problem_new(Shape s, unsigned seed) {
    Problem p = {.N = s.N, .C = s.C, .OC = s.OC};
    size_t nc = (size_t)s.N * s.C, oc = (size_t)s.OC * s.C, no = (size_t)s.N * s.OC;
    p.inp = malloc(nc * sizeof(float));
    p.w = malloc(oc * sizeof(float));
    p.bias = malloc((size_t)s.OC * sizeof(float));
    p.dout = malloc(no * sizeof(float));
    p.dinp = malloc(nc * sizeof(float));
    p.dweight = malloc(oc * sizeof(float));
    p.dbias = malloc((size_t)s.OC * sizeof(float));
    fill_uniform(p.inp, nc, seed);
    fill_uniform(p.w, oc, seed + 1);
    fill_uniform(p.bias, (size_t)s.OC, seed + 2);
    fill_uniform(p.dout, no, seed + 3);
    fill_uniform(p.dinp, nc, seed + 4);
    fill_uniform(p.dweight, oc, seed + 5);
    fill_uniform(p.dbias, (size_t)s.OC, seed + 6);
    return p;
}

// An fp32 workspace holding p's weight, through which the products pack their operands
// whole (without one, each task packs its own); with pack_weights it keeps the weight packed.
static Kernels *workspace_for(const Problem *p, int pack_weights) {
    char err[ERR_LEN];
    LinearWeights weight = {p->w, 1, p->OC, p->C};
    KernelsShape shape = {p->N, 0, 0, 0, 1, pack_weights};
    Kernels *k = kernels_new(PRECISION_FP32, &weight, 1, &shape, err);
    CHECK(k != NULL, "%s", err);
    return k;
}

static void problem_free(Problem *p) {
    free(p->inp);
    free(p->w);
    free(p->bias);
    free(p->dout);
    free(p->dinp);
    free(p->dweight);
    free(p->dbias);
}

// By tiles (with and without a workspace, so with operands packed whole and by each task)
// and by rows (each row alone).
TEST(kernels_linear_forward_matches_reference) {
    EACH_BACKEND(bk, names, count)
    for (int s = 0; s < NUM_SHAPES; s++) {
        Shape sh = awkward_shapes[s];
        Problem p = problem_new(sh, 10 + s);
        Kernels *k = workspace_for(&p, 0);
        size_t no = (size_t)sh.N * sh.OC;
        float *out = malloc(no * sizeof(float));
        double *want = malloc(no * sizeof(double));
        for (int with_bias = 0; with_bias <= 1; with_bias++) {
            const float *bias = with_bias ? p.bias : NULL;
            ref_forward(want, p.inp, p.w, bias, sh.N, sh.C, sh.OC);
            for (int way = 0; way < 3; way++) {
                memset(out, 0xff, no * sizeof(float));  // NaN: every element must be written
                kernels_rows_alone(k, way == 2);
                linear_forward(way ? k : NULL, out, p.inp, p.w, bias, sh.N, sh.C, sh.OC);
                kernels_rows_alone(k, 0);
                double err = rel_error_fd(out, want, no);
                CHECK(err <= 1e-5, "%s forward%s N=%d C=%d OC=%d bias=%d: rel error %g", names[bk],
                      way == 2 ? " by rows alone" : way ? " in a workspace" : "", sh.N, sh.C, sh.OC, with_bias, err);
            }
        }
        kernels_free(k);
        free(out);
        free(want);
        problem_free(&p);
    }
    test_restore_backend();
}

// dinp starts non-zero (problem_new), so a backward that adds to it rather than writing it
// fails here, as does one that leaves dweight or dbias unadded to.
TEST(kernels_linear_backward_like_reference) {
    EACH_BACKEND(bk, names, count)
    for (int s = 0; s < NUM_SHAPES; s++) {
        Shape sh = awkward_shapes[s];
        Problem p = problem_new(sh, 50 + s);
        size_t nc = (size_t)sh.N * sh.C, oc = (size_t)sh.OC * sh.C;
        double *want_dinp = to_double(p.dinp, nc);
        double *want_dweight = to_double(p.dweight, oc);
        double *want_dbias = to_double(p.dbias, (size_t)sh.OC);
        ref_backward(want_dinp, want_dweight, want_dbias, p.dout, p.inp, p.w, sh.N, sh.C, sh.OC);
        for (int packed = 0; packed <= 1; packed++) {  // without and with a workspace
            Kernels *k = packed ? workspace_for(&p, 0) : NULL;
            float *dinp = malloc(nc * sizeof(float)), *dweight = malloc(oc * sizeof(float));
            float *dbias = malloc((size_t)sh.OC * sizeof(float));
            memcpy(dinp, p.dinp, nc * sizeof(float));
            memcpy(dweight, p.dweight, oc * sizeof(float));
            memcpy(dbias, p.dbias, (size_t)sh.OC * sizeof(float));
            linear_backward(k, dinp, dweight, dbias, p.dout, p.inp, p.w, sh.N, sh.C, sh.OC);
            double e_inp = rel_error_fd(dinp, want_dinp, nc);
            double e_w = rel_error_fd(dweight, want_dweight, oc);
            double e_b = rel_error_fd(dbias, want_dbias, (size_t)sh.OC);
            CHECK(e_inp <= 1e-4 && e_w <= 1e-4 && e_b <= 1e-4,
                  "%s backward%s N=%d C=%d OC=%d: rel error dinp %g dweight %g dbias %g", names[bk],
                  packed ? " in a workspace" : "", sh.N, sh.C, sh.OC, e_inp, e_w, e_b);
            free(dinp), free(dweight), free(dbias);
            kernels_free(k);
        }
        free(want_dinp);
        free(want_dweight);
        free(want_dbias);
        problem_free(&p);
    }
    test_restore_backend();
}

// With dinp and dbias NULL only dweight changes, and it matches the full call's.
TEST(kernels_linear_backward_null_dinp_dbias) {
    static const Shape shapes[] = {{1, 8, 1}, {17, 33, 65}, {129, 383, 13}};
    EACH_BACKEND(bk, names, count)
    for (int s = 0; s < 3; s++) {
        Shape sh = shapes[s];
        Problem p = problem_new(sh, 90 + s);
        size_t nc = (size_t)sh.N * sh.C, oc = (size_t)sh.OC * sh.C;
        double *want_dweight = to_double(p.dweight, oc);
        double *want_dinp = to_double(p.dinp, nc);
        double *want_dbias = to_double(p.dbias, (size_t)sh.OC);
        ref_backward(want_dinp, want_dweight, want_dbias, p.dout, p.inp, p.w, sh.N, sh.C, sh.OC);
        linear_backward(NULL, NULL, p.dweight, NULL, p.dout, p.inp, p.w, sh.N, sh.C, sh.OC);
        double err = rel_error_fd(p.dweight, want_dweight, oc);
        CHECK(err <= 1e-4, "%s dweight with NULL dinp/dbias N=%d C=%d OC=%d: rel error %g", names[bk], sh.N,
              sh.C, sh.OC, err);
        free(want_dweight);
        free(want_dinp);
        free(want_dbias);
        problem_free(&p);
    }
    test_restore_backend();
}

// With no outputs (OC 0) the input's gradient is zero, written over whatever dinp held.
TEST(kernels_linear_backward_no_outputs) {
    EACH_BACKEND(bk, names, count) {
        float dinp[3 * 5], inp[3 * 5], dweight[1] = {7.0f};
        for (int i = 0; i < 3 * 5; i++) dinp[i] = 1.0f + i, inp[i] = 0.5f;
        linear_backward(NULL, dinp, dweight, NULL, NULL, inp, NULL, 3, 5, 0);
        int zero = 1;
        for (int i = 0; i < 3 * 5; i++) zero &= dinp[i] == 0.0f;
        CHECK(zero && dweight[0] == 7.0f, "%s: linear_backward with OC 0 left dinp[0] %g, dweight[0] %g", names[bk],
              dinp[0], dweight[0]);
    }
    test_restore_backend();
}

// Forward and backward outputs of one problem, run from fresh copies of its gradients.
typedef struct {
    float *out, *dinp, *dweight, *dbias;
} Results;

static Results run_all_in(const Problem *p, Kernels *k) {
    size_t nc = (size_t)p->N * p->C, oc = (size_t)p->OC * p->C, no = (size_t)p->N * p->OC;
    Results r = {malloc(no * sizeof(float)), malloc(nc * sizeof(float)),
                 malloc(oc * sizeof(float)), malloc((size_t)p->OC * sizeof(float))};
    memcpy(r.dinp, p->dinp, nc * sizeof(float));
    memcpy(r.dweight, p->dweight, oc * sizeof(float));
    memcpy(r.dbias, p->dbias, (size_t)p->OC * sizeof(float));
    linear_forward(k, r.out, p->inp, p->w, p->bias, p->N, p->C, p->OC);
    linear_backward(k, r.dinp, r.dweight, r.dbias, p->dout, p->inp, p->w, p->N, p->C, p->OC);
    return r;
}

static Results run_all(const Problem *p) { return run_all_in(p, NULL); }

static int same_bits(const Results *a, const Results *b, const Problem *p) {
    size_t nc = (size_t)p->N * p->C, oc = (size_t)p->OC * p->C, no = (size_t)p->N * p->OC;
    return memcmp(a->out, b->out, no * sizeof(float)) == 0 &&
           memcmp(a->dinp, b->dinp, nc * sizeof(float)) == 0 &&
           memcmp(a->dweight, b->dweight, oc * sizeof(float)) == 0 &&
           memcmp(a->dbias, b->dbias, (size_t)p->OC * sizeof(float)) == 0;
}

static void results_free(Results *r) {
    free(r->out);
    free(r->dinp);
    free(r->dweight);
    free(r->dbias);
}

// 1, 2 and 3 threads and a repeated call give the same bits, and so do products that pack
// their operands whole in a workspace, and products whose workspace keeps the weight packed
// (packed again after the weight changed), on shapes that take the matrix-vector path, partial
// tiles, several k blocks, B packed whole or by the tasks and enough work to run in parallel.
TEST(kernels_linear_same_bits_for_any_thread_count) {
    static const Shape shapes[] = {{1, 1536, 384}, {2, 300, 700}, {129, 383, 65}, {768, 128, 512},
                                   {300, 1536, 127}};
    int saved = omp_get_max_threads();
    EACH_BACKEND(bk, names, count)
    for (int s = 0; s < 5; s++) {
        Problem p = problem_new(shapes[s], 200 + s);
        omp_set_num_threads(1);
        Results one = run_all(&p);
        omp_set_num_threads(2);
        Results two = run_all(&p);
        Results again = run_all(&p);
        omp_set_num_threads(3);
        Results three = run_all(&p);
        CHECK(same_bits(&one, &two, &p), "%s N=%d C=%d OC=%d: 1 and 2 threads differ", names[bk], p.N, p.C, p.OC);
        CHECK(same_bits(&two, &again, &p), "%s N=%d C=%d OC=%d: repeated call differs", names[bk], p.N, p.C, p.OC);
        CHECK(same_bits(&one, &three, &p), "%s N=%d C=%d OC=%d: 1 and 3 threads differ", names[bk], p.N, p.C, p.OC);
        // operands packed whole in a workspace: each sum in the same order, the same bits
        Kernels *k = workspace_for(&p, 0);
        Results packed = run_all_in(&p, k);
        omp_set_num_threads(1);
        Results packed_one = run_all_in(&p, k);
        CHECK(same_bits(&two, &packed, &p) && same_bits(&two, &packed_one, &p),
              "%s N=%d C=%d OC=%d: operands packed whole give other bits", names[bk], p.N, p.C, p.OC);
        // the weight packed once in the workspace, then again after it changed
        Kernels *kept = workspace_for(&p, 1);
        LinearWeights weight = {p.w, 1, p.OC, p.C};
        KernelsShape shape = {p.N, 0, 0, 0, 1, 1};
        CHECK(kernels_memory(PRECISION_FP32, &weight, 1, &shape).weights > 0 || strcmp(names[bk], "plain") == 0,
              "%s: a workspace asked to keep the weights packed keeps nothing", names[bk]);
        Results weight_packed = run_all_in(&p, kept);
        CHECK(same_bits(&one, &weight_packed, &p), "%s N=%d C=%d OC=%d: the weight packed once gives other bits",
              names[bk], p.N, p.C, p.OC);
        for (size_t i = 0; i < (size_t)p.OC * p.C; i++) p.w[i] = 0.5f - p.w[i];
        kernels_weights_changed(kept);
        Results changed = run_all(&p), repacked = run_all_in(&p, kept);
        CHECK(same_bits(&changed, &repacked, &p) && !same_bits(&one, &changed, &p),
              "%s N=%d C=%d OC=%d: the weight packed again after a change gives other bits", names[bk], p.N, p.C,
              p.OC);
        results_free(&weight_packed);
        results_free(&changed);
        results_free(&repacked);
        kernels_free(kept);
        results_free(&packed);
        results_free(&packed_one);
        kernels_free(k);
        results_free(&one);
        results_free(&two);
        results_free(&again);
        results_free(&three);
        problem_free(&p);
    }
    omp_set_num_threads(saved);
    test_restore_backend();
}

// The small products against a double triple loop, with each layout and triangle flag, on shapes
// that cut tiles, k blocks and the diagonal awkwardly. The A given to the triangle flags has
// the zeros they promise within MATMUL_TRIANGLE_BAND of the diagonal and NaN beyond, which
// must not reach the result; with MATMUL_LOWER only c(i, j), j <= i, is compared.
TEST(kernels_small_products_match_reference) {
    // (one row of A: a decoder step's, run without packing)
    static const Shape shapes[] = {{1, 1, 1}, {1, 37, 64}, {1, 300, 33}, {5, 7, 3}, {14, 32, 32}, {15, 33, 17},
                                   {64, 64, 32}, {64, 32, 64}, {100, 100, 64}, {300, 300, 300}};
    static const int flag_sets[] = {0, MATMUL_A_T, MATMUL_B_T, MATMUL_ADD, MATMUL_A_T | MATMUL_B_T,
                                    MATMUL_B_T | MATMUL_ADD, MATMUL_B_T | MATMUL_LOWER, MATMUL_LOWER, MATMUL_A_ZERO_ABOVE,
                                    MATMUL_A_ZERO_ABOVE | MATMUL_ADD,
                                    MATMUL_A_T | MATMUL_A_ZERO_BELOW | MATMUL_ADD,
                                    MATMUL_A_ZERO_BELOW | MATMUL_ADD};
    double worst = 0.0;
    EACH_FAST_BACKEND(bk, names, count)
    for (int s = 0; s < (int)(sizeof(shapes) / sizeof(shapes[0])); s++) {
        int M = shapes[s].N, N = shapes[s].C, K = shapes[s].OC;
        for (int f = 0; f < (int)(sizeof(flag_sets) / sizeof(flag_sets[0])); f++) {
            int flags = flag_sets[f];
            // a triangle of A needs A square, one of C needs C square
            if (((flags & (MATMUL_A_ZERO_ABOVE | MATMUL_A_ZERO_BELOW)) && M != K) ||
                ((flags & MATMUL_LOWER) && M != N))
                continue;
            // stored with padded row strides, as attention's operands are
            long lda = (flags & MATMUL_A_T ? M : K) + 3, ldb = (flags & MATMUL_B_T ? K : N) + 5, ldc = N + 2;
            float *a = malloc((size_t)(flags & MATMUL_A_T ? K : M) * lda * sizeof(float));
            float *b = malloc((size_t)(flags & MATMUL_B_T ? N : K) * ldb * sizeof(float));
            float *c = malloc((size_t)M * ldc * sizeof(float));
            fill_uniform(a, (size_t)(flags & MATMUL_A_T ? K : M) * lda, 700 + s);
            fill_uniform(b, (size_t)(flags & MATMUL_B_T ? N : K) * ldb, 800 + s);
            fill_uniform(c, (size_t)M * ldc, 900 + s);
            for (int i = 0; i < M; i++)
                for (int k = 0; k < K; k++) {
                    float *aik = flags & MATMUL_A_T ? &a[(size_t)k * lda + i] : &a[(size_t)i * lda + k];
                    if (((flags & MATMUL_A_ZERO_ABOVE) && k > i) || ((flags & MATMUL_A_ZERO_BELOW) && k < i)) *aik = 0.0f;
                }
            double *want = malloc((size_t)M * N * sizeof(double));
            for (int i = 0; i < M; i++)
                for (int j = 0; j < N; j++) {
                    double acc = flags & MATMUL_ADD ? c[(size_t)i * ldc + j] : 0.0;
                    for (int k = 0; k < K; k++) {
                        double aik = flags & MATMUL_A_T ? a[(size_t)k * lda + i] : a[(size_t)i * lda + k];
                        double bkj = flags & MATMUL_B_T ? b[(size_t)j * ldb + k] : b[(size_t)k * ldb + j];
                        acc += aik * bkj;
                    }
                    want[(size_t)i * N + j] = acc;
                }
            for (int i = 0; i < M; i++)
                for (int k = 0; k < K; k++)
                    if (((flags & MATMUL_A_ZERO_ABOVE) && k > i + MATMUL_TRIANGLE_BAND) ||
                        ((flags & MATMUL_A_ZERO_BELOW) && k < i - MATMUL_TRIANGLE_BAND))
                        a[flags & MATMUL_A_T ? (size_t)k * lda + i : (size_t)i * lda + k] = NAN;
            kernels_backend()->small(c, ldc, a, lda, b, ldb, M, N, K, flags);
            double num = 0.0, den = 0.0;
            for (int i = 0; i < M; i++)
                for (int j = 0; j < N && (!(flags & MATMUL_LOWER) || j <= i); j++) {
                    double w = want[(size_t)i * N + j], d = fabs(c[(size_t)i * ldc + j] - w);
                    if (d > num || d != d) num = d != d ? INFINITY : d;
                    if (fabs(w) > den) den = fabs(w);
                }
            double err = num == 0.0 ? 0.0 : num / den;
            if (err > worst) worst = err;
            CHECK(err <= 1e-5, "%s small product M=%d N=%d K=%d flags %d: rel error %g", names[bk], M, N, K, flags,
                  err);
            free(a);
            free(b);
            free(c);
            free(want);
        }
    }
    test_restore_backend();
    printf("    small products, every flag, %d backends (and the plain loops, which have none): worst rel error %.2e\n",
           count - 1, worst);
}

// The largest relative error (max norm) of got (rows ldg apart) against want (rows cols
// apart) over rows [0, t) and columns [0, cols), or with last >= 0 only the columns
// j <= last + i of row i (the keys a query sees).
static double rows_error(const float *got, long ldg, const double *want, int t, int cols, int last) {
    double num = 0.0, den = 0.0;
    for (int i = 0; i < t; i++)
        for (int j = 0; j < (last >= 0 ? last + i + 1 : cols); j++) {
            double d = fabs(got[(size_t)i * ldg + j] - want[(size_t)i * cols + j]);
            if (d > num || d != d) num = d != d ? INFINITY : d;
            den = fmax(den, fabs(want[(size_t)i * cols + j]));
        }
    return num == 0.0 ? 0.0 : num / den;
}

// c (M, N) = c0 + A B in double, A(i, k) = a[i*sa + k*ta], B(k, j) = b[k*sb + j*tb], c0
// (rows ldc0 apart) or 0 when NULL.
static void double_product(double *c, const float *c0, long ldc0, const float *a, long sa, long ta, const float *b,
                           long sb, long tb, int M, int N, int K) {
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double sum = c0 ? c0[(size_t)i * ldc0 + j] : 0.0;
            for (int k = 0; k < K; k++) sum += (double)a[i * sa + k * ta] * b[k * sb + j * tb];
            c[(size_t)i * N + j] = sum;
        }
}

// Attention's heads through kernels.h on every backend and the plain loops, in an fp32
// workspace, against double loops: the scores and values of t queries at the positions
// [n - t, n) of a sequence (t = n in training; t < n in cached generation's steps) and, for
// t = n, both backwards. Operands in rows of padded strides, as attention's are: q, k and v
// side by side in rows of qkv, the gradients likewise in dqkv.
TEST(kernels_heads_match_reference) {
    static const struct { int t, n, hs; } cases[] = {{1, 1, 4}, {7, 7, 5}, {33, 33, 32}, {64, 64, 32},
                                                     {1, 9, 8}, {1, 40, 32}, {5, 23, 16}};
    double worst = 0.0;
    EACH_BACKEND(bk, names, count)
    for (int c = 0; c < (int)(sizeof(cases) / sizeof(cases[0])); c++) {
        int t = cases[c].t, n = cases[c].n, hs = cases[c].hs, first = n - t;
        long ld = 3 * hs + 1, ldo = hs + 2;  // qkv's rows (n of them; the queries are the last t)
        char err[ERR_LEN];
        KernelsShape shape = {0, 64, 32, 0, 1, 0};
        Kernels *k = kernels_new(PRECISION_FP32, NULL, 0, &shape, err);
        if (!CHECK(k != NULL, "%s", err)) break;
        float *qkv = malloc((size_t)n * ld * sizeof(float)), *dqkv = malloc((size_t)n * ld * sizeof(float));
        float *g = malloc((size_t)t * ldo * sizeof(float)), *w = malloc((size_t)t * n * sizeof(float));
        float *scores = malloc((size_t)t * n * sizeof(float)), *out = malloc((size_t)t * ldo * sizeof(float));
        float *dw = malloc((size_t)t * n * sizeof(float));
        double *want_s = malloc((size_t)t * n * sizeof(double)), *want_o = malloc((size_t)t * hs * sizeof(double));
        fill_uniform(qkv, (size_t)n * ld, 1000 + c);
        fill_uniform(dqkv, (size_t)n * ld, 1100 + c);
        fill_uniform(g, (size_t)t * ldo, 1200 + c);
        fill_uniform(w, (size_t)t * n, 1300 + c);
        for (int i = 0; i < t; i++)  // the weights of keys a query does not see are zeros
            for (int j = first + i + 1; j < n; j++) w[(size_t)i * n + j] = 0.0f;
        const float *q = qkv + (size_t)first * ld, *keys = qkv + hs, *values = qkv + 2 * hs;
        AttentionHead head;
        if (!CHECK(head_begin(k, &head, q, ld, keys, values, ld, t == n ? g : NULL, ldo, t, n, hs) == 0,
                   "%s: head_begin t=%d n=%d", names[bk], t, n)) {
            kernels_free(k);
            break;
        }
        head_scores(&head, scores);
        head_values(&head, out, ldo, w);
        double_product(want_s, NULL, 0, q, ld, 1, keys, 1, ld, t, n, hs);     // Q K^T
        double_product(want_o, NULL, 0, w, n, 1, values, ld, 1, t, hs, n);    // W V
        double e_s = rows_error(scores, n, want_s, t, n, first), e_o = rows_error(out, ldo, want_o, t, hs, -1);
        double e_back = 0.0;
        if (t == n) {
            double *want_dv = malloc((size_t)t * hs * sizeof(double)), *want_dw = malloc((size_t)t * t * sizeof(double));
            double *want_dq = malloc((size_t)t * hs * sizeof(double)), *want_dk = malloc((size_t)t * hs * sizeof(double));
            float *dq = dqkv, *dk = dqkv + hs, *dv = dqkv + 2 * hs;
            double_product(want_dv, dv, ld, w, 1, t, g, ldo, 1, t, hs, t);        // dV + W^T g
            double_product(want_dw, NULL, 0, g, ldo, 1, values, 1, ld, t, t, hs);  // g V^T
            double_product(want_dq, dq, ld, w, t, 1, keys, ld, 1, t, hs, t);       // dQ + dS K, dS = W
            double_product(want_dk, dk, ld, w, 1, t, q, ld, 1, t, hs, t);          // dK + dS^T Q
            head_values_backward(&head, dv, ld, w, dw);
            head_scores_backward(&head, dq, dk, ld, w);
            e_back = fmax(rows_error(dv, ld, want_dv, t, hs, -1), rows_error(dw, t, want_dw, t, t, 0));
            e_back = fmax(e_back, fmax(rows_error(dq, ld, want_dq, t, hs, -1), rows_error(dk, ld, want_dk, t, hs, -1)));
            free(want_dv), free(want_dw), free(want_dq), free(want_dk);
        }
        double e = fmax(e_s, fmax(e_o, e_back));
        worst = fmax(worst, e);
        CHECK(e <= 1e-5, "%s head t=%d n=%d hs=%d: rel error scores %.3g values %.3g backward %.3g", names[bk], t, n,
              hs, e_s, e_o, e_back);
        free(qkv), free(dqkv), free(g), free(w), free(scores), free(out), free(dw), free(want_s), free(want_o);
        kernels_free(k);
    }
    test_restore_backend();
    printf("    attention heads, queries at the start of a sequence and further on, %d kernels: worst rel error %.2e\n",
           count, worst);
}

// GELU's forward and backward (which writes dinp, here non-zero before), and the same through
// the slope the forward keeps, a row's softmax and its backward, and the softmax of a row of
// logits (its probabilities, its max and the log of its sum) on every backend against the
// double reference, with the values where exp clamps or GELU saturates.
TEST(kernels_pointwise_match_reference) {
    enum { n = 1001 };
    static float inp[n], out[n], dout[n], dinp[n], dinp0[n], row[n];
    static double inp_d[n], out_d[n], dout_d[n], dinp_d[n];
    fill_uniform(inp, n, 41);
    fill_uniform(dout, n, 42);
    fill_uniform(dinp0, n, 43);
    const float specials[] = {0.0f, -0.0f, 1e-6f, -1e-6f, 20.0f, -20.0f, 50.0f, -50.0f, 3.0f, -3.0f};
    for (int i = 0; i < n; i++) inp[i] *= 6.0f;
    memcpy(inp, specials, sizeof(specials));
    for (int i = 0; i < n; i++) inp_d[i] = inp[i], dout_d[i] = dout[i];
    ref_gelu_forward(out_d, inp_d, n);
    double worst = 0.0;
    EACH_BACKEND(bk, names, count) {
        for (int i = 0; i < n; i++) dinp_d[i] = dinp0[i];
        ref_gelu_backward(dinp_d, inp_d, dout_d, n);
        memcpy(dinp, dinp0, sizeof(dinp));
        gelu_forward(out, inp, n);
        gelu_backward(dinp, inp, dout, n);
        double ef = rel_error_fd(out, out_d, n), eb = rel_error_fd(dinp, dinp_d, n);
        // the slope kept by the forward in place of its input, as the model keeps it: the
        // forward's bits, and times dout the backward's
        static float slope[n], out_kept[n], dinp_kept[n];
        memcpy(slope, inp, sizeof(slope));
        memcpy(dinp_kept, dinp0, sizeof(dinp_kept));
        gelu_forward_slope(out_kept, slope, slope, n);
        gelu_backward_slope(dinp_kept, slope, dout, n);
        CHECK(memcmp(out_kept, out, sizeof(out)) == 0 && memcmp(dinp_kept, dinp, sizeof(dinp)) == 0,
              "%s: gelu with its slope kept: other bits than gelu_forward and gelu_backward", names[bk]);
        // softmax of scaled scores, in rows of lengths on both sides of the kernels' blocks of
        // 16 (a row's last n % 16 values are padded) and in one of all n values, whose spread
        // reaches exp's clamp at -87
        static const int lengths[] = {1, 2, 15, 16, 17, 31, 33, 64, 100, n};
        double es = 0.0, esb = 0.0;
        for (size_t l = 0; l < sizeof(lengths) / sizeof(lengths[0]); l++) {
            int len = lengths[l];
            for (int i = 0; i < len; i++) row[i] = inp[n - len + i] * 4.0f;
            double scaled[n], want[n], logits_d[n], max_d = -INFINITY, sum_d = 0.0;
            for (int i = 0; i < len; i++) {
                scaled[i] = row[i] * 0.5;
                logits_d[i] = row[i];
                if (row[i] > max_d) max_d = row[i];
            }
            for (int i = 0; i < len; i++) sum_d += exp(row[i] - max_d);
            float logits[n], max;
            memcpy(logits, row, (size_t)len * sizeof(float));
            float logsum = logits_softmax(out, logits, len, &max);
            CHECK(max == (float)max_d && fabs(logsum - log(sum_d)) <= 1e-5 * fmax(1.0, log(sum_d)),
                  "%s: logits_softmax of %d: max %g (want %g), log sum %.9g (want %.9g)", names[bk], len, max,
                  max_d, logsum, log(sum_d));
            ref_softmax_forward(want, logits_d, 1, len);
            es = fmax(es, rel_error_fd(out, want, len));
            ref_softmax_forward(want, scaled, 1, len);
            softmax_row(row, len, 0.5f);
            es = fmax(es, rel_error_fd(row, want, len));
            // its backward from these weights: ds[j] = w[j] (dw[j] - sum_k w[k] dw[k]) scale;
            // the error relative to the terms' size, the largest of w[j] max(|dw[j]|, |dot|) scale
            // (where one weight is near 1, ds's values are the differences of near-equal terms)
            float ds[n];
            double dot = 0.0, size = 0.0, e = 0.0;
            for (int i = 0; i < len; i++) ds[i] = dout[i], dot += (double)row[i] * dout[i];
            softmax_row_backward(ds, row, len, 0.5f);
            for (int i = 0; i < len; i++) {
                double term = fabs(row[i] * 0.5) * fmax(fabs(dot), fabs(dout[i]));
                double d = fabs(ds[i] - row[i] * (dout[i] - dot) * 0.5);
                if (term > size) size = term;  // not fmax: gcc 12 for arm64 fails (an internal error) on it
                if (!(d <= e)) e = d;           // a NaN kept
            }
            esb = fmax(esb, e != e ? INFINITY : e / size);
        }
        CHECK(ef <= 1e-5 && eb <= 1e-5 && es <= 1e-5 && esb <= 1e-5,
              "%s: gelu forward %.3g backward %.3g, softmax %.3g, its backward %.3g", names[bk], ef, eb, es, esb);
        worst = fmax(worst, fmax(fmax(ef, esb), fmax(eb, es)));
    }
    test_restore_backend();
    printf("    gelu forward and backward, softmax rows and their backward, %d backends: worst rel error %.2e\n",
           count, worst);
}

// AdamW's update (kernels.h's adamw_step), three updates of n parameters (odd: a vector loop's
// tail; half of them decayed) from zero moments.
enum { ADAMW_N = 1001, ADAMW_UPDATES = 3 };
static void adamw_updates(float *params, float *m, float *v, double *params_d, double *m_d, double *v_d) {
    const float lr = 0.01f, b1 = 0.9f, b2 = 0.99f, eps = 1e-8f, wd = 0.1f;
    static float grads[ADAMW_N];
    static double grads_d[ADAMW_N];
    static unsigned char decay[ADAMW_N];
    for (int i = 0; i < ADAMW_N; i++) decay[i] = i % 2;
    fill_uniform(params, ADAMW_N, 59);
    for (int i = 0; i < ADAMW_N; i++) m[i] = v[i] = 0.0f;
    for (int i = 0; params_d && i < ADAMW_N; i++) params_d[i] = params[i], m_d[i] = v_d[i] = 0.0;
    for (int k = 1; k <= ADAMW_UPDATES; k++) {
        fill_uniform(grads, ADAMW_N, 60 + k);
        AdamWStep s = {lr, b1, b2, eps, wd, 1.0f - powf(b1, (float)k), 1.0f - powf(b2, (float)k)};
        adamw_step(params, grads, m, v, decay, ADAMW_N, &s);
        for (int i = 0; params_d && i < ADAMW_N; i++) grads_d[i] = grads[i];
        if (params_d) ref_adamw_update(params_d, m_d, v_d, grads_d, decay, ADAMW_N, k, lr, b1, b2, eps, wd);
    }
}

// adamw_updates on every backend against the double reference (parameters and both moments),
// and with the plain loops' bits, as the loop is one (adamw_step.inc) with one rounding per
// operation; the plain loops run first whichever backends $CHARGPT_TEST_BACKENDS names.
TEST(kernels_adamw_match_reference) {
    static float params[ADAMW_N], m[ADAMW_N], v[ADAMW_N], plain[3][ADAMW_N];
    static double params_d[ADAMW_N], m_d[ADAMW_N], v_d[ADAMW_N];
    if (!test_use_backend("plain")) return;
    adamw_updates(plain[0], plain[1], plain[2], NULL, NULL, NULL);
    double worst = 0.0;
    EACH_BACKEND(bk, names, count) {
        adamw_updates(params, m, v, params_d, m_d, v_d);
        double e = fmax(rel_error_fd(params, params_d, ADAMW_N),
                        fmax(rel_error_fd(m, m_d, ADAMW_N), rel_error_fd(v, v_d, ADAMW_N)));
        CHECK(e <= 1e-5, "%s: AdamW's update: error %.3g", names[bk], e);
        CHECK(memcmp(params, plain[0], sizeof(params)) == 0 && memcmp(m, plain[1], sizeof(m)) == 0 &&
                  memcmp(v, plain[2], sizeof(v)) == 0,
              "%s: AdamW's update: other bits than the plain loops'", names[bk]);
        worst = fmax(worst, e);
    }
    test_restore_backend();
    printf("    AdamW's update, %d updates, %d backends: worst rel error %.2e, the plain loops' bits on each\n",
           ADAMW_UPDATES, count, worst);
}

// exp's clamp keeps what float arithmetic gives at the edges, on every backend: GELU of a NaN
// is a NaN, of +inf +inf and of -inf -inf (the plain loops' formula, 0.5 x (1 + tanh u),
// gives -inf times 0 there: a NaN); a softmax row holding a NaN is all NaN; one holding -inf
// gives it weight 0 (exp's argument clamped at -87, its value below float's smallest normal
// times the sum, 1; expf's is 0) and the others their weights.
TEST(kernels_pointwise_nonfinite) {
    const float inf = INFINITY;
    EACH_BACKEND(bk, names, count) {
        float inp[3] = {NAN, inf, -inf}, out[3], dinp[3] = {0, 0, 0}, dout[3] = {1, 1, 1};
        gelu_forward(out, inp, 3);
        gelu_backward(dinp, inp, dout, 3);
        CHECK(isnan(out[0]) && out[1] == inf && (test_plain(names[bk]) ? isnan(out[2]) : out[2] == -inf),
              "%s: gelu(nan, inf, -inf) = %g %g %g", names[bk], out[0], out[1], out[2]);
        CHECK(isnan(dinp[0]), "%s: gelu backward at nan = %g", names[bk], dinp[0]);
        float with_nan[4] = {0.5f, NAN, 1.0f, -2.0f};
        softmax_row(with_nan, 4, 1.0f);
        for (int j = 0; j < 4; j++) CHECK(isnan(with_nan[j]), "%s: softmax with a nan, [%d] = %g", names[bk], j, with_nan[j]);
        float with_inf[3] = {-inf, 0.0f, 0.0f};
        softmax_row(with_inf, 3, 1.0f);
        CHECK(with_inf[0] < 1e-37f && fabsf(with_inf[1] - 0.5f) < 1e-6f && fabsf(with_inf[2] - 0.5f) < 1e-6f,
              "%s: softmax(-inf, 0, 0) = %g %g %g", names[bk], with_inf[0], with_inf[1], with_inf[2]);
    }
    test_restore_backend();
}

// LayerNorm's forward and backward outputs for one shape (layernorm_run), from fresh copies of
// the starting gradients: out, mean, rstd, dinp, dweight, dbias one after the other.
typedef struct {
    int N, C;
    float *inp, *weight, *bias, *dout, *start;  // start: dinp, dweight, dbias before the backward
} LayerNormProblem;

static size_t layernorm_results(const LayerNormProblem *p) {
    return 2 * (size_t)p->N * p->C + 2 * (size_t)p->N + 2 * (size_t)p->C;
}

// Rows of random values in [-1.5, 2.5), row 0 constant (its variance 0), row 1 near 300 (a
// spread of 1 far from 0).
static LayerNormProblem layernorm_problem(int N, int C, unsigned seed) {
    LayerNormProblem p = {N, C, malloc((size_t)N * C * sizeof(float)), malloc((size_t)C * sizeof(float)),
                          malloc((size_t)C * sizeof(float)), malloc((size_t)N * C * sizeof(float)),
                          malloc(((size_t)N * C + 2 * (size_t)C) * sizeof(float))};
    fill_uniform(p.inp, (size_t)N * C, seed);
    for (size_t i = 0; i < (size_t)N * C; i++) p.inp[i] = p.inp[i] * 2.0f + 0.5f;
    for (int i = 0; i < C; i++) p.inp[i] = 0.75f;
    for (int i = 0; N > 1 && i < C; i++) p.inp[C + i] += 300.0f;
    fill_uniform(p.weight, (size_t)C, seed + 1);
    for (int i = 0; i < C; i++) p.weight[i] += 1.5f;
    fill_uniform(p.bias, (size_t)C, seed + 2);
    fill_uniform(p.dout, (size_t)N * C, seed + 3);
    fill_uniform(p.start, (size_t)N * C + 2 * (size_t)C, seed + 4);
    return p;
}

// Forward then backward on a team of `threads` (the results: layernorm_results floats)
static float *layernorm_run(const LayerNormProblem *p, int threads) {
    const int N = p->N, C = p->C;
    float *r = malloc(layernorm_results(p) * sizeof(float));
    float *out = r, *mean = out + (size_t)N * C, *rstd = mean + N, *dinp = rstd + N, *dweight = dinp + (size_t)N * C,
          *dbias = dweight + C;
    memcpy(dinp, p->start, ((size_t)N * C + 2 * (size_t)C) * sizeof(float));
#pragma omp parallel num_threads(threads)
    {
        layernorm_forward(out, mean, rstd, p->inp, p->weight, p->bias, N, C);
        layernorm_backward(dinp, dweight, dbias, p->dout, p->inp, p->weight, mean, rstd, N, C);
    }
    return r;
}

static void layernorm_problem_free(LayerNormProblem *p) {
    free(p->inp), free(p->weight), free(p->bias), free(p->dout), free(p->start);
}

// LayerNorm gives the same bits on all the kernels this CPU runs, the plain loops' (its sums are
// fixed_sum.h's everywhere), for any number of threads: channels that are multiples of no
// vector width or fewer than a sum's lanes, rows that end a block of the fast kernels' short or
// are fewer than one, a row of variance 0 and one far from 0, and a backward that adds to
// gradients that are not zero.
TEST(kernels_layernorm_same_bits_on_every_backend) {
    static const struct { int N, C; } shapes[] = {{1, 1}, {3, 5}, {2, 8}, {17, 16}, {33, 67}, {16, 64}, {40, 128},
                                                  {2048, 64}, {5, 383}, {19, 768}};
    int compared = 0;
    for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
        LayerNormProblem p = layernorm_problem(shapes[s].N, shapes[s].C, 700 + (unsigned)s);
        float *first = NULL;
        const char *first_name = NULL;
        EACH_BACKEND(bk, names, count)
        for (int threads = 1; threads <= 3; threads++) {
            float *r = layernorm_run(&p, threads);
            if (!first) {
                first = r;
                first_name = names[bk];
                continue;
            }
            CHECK(memcmp(r, first, layernorm_results(&p) * sizeof(float)) == 0,
                  "N=%d C=%d: %s on %d threads gives other bits than %s on 1", p.N, p.C, names[bk], threads,
                  first_name);
            compared++;
            free(r);
        }
        free(first);
        layernorm_problem_free(&p);
    }
    test_restore_backend();
    printf("    LayerNorm forward and backward: %d runs (kernels, threads) with the bits of the first\n", compared);
}

// The kernels in use are the ones asked for, unknown ones are refused naming those the build
// has, and all this CPU runs are listed once, the portable backend then the plain loops last.
// bf16 on a backend without bf16 dot products (whose bf16 products widen their operands to
// fp32) comes with a note naming it, fp32 never does.
TEST(kernels_backend_choice) {
    const char *names[TEST_MAX_BACKENDS];
    int count = kernels_available(names, TEST_MAX_BACKENDS);  // all of them, whatever CHARGPT_TEST_BACKENDS says
    CHECK(count >= 2 && strcmp(names[count - 2], "portable") == 0 && test_plain(names[count - 1]),
          "%d kernels, the last two not portable and plain", count);
    for (int i = 0; i < count; i++) {
        if (test_use_backend(names[i])) {
            CHECK(strcmp(kernels_name(), names[i]) == 0, "asked for %s, got %s", names[i], kernels_name());
            char note[ERR_LEN], text[96];
            precision_describe(PRECISION_BF16, text, sizeof(text));
            int widened = strstr(text, "(widened to fp32)") != NULL;
            int noted = kernels_precision_note(PRECISION_BF16, note, sizeof(note));
            CHECK(noted == widened && (!noted || strstr(note, names[i])),
                  "%s (%s): note %d '%s'", names[i], text, noted, noted ? note : "");
            CHECK(!kernels_precision_note(PRECISION_FP32, note, sizeof(note)), "%s: a note for fp32", names[i]);
        }
        for (int j = 0; j < i; j++) CHECK(strcmp(names[i], names[j]) != 0, "%s listed twice", names[i]);
    }
    char err[ERR_LEN] = "";
    CHECK(kernels_use("sse9", err) != 0 && strstr(err, "unknown kernels 'sse9'") && strstr(err, "portable, plain"),
          "an unknown backend: %s", err);
    test_restore_backend();
    char text[256];
    kernels_available_text(text, sizeof(text));
    printf("    this CPU runs: %s\n", text);
}
