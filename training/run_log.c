#include "run_log.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../format/atomic_file.h"

#define LOG_HEADER "step,train_loss,val_loss,lr,tokens_seen,elapsed_s,grad_norm,clipped\n"
#define OLD_HEADER "step,train_loss,val_loss,lr,tokens_seen,elapsed_s\n"  // before grad_norm and clipped

static int write_failed(const char *path, char err[ERR_LEN]) {
    snprintf(err, ERR_LEN, "cannot write %s: %s", path, strerror(errno));
    return -1;
}

// Reads the existing log into a malloc'd string; NULL with err on failure.
static char *read_log(const char *path, char err[ERR_LEN]) {
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        snprintf(err, ERR_LEN, "cannot read %s: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, len = 0, got;
    char *text = malloc(cap);
    while (text && (got = fread(text + len, 1, cap - len - 1, fp)) > 0) {
        len += got;
        if (len + 1 == cap) {
            char *bigger = realloc(text, cap *= 2);
            if (!bigger) free(text);
            text = bigger;
        }
    }
    int failed = !text || ferror(fp);
    fclose(fp);
    if (failed) {
        snprintf(err, ERR_LEN, "cannot read %s: %s", path, text ? strerror(errno) : "out of memory");
        free(text);
        return NULL;
    }
    text[len] = '\0';
    return text;
}

// The first row of text (a log) whose step is after `step`: a pointer to the newline before
// it, or NULL when there is none.
static char *first_row_after(char *text, long step) {
    char *line = strchr(text, '\n');
    while (line && line[1] && strtol(line + 1, NULL, 10) <= step) line = strchr(line + 1, '\n');
    return line && line[1] ? line : NULL;
}

int run_log_rows_after(const char *path, long step, RunLogRows *rows, char err[ERR_LEN]) {
    *rows = (RunLogRows){0, 0, 0};
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) return 0;
    char *text = read_log(path, err);
    if (!text) return -1;
    for (char *line = first_row_after(text, step); line && line[1]; line = strchr(line + 1, '\n')) {
        rows->last = strtol(line + 1, NULL, 10);
        if (rows->count++ == 0) rows->first = rows->last;
    }
    free(text);
    return 0;
}

// Writes the rows of text (a log without its header) up to `end` to fp, each with ",,"
// added: the empty grad_norm and clipped of a row from before those columns.
static void write_old_rows(FILE *fp, const char *rows, const char *end) {
    for (const char *line = rows; line < end;) {
        const char *eol = memchr(line, '\n', (size_t)(end - line));
        size_t len = eol ? (size_t)(eol - line) : (size_t)(end - line);
        fwrite(line, 1, len, fp);
        fputs(",,\n", fp);
        line += len + 1;
    }
}

// Rewrites the log without the rows of steps after `step`, when there are any, and with the
// current header when it has the older one.
static int update_rows(const char *path, long step, char err[ERR_LEN]) {
    char *text = read_log(path, err);
    if (!text) return -1;
    // rows are in step order: keep everything before the first row past `step`
    char *line = first_row_after(text, step), *end = line ? line + 1 : text + strlen(text);
    int old = strncmp(text, OLD_HEADER, strlen(OLD_HEADER)) == 0, rc = 0;
    if (line || old) {
        AtomicFile f;
        rc = atomic_file_open(&f, path, err);
        if (rc == 0) {
            if (old) {
                fputs(LOG_HEADER, f.fp);
                write_old_rows(f.fp, text + strlen(OLD_HEADER), end);
            } else {
                fwrite(text, 1, (size_t)(end - text), f.fp);
            }
            rc = atomic_file_commit(&f, err);
        }
    }
    free(text);
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
    if (fprintf(log->fp, "%ld,%.6f,%s,%.6e,%lld,%.3f,%s,%d\n", row->step, row->train_loss, val, row->lr,
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
