#include "loss_history.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/input_file.h"

// Of two neighbouring groups' points, the one the merged group keeps: the later, unless only
// the earlier has a validation loss.
static LossPoint kept_of(LossPoint earlier, LossPoint later) {
    return isfinite(earlier.val_loss) && !isfinite(later.val_loss) ? earlier : later;
}

// Halves a full history: each pair of neighbouring points becomes one.
static void thin(LossHistory *h) {
    for (size_t i = 0; i < h->n / 2; i++) h->points[i] = kept_of(h->points[2 * i], h->points[2 * i + 1]);
    h->n /= 2;
    h->stride = 2 * (h->stride > 1 ? h->stride : 1);
    h->in_last = h->stride;
}

int loss_history_add(LossHistory *h, LossPoint point, char err[ERR_LEN]) {
    if (h->n > 0 && h->in_last < h->stride) {  // the last point's group is not complete
        h->points[h->n - 1] = kept_of(h->points[h->n - 1], point);
        h->in_last++;
        return 0;
    }
    if (h->n == LOSS_HISTORY_MAX_POINTS) thin(h);
    if (h->n == h->capacity) {
        size_t capacity = h->capacity ? 2 * h->capacity : 256;
        LossPoint *bigger = realloc(h->points, capacity * sizeof(LossPoint));
        if (!bigger) {
            snprintf(err, ERR_LEN, "out of memory for the loss plot's %zu points", h->n + 1);
            return -1;
        }
        h->points = bigger;
        h->capacity = capacity;
    }
    h->points[h->n++] = point;
    h->in_last = 1;
    return 0;
}

// An optional number field at *field, ending at a comma, a newline or the end: NAN when
// empty. Moves *field past its comma; 0, or -1 when it is not a number.
static int optional_field(char **field, double *value) {
    char *f = *field, *end;
    *value = NAN;
    if (*f != ',' && *f != '\n' && *f != '\r' && *f != '\0') {
        *value = strtod(f, &end);
        if (end == f) return -1;
        f = end;
    }
    if (*f == ',') f++;
    *field = f;
    return 0;
}

// One row: step,train_loss,val_loss,lr,tokens_seen,elapsed_s[,grad_norm,clipped] with
// val_loss possibly empty (rows from before grad_norm and clipped lack them, or have them
// empty). 0, or -1 when the line is not such a row.
static int parse_row(char *line, LossPoint *p) {
    char *end;
    p->step = strtol(line, &end, 10);
    if (end == line || *end != ',') return -1;
    char *field = end + 1;
    p->train_loss = strtod(field, &end);
    if (end == field || *end != ',') return -1;
    field = end + 1;
    if (optional_field(&field, &p->val_loss) != 0) return -1;
    p->lr = strtod(field, &end);
    if (end == field) return -1;
    p->grad_norm = p->clipped = NAN;
    // past tokens_seen and elapsed_s to grad_norm, when the row has it
    for (int skip = 0; skip < 2 && end && *end == ','; skip++) end = strchr(end + 1, ',');
    if (!end || *end != ',') return 0;
    field = end + 1;
    return optional_field(&field, &p->grad_norm) == 0 && optional_field(&field, &p->clipped) == 0 ? 0 : -1;
}

int loss_history_read(LossHistory *h, const char *log_path, char err[ERR_LEN]) {
    int missing;
    FILE *fp = input_file_fopen(log_path, 0, &missing, err);
    if (!fp) return missing ? 0 : -1;
    char line[512];
    long number = 0;
    int rc = 0;
    while (rc == 0 && fgets(line, sizeof(line), fp)) {
        if (++number == 1) continue;  // the header
        LossPoint p;
        if (parse_row(line, &p) != 0) {
            snprintf(err, ERR_LEN, "%s: line %ld is not a row step,train_loss,val_loss,lr,...", log_path, number);
            rc = -1;
        } else {
            rc = loss_history_add(h, p, err);
        }
    }
    fclose(fp);
    return rc;
}

void loss_history_free(LossHistory *h) {
    free(h->points);
    memset(h, 0, sizeof(*h));
}
