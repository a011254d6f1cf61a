// Tests of the loss plot (viewer/loss_plot.h): the SVG's structure, its tick values, its
// handling of NaN, single points and extreme values, and the atomic write. The SVG is read
// back by small string scanners here; scripts/check_loss_plot.sh renders it in Chromium.
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../common/rng.h"
#include "../format/json.h"
#include "../training/run_log.h"
#include "../viewer/loss_plot.h"
#include "test.h"

#define TMP_DIR "tests/tmp"

// The SVG of the points, in a malloc'd string.
static char *plot_text(const LossPoint *points, size_t n, const char *title) {
    FILE *fp = tmpfile();
    if (!fp) return NULL;
    loss_plot_svg(fp, points, n, title);
    long len = ftell(fp);
    char *text = len >= 0 ? malloc((size_t)len + 1) : NULL;
    if (text && (fseek(fp, 0, SEEK_SET) != 0 || fread(text, 1, (size_t)len, fp) != (size_t)len)) {
        free(text);
        text = NULL;
    }
    if (text) text[len] = '\0';
    fclose(fp);
    return text;
}

static size_t count_of(const char *text, const char *what) {
    size_t n = 0;
    for (const char *p = text; (p = strstr(p, what)) != NULL; p += strlen(what)) n++;
    return n;
}

// The contents of the element that starts with `open` (e.g. "<g class=\"x-ticks\""), up to
// the next `close`, into buf; "" when there is none.
static void element_text(const char *svg, const char *open, const char *close, char *buf, size_t size) {
    buf[0] = '\0';
    const char *start = strstr(svg, open);
    const char *end = start ? strstr(start, close) : NULL;
    if (end) snprintf(buf, size, "%.*s", (int)(end - start), start);
}

// The labels of a tick group (its <text> contents) joined by spaces, e.g. "0 500 1000".
static void tick_labels(const char *svg, const char *cls, char *out, size_t size) {
    char open[64], group[16384];
    snprintf(open, sizeof(open), "<g class=\"%s\"", cls);
    element_text(svg, open, "</g>", group, sizeof(group));
    out[0] = '\0';
    size_t used = 0;
    for (const char *p = group; (p = strstr(p, "<text")) != NULL;) {
        const char *from = strchr(p, '>') + 1, *to = strstr(from, "</text>");
        used += (size_t)snprintf(out + used, size - used, "%s%.*s", used ? " " : "", (int)(to - from), from);
        p = to;
    }
}

// The ticks of group cls are evenly spaced by 1, 2 or 5 times a power of ten, each a
// multiple of that step, between 3 and 10 of them, and cover [lo, hi] with less than a step
// to spare at either end.
static void check_ticks(const char *svg, const char *cls, double lo, double hi, const char *what) {
    char labels[1024];
    tick_labels(svg, cls, labels, sizeof(labels));
    double v[64];
    int n = 0;
    for (char *p = labels, *end; *p && n < 64; p = end) {
        v[n++] = strtod(p, &end);
        if (end == p) break;
    }
    if (!CHECK(n >= 3 && n <= 10, "%s: %d %s '%s', want 3 to 10", what, n, cls, labels)) return;
    double step = (v[n - 1] - v[0]) / (n - 1), tol = 1e-5 * step;
    double mantissa = step / pow(10.0, floor(log10(step) + 1e-6));
    CHECK(fabs(mantissa - 1) < 1e-5 || fabs(mantissa - 2) < 1e-5 || fabs(mantissa - 5) < 1e-5,
          "%s: %s step %g is not 1, 2 or 5 times a power of ten ('%s')", what, cls, step, labels);
    for (int i = 0; i < n; i++) {
        CHECK(fabs(v[i] - (v[0] + i * step)) < tol, "%s: %s '%s' unevenly spaced", what, cls, labels);
        CHECK(fabs(v[i] / step - round(v[i] / step)) < 1e-5, "%s: %s tick %g not a multiple of %g", what, cls,
              v[i], step);
    }
    CHECK(v[0] <= lo + tol && v[0] > lo - step + tol, "%s: %s '%s' starts badly for %g", what, cls, labels, lo);
    CHECK(v[n - 1] >= hi - tol && v[n - 1] < hi + step - tol, "%s: %s '%s' ends badly for %g", what, cls, labels, hi);
}

// Number of points in the path of class cls (one "M" and an "L" for each further point);
// -1 when there is no such path.
static int path_points(const char *svg, const char *cls) {
    char open[64], path[65536];
    snprintf(open, sizeof(open), "<path class=\"%s\"", cls);
    element_text(svg, open, "/>", path, sizeof(path));
    const char *d = strstr(path, " d=\"");
    if (!d) return -1;
    return (int)(count_of(d, "M") + count_of(d, "L"));
}

// Every coordinate and number in the SVG is finite and the markup is balanced.
static void check_well_formed(const char *svg, const char *what) {
    CHECK(strncmp(svg, "<svg xmlns=\"http://www.w3.org/2000/svg\"", 39) == 0, "%s: does not start with <svg", what);
    size_t len = strlen(svg);
    CHECK(len > 7 && strcmp(svg + len - 7, "</svg>\n") == 0, "%s: does not end with </svg>", what);
    CHECK(count_of(svg, "<g") == count_of(svg, "</g>"), "%s: %zu <g> but %zu </g>", what, count_of(svg, "<g"),
          count_of(svg, "</g>"));
    CHECK(count_of(svg, "<text") == count_of(svg, "</text>"), "%s: unbalanced <text>", what);
    CHECK(!strstr(svg, "nan") && !strstr(svg, "inf") && !strstr(svg, "NaN") && !strstr(svg, "Inf"),
          "%s: a non-finite number in the SVG", what);
    CHECK(count_of(svg, "<g class=\"legend\"") == 1 && count_of(svg, "<g class=\"x-ticks\"") == 1 &&
              count_of(svg, "<g class=\"y-ticks\"") == 1 && count_of(svg, "<g class=\"lr-ticks\"") == 1,
          "%s: legend or an axis missing", what);
}

// nanoGPT's schedule: linear warm-up, cosine decay to min_lr at decay_steps.
static double schedule(long step, long warmup, long decay_steps, double lr, double min_lr) {
    if (step < warmup) return lr * (step + 1) / (warmup + 1);
    double ratio = (double)(step - warmup) / (double)(decay_steps - warmup);
    return min_lr + 0.5 * (1.0 + cos(M_PI * ratio)) * (lr - min_lr);
}

// A run like the default one: a report every 10 steps up to `steps`, an evaluation every
// 250 and at the end; losses falling from about 4.2 to 1.5 with noise. Returns n.
static size_t synthetic_run(LossPoint *points, long steps) {
    Rng rng;
    rng_seed(&rng, 5);
    size_t n = 0;
    for (long step = 10; step <= steps; step += 10) {
        double loss = 1.45 + 2.75 * exp(-step / 260.0) + 0.03 * rng_normal(&rng);
        int evaluated = step % 250 == 0 || step == steps;
        points[n++] = (LossPoint){step, loss, evaluated ? loss + 0.04 + 0.05 * step / steps : NAN,
                                  schedule(step - 1, 100, steps, 1e-3, 1e-4), NAN, NAN, NAN};
    }
    return n;
}

TEST(loss_plot_structure_and_ticks) {
    static LossPoint points[200];
    size_t n = synthetic_run(points, 2000);
    char *svg = plot_text(points, n, "chargpt: data/tinyshakespeare.txt.gz");
    if (!CHECK(svg != NULL, "no SVG")) return;
    check_well_formed(svg, "default run");
    CHECK(path_points(svg, "train-loss") == 200, "train path of %d points, want 200", path_points(svg, "train-loss"));
    CHECK(path_points(svg, "val-loss") == 8, "val path of %d points, want 8", path_points(svg, "val-loss"));
    CHECK(path_points(svg, "lr") == 200, "lr path of %d points, want 200", path_points(svg, "lr"));
    char group[8192];
    element_text(svg, "<g class=\"val-points\"", "</g>", group, sizeof(group));
    CHECK(count_of(group, "<circle") == 8, "%zu validation dots, want 8", count_of(group, "<circle"));
    CHECK(strstr(svg, ">chargpt: data/tinyshakespeare.txt.gz</text>") != NULL, "no title");
    CHECK(strstr(svg, ">step</text>") && strstr(svg, ">learning rate</text>") && strstr(svg, ">loss (nats per character)</text>"),
          "an axis title is missing");
    CHECK(strstr(svg, ">train loss</text>") && strstr(svg, ">validation loss</text>") &&
              strstr(svg, ">learning rate (right axis)</text>"), "a legend entry is missing");
    // nice ticks covering the data: steps by 500, learning rates by 2e-4 from 0
    double lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        lo = fmin(lo, fmin(points[i].train_loss, isnan(points[i].val_loss) ? INFINITY : points[i].val_loss));
        hi = fmax(hi, fmax(points[i].train_loss, isnan(points[i].val_loss) ? -INFINITY : points[i].val_loss));
    }
    check_ticks(svg, "y-ticks", lo, hi, "default run");
    check_ticks(svg, "x-ticks", 10, 2000, "default run");
    check_ticks(svg, "lr-ticks", 0, 1e-3, "default run");
    char labels[1024];
    tick_labels(svg, "x-ticks", labels, sizeof(labels));
    CHECK(strcmp(labels, "0 500 1000 1500 2000") == 0, "step ticks '%s'", labels);
    tick_labels(svg, "lr-ticks", labels, sizeof(labels));
    CHECK(strcmp(labels, "0 2e-4 4e-4 6e-4 8e-4 1e-3") == 0, "learning rate ticks '%s'", labels);
    free(svg);
}

TEST(loss_plot_nice_ticks_of_other_ranges) {
    static const struct {
        long first_step, last_step;
        double loss_lo, loss_hi, lr;
        const char *x, *y, *lr_ticks;
    } cases[] = {
        {1, 7, 2.31, 2.38, 0.05, "1 2 3 4 5 6 7", "2.31 2.32 2.33 2.34 2.35 2.36 2.37 2.38",
         "0 0.01 0.02 0.03 0.04 0.05"},
        {4010, 12000, 0.8, 1.9, 3e-4, "4000 5000 6000 7000 8000 9000 10000 11000 12000",
         "0.8 1 1.2 1.4 1.6 1.8 2",
         "0 5e-5 1e-4 1.5e-4 2e-4 2.5e-4 3e-4"},
        {0, 250000, 7, 93, 6, "0 50000 100000 150000 200000 250000", "0 20 40 60 80 100", "0 1 2 3 4 5 6"},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        LossPoint points[2] = {{cases[c].first_step, cases[c].loss_hi, NAN, cases[c].lr, NAN, NAN, NAN},
                               {cases[c].last_step, cases[c].loss_lo, cases[c].loss_lo, cases[c].lr / 2, NAN, NAN,
                                NAN}};
        char *svg = plot_text(points, 2, NULL);
        if (!CHECK(svg != NULL, "no SVG")) return;
        check_well_formed(svg, "two points");
        check_ticks(svg, "x-ticks", (double)cases[c].first_step, (double)cases[c].last_step, "two points");
        check_ticks(svg, "y-ticks", cases[c].loss_lo, cases[c].loss_hi, "two points");
        check_ticks(svg, "lr-ticks", 0.0, cases[c].lr, "two points");
        char labels[1024];
        tick_labels(svg, "x-ticks", labels, sizeof(labels));
        CHECK(strcmp(labels, cases[c].x) == 0, "case %zu: step ticks '%s', want '%s'", c, labels, cases[c].x);
        tick_labels(svg, "y-ticks", labels, sizeof(labels));
        CHECK(strcmp(labels, cases[c].y) == 0, "case %zu: loss ticks '%s', want '%s'", c, labels, cases[c].y);
        tick_labels(svg, "lr-ticks", labels, sizeof(labels));
        CHECK(strcmp(labels, cases[c].lr_ticks) == 0, "case %zu: lr ticks '%s', want '%s'", c, labels,
              cases[c].lr_ticks);
        free(svg);
    }
}

TEST(loss_plot_nan_values_are_skipped) {
    // validation only at a few steps; a NaN and an infinite train loss; no learning rate at all
    LossPoint points[6] = {
        {10, 4.0, NAN, NAN, NAN, NAN, NAN},      {20, NAN, NAN, NAN, NAN, NAN, NAN}, {30, 3.0, 3.1, NAN, NAN, NAN, NAN},
        {40, INFINITY, NAN, NAN, NAN, NAN, NAN}, {50, 2.5, NAN, NAN, NAN, NAN, NAN}, {60, 2.2, 2.4, NAN, NAN, NAN, NAN},
    };
    char *svg = plot_text(points, 6, NULL);
    if (!CHECK(svg != NULL, "no SVG")) return;
    check_well_formed(svg, "NaN gaps");
    CHECK(path_points(svg, "train-loss") == 4, "train path of %d points, want the 4 finite ones",
          path_points(svg, "train-loss"));
    CHECK(path_points(svg, "val-loss") == 2, "val path of %d points, want 2", path_points(svg, "val-loss"));
    CHECK(path_points(svg, "lr") == -1, "a learning-rate path without any learning rate");
    // the loss axis covers the finite values only: 2.2 .. 4.0
    check_ticks(svg, "y-ticks", 2.2, 4.0, "NaN gaps");
    free(svg);

    // nothing at all yet: axes and a note, no lines
    svg = plot_text(NULL, 0, NULL);
    if (!CHECK(svg != NULL, "no SVG")) return;
    check_well_formed(svg, "no points");
    CHECK(path_points(svg, "train-loss") == -1 && path_points(svg, "val-loss") == -1, "lines without points");
    CHECK(strstr(svg, "no steps yet") != NULL, "no note on an empty plot");
    free(svg);
}

TEST(loss_plot_single_point) {
    LossPoint point = {10, 4.17, 4.2, 1e-4, NAN, NAN, NAN};
    char *svg = plot_text(&point, 1, NULL);
    if (!CHECK(svg != NULL, "no SVG")) return;
    check_well_formed(svg, "one point");
    // a one-point path draws nothing, so each series gets a dot
    CHECK(count_of(svg, "<circle") == 3 + 1, "%zu circles, want a dot per series and the legend's",
          count_of(svg, "<circle"));
    char labels[1024];
    tick_labels(svg, "x-ticks", labels, sizeof(labels));
    CHECK(strcmp(labels, "9 10 11") == 0, "step ticks '%s' around a single step 10", labels);
    check_ticks(svg, "y-ticks", 4.17, 4.2, "one point");
    check_ticks(svg, "lr-ticks", 0, 1e-4, "one point");
    free(svg);
}

TEST(loss_plot_extreme_values) {
    // values, learning rate, the loss axis's ticks and the range they must cover: the data's,
    // or for a single value that value +-10% (or +-1 when it is next to zero), from 0 at least
    static const struct { double lo, hi, lr; const char *y; double cover_lo, cover_hi; } cases[] = {
        {1e30, 3e30, 1e-12, "1e30 1.5e30 2e30 2.5e30 3e30", 1e30, 3e30},
        {1e-30, 4e-30, 1e-3, "1e-30 1.5e-30 2e-30 2.5e-30 3e-30 3.5e-30 4e-30", 1e-30, 4e-30},
        {5.0, 5.0, 1e-3, "4.4 4.6 4.8 5 5.2 5.4 5.6", 4.5, 5.5},
        {0.0, 0.0, 0.0, "0 0.2 0.4 0.6 0.8 1", 0.0, 1.0},
        {1e-320, 2e-320, 1e-3, "0 0.2 0.4 0.6 0.8 1", 0.0, 1.0},
        {-1e308, 1e308, 1e308, NULL, 0, 0},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        LossPoint points[2] = {{0, cases[c].hi, cases[c].hi, cases[c].lr, NAN, NAN, NAN},
                               {100, cases[c].lo, NAN, cases[c].lr, NAN, NAN, NAN}};
        char *svg = plot_text(points, 2, NULL);
        if (!CHECK(svg != NULL, "no SVG")) return;
        char what[64];
        snprintf(what, sizeof(what), "case %zu (%g .. %g)", c, cases[c].lo, cases[c].hi);
        check_well_formed(svg, what);
        if (cases[c].y) check_ticks(svg, "y-ticks", cases[c].cover_lo, cases[c].cover_hi, what);
        char labels[1024];
        tick_labels(svg, "y-ticks", labels, sizeof(labels));
        if (cases[c].y) CHECK(strcmp(labels, cases[c].y) == 0, "%s: loss ticks '%s', want '%s'", what, labels, cases[c].y);
        CHECK(path_points(svg, "train-loss") == 2, "%s: train path of %d points", what, path_points(svg, "train-loss"));
        free(svg);
    }
}

TEST(loss_plot_title_is_escaped) {
    LossPoint point = {1, 2.0, NAN, 1e-3, NAN, NAN, NAN};
    char *svg = plot_text(&point, 1, "a<b> & \"c\"");
    if (!CHECK(svg != NULL, "no SVG")) return;
    CHECK(strstr(svg, ">a&lt;b&gt; &amp; &quot;c&quot;</text>") != NULL, "title not escaped");
    free(svg);
    // a name with control characters (a legal file name), or bytes that are not UTF-8: the SVG
    // stays XML, which allows neither, not even as &#27; (issue 29, L2: it was written raw)
    svg = plot_text(&point, 1, "chargpt: a\x1b[31m\x07" "b\xff.txt");
    if (!CHECK(svg != NULL, "no SVG")) return;
    CHECK(strstr(svg, ">chargpt: a\\x1b[31m\\x07b\\xff.txt</text>") != NULL, "the name is not shown escaped");
    int clean = json_utf8_valid(svg, strlen(svg));
    for (const unsigned char *p = (const unsigned char *)svg; *p; p++) clean &= *p >= 0x20 || *p == '\n' || *p == '\t';
    CHECK(clean, "the SVG holds a control character or a byte that is not UTF-8");
    free(svg);
}

// Names of the files in dir that start with prefix, joined by spaces.
static void files_starting(const char *dir, const char *prefix, char *out, size_t size) {
    out[0] = '\0';
    DIR *d = opendir(dir);
    if (!d) return;
    size_t used = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0)
            used += (size_t)snprintf(out + used, size - used, "%s%s", used ? " " : "", e->d_name);
    closedir(d);
}

TEST(loss_plot_atomic_write) {
    test_make_dir(TMP_DIR);
    const char *path = TMP_DIR "/loss_plot_atomic.svg";
    FILE *old = fopen(path, "w");
    if (!CHECK(old != NULL, "cannot write %s", path)) return;
    fputs("old", old);
    fclose(old);
    static LossPoint points[200];
    size_t n = synthetic_run(points, 2000);
    char err[ERR_LEN];
    CHECK(loss_plot_write(path, points, n, "atomic", err) == 0, "%s", err);
    size_t len;
    char *written = test_read_file(path, &len);
    char *want = plot_text(points, n, "atomic");
    CHECK(written && want && strcmp(written, want) == 0, "%s does not hold the plot", path);
    free(written);
    free(want);
    char names[1024];
    files_starting(TMP_DIR, "loss_plot_atomic.svg", names, sizeof(names));
    CHECK(strcmp(names, "loss_plot_atomic.svg") == 0, "files left beside the plot: %s", names);

    // a directory in the way: the rename fails, the error names the path, no temporary file stays
    const char *dir = TMP_DIR "/loss_plot_dir.svg";
    test_make_dir(dir);
    err[0] = '\0';
    CHECK(loss_plot_write(dir, points, n, NULL, err) == -1, "writing over a directory succeeded");
    CHECK(strstr(err, dir) != NULL, "message does not name the file: %s", err);
    files_starting(TMP_DIR, "loss_plot_dir.svg", names, sizeof(names));
    CHECK(strcmp(names, "loss_plot_dir.svg") == 0, "files left behind: %s", names);
    // a missing directory
    err[0] = '\0';
    CHECK(loss_plot_write(TMP_DIR "/no_such_dir/loss.svg", points, n, NULL, err) == -1, "wrote into a missing directory");
    CHECK(strstr(err, TMP_DIR "/no_such_dir/loss.svg") != NULL, "message does not name the file: %s", err);
}

// Writes tests/tmp/loss_plot_sample.svg, a default-sized run, for scripts/check_loss_plot.sh.
TEST(loss_plot_sample) {
    test_make_dir(TMP_DIR);
    static LossPoint points[200];
    size_t n = synthetic_run(points, 2000);
    char err[ERR_LEN];
    CHECK(loss_plot_write(TMP_DIR "/loss_plot_sample.svg", points, n, "chargpt: data/tinyshakespeare.txt.gz",
                          err) == 0, "%s", err);
}

TEST(loss_plot_gradient_panel) {
    static LossPoint points[200];
    size_t n = synthetic_run(points, 2000);
    char *svg = plot_text(points, n, NULL);
    if (!CHECK(svg != NULL, "no SVG")) return;
    CHECK(!strstr(svg, "grad-norm") && strstr(svg, "height=\"460\""), "a gradient panel without gradient norms");
    free(svg);
    // norms falling from 3 to 0.3 (a factor of 10: a linear axis), the early reports clipped
    int clipped = 0;
    for (size_t i = 0; i < n; i++) {
        points[i].grad_norm = 0.3 + 2.7 * exp(-(double)points[i].step / 300.0);
        points[i].clipped = points[i].grad_norm > 1.0 ? 10 : 0;
        clipped += points[i].clipped > 0;
    }
    points[5].grad_norm = NAN;  // a report without one (a row of an older log.csv)
    points[5].clipped = NAN;
    clipped -= 1;
    svg = plot_text(points, n, NULL);
    if (!CHECK(svg != NULL, "no SVG")) return;
    check_well_formed(svg, "gradient panel");
    CHECK(strstr(svg, "height=\"610\"") && path_points(svg, "grad-norm") == (int)n - 1,
          "the gradient panel: a path of %d points, want %zu", path_points(svg, "grad-norm"), n - 1);
    char group[65536];
    element_text(svg, "<g class=\"clipped-points\"", "</g>", group, sizeof(group));
    CHECK((int)count_of(group, "<circle") == clipped && strstr(group, "10 steps clipped</title>"),
          "%zu red dots, want %d", count_of(group, "<circle"), clipped);
    CHECK(!strstr(svg, "log scale"), "norms within a factor of 10 on a log scale");
    free(svg);
    // norms spanning a factor of 1000: a log scale, its ticks the norms themselves
    for (size_t i = 0; i < n; i++) points[i].grad_norm = 100.0 * pow(1e-3, (double)i / (n - 1)), points[i].clipped = 0;
    svg = plot_text(points, n, NULL);
    if (!CHECK(svg != NULL, "no SVG")) return;
    char labels[1024];
    tick_labels(svg, "grad-ticks", labels, sizeof(labels));
    CHECK(strstr(svg, "log scale") && strcmp(labels, "0.1 1 10 100") == 0, "log-scale ticks '%s'", labels);
    free(svg);
}

// The history of a run of a million reports, an evaluation every 1000: it keeps at most
// LOSS_HISTORY_MAX_POINTS points (1.5 MB, where a point per report took 48 MB), evenly
// spaced, in step order, every evaluation among them, and the last report's.
TEST(loss_history_bounded_and_thinned_evenly) {
    LossHistory h = {0};
    char err[ERR_LEN];
    long reports = 1000000;
    for (long step = 1; step <= reports; step++) {
        LossPoint p = {step, 1.0, step % 1000 == 0 ? 2.0 : NAN, 1e-3, NAN, NAN, NAN};
        if (!CHECK(loss_history_add(&h, p, err) == 0, "%s", err)) break;
    }
    CHECK(h.n <= LOSS_HISTORY_MAX_POINTS && h.n > LOSS_HISTORY_MAX_POINTS / 4 && h.capacity <= LOSS_HISTORY_MAX_POINTS,
          "%zu points, room for %zu", h.n, h.capacity);
    long evaluations = 0, gaps_off = 0, gap = h.n > 1 ? h.points[1].step - h.points[0].step : 0;
    for (size_t i = 0; i < h.n; i++) {
        evaluations += isfinite(h.points[i].val_loss);
        if (i > 0 && !CHECK(h.points[i].step > h.points[i - 1].step, "point %zu: step %ld after %ld", i,
                            h.points[i].step, h.points[i - 1].step))
            break;
        // evenly spaced: a point every `gap` reports, give or take where an evaluation was kept
        if (i > 0 && labs(h.points[i].step - h.points[i - 1].step - gap) >= gap) gaps_off++;
    }
    CHECK(evaluations == reports / 1000, "%ld evaluations kept of %ld", evaluations, reports / 1000);
    CHECK(gaps_off == 0 && gap == h.stride, "%ld uneven gaps (a point every %ld reports, stride %ld)", gaps_off, gap,
          h.stride);
    CHECK(h.points[h.n - 1].step == reports, "the last point is of step %ld", h.points[h.n - 1].step);
    loss_history_free(&h);
}
