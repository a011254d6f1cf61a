// .json: tokens, sizes and the full (L, H, t, t) attention as nested arrays, one query row
// per line, weights with %.9g (non-finite numbers, which JSON cannot hold, as null); then,
// when given, the surprisal and top predictions at each position, one position per line, the
// logit lens, one row of it per line, each head's queries, keys, values and outputs, one
// vector per line, each head's pattern scores and label, and the logit attribution.
#include <math.h>
#include <stdio.h>
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
    if (x->importance_mean) {
        fputs("],\n\"importance_mean\": [", fp);
        for (int l = 0; l < a->n_layer; l++) {
            fputs(l ? "," : "", fp);
            write_floats(fp, x->importance_mean + (size_t)l * a->n_head, a->n_head);
        }
        fputs("],\n\"importance_mean_over\": ", fp);
        viewer_write_json_text(fp, x->mean_over);
        fputc('}', fp);
    } else {
        fputs("]}", fp);
    }
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

// ---- the logit attribution and the patching (attention_export.h describes them), written the
// same into the page


// "[x,...]": part k of each of t positions' rows of `parts` values
static void write_part(FILE *fp, const double *rows, int parts, int k, int t) {
    fputc('[', fp);
    for (int i = 0; i < t; i++) {
        if (i) fputc(',', fp);
        viewer_write_number(fp, rows[(size_t)i * parts + k]);
    }
    fputc(']', fp);
}

// {"total": [t], "embeddings": [t], "heads": [L][H][t], "mlps": [L][t], "biases": [t]}
static void write_split(FILE *fp, const Attention *a, const double *total, const double *rows) {
    const LogitAttribution *s = a->attribution->split;
    const int L = a->n_layer, H = a->n_head;
    fputs("{\"total\": [", fp);
    for (int i = 0; i < a->t; i++) {
        if (i) fputc(',', fp);
        viewer_write_number(fp, total[i]);
    }
    fputs("],\n\"embeddings\": ", fp);
    write_part(fp, rows, s->parts, 0, a->t);
    fputs(",\n\"heads\": [", fp);
    for (int k = 0; k < L * H; k++) {
        fputs(k == 0 ? "[" : k % H == 0 ? "],\n[" : ",\n", fp);
        write_part(fp, rows, s->parts, 1 + k, a->t);
    }
    fputs("]],\n\"mlps\": [", fp);
    for (int l = 0; l < L; l++) {
        if (l) fputs(",\n", fp);
        write_part(fp, rows, s->parts, 1 + L * H + l, a->t);
    }
    fputs("],\n\"biases\": ", fp);
    write_part(fp, rows, s->parts, s->parts - 1, a->t);
    fputc('}', fp);
}

// a token as its character (null for -1)
static void write_char(FILE *fp, int token, const uint32_t *chars, int html_safe) {
    char text[JSON_CHAR_MAX];
    if (token < 0) fputs("null", fp);
    else fwrite(text, 1, (size_t)viewer_append_json_char(text, chars[token], html_safe), fp);
}

// t tokens as characters
static void write_chars(FILE *fp, const int *tokens, int t, const uint32_t *chars, int html_safe) {
    fputc('[', fp);
    for (int i = 0; i < t; i++) {
        if (i) fputc(',', fp);
        write_char(fp, tokens[i], chars, html_safe);
    }
    fputc(']', fp);
}

// ,"logit_attribution": {...}
static void write_attribution(FILE *fp, const Attention *a, int html_safe) {
    const LogitAttribution *s = a->attribution->split;
    const uint32_t *chars = a->attribution->vocab_chars;
    fputs(",\n\"logit_attribution\": {\"target\": ", fp);
    write_chars(fp, s->target, a->t, chars, html_safe);
    fputs(",\n\"rival\": ", fp);
    write_chars(fp, s->rival, a->t, chars, html_safe);
    fputs(",\n\"next_known\": [", fp);
    for (int i = 0; i < a->t; i++) fputs(i ? (s->next_known[i] ? ",true" : ",false") : s->next_known[i] ? "true" : "false", fp);
    fputs("],\n\"logit\": ", fp);
    write_split(fp, a, s->logit, s->logit_parts);
    fputs(",\n\"difference\": ", fp);
    write_split(fp, a, s->difference, s->difference_parts);
    fputc('}', fp);
}

// ,"patching": {...}
static void write_patching(FILE *fp, const Attention *a, int html_safe) {
    const Patching *p = a->patching->result;
    const uint32_t *chars = a->patching->vocab_chars;
    const int L = p->n_layer, H = p->n_head;
    fputs(",\n\"patching\": {\"corrupted\": ", fp);
    write_chars(fp, a->patching->corrupted, a->t, chars, html_safe);
    fputs(",\n\"answer_clean\": ", fp);
    write_char(fp, p->answer_clean, chars, html_safe);
    fputs(", \"answer_corrupted\": ", fp);
    write_char(fp, p->answer_corrupted, chars, html_safe);
    fputs(", \"metric_clean\": ", fp);
    viewer_write_number(fp, p->metric_clean);
    fputs(", \"metric_corrupted\": ", fp);
    viewer_write_number(fp, p->metric_corrupted);
    fputs(",\n\"heads\": [", fp);
    for (int l = 0; l < L; l++) {
        if (l) fputc(',', fp);
        write_part(fp, p->heads + (size_t)l * H, 1, 0, H);
    }
    fputs("],\n\"residual\": [", fp);
    for (int l = 0; l <= L; l++) {
        if (l) fputs(",\n", fp);
        write_part(fp, p->residual + (size_t)l * p->t, 1, 0, p->t);
    }
    fputs("],\n\"residual_rows\": [\"embeddings\"", fp);
    for (int l = 0; l < L; l++) fprintf(fp, ", \"after block %d\"", l);
    fputs("]}", fp);
}

void viewer_write_analysis(FILE *fp, const Attention *a, int html_safe) {
    if (a->attribution) write_attribution(fp, a, html_safe);
    if (a->patching) write_patching(fp, a, html_safe);
}

static void write_analysis(FILE *fp, const Attention *a) { viewer_write_analysis(fp, a, 0); }

static const JsonLayout json_layout = {
    .html_safe = 0, .open = "{\"tokens\": [", .write_sizes = write_sizes, .row_bytes = row_bytes,
    .write_head = write_head, .head_end = "],", .last_layer_end = "]\n",
    .surprisal_open = ",\n\"surprisal\": [", .predictions_open = "],\n\"predictions\": [\n", .position_end = "\n",
    .append_surprisal = append_number, .append_probability = append_number, .write_lens = write_lens,
    .write_vectors = write_vectors, .write_heads = write_heads, .write_analysis = write_analysis,
    .close = "}\n",
};

int attention_write_json(FILE *fp, const Attention *a, char err[ERR_LEN]) {
    return viewer_write_json(fp, a, &json_layout, err);
}
