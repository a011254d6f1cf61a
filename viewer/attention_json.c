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

// "surprisal": [t] and "predictions": [t][k] of [character, probability].
static void write_predictions(FILE *fp, const Attention *a) {
    // one position: k pairs of a character, a number and punctuation
    char line[ATTENTION_TOP_K * (JSON_CHAR_MAX + 16 + 4) + 4];
    fputs(",\n\"surprisal\": [", fp);
    for (int i = 0; i < a->t; i++) {
        int n = append_number(line, a->pred[i].surprisal);
        if (i + 1 < a->t) line[n++] = ',';
        fwrite(line, 1, (size_t)n, fp);
    }
    fputs("],\n\"predictions\": [\n", fp);
    for (int i = 0; i < a->t; i++) {
        const AttentionPrediction *p = &a->pred[i];
        int n = 0;
        line[n++] = '[';
        for (int r = 0; r < p->k; r++) {
            line[n++] = '[';
            n += viewer_append_json_char(line + n, p->top_char[r], 0);
            line[n++] = ',';
            n += append_number(line + n, p->top_prob[r]);
            line[n++] = ']';
            if (r + 1 < p->k) line[n++] = ',';
        }
        line[n++] = ']';
        if (i + 1 < a->t) line[n++] = ',';
        line[n++] = '\n';
        fwrite(line, 1, (size_t)n, fp);
    }
    fputc(']', fp);
}

// "logit_lens": {"rows": [...], "top": [rows][t][k], "next_prob": [rows][t], "next_rank": [rows][t]}
static void write_lens(FILE *fp, const Attention *a) {
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

int attention_write_json(FILE *fp, const Attention *a, char err[ERR_LEN]) {
    int t = a->t;
    // one row: t numbers of at most 16 bytes and a comma each, brackets, comma, newline
    char *row = malloc((size_t)t * 17 + JSON_CHAR_MAX + 4);
    if (!row) {
        snprintf(err, ERR_LEN, "%s: out of memory for a %d-character row", a->path, t);
        return -1;
    }
    fputs("{\"tokens\": [", fp);
    for (int i = 0; i < t; i++) {
        int n = viewer_append_json_char(row, a->chars[i], 0);
        if (i + 1 < t) row[n++] = ',';
        fwrite(row, 1, (size_t)n, fp);
    }
    fprintf(fp, "],\n\"n_layer\": %d, \"n_head\": %d,\n\"attention\": [\n", a->n_layer,
            a->n_head);
    for (int l = 0; l < a->n_layer; l++) {
        fputc('[', fp);
        for (int h = 0; h < a->n_head; h++) {
            const float *head = a->att + ((size_t)l * a->n_head + h) * t * t;
            fputc('[', fp);
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
            fputs(h + 1 < a->n_head ? "]," : "]", fp);
        }
        fputs(l + 1 < a->n_layer ? "],\n" : "]\n", fp);
    }
    fputc(']', fp);
    if (a->pred) write_predictions(fp, a);
    if (a->lens) write_lens(fp, a);
    fputs("}\n", fp);
    free(row);
    return 0;
}
