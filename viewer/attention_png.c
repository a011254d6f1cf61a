// .png: a grid of heatmaps (rows = layers, columns = heads) with labels in a built-in
// bitmap font and a colour legend, drawn into an RGB raster and written by hand:
// signature, IHDR, one IDAT holding the zlib stream of the scanlines (each with filter
// byte 0, none), IEND; every chunk ends with the CRC-32 of its type and data.
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "attention_formats.h"
#include "bitmap_font.h"

#define MARGIN 6        // white pixels around everything
#define PANEL_GAP 6     // white pixels between panels
#define LABEL_GAP 4     // between a label and what it names
#define LEGEND_BAR_H 10 // height of the legend's colour bar, in text-scale units

static const unsigned char MASKED[3] = {215, 215, 215};      // cells above the diagonal
static const unsigned char INK[3] = {40, 40, 40};            // labels and characters
static const unsigned char FAINT_INK[3] = {150, 150, 150};   // whitespace symbols

// A viridis-like colour map: five anchors from dark purple through blue and green to
// yellow, evenly spaced on [0, 1] and linearly interpolated into a 256-entry table.
static const unsigned char COLOUR_ANCHORS[5][3] = {
    {68, 1, 84}, {59, 82, 139}, {33, 145, 140}, {94, 201, 98}, {253, 231, 37}};

static void build_colour_table(unsigned char table[256][3]) {
    for (int k = 0; k < 256; k++) {
        float x = k / 255.0f * 4.0f;  // position among the anchors
        int a = x >= 4.0f ? 3 : (int)x;
        float f = x - (float)a;
        for (int c = 0; c < 3; c++) {
            float v = (1.0f - f) * COLOUR_ANCHORS[a][c] + f * COLOUR_ANCHORS[a + 1][c];
            table[k][c] = (unsigned char)lrintf(v);
        }
    }
}

// Colour-table index of a weight: sqrt spreads the small weights a long context produces.
static int colour_index(float w) {
    if (!(w > 0.0f)) return 0;  // also NaN
    if (w >= 1.0f) return 255;
    return (int)lrintf(sqrtf(w) * 255.0f);
}

// Pixels per cell: a panel of about 512 pixels, the grid within about 2048, 1 to 8.
static int cell_size(int t, int n_layer, int n_head) {
    int most_panels = n_layer > n_head ? n_layer : n_head;
    int s = 512 / t;
    int fit = (int)(2048 / ((long)t * most_panels));
    if (fit < s) s = fit;
    if (s > 8) s = 8;
    if (s < 1) s = 1;
    return s;
}

// ---------------------------------------------------------------------------------------
// text

// Width in pixels of n characters at a scale (no space after the last).
static long text_width(size_t n, int scale) {
    return n ? ((long)n * (FONT_WIDTH + 1) - 1) * scale : 0;
}

// The weights marked under the legend's colour bar, and their labels.
static const float LEGEND_TICKS[] = {0.0f, 0.01f, 0.1f, 0.25f, 0.5f, 1.0f};
static const char *const LEGEND_TICK_LABELS[] = {"0", "0.01", "0.1", "0.25", "0.5", "1"};
#define NUM_LEGEND_TICKS (sizeof(LEGEND_TICKS) / sizeof(LEGEND_TICKS[0]))
static const char LEGEND_CAPTION[] = "attention weight, colour on a square-root scale";
static const char LEGEND_MASKED[] = "masked (future key)";

// The symbol an axis shows for a character: whitespace as the page shows it.
static uint32_t axis_symbol(uint32_t cp) {
    if (cp == ' ') return 0x2423;
    if (cp == '\n') return 0x23CE;
    if (cp == '\t') return 0x21E5;
    return cp;
}

// ---------------------------------------------------------------------------------------
// layout

void attention_png_layout(const Attention *a, PngLayout *p) {
    int t = a->t, L = a->n_layer, H = a->n_head;
    memset(p, 0, sizeof(*p));
    p->cell = cell_size(t, L, H);
    p->panel = (long)t * p->cell;
    p->text_scale = p->panel >= 160 ? 2 : 1;  // labels twice as large beside large panels
    int k = p->text_scale;
    // one character per cell along each axis when a glyph and a pixel of space fit
    if (p->cell >= FONT_HEIGHT + 1) {
        p->axis_left = FONT_WIDTH + 2;
        p->axis_top = FONT_HEIGHT + 1;
    }
    char label[32];
    int n = snprintf(label, sizeof(label), "layer %d", L - 1);
    long layer_label_w = text_width((size_t)n, k);
    n = snprintf(label, sizeof(label), "head %d", H - 1);
    long head_label_w = text_width((size_t)n, k);

    p->head_label_y = MARGIN;
    p->x0 = MARGIN + layer_label_w + LABEL_GAP + p->axis_left;
    p->y0 = MARGIN + FONT_HEIGHT * k + LABEL_GAP + p->axis_top;
    long block = p->axis_left + p->panel;
    p->step_x = (block > head_label_w ? block : head_label_w) + PANEL_GAP;
    p->step_y = p->axis_top + p->panel + PANEL_GAP;
    long grid_right = p->x0 + (H - 1) * p->step_x + p->panel;
    long grid_bottom = p->y0 + (L - 1) * p->step_y + p->panel;

    // legend: caption; colour bar, masked swatch and its text; ticks and their labels
    p->legend_y = grid_bottom + 3 * LABEL_GAP;
    long caption_w = text_width(sizeof(LEGEND_CAPTION) - 1, k);
    long bar_row_w = 256L * k + 3 * LABEL_GAP * k + LEGEND_BAR_H * k + LABEL_GAP +
                     text_width(sizeof(LEGEND_MASKED) - 1, k);
    long legend_w = caption_w > bar_row_w ? caption_w : bar_row_w;
    long legend_h = FONT_HEIGHT * k + LABEL_GAP + LEGEND_BAR_H * k + 3 * k + 2 + FONT_HEIGHT * k;
    long right = grid_right > MARGIN + legend_w ? grid_right : MARGIN + legend_w;
    p->width = right + MARGIN;
    p->height = p->legend_y + legend_h + MARGIN;
}

// ---------------------------------------------------------------------------------------
// drawing

typedef struct {
    unsigned char *rgb;  // (height, width, 3)
    long width, height;
} Raster;

static void fill_rect(Raster *r, long x, long y, long w, long h, const unsigned char rgb[3]) {
    for (long yy = y; yy < y + h; yy++)
        for (long xx = x; xx < x + w; xx++) memcpy(r->rgb + 3 * (yy * r->width + xx), rgb, 3);
}

static void draw_glyph(Raster *r, uint32_t cp, long x, long y, int scale, const unsigned char rgb[3]) {
    for (int gy = 0; gy < FONT_HEIGHT; gy++)
        for (int gx = 0; gx < FONT_WIDTH; gx++)
            if (font_ink(cp, gx, gy)) fill_rect(r, x + gx * scale, y + gy * scale, scale, scale, rgb);
}

static void draw_text(Raster *r, const char *s, long x, long y, int scale) {
    for (; *s; s++, x += (FONT_WIDTH + 1) * scale) draw_glyph(r, (unsigned char)*s, x, y, scale, INK);
}

// The t x t cells of one head at (x, y).
static void draw_panel(Raster *r, const float *head, int t, int s, long x, long y,
                       const unsigned char colours[256][3]) {
    for (int i = 0; i < t; i++) {
        // first pixel row of the query row, copied to the other s - 1 below
        unsigned char *line = r->rgb + 3 * ((y + (long)i * s) * r->width + x);
        for (int j = 0; j < t; j++) {
            const unsigned char *rgb = j > i ? MASKED : colours[colour_index(head[(size_t)i * t + j])];
            for (int k = 0; k < s; k++) memcpy(line + 3 * ((long)j * s + k), rgb, 3);
        }
        for (int k = 1; k < s; k++) memcpy(line + 3 * k * r->width, line, 3 * (size_t)t * s);
    }
}

// The characters along the top (keys) and the left (queries) of the panel at (x, y).
static void draw_axes(Raster *r, const Attention *a, const PngLayout *p, long x, long y) {
    int s = p->cell;
    for (int i = 0; i < a->t; i++) {
        uint32_t cp = a->chars[i], symbol = axis_symbol(cp);
        const unsigned char *ink = symbol != cp ? FAINT_INK : INK;
        draw_glyph(r, symbol, x + (long)i * s + (s - FONT_WIDTH) / 2, y - p->axis_top, 1, ink);
        draw_glyph(r, symbol, x - p->axis_left, y + (long)i * s + (s - FONT_HEIGHT) / 2, 1, ink);
    }
}

static void draw_legend(Raster *r, const PngLayout *p, const unsigned char colours[256][3]) {
    int k = p->text_scale;
    long x = MARGIN, y = p->legend_y;
    draw_text(r, LEGEND_CAPTION, x, y, k);
    y += FONT_HEIGHT * k + LABEL_GAP;
    // the bar: colour-table entry c at c * k, the position of every weight with sqrt(w) = c / 255
    for (int c = 0; c < 256; c++) fill_rect(r, x + (long)c * k, y, k, LEGEND_BAR_H * k, colours[c]);
    long swatch_x = x + 256L * k + 3 * LABEL_GAP * k;
    fill_rect(r, swatch_x, y, LEGEND_BAR_H * k, LEGEND_BAR_H * k, MASKED);
    draw_text(r, LEGEND_MASKED, swatch_x + LEGEND_BAR_H * k + LABEL_GAP, y + (LEGEND_BAR_H - FONT_HEIGHT) * k / 2, k);
    y += LEGEND_BAR_H * k;
    for (size_t i = 0; i < NUM_LEGEND_TICKS; i++) {
        long at = x + colour_index(LEGEND_TICKS[i]) * k + k / 2;
        fill_rect(r, at, y, k, 3 * k, INK);
        long w = text_width(strlen(LEGEND_TICK_LABELS[i]), k);
        long left = at - w / 2;
        if (left < x) left = x;
        draw_text(r, LEGEND_TICK_LABELS[i], left, y + 3 * k + 2, k);
    }
}

unsigned char *attention_png_pixels(const Attention *a, const PngLayout *p, int labelled) {
    Raster r = {malloc(3 * (size_t)p->width * (size_t)p->height), p->width, p->height};
    if (!r.rgb) return NULL;
    memset(r.rgb, 255, 3 * (size_t)p->width * (size_t)p->height);
    unsigned char colours[256][3];
    build_colour_table(colours);
    int t = a->t, k = p->text_scale;
    for (int l = 0; l < a->n_layer; l++) {
        long y = p->y0 + l * p->step_y;
        char label[32];
        if (labelled) {
            snprintf(label, sizeof(label), "layer %d", l);
            draw_text(&r, label, MARGIN, y + (p->panel - FONT_HEIGHT * k) / 2, k);
        }
        for (int h = 0; h < a->n_head; h++) {
            long x = p->x0 + h * p->step_x;
            draw_panel(&r, a->att + ((size_t)l * a->n_head + h) * t * t, t, p->cell, x, y, colours);
            if (!labelled) continue;
            if (p->axis_left) draw_axes(&r, a, p, x, y);
            if (l == 0) {
                int n = snprintf(label, sizeof(label), "head %d", h);
                draw_text(&r, label, x + (p->panel - text_width((size_t)n, k)) / 2, p->head_label_y, k);
            }
        }
    }
    if (labelled) draw_legend(&r, p, colours);
    return r.rgb;
}

// ---------------------------------------------------------------------------------------
// the file

static void put_be32(unsigned char *p, uint32_t x) {
    p[0] = (unsigned char)(x >> 24);
    p[1] = (unsigned char)(x >> 16);
    p[2] = (unsigned char)(x >> 8);
    p[3] = (unsigned char)x;
}

// One chunk: length, type, data, CRC-32 over type and data.
static void write_chunk(FILE *fp, const char type[4], const unsigned char *data, size_t len) {
    unsigned char word[4];
    put_be32(word, (uint32_t)len);
    fwrite(word, 1, 4, fp);
    fwrite(type, 1, 4, fp);
    if (len) fwrite(data, 1, len, fp);
    uLong crc = crc32(0L, (const Bytef *)type, 4);
    if (len) crc = crc32(crc, data, (uInt)len);
    put_be32(word, (uint32_t)crc);
    fwrite(word, 1, 4, fp);
}

int attention_write_png(FILE *fp, const Attention *a, char err[ERR_LEN]) {
    PngLayout p;
    attention_png_layout(a, &p);
    if (p.width > ATTENTION_PNG_MAX_SIDE || p.height > ATTENTION_PNG_MAX_SIDE) {
        snprintf(err, ERR_LEN, "a %ld x %ld image is too large to write", p.width, p.height);
        return -1;
    }
    size_t row_bytes = 3 * (size_t)p.width, stride = 1 + row_bytes;  // filter byte + RGB
    size_t raw_len = stride * (size_t)p.height;
    unsigned char *rgb = attention_png_pixels(a, &p, 1);
    unsigned char *raw = malloc(raw_len);
    uLongf packed_len = compressBound((uLong)raw_len);
    unsigned char *packed = malloc(packed_len);
    if (!rgb || !raw || !packed) {
        free(rgb);
        free(raw);
        free(packed);
        snprintf(err, ERR_LEN, "out of memory for a %ld x %ld image", p.width, p.height);
        return -1;
    }
    for (long y = 0; y < p.height; y++) {
        raw[y * stride] = 0;
        memcpy(raw + y * stride + 1, rgb + y * row_bytes, row_bytes);
    }
    free(rgb);

    // level 3: the panels are runs of few colours, so faster levels lose little size
    int rc = compress2(packed, &packed_len, raw, (uLong)raw_len, 3);
    free(raw);
    if (rc != Z_OK) {
        free(packed);
        snprintf(err, ERR_LEN, "zlib compression failed (code %d)", rc);
        return -1;
    }
    static const unsigned char signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
    fwrite(signature, 1, 8, fp);
    unsigned char ihdr[13];
    put_be32(ihdr, (uint32_t)p.width);
    put_be32(ihdr + 4, (uint32_t)p.height);
    ihdr[8] = 8;   // bits per channel
    ihdr[9] = 2;   // colour type: RGB
    ihdr[10] = 0;  // compression: deflate
    ihdr[11] = 0;  // filter method 0
    ihdr[12] = 0;  // no interlace
    write_chunk(fp, "IHDR", ihdr, sizeof(ihdr));
    write_chunk(fp, "IDAT", packed, packed_len);
    write_chunk(fp, "IEND", NULL, 0);
    free(packed);
    return 0;
}
