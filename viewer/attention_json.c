// .json: tokens, sizes and the full (L, H, t, t) attention as nested arrays, one query row
// per line, weights with %.9g (non-finite numbers, which JSON cannot hold, as null); then,
// when given, the surprisal and top predictions at each position, one position per line, the
// logit lens, one row of it per line, each head's queries, keys, values and outputs, one
// vector per line, and each head's pattern scores and label.
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

// Writes n floats as "[x,...,x]" with %.9g.
static void write_floats(FILE *fp, const float *x, int n) {
    char number[24];
    fputc('[', fp);
    for (int k = 0; k < n; k++) {
        if (k) fputc(',', fp);
        fwrite(number, 1, (size_t)append_number(number, x[k]), fp);
    }
    fputc(']', fp);
}

// "head_size": hs, then "query", "key", "value" and "head_output" as [L][H][t][hs]: the slices
// of the forward's qkv rows (3A each) and output rows (A each), a vector a line
static void write_vectors(FILE *fp, const Attention *a) {
    const AttentionVectors *v = a->vectors;
    const int hs = v->head_size, A = a->n_head * hs;
    static const char *const names[4] = {"query", "key", "value", "head_output"};
    fprintf(fp, ",\n\"head_size\": %d", hs);
    for (int which = 0; which < 4; which++) {
        const float *base = which < 3 ? v->qkv + which * A : v->out;
        size_t stride = which < 3 ? 3 * (size_t)A : (size_t)A;  // floats between two positions' rows
        fprintf(fp, ",\n\"%s\": [", names[which]);
        for (int l = 0; l < a->n_layer; l++)
            for (int h = 0; h < a->n_head; h++) {
                fputs(h ? ",\n[" : l ? "],\n[[" : "[[", fp);
                for (int i = 0; i < a->t; i++) {
                    if (i) fputs(",\n", fp);
                    write_floats(fp, base + ((size_t)l * a->t + i) * stride + (size_t)h * hs, hs);
                }
                fputc(']', fp);
            }
        fputs("]]", fp);
    }
}

// "heads": {"patterns", "reach", "chance", "scores" [L][H][P], "label" [L][H] names or null,
// "strength" [L][H], "importance" [L][H]}
static void write_heads(FILE *fp, const Attention *a) {
    const AttentionHeads *x = a->heads;
    fputs(",\n\"heads\": {\"patterns\": [", fp);
    for (int p = 0; p < x->patterns; p++) fprintf(fp, p ? ", \"%s\"" : "\"%s\"", x->names[p]);
    fputs("], \"reach\": ", fp);
    write_floats(fp, x->reach, x->patterns);
    fputs(", \"chance\": ", fp);
    write_floats(fp, x->chance, x->patterns);
    fputs(",\n\"scores\": [", fp);
    for (int l = 0; l < a->n_layer; l++) {
        fputs(l ? "],\n[" : "[", fp);
        for (int h = 0; h < a->n_head; h++) {
            if (h) fputc(',', fp);
            write_floats(fp, x->scores + ((size_t)l * a->n_head + h) * x->patterns, x->patterns);
        }
    }
    fputs("]],\n\"label\": [", fp);
    for (int l = 0; l < a->n_layer; l++)
        for (int h = 0; h < a->n_head; h++) {
            int label = x->label[l * a->n_head + h];
            fputs(h ? ", " : l ? "], [" : "[", fp);
            if (label < 0) fputs("null", fp);
            else fprintf(fp, "\"%s\"", x->names[label]);
        }
    fputs("]],\n\"strength\": [", fp);
    for (int l = 0; l < a->n_layer; l++) {
        fputs(l ? "," : "", fp);
        write_floats(fp, x->strength + (size_t)l * a->n_head, a->n_head);
    }
    fputs("],\n\"importance\": [", fp);
    for (int l = 0; l < a->n_layer; l++) {
        fputs(l ? "," : "", fp);
        write_floats(fp, x->importance + (size_t)l * a->n_head, a->n_head);
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
    .write_vectors = write_vectors, .write_heads = write_heads, .close = "}\n",
};

int attention_write_json(FILE *fp, const Attention *a, char err[ERR_LEN]) {
    return viewer_write_json(fp, a, &json_layout, err);
}
