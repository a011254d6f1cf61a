// The analysis room (analysis/): the eigenvalue routine against matrices whose eigenvalues are
// known, against their algebra (trace, power sums) and against numpy; the circuits, the
// direct logit attribution (and, in test_patching.c, patching and mean ablation) against
// tests/fixtures/analysis.safetensors, which scripts/make_analysis_reference.py computes
// in float64 from TransformerLens's definitions written out in torch; and the parts each
// measure is built from against their plain definitions.
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../analysis/attribution.h"
#include "../analysis/circuits.h"
#include "../analysis/eigen.h"
#include "../common/rng.h"
#include "../viewer/circuits_export.h"
#include "analysis_fixture.h"
#include "test.h"

// The largest distance from an eigenvalue of (re, im) to its partner in (want_re, want_im),
// each matched with the nearest one left unmatched, over n; relative to scale.
static double eigen_mismatch(const double *re, const double *im, const double *want_re, const double *want_im, int n,
                             double scale) {
    unsigned char *used = calloc((size_t)n, 1);
    double worst = 0.0;
    for (int k = 0; k < n && used; k++) {
        int best = -1;
        double d = INFINITY;
        for (int j = 0; j < n; j++) {
            double e = hypot(re[k] - want_re[j], im[k] - want_im[j]);
            if (!used[j] && e < d) d = e, best = j;
        }
        used[best] = 1;
        worst = fmax(worst, d / scale);
    }
    if (!used) worst = INFINITY;
    free(used);
    return worst;
}

// Solves a copy of m (n x n); the eigenvalues in re, im. Returns the routine's status.
static int solve_copy(const double *m, int n, double *re, double *im) {
    double *a = malloc((size_t)n * n * sizeof(double));
    if (!a) return -1;
    memcpy(a, m, (size_t)n * n * sizeof(double));
    int rc = eigenvalues(a, n, re, im);
    free(a);
    return rc;
}

TEST(eigen_known_matrices) {
    double re[10] = {0}, im[10] = {0};
    // a rotation by 90 degrees: +-i
    double rotation[4] = {0, -1, 1, 0};
    CHECK(solve_copy(rotation, 2, re, im) == 0 && re[0] == 0 && re[1] == 0 && fabs(fabs(im[0]) - 1) < 1e-15 &&
              im[0] == -im[1], "rotation: %g%+gi, %g%+gi", re[0], im[0], re[1], im[1]);
    // the companion matrix of (x - 1)(x - 2)...(x - 10): eigenvalues 1 to 10
    double companion[100] = {0}, coef[11] = {1};
    for (int r = 1; r <= 10; r++)  // coef: the polynomial's coefficients, highest first
        for (int k = r; k >= 1; k--) coef[k] -= r * coef[k - 1];
    for (int j = 0; j < 10; j++) companion[j] = -coef[j + 1];
    for (int i = 1; i < 10; i++) companion[i * 10 + i - 1] = 1;
    double want_re[10], want_im[10] = {0};
    for (int k = 0; k < 10; k++) want_re[k] = k + 1;
    CHECK(solve_copy(companion, 10, re, im) == 0, "companion: no convergence");
    double e = eigen_mismatch(re, im, want_re, want_im, 10, 10.0);
    CHECK(e < 1e-9, "companion of (x-1)...(x-10): eigenvalues off by %.1e (relative to 10)", e);
    // upper triangular: its diagonal; a Jordan block (defective) still converges
    double triangular[9] = {3, 7, -2, 0, -1, 5, 0, 0, 0.5}, jordan[9] = {2, 1, 0, 0, 2, 1, 0, 0, 2};
    double tri_re[3] = {3, -1, 0.5}, tri_im[3] = {0}, jordan_re[3] = {2, 2, 2};
    CHECK(solve_copy(triangular, 3, re, im) == 0 && eigen_mismatch(re, im, tri_re, tri_im, 3, 3) < 1e-15,
          "triangular: %g %g %g", re[0], re[1], re[2]);
    CHECK(solve_copy(jordan, 3, re, im) == 0 && eigen_mismatch(re, im, jordan_re, tri_im, 3, 2) < 1e-5,
          "Jordan block of 2: %g%+gi %g%+gi %g%+gi", re[0], im[0], re[1], im[1], re[2], im[2]);
    double one = -4.5, zeros[16] = {0};
    CHECK(solve_copy(&one, 1, re, im) == 0 && re[0] == -4.5 && im[0] == 0, "1 x 1: %g", re[0]);
    CHECK(solve_copy(zeros, 4, re, im) == 0 && re[0] == 0 && re[3] == 0 && im[1] == 0, "zero matrix");
    double bad[4] = {1, NAN, 0, 1};
    CHECK(solve_copy(bad, 2, re, im) == -1, "a matrix holding NaN was solved");
}

// tr(A^k) for k = 1, 2, 3 from A, and from the eigenvalues (the power sums of a matrix's
// eigenvalues are the traces of its powers), for random matrices of 26 to 256 rows
TEST(eigen_power_sums) {
    static const int sizes[] = {26, 65, 100, 256};
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        int n = sizes[s];
        double *a = malloc((size_t)n * n * sizeof(double)), *a2 = malloc((size_t)n * n * sizeof(double));
        double *re = malloc((size_t)n * sizeof(double)), *im = malloc((size_t)n * sizeof(double));
        if (!CHECK(a && a2 && re && im, "out of memory")) break;
        Rng rng;
        rng_seed(&rng, 100 + n);
        for (size_t i = 0; i < (size_t)n * n; i++) a[i] = rng_normal(&rng);
        double trace[4] = {0};
        for (int i = 0; i < n; i++) {
            trace[1] += a[i * n + i];
            for (int j = 0; j < n; j++) {
                double s2 = 0.0;
                for (int k = 0; k < n; k++) s2 += a[i * n + k] * a[k * n + j];
                a2[i * n + j] = s2;
            }
        }
        for (int i = 0; i < n; i++) {
            trace[2] += a2[i * n + i];
            for (int k = 0; k < n; k++) trace[3] += a2[i * n + k] * a[k * n + i];
        }
        if (CHECK(solve_copy(a, n, re, im) == 0, "%d x %d: no convergence", n, n)) {
            double sum[4] = {0};
            for (int k = 0; k < n; k++) {  // Re(l), Re(l^2), Re(l^3)
                sum[1] += re[k];
                sum[2] += re[k] * re[k] - im[k] * im[k];
                sum[3] += re[k] * (re[k] * re[k] - 3 * im[k] * im[k]);
            }
            for (int p = 1; p <= 3; p++) {
                double scale = pow(sqrt((double)n), p) * n;  // |tr(A^p)| is of this order at most
                CHECK(fabs(sum[p] - trace[p]) < 1e-11 * scale, "%d x %d: sum of eigenvalues^%d %.12g, tr(A^%d) %.12g", n,
                      n, p, sum[p], p, trace[p]);
            }
        }
        free(a), free(a2), free(re), free(im);
    }
}

TEST(eigen_against_numpy) {
    AnalysisFixture f;
    if (analysis_fixture_load(&f) != 0) return;
    const int n = 40;
    const float *m = analysis_tensor(&f, "eigen.matrix", 2, (int64_t[]){n, n});
    const float *want_re = analysis_tensor(&f, "eigen.re", 1, (int64_t[]){n});
    const float *want_im = analysis_tensor(&f, "eigen.im", 1, (int64_t[]){n});
    double a[40 * 40], re[40], im[40], wr[40], wi[40];
    if (m && want_re && want_im) {
        for (int i = 0; i < n * n; i++) a[i] = m[i];
        for (int i = 0; i < n; i++) wr[i] = want_re[i], wi[i] = want_im[i];
        double scale = 0.0;
        for (int i = 0; i < n; i++) scale = fmax(scale, hypot(wr[i], wi[i]));
        if (CHECK(eigenvalues(a, n, re, im) == 0, "no convergence")) {
            double e = eigen_mismatch(re, im, wr, wi, n, scale);
            printf("    eigenvalues of a 40 x 40 matrix against numpy: worst %.1e relative to the largest\n", e);
            CHECK(e < 1e-6, "eigenvalues off by %.2e of the largest", e);
        }
    }
    analysis_fixture_free(&f);
}

// P Q (V x V) and Q P (r x r) give the same copying score: both routes of product_copying_score
TEST(copying_score_either_product) {
    const int r = 6;
    for (int V = 3; V <= 12; V += 9) {  // V < r: P Q is solved; V > r: Q P
        double p[12 * 6], q[6 * 12], pq[12 * 12], re[12] = {0}, im[12] = {0}, score = 0.0, whole;
        Rng rng;
        rng_seed(&rng, (uint64_t)V);
        for (int i = 0; i < V * r; i++) p[i] = rng_normal(&rng), q[i] = rng_normal(&rng);
        for (int a = 0; a < V; a++)
            for (int b = 0; b < V; b++) {
                pq[a * V + b] = 0.0;
                for (int k = 0; k < r; k++) pq[a * V + b] += p[a * r + k] * q[k * V + b];
            }
        if (!CHECK(product_copying_score(p, q, V, r, &score) == 0 && solve_copy(pq, V, re, im) == 0, "V %d: solve", V))
            continue;
        whole = copying_score(re, im, V);
        CHECK(fabs(score - whole) < 1e-12, "V %d, r %d: copying score %.15f, of the whole V x V product %.15f", V, r,
              score, whole);
    }
    double re[3] = {2, -1, -1}, im[3] = {0, 1, -1};
    CHECK(fabs(copying_score(re, im, 3) - 0.0) < 1e-15, "2, -1+i, -1-i: %g", copying_score(re, im, 3));
    double zero[2] = {0, 0};
    CHECK(isnan(copying_score(zero, zero, 2)), "the copying score of a zero circuit is not NaN");
}

// |A1 A2 B1 B2| / (|A1 A2| |B1 B2|) from r x r products, against the C x C matrices themselves
TEST(composition_score_factored) {
    enum { C = 9, R = 4 };
    double f[4][C * R], wa[C * C], wb[C * C], ab[C * C];
    Rng rng;
    rng_seed(&rng, 7);
    for (int k = 0; k < 4; k++)
        for (int i = 0; i < C * R; i++) f[k][i] = rng_normal(&rng);
    // f[0] (C x R) f[1] (R x C) = W_A; f[2] f[3] = W_B
    for (int i = 0; i < C; i++)
        for (int j = 0; j < C; j++) {
            wa[i * C + j] = wb[i * C + j] = 0.0;
            for (int k = 0; k < R; k++) {
                wa[i * C + j] += f[0][i * R + k] * f[1][k * C + j];
                wb[i * C + j] += f[2][i * R + k] * f[3][k * C + j];
            }
        }
    double na = 0, nb = 0, nab = 0;
    for (int i = 0; i < C; i++)
        for (int j = 0; j < C; j++) {
            ab[i * C + j] = 0.0;
            for (int k = 0; k < C; k++) ab[i * C + j] += wa[i * C + k] * wb[k * C + j];
            na += wa[i * C + j] * wa[i * C + j], nb += wb[i * C + j] * wb[i * C + j], nab += ab[i * C + j] * ab[i * C + j];
        }
    double want = sqrt(nab / (na * nb)), got;
    CHECK(composition_score(f[0], f[1], f[2], f[3], C, R, &got) == 0 && fabs(got - want) < 1e-13,
          "factored %.15f, direct %.15f", got, want);
}

// The baseline is a pure function of its seed, the mean of the scores of the pairs its
// generator draws, and near what random matrices of these shapes score
TEST(composition_baseline_from_seed) {
    double a, b, c, direct = 0.0;
    const int C = 16, r = 4, samples = 50;
    if (!CHECK(composition_baseline(C, r, samples, 1337, &a) == 0 && composition_baseline(C, r, samples, 1337, &b) == 0 &&
               composition_baseline(C, r, samples, 1338, &c) == 0, "out of memory"))
        return;
    CHECK(memcmp(&a, &b, sizeof(a)) == 0, "seed 1337 gave %.17g, then %.17g", a, b);
    CHECK(a != c, "seeds 1337 and 1338 gave the same baseline %.17g", a);
    Rng rng;
    rng_seed(&rng, 1337);
    double *f = malloc(4 * (size_t)C * r * sizeof(double));
    if (!CHECK(f != NULL, "out of memory")) return;
    for (int s = 0; s < samples; s++) {
        for (int i = 0; i < 4 * C * r; i++) f[i] = rng_normal(&rng);
        double score;
        composition_score(f, f + C * r, f + 2 * C * r, f + 3 * C * r, C, r, &score);
        direct += score / samples;
    }
    free(f);
    CHECK(fabs(a - direct) < 1e-12, "baseline %.15f, the mean of its pairs' scores %.15f", a, direct);
    CHECK(a > 0.15 && a < 0.45, "baseline of 16 x 4 factors %.4f: random rank-4 products score about 0.3", a);
}

// Every circuit of the fixture's model against TransformerLens's definitions in torch
TEST(circuits_against_torch) {
    AnalysisFixture f;
    if (analysis_fixture_load(&f) != 0) return;
    const GPTConfig *c = &f.model.config;
    const int L = c->n_layer, H = c->n_head, V = c->vocab_size, T = c->block_size;
    Circuits got;
    char err[ERR_LEN];
    if (!CHECK(circuits_compute(&got, &f.model, 1, err) == 0, "%s", err)) {
        analysis_fixture_free(&f);
        return;
    }
    struct { const char *name; const float *ours; int n; } matrices[] = {
        {"circuits.ov", got.ov, V}, {"circuits.ov_raw", got.ov_raw, V},
        {"circuits.qk_characters", got.qk_characters, V}, {"circuits.qk_characters_raw", got.qk_characters_raw, V},
        {"circuits.qk_positions", got.qk_positions, T}, {"circuits.qk_positions_raw", got.qk_positions_raw, T},
    };
    for (size_t k = 0; k < sizeof(matrices) / sizeof(matrices[0]); k++) {
        int n = matrices[k].n;
        const float *want = analysis_tensor(&f, matrices[k].name, 4, (int64_t[]){L, H, n, n});
        if (!want) continue;
        double e = rel_error_ff(matrices[k].ours, want, (size_t)L * H * n * n);
        CHECK(e < 1e-5, "%s: rel error %.2e", matrices[k].name, e);
    }
    struct { const char *name; const double *ours; int n; } scores[] = {
        {"circuits.ov_copying_score", got.ov_copying_score, L * H},
        {"circuits.ov_copying_score_raw", got.ov_copying_score_raw, L * H},
        {"circuits.ov_diagonal_share", got.ov_diagonal_share, L * H},
        {"circuits.ov_diagonal_share_raw", got.ov_diagonal_share_raw, L * H},
        {"circuits.composition_q", got.composition_q, L * H * L * H},
        {"circuits.composition_k", got.composition_k, L * H * L * H},
        {"circuits.composition_v", got.composition_v, L * H * L * H},
    };
    double worst = 0.0;
    for (size_t k = 0; k < sizeof(scores) / sizeof(scores[0]); k++) {
        int n = scores[k].n;
        const float *want = n == L * H ? analysis_tensor(&f, scores[k].name, 2, (int64_t[]){L, H})
                                       : analysis_tensor(&f, scores[k].name, 4, (int64_t[]){L, H, L, H});
        for (int i = 0; want && i < n; i++) {
            worst = fmax(worst, fabs(scores[k].ours[i] - want[i]));
            CHECK(fabs(scores[k].ours[i] - want[i]) < 1e-6, "%s[%d]: %.9f, torch %.9f", scores[k].name, i,
                  scores[k].ours[i], want[i]);
        }
    }
    printf("    circuits against torch: scores within %.1e\n", worst);
    // the V x V OV circuits' own eigenvalues (solved whole here) against numpy's
    for (int raw = 0; raw < 2; raw++) {
        const float *want_re = analysis_tensor(&f, raw ? "circuits.ov_raw_eigen_re" : "circuits.ov_eigen_re", 3,
                                               (int64_t[]){L, H, V});
        const float *want_im = analysis_tensor(&f, raw ? "circuits.ov_raw_eigen_im" : "circuits.ov_eigen_im", 3,
                                               (int64_t[]){L, H, V});
        for (int h = 0; want_re && want_im && h < L * H; h++) {
            double m[11 * 11], re[11], im[11], wr[11], wi[11], scale = 0.0;
            for (int i = 0; i < V * V; i++) m[i] = (raw ? got.ov_raw : got.ov)[(size_t)h * V * V + i];
            for (int i = 0; i < V; i++)
                wr[i] = want_re[h * V + i], wi[i] = want_im[h * V + i], scale = fmax(scale, hypot(wr[i], wi[i]));
            if (!CHECK(V <= 11 && solve_copy(m, V, re, im) == 0, "head %d: solve", h)) continue;
            double e = eigen_mismatch(re, im, wr, wi, V, scale);
            CHECK(e < 1e-5, "%s OV circuit of head %d: eigenvalues off numpy's by %.2e", raw ? "raw" : "extended", h, e);
        }
    }
    circuits_free(&got);
    analysis_fixture_free(&f);
}

// The attribution of each position against TransformerLens's, and its parts' sum against the
// model's own logits
TEST(attribution_against_torch) {
    AnalysisFixture f;
    if (analysis_fixture_load(&f) != 0) return;
    const GPTConfig *c = &f.model.config;
    const int t = c->block_size, K = ATTRIBUTION_PARTS(c);
    const int *tokens = analysis_tokens(&f, "attribution.tokens", t);
    const int *target = analysis_tokens(&f, "attribution.target", t), *rival = analysis_tokens(&f, "attribution.rival", t);
    const float *logit = analysis_tensor(&f, "attribution.logit", 1, (int64_t[]){t});
    const float *parts = analysis_tensor(&f, "attribution.logit_parts", 2, (int64_t[]){t, K});
    const float *diff = analysis_tensor(&f, "attribution.difference_parts", 2, (int64_t[]){t, K});
    LogitAttribution a;
    char err[ERR_LEN];
    if (tokens && target && rival && logit && parts && diff && CHECK(logit_attribution_init(&a, c, t, err) == 0, "%s", err)) {
        int next[8];
        for (int i = 0; i < t; i++) next[i] = i + 1 < t ? tokens[i + 1] : -1;
        gpt_forward(&f.model, tokens, NULL, 1, t, NULL);
        logit_attribution_compute(&a, &f.model, next);
        double worst_sum = 0.0;
        for (int i = 0; i < t; i++) {
            CHECK(a.target[i] == target[i] && a.rival[i] == rival[i], "position %d: target %d rival %d, torch %d %d", i,
                  a.target[i], a.rival[i], target[i], rival[i]);
            CHECK(a.next_known[i] == (i + 1 < t), "position %d: next_known %d", i, a.next_known[i]);
            double sum = 0.0, sum_diff = 0.0;
            for (int k = 0; k < K; k++) sum += a.logit_parts[i * K + k], sum_diff += a.difference_parts[i * K + k];
            worst_sum = fmax(worst_sum, fmax(fabs(sum - a.logit[i]), fabs(sum_diff - a.difference[i])));
            CHECK(fabs(sum - a.logit[i]) < 1e-4 && fabs(sum_diff - a.difference[i]) < 1e-4,
                  "position %d: parts sum to %.7f and %.7f, the model's logit %.7f and difference %.7f", i, sum, sum_diff,
                  a.logit[i], a.difference[i]);
            CHECK(fabs(a.logit[i] - logit[i]) < 1e-4, "position %d: logit %.7f, torch %.7f", i, a.logit[i], logit[i]);
        }
        float *ours = malloc(2 * (size_t)t * K * sizeof(float));
        if (CHECK(ours != NULL, "out of memory")) {
            for (int i = 0; i < t * K; i++) ours[i] = (float)a.logit_parts[i], ours[t * K + i] = (float)a.difference_parts[i];
            double e = rel_error_ff(ours, parts, (size_t)t * K), e_diff = rel_error_ff(ours + t * K, diff, (size_t)t * K);
            printf("    attribution against torch: rel error %.1e (logit), %.1e (difference); parts sum to the "
                   "logit within %.1e\n", e, e_diff, worst_sum);
            CHECK(e < 1e-4 && e_diff < 1e-4, "parts: rel error %.2e, of the difference %.2e", e, e_diff);
        }
        free(ours);
        logit_attribution_free(&a);
    }
    analysis_fixture_free(&f);
}

// Writes tests/tmp/circuits_sample.html, the fixture model's circuits page, for
// scripts/check_circuits.sh; and its .json, whose copying scores are the circuits'
TEST(circuits_sample_page) {
    AnalysisFixture f;
    if (analysis_fixture_load(&f) != 0) return;
    Circuits got;
    char err[ERR_LEN];
    uint32_t chars[11] = {'a', 'b', 'c', ' ', '\n', '<', '"', 0xE9, 0x6708, '\t', 'z'};
    if (CHECK(f.model.config.vocab_size == 11, "the fixture's vocabulary") && test_make_dir("tests/tmp") &&
        CHECK(circuits_compute(&got, &f.model, 1337, err) == 0, "%s", err)) {
        CircuitsFile file = {&got, chars, f.model.config.n_embd, f.model.config.head_size, f.model.config.block_size,
                             "the <analysis> fixture"};
        CHECK(circuits_export("tests/tmp/circuits_sample.html", &file, 1, err) == 0, "%s", err);
        CHECK(circuits_export("tests/tmp/circuits_sample.json", &file, 1, err) == 0, "%s", err);
        CHECK(circuits_export("tests/tmp/circuits_sample.json", &file, 0, err) == -2, "an existing file was replaced");
        size_t len;
        char *page = test_read_file("tests/tmp/circuits_sample.html", &len);
        CHECK(page && strstr(page, "the &lt;analysis&gt; fixture") && !strstr(page, "<analysis>"),
              "the page's title is not escaped");
        free(page);
        circuits_free(&got);
    }
    analysis_fixture_free(&f);
}
