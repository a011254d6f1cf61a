// .csv: one row per (layer, head, query, key <= query), rows ending in LF. A character
// field is the real character in UTF-8, quoted per RFC 4180 when it is a comma, a double
// quote, CR or LF.
#include <stdlib.h>
#include <string.h>

#include "attention_formats.h"

// The longest data row: four integers, two characters, a weight, separators.
#define CSV_ROW_MAX (4 * 10 + 2 * CSV_CHAR_MAX + 16 + 7)

int viewer_append_csv_char(char *out, uint32_t cp) {
    if (cp == ',' || cp == '"' || cp == '\r' || cp == '\n') {
        int n = 0;
        out[n++] = '"';
        out[n++] = (char)cp;
        if (cp == '"') out[n++] = '"';
        out[n++] = '"';
        return n;
    }
    return viewer_append_utf8(out, cp);
}

int attention_write_csv(FILE *fp, const Attention *a, char err[ERR_LEN]) {
    int t = a->t;
    // the rows of one query: at most t
    char *rows = malloc((size_t)t * CSV_ROW_MAX);
    if (!rows) {
        snprintf(err, ERR_LEN, "out of memory for %d rows", t);
        return -1;
    }
    fputs("layer,head,query_pos,key_pos,query_char,key_char,weight\n", fp);
    for (int l = 0; l < a->n_layer; l++) {
        for (int h = 0; h < a->n_head; h++) {
            const float *head = a->att + ((size_t)l * a->n_head + h) * t * t;
            for (int i = 0; i < t; i++) {
                // "layer,head,query_pos," and the query character are the same for every key
                char prefix[3 * 11];
                int p = 0;
                p += viewer_append_uint(prefix + p, (uint32_t)l);
                prefix[p++] = ',';
                p += viewer_append_uint(prefix + p, (uint32_t)h);
                prefix[p++] = ',';
                p += viewer_append_uint(prefix + p, (uint32_t)i);
                prefix[p++] = ',';
                char query_char[CSV_CHAR_MAX];
                int q = viewer_append_csv_char(query_char, a->chars[i]);
                size_t n = 0;
                for (int j = 0; j <= i; j++) {
                    memcpy(rows + n, prefix, (size_t)p);
                    n += (size_t)p;
                    n += viewer_append_uint(rows + n, (uint32_t)j);
                    rows[n++] = ',';
                    memcpy(rows + n, query_char, (size_t)q);
                    n += (size_t)q;
                    rows[n++] = ',';
                    n += viewer_append_csv_char(rows + n, a->chars[j]);
                    rows[n++] = ',';
                    n += viewer_append_float(rows + n, head[(size_t)i * t + j]);
                    rows[n++] = '\n';
                }
                fwrite(rows, 1, n, fp);
            }
        }
    }
    free(rows);
    return 0;
}
