// compare_probes A B MAX_REL: whether two probe files (probe.bin, format/probe_file.h) hold
// records of the same steps with the same measurements, for tests/mpi/test_mpi.sh: each
// record's update-to-weight ratios and head scores, up to MAX_REL relative to their size (the
// order of float sums differs between 1 process and several). It prints the records compared
// and the largest relative difference. Exit status: 0 within MAX_REL, 1 not, 2 when a file
// cannot be read or their records' steps differ.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "../../format/probe_file.h"

// The next record of r into rec: 1, or 0 at the end (a message for an error).
static int next(ProbeReader *r, ProbeRecord *rec) {
    char err[ERR_LEN];
    int got = probe_reader_next(r, rec, err);
    if (got < 0) fprintf(stderr, "%s\n", err);
    return got == 1;
}

// |a - b| / max(|b|, 1e-6); 0 when both are NaN (a score a short probe cannot give).
static double rel(float a, float b) {
    if (isnan(a) && isnan(b)) return 0.0;
    return fabs((double)a - b) / fmax(fabs((double)b), 1e-6);
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s A.bin B.bin MAX_REL\n", argv[0]);
        return 2;
    }
    FILE *fa = fopen(argv[1], "rb"), *fb = fopen(argv[2], "rb");
    ProbeReader a, b;
    char err[ERR_LEN];
    if (!fa || !fb || probe_reader_open(&a, fa, argv[1], err) != 0 || probe_reader_open(&b, fb, argv[2], err) != 0) {
        fprintf(stderr, "%s\n", fa && fb ? err : "cannot open the probe files");
        return 2;
    }
    ProbeRecord ra, rb;
    if (probe_record_alloc(&ra, &a.header, err) != 0 || probe_record_alloc(&rb, &b.header, err) != 0 ||
        a.header.groups != b.header.groups || a.header.n_layer * a.header.n_head != b.header.n_layer * b.header.n_head) {
        fprintf(stderr, "the probe files are of different models\n");
        return 2;
    }
    int heads = a.header.n_layer * a.header.n_head, groups = a.header.groups;
    long records = 0;
    double worst = 0.0;
    for (;;) {
        int got_a = next(&a, &ra), got_b = next(&b, &rb);
        if (!got_a && !got_b) break;
        if (got_a != got_b || ra.step != rb.step) {
            fprintf(stderr, "the records differ in their steps at record %ld\n", records);
            return 2;
        }
        for (int g = 0; g < groups; g++) worst = fmax(worst, rel(ra.update_ratio[g], rb.update_ratio[g]));
        for (int h = 0; h < heads; h++) {
            worst = fmax(worst, rel(ra.previous_token[h], rb.previous_token[h]));
            worst = fmax(worst, rel(ra.induction[h], rb.induction[h]));
            worst = fmax(worst, rel(ra.entropy[h], rb.entropy[h]));
        }
        records++;
    }
    printf("%ld records of the same steps; update ratios and head scores within %.2e (relative)\n", records, worst);
    return worst <= atof(argv[3]) ? 0 : 1;
}
