#include "eigen.h"

#include <float.h>
#include <math.h>
#include <stddef.h>

// Each eigenvalue (or pair) gets at most this many QR steps; every tenth is an exceptional
// shift, which breaks the rare cycles the usual shift can fall into.
#define QR_MAX_STEPS 60

#define A(i, j) a[(size_t)(i) * n + (j)]

// A Householder reflector P = I - beta v v^T with P x = alpha e1, |alpha| = |x|: v (m, holding
// x, and a stride apart) becomes the reflector's vector; returns beta, 0 when x's entries
// past the first are all 0 (nothing to reflect), and writes alpha.
static double reflector(double *v, int m, long stride, double *alpha) {
    double scale = 0.0;
    for (int i = 1; i < m; i++) scale = fmax(scale, fabs(v[i * stride]));
    *alpha = v[0];
    if (scale == 0.0) return 0.0;
    scale = fmax(scale, fabs(v[0]));
    double sum = 0.0;  // |x|^2 / scale^2, scaled so that the squares neither overflow nor vanish
    for (int i = 0; i < m; i++) sum += (v[i * stride] / scale) * (v[i * stride] / scale);
    double norm = scale * sqrt(sum);
    *alpha = v[0] >= 0.0 ? -norm : norm;  // the sign that keeps v[0] = x0 - alpha from cancelling
    v[0] -= *alpha;
    double vv = 0.0;
    for (int i = 0; i < m; i++) vv += v[i * stride] * v[i * stride];
    return 2.0 / vv;
}

// Rows r0 .. r0 + m - 1, columns c0 .. c1 of a := P a (v a stride apart).
static void reflect_rows(double *a, int n, const double *v, long stride, int m, double beta, int r0, int c0, int c1) {
    for (int j = c0; j <= c1; j++) {
        double s = 0.0;
        for (int i = 0; i < m; i++) s += v[i * stride] * A(r0 + i, j);
        s *= beta;
        for (int i = 0; i < m; i++) A(r0 + i, j) -= s * v[i * stride];
    }
}

// Columns c0 .. c0 + m - 1, rows r0 .. r1 of a := a P.
static void reflect_columns(double *a, int n, const double *v, long stride, int m, double beta, int c0, int r0,
                            int r1) {
    for (int i = r0; i <= r1; i++) {
        double s = 0.0;
        for (int k = 0; k < m; k++) s += A(i, c0 + k) * v[k * stride];
        s *= beta;
        for (int k = 0; k < m; k++) A(i, c0 + k) -= s * v[k * stride];
    }
}

// a := Q^T a Q, upper Hessenberg (zero below the subdiagonal). Column k's reflector zeroes its
// entries below row k + 1; its vector is kept in those entries while it is applied.
static void hessenberg(double *a, int n) {
    for (int k = 0; k + 2 < n; k++) {
        double *v = &A(k + 1, k), alpha;
        double beta = reflector(v, n - k - 1, n, &alpha);
        if (beta == 0.0) continue;
        reflect_rows(a, n, v, n, n - k - 1, beta, k + 1, k + 1, n - 1);
        reflect_columns(a, n, v, n, n - k - 1, beta, k + 1, 0, n - 1);
        A(k + 1, k) = alpha;
        for (int i = k + 2; i < n; i++) A(i, k) = 0.0;
    }
}

// The eigenvalues of the 2 x 2 block [[p, q], [r, s]]: a real pair, or a complex-conjugate one.
static void block_eigenvalues(double p, double q, double r, double s, double re[2], double im[2]) {
    double half = 0.5 * (p - s), disc = half * half + q * r;  // eigenvalues s + half +- sqrt(disc)
    if (disc >= 0.0) {
        double z = half + copysign(sqrt(disc), half);  // the larger offset, without cancellation
        re[0] = s + z;
        re[1] = z != 0.0 ? s - q * r / z : s;  // the product of the two offsets is -q r
        im[0] = im[1] = 0.0;
    } else {
        re[0] = re[1] = s + half;
        im[0] = sqrt(-disc);
        im[1] = -im[0];
    }
}

// One Francis double-shift step on the unreduced Hessenberg block of rows and columns lo .. hi
// (at least 3 of them): an implicit QR step with the two shifts whose sum is `sum` and product
// `product`. The first column of (H - s1 I)(H - s2 I) = H^2 - sum H + product I sets the first
// reflector; the bulge it makes below the subdiagonal is chased down and off the block.
static void francis_step(double *a, int n, int lo, int hi, double sum, double product) {
    double h00 = A(lo, lo), h10 = A(lo + 1, lo);
    double x = h00 * h00 + A(lo, lo + 1) * h10 - sum * h00 + product;
    double y = h10 * (h00 + A(lo + 1, lo + 1) - sum);
    double z = h10 * A(lo + 2, lo + 1);
    for (int k = lo; k + 2 <= hi; k++) {
        double v[3] = {x, y, z}, alpha;
        double beta = reflector(v, 3, 1, &alpha);
        int c0 = k > lo ? k - 1 : lo;
        if (beta != 0.0) {
            reflect_rows(a, n, v, 1, 3, beta, k, c0, hi);
            reflect_columns(a, n, v, 1, 3, beta, k, lo, k + 3 < hi ? k + 3 : hi);
        }
        if (k > lo) A(k + 1, k - 1) = A(k + 2, k - 1) = 0.0;  // the bulge's column, chased on
        x = A(k + 1, k);
        y = A(k + 2, k);
        if (k + 3 <= hi) z = A(k + 3, k);
    }
    double v[2] = {x, y}, alpha;
    double beta = reflector(v, 2, 1, &alpha);
    if (beta != 0.0) {
        reflect_rows(a, n, v, 1, 2, beta, hi - 1, hi - 2, hi);
        reflect_columns(a, n, v, 1, 2, beta, hi - 1, lo, hi);
    }
    A(hi, hi - 2) = 0.0;
}

int eigenvalues(double *a, int n, double *re, double *im) {
    for (size_t i = 0; i < (size_t)n * n; i++)
        if (!isfinite(a[i])) return -1;
    hessenberg(a, n);
    double norm = 0.0;  // the scale of a subdiagonal entry whose two neighbours are 0
    for (size_t i = 0; i < (size_t)n * n; i++) norm += fabs(a[i]);
    int hi = n - 1, steps = 0;
    while (hi >= 0) {
        // lo: the top of the unreduced block that ends at hi (its subdiagonal entries not negligible)
        int lo = hi;
        for (; lo > 0; lo--) {
            double scale = fabs(A(lo - 1, lo - 1)) + fabs(A(lo, lo));
            if (fabs(A(lo, lo - 1)) <= DBL_EPSILON * (scale > 0.0 ? scale : norm)) {
                A(lo, lo - 1) = 0.0;
                break;
            }
        }
        if (lo >= hi - 1) {  // a 1 x 1 or 2 x 2 block has deflated
            if (lo == hi) re[hi] = A(hi, hi), im[hi] = 0.0;
            else block_eigenvalues(A(hi - 1, hi - 1), A(hi - 1, hi), A(hi, hi - 1), A(hi, hi), re + hi - 1, im + hi - 1);
            hi = lo - 1;
            steps = 0;
            continue;
        }
        if (++steps > QR_MAX_STEPS) return -1;
        double sum, product;
        if (steps % 10 == 0) {  // exceptional: shifts made from the last two subdiagonal entries
            double w = fabs(A(hi, hi - 1)) + fabs(A(hi - 1, hi - 2)), h = A(hi, hi) + 0.75 * w;
            sum = 2.0 * h;
            product = h * h + 0.4375 * w * w;
        } else {  // the eigenvalues of the trailing 2 x 2 block
            sum = A(hi - 1, hi - 1) + A(hi, hi);
            product = A(hi - 1, hi - 1) * A(hi, hi) - A(hi - 1, hi) * A(hi, hi - 1);
        }
        francis_step(a, n, lo, hi, sum, product);
    }
    return 0;
}
