// .json: tokens, sizes and the full (L, H, t, t) attention as nested arrays, one query row
// per line, weights with %.9g (non-finite weights, which JSON cannot hold, as null).
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attention_formats.h"

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
                    float w = head[(size_t)i * t + j];
                    if (isfinite(w)) n += viewer_append_float(row + n, w);
                    else {
                        memcpy(row + n, "null", 4);
                        n += 4;
                    }
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
    fputs("]}\n", fp);
    free(row);
    return 0;
}
