#include "run_log.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/input_file.h"
#include "../dist/dist.h"
#include "../format/atomic_file.h"
#include "../format/probe_file.h"
#include "run.h"

// ----------------------------------------------------------------------------
// log.csv

#define LOG_HEADER "step,train_loss,val_loss,lr,tokens_seen,elapsed_s,grad_norm,clipped,accuracy\n"

// The headers log.csv had before, and the empty fields their rows lack.
#define OLD_HEADER_MAX 80  // bytes of the longest, its newline and NUL included
static const struct {
    const char *header, *missing;
} old_headers[] = {
    {"step,train_loss,val_loss,lr,tokens_seen,elapsed_s\n", ",,,"},  // before grad_norm and clipped
    {"step,train_loss,val_loss,lr,tokens_seen,elapsed_s,grad_norm,clipped\n", ","},  // before accuracy
};
#define OLD_HEADERS (int)(sizeof(old_headers) / sizeof(old_headers[0]))

// The old_headers entry a log's first line is, or -1 (the current header, or none).
static int old_header(const char *line) {
    for (int i = 0; i < OLD_HEADERS; i++)
        if (strcmp(line, old_headers[i].header) == 0) return i;
    return -1;
}

static int write_failed(const char *path, char err[ERR_LEN]) {
    snprintf(err, ERR_LEN, "cannot write %s: %s", path, strerror(errno));
    return -1;
}

// The log read a line at a time through one chunk, whatever its length (a log of ten million
// rows is ~600 MB): each line's first bytes (its step) and where it starts.
#define LOG_CHUNK (1 << 16)
typedef struct {
    FILE *fp;
    char *chunk;      // (LOG_CHUNK)
    size_t at, len;   // the chunk's bytes not yet scanned
    uint64_t offset;  // in the file of the chunk's byte at
} LogScan;

static int scan_open(LogScan *s, const char *path, char err[ERR_LEN]) {
    memset(s, 0, sizeof(*s));
    if (!(s->fp = input_file_fopen(path, PLATFORM_NO_FOLLOW, NULL, err))) return -1;
    if (!(s->chunk = malloc(LOG_CHUNK))) {
        fclose(s->fp);
        snprintf(err, ERR_LEN, "cannot read %s: out of memory", path);
        return -1;
    }
    return 0;
}

static void scan_close(LogScan *s) {
    fclose(s->fp);
    free(s->chunk);
}

// The next line: its first size - 1 bytes in head (NUL-terminated), its offset in *start.
// Returns 1 for a whole line; 2 for bytes after the last newline (a row a stopped run left
// unfinished, or damage: is_torn_row tells); 0 at the end of the file; -1 with err on a read
// error.
static int scan_line(LogScan *s, char *head, size_t size, uint64_t *start, const char *path, char err[ERR_LEN]) {
    size_t kept = 0;
    int got = 0;
    *start = s->offset;
    while (got != 1) {
        if (s->at == s->len) {
            s->len = fread(s->chunk, 1, LOG_CHUNK, s->fp), s->at = 0;
            if (s->len == 0) {
                if (ferror(s->fp)) {
                    snprintf(err, ERR_LEN, "cannot read %s: %s", path, strerror(errno));
                    return -1;
                }
                break;
            }
        }
        char *from = s->chunk + s->at, *eol = memchr(from, '\n', s->len - s->at);
        size_t n = eol ? (size_t)(eol - from) + 1 : s->len - s->at;
        size_t keep = n < size - 1 - kept ? n : size - 1 - kept;
        memcpy(head + kept, from, keep);
        kept += keep;
        s->at += n, s->offset += n;
        got = eol ? 1 : 2;
    }
    head[kept] = '\0';
    return got;
}

// 1 when the n bytes after a log's last newline, at offset `start`, are what a kill can leave
// of a line being written: the start of a row (RUN_LOG_ROW_MAX) or, as the first line, of the
// header (whose older versions start as it does).
static int is_torn_row(const char *bytes, size_t n, uint64_t start) {
    if (start == 0) return n < strlen(LOG_HEADER) && memcmp(bytes, LOG_HEADER, n) == 0;
    if (n >= RUN_LOG_ROW_MAX) return 0;
    for (size_t i = 0; i < n; i++)
        if (!bytes[i] || !strchr("0123456789.,-+eainf", bytes[i])) return 0;
    return 1;
}

// What the log's end after its last newline is.
typedef struct {
    uint64_t bytes;  // how many, 0 for none
    int damaged;     // 1: no torn row (is_torn_row)
} LogEnd;

// What the log holds after its rows up to `step`: the rows after it (rows are in step order:
// every whole line from the first whose step is past it), where they start (*end: where the
// log's kept part ends), and what follows its last newline (*tail). *old: the header's entry
// in old_headers, or -1.
static int scan_log(const char *path, long step, RunLogRows *rows, uint64_t *end, LogEnd *tail, int *old,
                    char err[ERR_LEN]) {
    *rows = (RunLogRows){0, 0, 0};
    *tail = (LogEnd){0, 0};
    LogScan s;
    if (scan_open(&s, path, err) != 0) return -1;
    char head[RUN_LOG_ROW_MAX + 1];
    uint64_t start;
    int got = scan_line(&s, head, sizeof(head), &start, path, err);  // the header
    *old = got == 1 ? old_header(head) : -1;
    *end = got == 1 ? s.offset : 0;
    while (got == 1 && (got = scan_line(&s, head, sizeof(head), &start, path, err)) == 1) {
        long row_step = strtol(head, NULL, 10);
        if (rows->count == 0 && row_step <= step) {
            *end = s.offset;
            continue;
        }
        if (rows->count++ == 0) rows->first = row_step;
        rows->last = row_step;
    }
    if (got == 2) {
        tail->bytes = s.offset - start;
        tail->damaged = tail->bytes >= sizeof(head) || !is_torn_row(head, (size_t)tail->bytes, start);
    }
    scan_close(&s);
    return got < 0 ? -1 : 0;
}

int run_log_rows_after(const char *path, long step, RunLogRows *rows, char err[ERR_LEN]) {
    *rows = (RunLogRows){0, 0, 0};
    PlatformFileInfo info;
    if (platform_path_info(path, 0, &info) != 0 || info.kind != PLATFORM_FILE_REGULAR) return 0;
    uint64_t end;
    LogEnd tail;
    int old;
    return scan_log(path, step, rows, &end, &tail, &old, err);
}

// Copies the log's bytes from the scan's offset up to `end` (whole rows) to out, a chunk at a
// time; missing (or NULL): added to each row (the empty fields of a row from before the newer
// columns).
static int copy_rows(LogScan *s, FILE *out, uint64_t end, const char *missing, const char *path,
                     char err[ERR_LEN]) {
    while (s->offset < end) {
        if (s->at == s->len) {
            size_t want = end - s->offset < LOG_CHUNK ? (size_t)(end - s->offset) : LOG_CHUNK;
            s->len = fread(s->chunk, 1, want, s->fp), s->at = 0;
            if (s->len == 0) {
                snprintf(err, ERR_LEN, "cannot read %s: %s", path, ferror(s->fp) ? strerror(errno) : "it got shorter");
                return -1;
            }
        }
        char *from = s->chunk + s->at, *eol = missing ? memchr(from, '\n', s->len - s->at) : NULL;
        size_t n = eol ? (size_t)(eol - from) : s->len - s->at;
        fwrite(from, 1, n, out);
        if (eol) fprintf(out, "%s\n", missing), n++;
        s->at += n, s->offset += n;
    }
    return 0;
}

// Rewrites the log without the rows of steps after `step`, when there are any, without a row
// torn at its end (log->torn_bytes), and with the current header when it has an older one or
// its header is torn: the rows kept copied as they are read. A damaged end moves the log
// aside first (log->damaged_bytes, log->aside), and its rows are copied from there.
static int update_rows(RunLog *log, long step, char err[ERR_LEN]) {
    const char *path = log->path, *from = path;
    RunLogRows rows;
    uint64_t end;
    LogEnd tail;
    int old;
    if (scan_log(path, step, &rows, &end, &tail, &old, err) != 0) return -1;
    if (!rows.count && old < 0 && !tail.bytes) return 0;
    if (tail.damaged) {
        if (probe_file_set_aside(path, "damaged", log->aside, sizeof(log->aside), err) != 0) return -1;
        log->damaged_bytes = (size_t)tail.bytes;
        from = log->aside;
    } else {
        log->torn_bytes = (size_t)tail.bytes;
    }
    LogScan s;
    if (scan_open(&s, from, err) != 0) return -1;
    AtomicFile f;
    int rc = atomic_file_open(&f, path, err);
    if (rc == 0) {
        if (end == 0 || old >= 0) {  // no whole header, or an older one: the current one
            char header[OLD_HEADER_MAX];
            uint64_t start;
            if (old >= 0) rc = scan_line(&s, header, sizeof(header), &start, path, err) == 1 ? 0 : -1;
            fputs(LOG_HEADER, f.fp);
        }
        if (rc == 0) rc = copy_rows(&s, f.fp, end, old >= 0 ? old_headers[old].missing : NULL, path, err);
    }
    scan_close(&s);  // before the log is replaced: Windows replaces no file that is open
    if (rc == 0) rc = atomic_file_commit(&f, err);
    else if (f.fp) atomic_file_abort(&f);
    return rc;
}

int run_log_open(RunLog *log, const char *path, int resuming, long step, char err[ERR_LEN]) {
    memset(log, 0, sizeof(*log));
    snprintf(log->path, sizeof(log->path), "%s", path);
    PlatformFileInfo info;
    int exists = platform_path_info(path, 0, &info) == 0;
    if (exists && info.kind != PLATFORM_FILE_REGULAR) {
        snprintf(err, ERR_LEN, "%s exists and is not a regular file%s", path,
                 info.kind == PLATFORM_FILE_LINK ? " but a symbolic link: a run writes its log.csv itself, in its --out"
                                                 : "");
        return -1;
    }
    int append = resuming && exists;
    if (append && update_rows(log, step, err) != 0) return -1;
    log->fp = no_follow_fopen(path, append ? "a" : "w");
    if (!log->fp) return write_failed(path, err);
    if (!append && (fputs(LOG_HEADER, log->fp) == EOF || fflush(log->fp) != 0)) {
        write_failed(path, err);
        fclose(log->fp);
        log->fp = NULL;
        return -1;
    }
    return 0;
}

int run_log_row(RunLog *log, const RunLogRow *row, char err[ERR_LEN]) {
    char val[32] = "", grad[32] = "", accuracy[32] = "";
    if (!isnan(row->val_loss)) snprintf(val, sizeof(val), "%.6f", row->val_loss);
    if (!isnan(row->grad_norm)) snprintf(grad, sizeof(grad), "%.6g", row->grad_norm);
    if (!isnan(row->accuracy)) snprintf(accuracy, sizeof(accuracy), "%.6f", row->accuracy);
    if (fprintf(log->fp, "%ld,%.6f,%s,%.6e,%lld,%.3f,%s,%d,%s\n", row->step, row->train_loss, val, row->lr,
                row->tokens_seen, row->elapsed_s, grad, row->clipped, accuracy) < 0 ||
        fflush(log->fp) != 0)
        return write_failed(log->path, err);
    return 0;
}

int run_log_close(RunLog *log, char err[ERR_LEN]) {
    if (!log->fp) return 0;
    int failed = ferror(log->fp);
    failed |= fclose(log->fp) != 0;
    log->fp = NULL;
    return failed ? write_failed(log->path, err) : 0;
}

// ----------------------------------------------------------------------------
// the loss history

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

// One row: step,train_loss,val_loss,lr,tokens_seen,elapsed_s[,grad_norm,clipped[,accuracy]]
// with val_loss possibly empty (rows from before the later columns lack them, or have them
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
    p->grad_norm = p->clipped = p->accuracy = NAN;
    // past tokens_seen and elapsed_s to grad_norm, when the row has it
    for (int skip = 0; skip < 2 && end && *end == ','; skip++) end = strchr(end + 1, ',');
    if (!end || *end != ',') return 0;
    field = end + 1;
    return optional_field(&field, &p->grad_norm) == 0 && optional_field(&field, &p->clipped) == 0 &&
           optional_field(&field, &p->accuracy) == 0 ? 0 : -1;
}

int loss_history_read(LossHistory *h, const char *log_path, char err[ERR_LEN]) {
    int missing;
    FILE *fp = input_file_fopen(log_path, 0, &missing, err);
    if (!fp) return missing ? 0 : -1;
    char line[RUN_LOG_ROW_MAX + 1];
    long number = 0;
    int rc = 0;
    while (rc == 0 && fgets(line, sizeof(line), fp)) {
        size_t len = strlen(line);
        int whole = len > 0 && line[len - 1] == '\n';
        if (!whole && feof(fp) && is_torn_row(line, len, number == 0 ? 0 : 1)) break;  // a torn row, left out
        if (++number == 1 && whole) continue;  // the header
        LossPoint p;
        if (!whole) {
            snprintf(err, ERR_LEN, "%s: line %ld is no row%s (a row is at most %d bytes, and only the last, cut by "
                     "a kill, can be unfinished)", log_path, number, feof(fp) ? " and ends the file unfinished" : "",
                     RUN_LOG_ROW_MAX);
            rc = -1;
        } else if (parse_row(line, &p) != 0) {
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

// The point of `step`, or NULL (points are in step order).
static const LossPoint *point_of_step(const LossHistory *h, long step) {
    size_t lo = 0, hi = h->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (h->points[mid].step < step) lo = mid + 1;
        else hi = mid;
    }
    return lo < h->n && h->points[lo].step == step ? &h->points[lo] : NULL;
}

// A record's float and a row's figure, printed with `decimals` decimals (the losses' 6) or 7
// digits (the learning rate's %.6e: decimals -1): the same, or both unknown.
static int same_figure(float recorded, double logged, int decimals) {
    if (isnan(recorded) || isnan(logged)) return isnan(recorded) && isnan(logged);
    return fabs(recorded - logged) <= (decimals < 0 ? 0.0 : pow(10.0, -decimals)) + 1e-6 * fabs(logged);
}

int loss_history_check_probe(const LossHistory *h, const char *probe_path, char why[ERR_LEN]) {
    FILE *fp = input_file_fopen(probe_path, PLATFORM_NO_FOLLOW, NULL, why);
    if (!fp) return -1;
    ProbeReader r;
    ProbeRecord rec;
    int rc = probe_reader_open(&r, fp, probe_path, why), got = 0;
    if (rc == 0 && probe_record_alloc(&rec, &r.header, why) != 0) {
        probe_reader_close(&r);
        rc = -1;
    }
    while (rc == 0 && (got = probe_reader_next(&r, &rec, why)) == 1) {
        const LossPoint *p = (rec.flags & PROBE_HAS_PROBE) ? point_of_step(h, (long)rec.step) : NULL;
        if (!p || (same_figure(rec.train_loss, p->train_loss, 6) && same_figure(rec.val_loss, p->val_loss, 6) &&
                   same_figure(rec.lr, p->lr, -1)))
            continue;
        snprintf(why, ERR_LEN, "at step %ld its row has train_loss %.6f, val_loss %.6f and lr %.6e, where %s's "
                 "record has %.6f, %.6f and %.6e", p->step, p->train_loss, p->val_loss, p->lr, probe_path,
                 rec.train_loss, rec.val_loss, rec.lr);
        rc = 1;
    }
    if (got < 0) rc = -1;
    if (r.payload) {
        probe_record_free(&rec);
        probe_reader_close(&r);
    }
    fclose(fp);
    return rc;
}

// ----------------------------------------------------------------------------
// the run's log

int close_log(Run *r, char err[ERR_LEN]) {
    return dist_rank() == 0 && run_log_close(&r->log, err) != 0 ? EXIT_DATA : 0;
}
