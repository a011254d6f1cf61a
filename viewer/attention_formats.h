// Internal to viewer/: the attention data shared by the format writers, and the helpers
// they share (also with generation/surprisal_csv.c). Each writer streams one format to an
// open file; attention_export opens and commits the file.
#ifndef CHARGPT_ATTENTION_FORMATS_H
#define CHARGPT_ATTENTION_FORMATS_H

#include <stdint.h>
#include <stdio.h>

#include "attention_export.h"

// Each writes a (attention_export.h) and returns 0, or -1 with err (out of memory,
// compression failure; attention_export names the file). Errors of the stream itself are
// left for the caller to find with ferror when it commits the file.
int attention_write_json(FILE *fp, const Attention *a, char err[ERR_LEN]);
int attention_write_csv(FILE *fp, const Attention *a, char err[ERR_LEN]);
int attention_write_png(FILE *fp, const Attention *a, char err[ERR_LEN]);
int attention_write_html(FILE *fp, const Attention *a, char err[ERR_LEN]);

// Where the parts of the .png go, in pixels (x across, y down). Panel (layer l, head h)
// has its top-left corner at (x0 + h * step_x, y0 + l * step_y); the characters of the
// keys sit in the axis_top pixels above it, those of the queries in the axis_left pixels
// to its left (both 0 when cells are too small for them); "head h" labels in the row at
// head_label_y above the grid, "layer l" labels left of the panels, the legend from
// legend_y down. Labels are drawn text_scale pixels per font pixel.
typedef struct {
    int cell;                // s: pixels per cell
    long panel;              // t * s
    int axis_left, axis_top;
    int text_scale;
    long x0, y0, step_x, step_y;
    long head_label_y, legend_y;
    long width, height;
} PngLayout;

void attention_png_layout(const Attention *a, PngLayout *layout);
// The widest and tallest image attention_write_png writes (larger ones are refused).
#define ATTENTION_PNG_MAX_SIDE 30000
// The image, (height, width, 3) RGB, with or without the labels, characters and legend
// (the layout is the same: without them their places stay white); NULL when out of memory.
unsigned char *attention_png_pixels(const Attention *a, const PngLayout *layout, int labelled);

// Longest output of viewer_append_json_char.
#define JSON_CHAR_MAX 16

// Appends the UTF-8 bytes of cp (U+FFFD when cp is not a Unicode scalar value) to out;
// returns the number of bytes (1..4).
int viewer_append_utf8(char *out, uint32_t cp);
// Appends cp as a quoted JSON string: " \ and control characters escaped, the rest raw
// UTF-8. html_safe also escapes < (as \u003c, so the text cannot close a <script>) and
// U+2028/U+2029. Returns the number of bytes (at most JSON_CHAR_MAX).
int viewer_append_json_char(char *out, uint32_t cp, int html_safe);
// Appends a float as printf's %.9g writes it (9 significant digits, which parse back to
// the same float; 0 for zero), by exact integer arithmetic for 1e-9 <= |x| < 1e9 and by
// snprintf otherwise. Returns the length (at most 16).
int viewer_append_float(char *out, float x);
// Writes a NUL-terminated string as a JSON string: " and \ escaped, control characters as \u00XX
// and < as \u003c (so that no text can end a page's <script> element), and each byte that is not
// part of well-formed UTF-8 (a file name's) as U+FFFD.
void viewer_write_json_text(FILE *fp, const char *s);
// Writes x as %.9g (a float reads back the same), or null when it is not finite.
void viewer_write_number(FILE *fp, double x);
// Appends a non-negative integer in decimal. Returns the length.
int viewer_append_uint(char *out, uint32_t x);
// Writes n bytes, or n floats as their little-endian bytes, as a quoted base64 string.
void viewer_write_base64(FILE *fp, const uint8_t *bytes, size_t n);
void viewer_write_base64_floats(FILE *fp, const float *x, size_t n);

// The attention as one JSON document, which the .json file and the .html page's embedded data
// both are, in a layout of their own (spacing, numbers, what each head holds):
//   {"tokens": [t strings], <sizes>, "attention": [L][H][<head>]
//    [, "surprisal": [t numbers], "predictions": [t][k][character, probability]] [, <lens>]
//    [, <vectors>] [, <heads>] [, "logit_attribution": ...] [, "patching": ...]}
typedef struct {
    int html_safe;             // viewer_append_json_char's
    const char *open;          // "{" and the tokens' key, up to the first string
    // writes what comes after the tokens' strings up to the attention's first layer
    void (*write_sizes)(FILE *fp, const Attention *a);
    size_t (*row_bytes)(int t);  // room write_head needs for one row
    // writes one head's rows (weights (t, t)) inside its brackets, with `row` as room
    void (*write_head)(FILE *fp, const float *head, int t, char *row);
    const char *head_end;      // after a head's "]" when another follows
    const char *last_layer_end;  // after the last layer's "]"
    const char *surprisal_open;    // what comes before the surprisal's numbers
    const char *predictions_open;  // what comes between them and the predictions
    const char *position_end;      // after each position's predictions
    // append a surprisal (in bits) or a probability, finite or not; return the length (< 24)
    int (*append_surprisal)(char *out, float bits);
    int (*append_probability)(char *out, float p);
    // writes the logit lens (a->lens, when there is one) with its key, `row` as room
    void (*write_lens)(FILE *fp, const Attention *a, char *row);
    // write the vectors and the heads (when a has them) with their keys
    void (*write_vectors)(FILE *fp, const Attention *a);
    void (*write_heads)(FILE *fp, const Attention *a);
    // writes the logit attribution and the patching (a->attribution, a->patching: those there
    // are) with their keys
    void (*write_analysis)(FILE *fp, const Attention *a);
    const char *close;         // after everything
} JsonLayout;
// Writes ,"logit_attribution": {...} and ,"patching": {...} (attention_export.h) when a has
// them, characters escaped as viewer_append_json_char escapes them with html_safe: both
// layouts' write_analysis.
void viewer_write_analysis(FILE *fp, const Attention *a, int html_safe);

// Writes the document. Returns 0, or -1 with err when memory for a row runs out.
int viewer_write_json(FILE *fp, const Attention *a, const JsonLayout *layout, char err[ERR_LEN]);

// The longest CSV character field: a quoted, doubled quote or a 4-byte UTF-8 sequence.
#define CSV_CHAR_MAX 6
// Appends cp as a CSV field: its UTF-8, quoted per RFC 4180 when it is a comma, a double
// quote, CR or LF (the quote doubled). Returns the number of bytes.
int viewer_append_csv_char(char *out, uint32_t cp);

#endif
