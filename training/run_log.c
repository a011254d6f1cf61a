#include "run_log.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../common/input_file.h"
#include "../format/atomic_file.h"

#define LOG_HEADER "step,train_loss,val_loss,lr,tokens_seen,elapsed_s,grad_norm,clipped\n"
#define OLD_HEADER "step,train_loss,val_loss,lr,tokens_seen,elapsed_s\n"  // before grad_norm and clipped

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
    if (!(s->fp = input_file_fopen(path, NULL, err))) return -1;
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
// Returns 1; 0 at the end of the file; -1 with err on a read error.
static int scan_line(LogScan *s, char *head, size_t size, uint64_t *start, const char *path, char err[ERR_LEN]) {
    size_t kept = 0;
    int any = 0;
    *start = s->offset;
    for (;;) {
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
        any = 1;
        char *from = s->chunk + s->at, *eol = memchr(from, '\n', s->len - s->at);
        size_t n = eol ? (size_t)(eol - from) + 1 : s->len - s->at;
        size_t keep = n < size - 1 - kept ? n : size - 1 - kept;
        memcpy(head + kept, from, keep);
        kept += keep;
        s->at += n, s->offset += n;
        if (eol) break;
    }
    head[kept] = '\0';
    return any;
}

// The log's rows after `step` (rows are in step order: every line from the first whose step
// is past it), with the offset where the first starts (the file's length when none is).
static int rows_after(const char *path, long step, RunLogRows *rows, uint64_t *first_at, char err[ERR_LEN]) {
    *rows = (RunLogRows){0, 0, 0};
    LogScan s;
    if (scan_open(&s, path, err) != 0) return -1;
    char head[32];
    uint64_t start;
    int got = scan_line(&s, head, sizeof(head), &start, path, err);  // the header
    while (got == 1 && (got = scan_line(&s, head, sizeof(head), &start, path, err)) == 1) {
        long row_step = strtol(head, NULL, 10);
        if (rows->count == 0 && row_step <= step) continue;
        if (rows->count++ == 0) rows->first = row_step, *first_at = start;
        rows->last = row_step;
    }
    if (rows->count == 0) *first_at = s.offset;
    scan_close(&s);
    return got < 0 ? -1 : 0;
}

int run_log_rows_after(const char *path, long step, RunLogRows *rows, char err[ERR_LEN]) {
    *rows = (RunLogRows){0, 0, 0};
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) return 0;
    uint64_t first_at;
    return rows_after(path, step, rows, &first_at, err);
}

// Copies the log's bytes from the scan's offset up to `end` to out, a chunk at a time; old: each
// row with ",," added (the empty grad_norm and clipped of a row from before those columns).
static int copy_rows(LogScan *s, FILE *out, uint64_t end, int old, const char *path, char err[ERR_LEN]) {
    int row_open = 0;  // a row written without its newline yet
    while (s->offset < end) {
        if (s->at == s->len) {
            size_t want = end - s->offset < LOG_CHUNK ? (size_t)(end - s->offset) : LOG_CHUNK;
            s->len = fread(s->chunk, 1, want, s->fp), s->at = 0;
            if (s->len == 0) {
                snprintf(err, ERR_LEN, "cannot read %s: %s", path, ferror(s->fp) ? strerror(errno) : "it got shorter");
                return -1;
            }
        }
        char *from = s->chunk + s->at, *eol = old ? memchr(from, '\n', s->len - s->at) : NULL;
        size_t n = eol ? (size_t)(eol - from) : s->len - s->at;
        fwrite(from, 1, n, out);
        row_open = n > 0 || (row_open && !eol);
        if (eol) fputs(",,\n", out), n++, row_open = 0;
        s->at += n, s->offset += n;
    }
    if (old && row_open) fputs(",,\n", out);  // the last row, which had no newline
    return 0;
}

// Rewrites the log without the rows of steps after `step`, when there are any, and with the
// current header when it has the older one: the rows kept copied as they are read.
static int update_rows(const char *path, long step, char err[ERR_LEN]) {
    RunLogRows rows;
    uint64_t end;
    if (rows_after(path, step, &rows, &end, err) != 0) return -1;
    LogScan s;
    if (scan_open(&s, path, err) != 0) return -1;
    char header[sizeof(LOG_HEADER) + 1];
    uint64_t start;
    int rc = scan_line(&s, header, sizeof(header), &start, path, err) < 0 ? -1 : 0;
    int old = strcmp(header, OLD_HEADER) == 0;
    if (rc == 0 && (rows.count || old)) {
        AtomicFile f;
        rc = atomic_file_open(&f, path, err);
        if (rc == 0) {
            if (old) {
                fputs(LOG_HEADER, f.fp);
            } else if (fseek(s.fp, 0, SEEK_SET) == 0) {  // the header too, as long as it is
                s.at = s.len = 0, s.offset = 0;
            } else {
                snprintf(err, ERR_LEN, "cannot read %s: %s", path, strerror(errno));
                rc = -1;
            }
            if (rc == 0) rc = copy_rows(&s, f.fp, end, old, path, err);
            if (rc == 0) rc = atomic_file_commit(&f, err);
            else atomic_file_abort(&f);
        }
    }
    scan_close(&s);
    return rc;
}

int run_log_open(RunLog *log, const char *path, int resuming, long step, char err[ERR_LEN]) {
    memset(log, 0, sizeof(*log));
    snprintf(log->path, sizeof(log->path), "%s", path);
    struct stat st;
    int exists = stat(path, &st) == 0;
    if (exists && !S_ISREG(st.st_mode)) {
        snprintf(err, ERR_LEN, "%s exists and is not a regular file", path);
        return -1;
    }
    int append = resuming && exists;
    if (append && update_rows(path, step, err) != 0) return -1;
    log->fp = fopen(path, append ? "a" : "w");
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
    char val[32] = "", grad[32] = "";
    if (!isnan(row->val_loss)) snprintf(val, sizeof(val), "%.6f", row->val_loss);
    if (!isnan(row->grad_norm)) snprintf(grad, sizeof(grad), "%.6g", row->grad_norm);
    if (fprintf(log->fp, "%ld,%.6f,%s,%.6e,%ld,%.3f,%s,%d\n", row->step, row->train_loss, val, row->lr,
                row->tokens_seen, row->elapsed_s, grad, row->clipped) < 0 ||
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
