// The loss plot as SVG: train and validation loss and the learning rate against step.
#include "loss_plot.h"

#include <math.h>
#include <string.h>

#include "../format/atomic_file.h"
#include "markup.h"

// canvas and plot area, in SVG user units (pixels at 100%)
#define WIDTH 820
#define HEIGHT 460                 // without the gradient panel
#define GRAD_PANEL 150             // what the gradient panel adds below
#define GRAD_TOP (HEIGHT + 18.0)
#define GRAD_BOTTOM (HEIGHT + GRAD_PANEL - 22.0)
#define PLOT_LEFT 72.0
#define PLOT_RIGHT (WIDTH - 84.0)
#define PLOT_TOP 64.0
#define PLOT_BOTTOM (HEIGHT - 52.0)
#define VALUE_LIMIT 1e300  // values beyond are drawn at the edge; keeps every sum finite
#define MIN_SPAN 1e-290    // the narrowest axis range, far above the subnormals

#define TRAIN_COLOR "#1f77b4"
#define VAL_COLOR "#e8710a"
#define LR_COLOR "#2ca02c"
#define GRAD_COLOR "#7b3fa0"
#define CLIP_COLOR "#d62728"
#define GRID_COLOR "#e6e6e6"
#define AXIS_COLOR "#444"

typedef struct {
    double lo, hi, step;  // the axis runs from lo to hi with a tick every step
} Axis;

// The "nice" number nearest x > 0: 1, 2 or 5 times a power of ten.
static double nice_number(double x) {
    double power = pow(10.0, floor(log10(x)));
    double f = x / power;  // in [1, 10)
    return (f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10) * power;
}

// An axis covering [min, max] with about `ticks` ticks at multiples of a nice step >= min_step.
// No finite range gives [0, 1]; a degenerate one is widened by 10% of its value (or by 1
// when that is next to nothing) each way, but not below 0 when it holds no negative values.
static Axis nice_axis(double min, double max, int ticks, double min_step) {
    if (!isfinite(min) || !isfinite(max) || min > max) min = 0, max = 1;
    if (max - min < MIN_SPAN || max - min < 1e-9 * fmax(fabs(min), fabs(max))) {
        double half = fmax(fabs(min), fabs(max)) * 0.1;
        if (half < MIN_SPAN) half = 1.0;
        min = min >= 0 && min < half ? 0.0 : min - half;
        max += half;
    }
    Axis a;
    a.step = fmax(nice_number((max - min) / (ticks - 1)), min_step);
    // a value within a billionth of a step of a tick (after rounding) is on it
    a.lo = floor(min / a.step + 1e-9) * a.step;
    a.hi = ceil(max / a.step - 1e-9) * a.step;
    return a;
}

static double clamp_value(double v) { return fmin(fmax(v, -VALUE_LIMIT), VALUE_LIMIT); }

// Pixel position of v on an axis drawn from `from` (at lo) to `to` (at hi); halves keep the
// differences finite for values up to VALUE_LIMIT.
static double axis_position(const Axis *a, double v, double from, double to) {
    double f = (clamp_value(v) / 2 - a->lo / 2) / (a->hi / 2 - a->lo / 2);
    return from + fmin(fmax(f, 0.0), 1.0) * (to - from);
}

// A tick label: plain decimals ("0.5", "2000"), or mantissa and exponent for very small or
// large values ("2e-4", "1.5e6").
static void format_tick(char *buf, size_t size, double v, double step) {
    if (fabs(v) < step * 1e-9) v = 0.0;  // lo + i * step rounding off zero
    double m = fabs(v);
    if (m != 0.0 && (m < 1e-2 || m >= 1e6)) {
        char mantissa[32];
        int exponent = (int)floor(log10(m));
        snprintf(mantissa, sizeof(mantissa), "%.5f", v / pow(10.0, exponent));
        char *end = mantissa + strlen(mantissa);  // drop trailing zeros and a bare point
        while (end[-1] == '0') *--end = '\0';
        if (end[-1] == '.') end[-1] = '\0';
        snprintf(buf, size, "%se%d", mantissa, exponent);
    } else {
        snprintf(buf, size, "%.6g", v);
    }
}

enum { SERIES_TRAIN, SERIES_VAL, SERIES_LR };

static double series_value(const LossPoint *p, int series) {
    return series == SERIES_TRAIN ? p->train_loss : series == SERIES_VAL ? p->val_loss : p->lr;
}

// Where a point of a series is drawn.
static void point_position(const LossPoint *p, double v, const Axis *x, const Axis *y, double *px, double *py) {
    *px = axis_position(x, (double)p->step, PLOT_LEFT, PLOT_RIGHT);
    *py = axis_position(y, v, PLOT_BOTTOM, PLOT_TOP);
}

// One series as a path through its finite values (none when it has none), and a dot at each
// of them when `dots` (or when there is only one, which a path would not show).
static void write_series(FILE *fp, const LossPoint *points, size_t n, int series, const Axis *x,
                         const Axis *y, const char *cls, const char *color, const char *style,
                         int dots) {
    size_t finite = 0;
    for (size_t i = 0; i < n; i++) finite += isfinite(series_value(&points[i], series)) != 0;
    if (finite == 0) return;
    fprintf(fp, "<path class=\"%s\" fill=\"none\" stroke=\"%s\" %s d=\"", cls, color, style);
    const char *command = "M";
    for (size_t i = 0; i < n; i++) {
        double v = series_value(&points[i], series), px, py;
        if (!isfinite(v)) continue;
        point_position(&points[i], v, x, y, &px, &py);
        fprintf(fp, "%s%.1f %.1f", command, px, py);
        command = " L";
    }
    fputs("\"/>\n", fp);
    if (!dots && finite != 1) return;
    fprintf(fp, "<g class=\"%s\" fill=\"%s\">", series == SERIES_VAL ? "val-points" : "points", color);
    for (size_t i = 0; i < n; i++) {
        double v = series_value(&points[i], series), px, py;
        if (!isfinite(v)) continue;
        point_position(&points[i], v, x, y, &px, &py);
        fprintf(fp, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\"/>", px, py);
    }
    fputs("</g>\n", fp);
}

static void write_line(FILE *fp, double x1, double y1, double x2, double y2, const char *color) {
    fprintf(fp, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\"/>", x1, y1, x2, y2, color);
}

enum { SIDE_BOTTOM, SIDE_LEFT, SIDE_RIGHT };

// An axis's ticks and labels on one side of the plot, with grid lines across the plot from
// the bottom and left axes (the right axis's ticks fall between the left one's).
static void write_ticks(FILE *fp, const Axis *a, int side, const char *cls, const char *color) {
    static const char *anchor[] = {"middle", "end", "start"};
    fprintf(fp, "<g class=\"%s\" font-size=\"12\" fill=\"%s\" text-anchor=\"%s\">\n", cls, color, anchor[side]);
    int ticks = (int)lround((a->hi - a->lo) / a->step) + 1;
    for (int i = 0; i < ticks; i++) {
        double v = a->lo + i * a->step;
        char label[48];
        format_tick(label, sizeof(label), v, a->step);
        if (side == SIDE_BOTTOM) {
            double x = axis_position(a, v, PLOT_LEFT, PLOT_RIGHT);
            write_line(fp, x, PLOT_TOP, x, PLOT_BOTTOM, GRID_COLOR);
            write_line(fp, x, PLOT_BOTTOM, x, PLOT_BOTTOM + 5, AXIS_COLOR);
            fprintf(fp, "<text x=\"%.1f\" y=\"%.1f\">%s</text>\n", x, PLOT_BOTTOM + 19, label);
        } else {
            double y = axis_position(a, v, PLOT_BOTTOM, PLOT_TOP);
            double edge = side == SIDE_LEFT ? PLOT_LEFT : PLOT_RIGHT, outward = side == SIDE_LEFT ? -1 : 1;
            if (side == SIDE_LEFT) write_line(fp, PLOT_LEFT, y, PLOT_RIGHT, y, GRID_COLOR);
            write_line(fp, edge, y, edge + 5 * outward, y, AXIS_COLOR);
            fprintf(fp, "<text x=\"%.1f\" y=\"%.1f\">%s</text>\n", edge + 8 * outward, y + 4, label);
        }
    }
    fputs("</g>\n", fp);
}

// The gradient panel: the mean norm of each report on a linear axis, or on log10 of it when
// the norms span more than a factor of 20 (ticks then labelled with the norms themselves), and
// a red dot where some steps were clipped.
static void write_grad_panel(FILE *fp, const LossPoint *points, size_t n, const Axis *x) {
    double lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < n; i++)
        if (isfinite(points[i].grad_norm) && points[i].grad_norm > 0) {
            lo = fmin(lo, clamp_value(points[i].grad_norm));
            hi = fmax(hi, clamp_value(points[i].grad_norm));
        }
    int logarithmic = hi > 20.0 * lo;
    Axis y = logarithmic ? nice_axis(floor(log10(lo)), ceil(log10(hi)), 5, 1.0) : nice_axis(fmin(0.0, lo), hi, 4, 0.0);
    fprintf(fp, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"%s\"/>\n",
            PLOT_LEFT, GRAD_TOP, PLOT_RIGHT - PLOT_LEFT, GRAD_BOTTOM - GRAD_TOP, AXIS_COLOR);
    fprintf(fp, "<g class=\"grad-ticks\" font-size=\"12\" fill=\"%s\" text-anchor=\"end\">\n", AXIS_COLOR);
    int ticks = (int)lround((y.hi - y.lo) / y.step) + 1;
    for (int i = 0; i < ticks; i++) {
        double v = y.lo + i * y.step, py = axis_position(&y, v, GRAD_BOTTOM, GRAD_TOP);
        char label[48];
        format_tick(label, sizeof(label), logarithmic ? pow(10.0, v) : v, logarithmic ? pow(10.0, v) : y.step);
        write_line(fp, PLOT_LEFT, py, PLOT_RIGHT, py, GRID_COLOR);
        fprintf(fp, "<text x=\"%.1f\" y=\"%.1f\">%s</text>\n", PLOT_LEFT - 8, py + 4, label);
    }
    fputs("</g>\n", fp);
    fprintf(fp, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" fill=\"%s\">gradient norm before clipping "
            "(mean of each report%s; red: some steps clipped)</text>\n", PLOT_LEFT, GRAD_TOP - 5, GRAD_COLOR,
            logarithmic ? ", log scale" : "");
    fprintf(fp, "<path class=\"grad-norm\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" d=\"", GRAD_COLOR);
    const char *command = "M";
    for (size_t i = 0; i < n; i++) {
        double v = points[i].grad_norm;
        if (!isfinite(v) || v <= 0) continue;
        fprintf(fp, "%s%.1f %.1f", command, axis_position(x, (double)points[i].step, PLOT_LEFT, PLOT_RIGHT),
                axis_position(&y, logarithmic ? log10(clamp_value(v)) : v, GRAD_BOTTOM, GRAD_TOP));
        command = " L";
    }
    fprintf(fp, "\"/>\n<g class=\"clipped-points\" fill=\"%s\">", CLIP_COLOR);
    for (size_t i = 0; i < n; i++) {
        double v = points[i].grad_norm;
        if (!(points[i].clipped > 0) || !isfinite(v) || v <= 0) continue;
        fprintf(fp, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\"><title>step %ld: %.0f step%s clipped</title></circle>",
                axis_position(x, (double)points[i].step, PLOT_LEFT, PLOT_RIGHT),
                axis_position(&y, logarithmic ? log10(clamp_value(v)) : v, GRAD_BOTTOM, GRAD_TOP), points[i].step,
                points[i].clipped, points[i].clipped == 1 ? "" : "s");
    }
    fputs("</g>\n", fp);
}

void loss_plot_svg(FILE *fp, const LossPoint *points, size_t n, const char *title) {
    // ranges: every step; finite losses (train and validation); learning rates from 0
    double step_min = INFINITY, step_max = -INFINITY, loss_min = INFINITY, loss_max = -INFINITY;
    double lr_max = -INFINITY;
    int grad = 0;  // some point has a gradient norm: the gradient panel is drawn
    for (size_t i = 0; i < n; i++) {
        const LossPoint *p = &points[i];
        grad |= isfinite(p->grad_norm) && p->grad_norm > 0;
        step_min = fmin(step_min, (double)p->step);
        step_max = fmax(step_max, (double)p->step);
        for (int s = SERIES_TRAIN; s <= SERIES_VAL; s++) {
            double v = series_value(p, s);
            if (!isfinite(v)) continue;
            loss_min = fmin(loss_min, clamp_value(v));
            loss_max = fmax(loss_max, clamp_value(v));
        }
        if (isfinite(p->lr)) lr_max = fmax(lr_max, clamp_value(p->lr));
    }
    Axis x = nice_axis(step_min, step_max, 7, 1.0);
    Axis y = nice_axis(loss_min, loss_max, 6, 0.0);
    Axis lr = nice_axis(fmin(0.0, lr_max), lr_max, 6, 0.0);

    int height = HEIGHT + (grad ? GRAD_PANEL : 0);
    fprintf(fp, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
            "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n", WIDTH, height, WIDTH, height);
    fprintf(fp, "<rect width=\"%d\" height=\"%d\" fill=\"#fff\"/>\n", WIDTH, height);
    fputs("<text class=\"title\" x=\"16\" y=\"24\" font-size=\"15\" font-weight=\"bold\" fill=\"#222\">", fp);
    markup_write_text(fp, title ? title : "training loss");
    fputs("</text>\n", fp);

    write_ticks(fp, &x, SIDE_BOTTOM, "x-ticks", AXIS_COLOR);
    write_ticks(fp, &y, SIDE_LEFT, "y-ticks", AXIS_COLOR);
    write_ticks(fp, &lr, SIDE_RIGHT, "lr-ticks", LR_COLOR);

    // frame and axis titles
    fprintf(fp, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"%s\"/>\n",
            PLOT_LEFT, PLOT_TOP, PLOT_RIGHT - PLOT_LEFT, PLOT_BOTTOM - PLOT_TOP, AXIS_COLOR);
    fprintf(fp, "<g font-size=\"13\" fill=\"#222\" text-anchor=\"middle\">"
            "<text x=\"%.1f\" y=\"%d\">step</text>"
            "<text transform=\"translate(20 %.1f) rotate(-90)\">loss (nats per character)</text>"
            "<text transform=\"translate(%d %.1f) rotate(90)\" fill=\"%s\">learning rate</text></g>\n",
            (PLOT_LEFT + PLOT_RIGHT) / 2, HEIGHT - 12, (PLOT_TOP + PLOT_BOTTOM) / 2, WIDTH - 18,
            (PLOT_TOP + PLOT_BOTTOM) / 2, LR_COLOR);

    // the lines: learning rate underneath, validation on top
    write_series(fp, points, n, SERIES_LR, &x, &lr, "lr", LR_COLOR,
                 "stroke-width=\"1.5\" stroke-dasharray=\"6 4\" stroke-opacity=\"0.8\"", 0);
    write_series(fp, points, n, SERIES_TRAIN, &x, &y, "train-loss", TRAIN_COLOR,
                 "stroke-width=\"1.8\" stroke-linejoin=\"round\"", 0);
    write_series(fp, points, n, SERIES_VAL, &x, &y, "val-loss", VAL_COLOR,
                 "stroke-width=\"2\" stroke-linejoin=\"round\"", 1);

    // legend: a row between the title and the plot
    static const struct { const char *label, *color, *dash; double x; } legend[] = {
        {"train loss", TRAIN_COLOR, "none", PLOT_LEFT},
        {"validation loss", VAL_COLOR, "none", PLOT_LEFT + 112},
        {"learning rate (right axis)", LR_COLOR, "6 4", PLOT_LEFT + 250},
    };
    fputs("<g class=\"legend\" font-size=\"12\" fill=\"#222\">\n", fp);
    for (int i = 0; i < 3; i++) {
        double lx = legend[i].x, ly = PLOT_TOP - 18;
        fprintf(fp, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2\" "
                "stroke-dasharray=\"%s\"/>", lx, ly, lx + 22, ly, legend[i].color, legend[i].dash);
        if (i == 1) fprintf(fp, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>", lx + 11, ly, VAL_COLOR);
        fprintf(fp, "<text x=\"%.1f\" y=\"%.1f\">%s</text>\n", lx + 28, ly + 4, legend[i].label);
    }
    fputs("</g>\n", fp);
    if (n == 0)
        fprintf(fp, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"14\" fill=\"#888\" text-anchor=\"middle\">"
                "no steps yet</text>\n", (PLOT_LEFT + PLOT_RIGHT) / 2, (PLOT_TOP + PLOT_BOTTOM) / 2);
    if (grad) write_grad_panel(fp, points, n, &x);
    fputs("</svg>\n", fp);
}

int loss_plot_write(const char *path, const LossPoint *points, size_t n, const char *title,
                    char err[ERR_LEN]) {
    AtomicFile f;
    if (atomic_file_open(&f, path, err) != 0) return -1;
    loss_plot_svg(f.fp, points, n, title);
    return atomic_file_commit(&f, err);
}
