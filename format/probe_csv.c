#include "probe_csv.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../common/input_file.h"
#include "atomic_file.h"
#include "probe_file.h"

// A value, or nothing where it is not a number (a score the file did not keep).
static void put_value(FILE *fp, float x) {
    if (isfinite(x)) fprintf(fp, ",%.6g", x);
    else fputc(',', fp);
}

// The rows of one record: every head's.
static void put_record(FILE *fp, const ProbeHeader *h, const ProbeRecord *rec) {
    const float *scores[] = {rec->previous_token, rec->induction, rec->first_character, rec->same_character,
                             rec->word_start,     rec->last_space, rec->entropy,        rec->importance};
    for (int l = 0; l < h->n_layer; l++) {
        for (int head = 0; head < h->n_head; head++) {
            fprintf(fp, "%lld,%d,%d", (long long)rec->step, l, head);
            for (size_t k = 0; k < sizeof(scores) / sizeof(scores[0]); k++)
                put_value(fp, scores[k][l * h->n_head + head]);
            fputc('\n', fp);
        }
    }
}

// Writes the rows of every record with probes into out.
static int put_rows(FILE *in, const char *probe_path, AtomicFile *out, long *rows, int *torn, char err[ERR_LEN]) {
    ProbeReader r;
    ProbeRecord rec;
    if (probe_reader_open(&r, in, probe_path, err) != 0) return -1;
    if (probe_record_alloc(&rec, &r.header, err) != 0) {
        probe_reader_close(&r);
        return -1;
    }
    fputs("step,layer,head,previous_token,induction,first_character,same_character,word_start,last_space,"
          "entropy_bits,importance_bits\n", out->fp);
    int got;
    while ((got = probe_reader_next(&r, &rec, err)) == 1) {
        if (!(rec.flags & PROBE_HAS_PROBE)) continue;  // a sample alone
        put_record(out->fp, &r.header, &rec);
        *rows += (long)r.header.n_layer * r.header.n_head;
    }
    *torn = r.torn_bytes > 0;
    probe_record_free(&rec);
    probe_reader_close(&r);
    if (got == 0 && ferror(out->fp)) {
        snprintf(err, ERR_LEN, "cannot write %s: %s", out->path, strerror(errno));
        return -1;
    }
    return got < 0 ? -1 : 0;
}

int probe_csv_write(const char *probe_path, const char *csv_path, int replace, long *rows, int *torn,
                    char err[ERR_LEN]) {
    *rows = 0, *torn = 0;
    FILE *in = input_file_fopen(probe_path, 0, NULL, err);
    if (!in) return -1;
    AtomicFile out;
    int rc = atomic_file_open(&out, csv_path, err);
    if (rc == 0) {
        rc = put_rows(in, probe_path, &out, rows, torn, err);
        if (rc == 0) rc = replace ? atomic_file_commit(&out, err) : atomic_file_commit_new(&out, err);
        else atomic_file_abort(&out);
    }
    fclose(in);
    return rc;
}
