#include "surprisal_csv.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../viewer/attention_export.h"
#include "../viewer/attention_formats.h"

int surprisal_csv_open(SurprisalCsv *csv, const char *path, const uint32_t *vocab_chars, int V, char err[ERR_LEN]) {
    csv->vocab_chars = vocab_chars;
    csv->V = V;
    if (atomic_file_open(&csv->file, path, err) != 0) return -1;
    fputs("position,char,loss_bits,probability", csv->file.fp);
    for (int r = 1; r <= ATTENTION_TOP_K; r++) fprintf(csv->file.fp, ",top%d,top%d_prob", r, r);
    fputc('\n', csv->file.fp);
    return 0;
}

int surprisal_csv_row(SurprisalCsv *csv, long position, int token, float loss, const float *logits, char err[ERR_LEN]) {
    // the loss is the forward pass's; the top predictions come from the same logits
    AttentionPrediction pred;
    attention_prediction(logits, csv->V, -1, csv->vocab_chars, &pred);
    char ch[CSV_CHAR_MAX + 1];
    ch[viewer_append_csv_char(ch, csv->vocab_chars[token])] = '\0';
    FILE *fp = csv->file.fp;
    fprintf(fp, "%ld,%s,%.9g,%.9g", position, ch, (float)(loss / M_LN2), (float)exp(-(double)loss));
    for (int r = 0; r < ATTENTION_TOP_K; r++) {
        if (r >= pred.k) {
            fputs(",,", fp);
            continue;
        }
        ch[viewer_append_csv_char(ch, pred.top_char[r])] = '\0';
        fprintf(fp, ",%s,%.9g", ch, pred.top_prob[r]);
    }
    if (fputc('\n', fp) == EOF) {
        snprintf(err, ERR_LEN, "cannot write %s: %s", csv->file.path, strerror(errno));
        return -1;
    }
    return 0;
}

int surprisal_csv_commit(SurprisalCsv *csv, int replace, char err[ERR_LEN]) {
    return replace ? atomic_file_commit(&csv->file, err) : atomic_file_commit_new(&csv->file, err);
}
