// Comparing what the learner's function wrote with the reference, and saying what is wrong
// (check.h): the worst element and by how much, how many are wrong and where, and what the
// pattern usually means — the stub left as it was, a NaN, a gradient written where it is
// added (or the other way), a known mistake, every value off by one factor.
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "check.h"

void check_init(Check *c, double tolerance) {
    memset(c, 0, sizeof(*c));
    c->tolerance = tolerance;
}

Output *check_output(Check *c, const char *name, const float *got, const double *want, const float *before, int adds,
                     int ndim, const int *dims, const char *const *dim_names) {
    Output *o = &c->out[c->count++];
    *o = (Output){name, got, want, before, adds, 1, ndim, {0}, {0}};
    for (int d = 0; d < ndim; d++) {
        o->dims[d] = dims[d];
        o->dim_names[d] = dim_names[d];
        o->n *= (size_t)dims[d];
    }
    return o;
}

void check_mistake(Check *c, const char *what, const double *v0, const double *v1, const double *v2, const double *v3) {
    c->mistake[c->mistakes++] = (Mistake){what, {v0, v1, v2, v3}};
}

void check_factor(Check *c, double factor, const char *means) {
    c->factor[c->factors] = factor;
    c->factor_means[c->factors++] = means;
}

void check_fail(const char *fmt, ...) {
    printf("  FAIL  %s\n        ", running_title());
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
}

// ---------------------------------------------------------------------------------------
// measures

// The scale errors are measured against: the largest |want|, or for an output added to,
// the largest of that and of what the function should add (the reference less `before`).
static double scale_of(const Output *o) {
    double s = 0.0;
    for (size_t i = 0; i < o->n; i++) {
        s = fmax(s, fabs(o->want[i]));
        if (o->adds) s = fmax(s, fabs(o->want[i] - o->before[i]));
    }
    return s > 0.0 ? s : 1.0;
}

static int finite_float(float x) { return x == x && x - x == 0.0f; }

// Whether element i is wrong: not finite, or off by more than the tolerance of the scale.
static int wrong_at(const Output *o, size_t i, double tolerance, double scale) {
    return !finite_float(o->got[i]) || fabs(o->got[i] - o->want[i]) > tolerance * scale;
}

// The largest error relative to the scale (infinity when an element is not finite).
static double error_of(const Output *o, double scale) {
    double e = 0.0;
    for (size_t i = 0; i < o->n; i++) {
        if (!finite_float(o->got[i])) return INFINITY;
        e = fmax(e, fabs(o->got[i] - o->want[i]) / scale);
    }
    return e;
}

// Whether the output matches other values (a mistake's), within the tolerance.
static int matches(const Output *o, const double *values, double tolerance) {
    double scale = 0.0;
    for (size_t i = 0; i < o->n; i++) scale = fmax(scale, fabs(values[i]));
    if (scale == 0.0) scale = 1.0;
    for (size_t i = 0; i < o->n; i++)
        if (!finite_float(o->got[i]) || fabs(o->got[i] - values[i]) > tolerance * scale) return 0;
    return 1;
}

// ---------------------------------------------------------------------------------------
// what is said

// "out[2][5] (row 2, channel 5)"
static void element_name(const Output *o, size_t i, char *text, size_t size) {
    int index[CHECK_MAX_DIMS];
    size_t rest = i;
    for (int d = o->ndim - 1; d >= 0; d--) {
        index[d] = (int)(rest % (size_t)o->dims[d]);
        rest /= (size_t)o->dims[d];
    }
    size_t len = (size_t)snprintf(text, size, "%s", o->name);
    for (int d = 0; d < o->ndim && len < size; d++) len += (size_t)snprintf(text + len, size - len, "[%d]", index[d]);
    if (o->ndim < 2) return;
    for (int d = 0; d < o->ndim && len < size; d++)
        len += (size_t)snprintf(text + len, size - len, "%s%s %d%s", d ? ", " : " (", o->dim_names[d], index[d],
                                d == o->ndim - 1 ? ")" : "");
}

// The worst element: the first not finite, else the one off by most.
static size_t worst_element(const Output *o) {
    size_t worst = 0;
    double most = -1.0;
    for (size_t i = 0; i < o->n; i++) {
        if (!finite_float(o->got[i])) return i;
        double e = fabs(o->got[i] - o->want[i]);
        if (e > most) most = e, worst = i;
    }
    return worst;
}

// Which values of each dimension hold a wrong element, said when they are not all of them:
// "wrong only at row 1, 3 (of 4)", and what a lone last one often means.
static void where_wrong(const Output *o, const unsigned char *wrong) {
    if (o->ndim < 2) return;
    for (int d = 0; d < o->ndim; d++) {
        int size = o->dims[d], count = 0, first = -1, listed = 0;
        size_t inner = 1;
        for (int e = d + 1; e < o->ndim; e++) inner *= (size_t)o->dims[e];
        unsigned char has[4096] = {0};
        if (size > (int)sizeof(has)) continue;
        for (size_t i = 0; i < o->n; i++)
            if (wrong[i]) has[(i / inner) % (size_t)size] = 1;
        for (int v = 0; v < size; v++)
            if (has[v]) {
                count++;
                if (first < 0) first = v;
            }
        if (count == size || count == 0 || size == 1) continue;
        printf("        wrong only at %s", o->dim_names[d]);
        for (int v = 0; v < size && listed < 8; v++)
            if (has[v]) printf("%s%d", listed++ ? ", " : " ", v);
        printf("%s (of %d)", count > 8 ? ", ..." : "", size);
        if (count == 1 && first == size - 1)
            printf(": the last %s only, as when a loop stops one short", o->dim_names[d]);
        printf("\n");
    }
}

// Whether the output (what it should add, for an output added to) is the reference's times
// one factor; *factor gets it.
static int one_factor(const Output *o, double tolerance, double *factor) {
    double gw = 0.0, ww = 0.0, scale = 0.0;
    for (size_t i = 0; i < o->n; i++) {
        double base = o->adds ? o->before[i] : 0.0;
        double g = o->got[i] - base, w = o->want[i] - base;
        if (!finite_float(o->got[i])) return 0;
        gw += g * w;
        ww += w * w;
        scale = fmax(scale, fabs(w));
    }
    if (ww == 0.0) return 0;
    double r = gw / ww;
    for (size_t i = 0; i < o->n; i++) {
        double base = o->adds ? o->before[i] : 0.0;
        if (fabs((o->got[i] - base) - r * (o->want[i] - base)) > tolerance * fabs(r) * scale) return 0;
    }
    *factor = r;
    return fabs(r - 1.0) > 10 * tolerance;
}

// 1 when the output is all zeros or exactly as it was before the call.
static int untouched(const Output *o) {
    int zeros = 1, same = 1;
    for (size_t i = 0; i < o->n; i++) {
        zeros &= o->got[i] == 0.0f;
        same &= memcmp(&o->got[i], &o->before[i], sizeof(float)) == 0;
    }
    return (zeros && !o->adds) || same;
}

// What the stub (or a function that forgot an output) leaves, among the outputs that are
// wrong (errors[k] past the tolerance): said, and 1 when it is every output.
static int say_untouched(const Check *c, const double *errors) {
    int all = 1, any = 0;
    for (int k = 0; k < c->count; k++) {
        int u = untouched(&c->out[k]);
        all &= u;
        any |= u && errors[k] > c->tolerance;
    }
    if (all) {
        printf("        your %s left ", running_function());
        for (int k = 0; k < c->count; k++)
            printf("%s%s", k == 0 ? "" : k == c->count - 1 ? " and " : ", ", c->out[k].name);
        printf(" as %s (or all zeros): it computes nothing yet (still the stub?)\n",
               c->count > 1 ? "they were" : "it was");
        return 1;
    }
    if (!any) return 0;
    for (int k = 0; k < c->count; k++)
        if (untouched(&c->out[k]) && errors[k] > c->tolerance)
            printf("        %s is left as it was (or all zeros): your %s %s nothing %s it\n", c->out[k].name,
                   running_function(), c->out[k].adds ? "adds" : "writes", c->out[k].adds ? "to" : "into");
    return 0;
}

// A gradient written where it must be added, or added where it must be written.
static void say_write_or_add(const Output *o, double tolerance) {
    double scale = scale_of(o);
    int as_written = 1, as_added = 1;
    for (size_t i = 0; i < o->n; i++) {
        double should_add = o->want[i] - o->before[i];
        if (!finite_float(o->got[i])) return;
        as_written &= fabs(o->got[i] - should_add) <= tolerance * scale;  // = where += was wanted
        as_added &= fabs(o->got[i] - (o->want[i] + o->before[i])) <= tolerance * scale;  // += where = was wanted
    }
    if (o->adds && as_written)
        printf(
            "        %s holds only what this call should add to it: the function adds (+=) into %s, as every "
            "backward of model/layers.h does (a gradient sums over every use), it does not overwrite it\n",
            o->name, o->name);
    else if (!o->adds && as_added)
        printf(
            "        %s holds the right values plus what it held before the call: this function writes (=) %s, "
            "it does not add to it\n",
            o->name, o->name);
}

// The failing output's worst element, how many are wrong and where, and the other outputs.
static void say_what(const Check *c, int failed, const double *errors) {
    const Output *o = &c->out[failed];
    double scale = scale_of(o);
    size_t worst = worst_element(o);
    char name[160];
    element_name(o, worst, name, sizeof(name));
    if (finite_float(o->got[worst]))
        printf("        %s is %.6g, the reference %.6g: off by %.3g (%.3g%% of the largest |%s|, %.4g)\n", name,
               o->got[worst], o->want[worst] + 0.0, fabs(o->got[worst] - o->want[worst]),
               100.0 * fabs(o->got[worst] - o->want[worst]) / scale, o->name, scale);
    else
        printf("        %s is %g where the reference is %.6g%s%s\n", name, o->got[worst], o->want[worst] + 0.0,
               c->nonfinite_hint ? ": " : "", c->nonfinite_hint ? c->nonfinite_hint : "");
    static unsigned char wrong_flags[1 << 16];
    size_t wrong = 0;
    for (size_t i = 0; i < o->n; i++) {
        int w = wrong_at(o, i, c->tolerance, scale);
        if (i < sizeof(wrong_flags)) wrong_flags[i] = (unsigned char)w;
        wrong += (size_t)w;
    }
    printf("        %zu of the %zu values of %s are off by more than %.0e of the largest", wrong, o->n, o->name,
           c->tolerance);
    for (int k = 0; k < c->count; k++)
        if (k != failed) printf("; %s is %s", c->out[k].name, errors[k] > c->tolerance ? "wrong too" : "right");
    printf("\n");
    if (o->n <= sizeof(wrong_flags) && !untouched(o)) where_wrong(o, wrong_flags);
}

// What the failure usually means: the stub, a write for an add, a known mistake, one factor.
static void say_why(const Check *c, int failed, const double *errors) {
    if (say_untouched(c, errors)) return;
    for (int k = 0; k < c->count; k++)
        if (errors[k] > c->tolerance) say_write_or_add(&c->out[k], c->tolerance);
    for (int m = 0; m < c->mistakes; m++) {
        int fits = 1;
        for (int k = 0; k < c->count && fits; k++) {
            const double *v = c->mistake[m].values[k];
            fits = v ? matches(&c->out[k], v, c->tolerance) : errors[k] <= c->tolerance;
        }
        if (fits) {
            printf("        What it looks like: %s\n", c->mistake[m].what);
            return;
        }
    }
    const Output *o = &c->out[failed];
    double factor;
    if (!one_factor(o, c->tolerance, &factor)) return;
    const char *means = NULL;
    for (int f = 0; f < c->factors; f++)
        if (fabs(factor / c->factor[f] - 1.0) < 1e-3) means = c->factor_means[f];
    printf("        every value %sis %.5g times the reference's%s%s\n", o->adds ? "your function added " : "", factor,
           means ? ": " : "", means ? means : "");
}

int check_compare(const Check *c) {
    double errors[CHECK_MAX_OUTPUTS], worst_error = 0.0;
    int failed = -1;
    for (int k = 0; k < c->count; k++) {
        errors[k] = error_of(&c->out[k], scale_of(&c->out[k]));
        worst_error = fmax(worst_error, errors[k]);
        if (errors[k] > c->tolerance && failed < 0) failed = k;
    }
    if (failed < 0) {
        printf("  ok    %s (largest error %.1e of the largest value; %.0e allowed)\n", running_title(), worst_error,
               c->tolerance);
    } else {
        printf("  FAIL  %s\n", running_title());
        say_what(c, failed, errors);
        say_why(c, failed, errors);
        if (c->hint) printf("        %s\n", c->hint);
    }
    fflush(stdout);
    return failed < 0;
}
