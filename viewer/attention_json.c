// .json: tokens, sizes and the full (L, H, t, t) attention as nested arrays, one query row
// per line, weights with %.9g (non-finite numbers, which JSON cannot hold, as null); then,
// when given, the surprisal and top predictions at each position, one position per line.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attention_formats.h"

// Appends x as %.9g, or null when it is not finite. Returns the length (at most 16).
static int append_number(char *out, float x) {
    if (isfinite(x)) return viewer_append_float(out, x);
    memcpy(out, "null", 4);
    return 4;
}

static void write_sizes(FILE *fp, const Attention *a) {
    fprintf(fp, "],\n\"n_layer\": %d, \"n_head\": %d,\n\"attention\": [\n", a->n_layer, a->n_head);
}

// one row: t numbers of at most 16 bytes and a comma each, brackets, comma, newline
static size_t row_bytes(int t) { return (size_t)t * 17 + 4; }

// Every query row in full, one a line: "[w, ..., w],\n".
static void write_head(FILE *fp, const float *head, int t, char *row) {
    for (int i = 0; i < t; i++) {
        size_t n = 0;
        row[n++] = '[';
        for (int j = 0; j < t; j++) {
            n += append_number(row + n, head[(size_t)i * t + j]);
            if (j + 1 < t) row[n++] = ',';
        }
        row[n++] = ']';
        if (i + 1 < t) row[n++] = ',';
        row[n++] = '\n';
        fwrite(row, 1, n, fp);
    }
}

static const JsonLayout json_layout = {
    .html_safe = 0, .open = "{\"tokens\": [", .write_sizes = write_sizes, .row_bytes = row_bytes,
    .write_head = write_head, .head_end = "],", .last_layer_end = "]\n",
    .surprisal_open = ",\n\"surprisal\": [", .predictions_open = "],\n\"predictions\": [\n", .position_end = "\n",
    .append_surprisal = append_number, .append_probability = append_number, .close = "}\n",
};

int attention_write_json(FILE *fp, const Attention *a, char err[ERR_LEN]) {
    return viewer_write_json(fp, a, &json_layout, err);
}
