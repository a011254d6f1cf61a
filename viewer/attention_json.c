// .json: tokens, sizes and the full (L, H, t, t) attention as nested arrays, one query row
// per line, weights with %.9g (non-finite numbers, which JSON cannot hold, as null); then,
// when given, the surprisal and top predictions at each position, one position per line, and
// the logit lens, one row of it per line.
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

// "logit_lens": {"rows": [...], "top": [rows][t][k], "next_prob": [rows][t], "next_rank": [rows][t]};
// a cell at a time in a line of its own, not in row
static void write_lens(FILE *fp, const Attention *a, char *row) {
    const AttentionLens *lens = a->lens;
    char line[LOGIT_LENS_TOP * (JSON_CHAR_MAX + 16 + 4) + 4];
    fputs(",\n\"logit_lens\": {\"rows\": [", fp);
    for (int r = 0; r < lens->rows; r++) {
        if (r == 0) fputs("\"embeddings\"", fp);
        else fprintf(fp, ", \"block %d\"", r - 1);
    }
    fputs("],\n\"top\": [", fp);
    for (int r = 0; r < lens->rows; r++) {
        fputs(r ? ",\n[" : "\n[", fp);
        for (int i = 0; i < a->t; i++) {
            const LensCell *cell = &lens->cells[(size_t)r * a->t + i];
            int n = 0;
            line[n++] = '[';
            for (int k = 0; k < LOGIT_LENS_TOP && cell->top[k] >= 0; k++) {
                if (k) line[n++] = ',';
                line[n++] = '[';
                n += viewer_append_json_char(line + n, lens->vocab_chars[cell->top[k]], 0);
                line[n++] = ',';
                n += append_number(line + n, cell->top_prob[k]);
                line[n++] = ']';
            }
            line[n++] = ']';
            if (i + 1 < a->t) line[n++] = ',';
            fwrite(line, 1, (size_t)n, fp);
        }
        fputc(']', fp);
    }
    for (int which = 0; which < 2; which++) {
        fputs(which ? "],\n\"next_rank\": [" : "],\n\"next_prob\": [", fp);
        for (int r = 0; r < lens->rows; r++) {
            fputs(r ? ",\n[" : "\n[", fp);
            for (int i = 0; i < a->t; i++) {
                const LensCell *cell = &lens->cells[(size_t)r * a->t + i];
                if (i) fputc(',', fp);
                if (cell->next_rank == 0) fputs("null", fp);
                else if (which) fprintf(fp, "%d", cell->next_rank);
                else fwrite(line, 1, (size_t)append_number(line, cell->next_prob), fp);
            }
            fputc(']', fp);
        }
    }
    fputs("]}", fp);
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
    .append_surprisal = append_number, .append_probability = append_number, .write_lens = write_lens,
    .close = "}\n",
};

int attention_write_json(FILE *fp, const Attention *a, char err[ERR_LEN]) {
    return viewer_write_json(fp, a, &json_layout, err);
}
