// The measures of analysis/ in the attention document (.json, and the .html page's data):
// "logit_attribution" (attention_export.h describes it), written the same in both.
#include <math.h>
#include <stdio.h>

#include "attention_formats.h"

// x as %.9g, or null when it is not finite
static void write_number(FILE *fp, double x) {
    if (isfinite(x)) fprintf(fp, "%.9g", x);
    else fputs("null", fp);
}

// "[x,...]": part k of each of t positions' rows of `parts` values
static void write_part(FILE *fp, const double *rows, int parts, int k, int t) {
    fputc('[', fp);
    for (int i = 0; i < t; i++) {
        if (i) fputc(',', fp);
        write_number(fp, rows[(size_t)i * parts + k]);
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
        write_number(fp, total[i]);
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

// t tokens as characters (null for -1)
static void write_chars(FILE *fp, const int *tokens, int t, const uint32_t *chars, int html_safe) {
    char text[JSON_CHAR_MAX];
    fputc('[', fp);
    for (int i = 0; i < t; i++) {
        if (i) fputc(',', fp);
        if (tokens[i] < 0) fputs("null", fp);
        else fwrite(text, 1, (size_t)viewer_append_json_char(text, chars[tokens[i]], html_safe), fp);
    }
    fputc(']', fp);
}

void viewer_write_attribution(FILE *fp, const Attention *a, int html_safe) {
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
