#include "progress.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/clock.h"
#include "../common/platform.h"

// ----------------------------------------------------------------------------
// the progress line

#define MAX_FIELDS 16
#define SEPARATOR " | "

int terminal_width(int fd) {
    int width = platform_terminal_width(fd);
    if (width > 0) return width;
    const char *columns = getenv("COLUMNS");
    if (columns) {
        char *end;
        long n = strtol(columns, &end, 10);
        if (end != columns && !*end && n >= 1 && n <= 10000) return (int)n;
    }
    return 80;
}

void progress_line_fit(const char *const *fields, const int *importance, int n, int width, char *out,
                       size_t size) {
    if (n > MAX_FIELDS) n = MAX_FIELDS;
    int kept[MAX_FIELDS];
    size_t length = 0;
    for (int i = 0; i < n; i++) {
        kept[i] = 1;
        length += strlen(fields[i]) + (i > 0 ? strlen(SEPARATOR) : 0);
    }
    size_t limit = width > 1 ? (size_t)width - 1 : 1;
    // drop the least important field left until the line fits
    for (int kept_count = n; length > limit && kept_count > 1; kept_count--) {
        int worst = -1;
        for (int i = 0; i < n; i++)
            if (kept[i] && importance[i] > 0 && (worst < 0 || importance[i] > importance[worst])) worst = i;
        if (worst < 0) break;
        kept[worst] = 0;
        length -= strlen(fields[worst]) + strlen(SEPARATOR);
    }
    size_t used = 0;
    out[0] = '\0';
    for (int i = 0; i < n; i++) {
        if (!kept[i]) continue;
        used += (size_t)snprintf(out + used, used < size ? size - used : 0, "%s%s", used ? SEPARATOR : "", fields[i]);
        if (used >= size) break;
    }
    if (limit < size && strlen(out) > limit) out[limit] = '\0';
}

// ----------------------------------------------------------------------------
// the report

void progress_report_init(ProgressReport *r, long start_step, long steps, long tokens_per_step) {
    *r = (ProgressReport){.start_step = start_step, .steps = steps, .tokens_per_step = tokens_per_step,
                          .report_loss = NAN};
}

void progress_report_plan(ProgressReport *r, long eval_every, long eval_batches, long save_every, long final_chars) {
    r->eval_every = eval_every, r->eval_batches = eval_batches, r->save_every = save_every;
    r->final_chars = final_chars;
}

void progress_report_evaluated(ProgressReport *r, double seconds) {
    r->eval_s += seconds;
    r->evals++;
}

void progress_report_saved(ProgressReport *r, double seconds) {
    r->save_s += seconds;
    r->saves++;
}

void progress_report_probed(ProgressReport *r, double seconds) {
    r->probe_s += seconds;
    r->probes++;
}

// A forward of B * T tokens: measured by the evaluations, else a third of a step.
static double forward_seconds(const ProgressReport *r, long step) {
    if (r->evals > 0 && r->eval_batches > 0) return r->eval_s / ((double)r->evals * r->eval_batches);
    long steps_done = step - r->start_step;
    return steps_done > 0 ? r->train_s / steps_done / 3.0 : 0.0;
}

double progress_report_eta(const ProgressReport *r, long step) {
    long steps_done = step - r->start_step;
    double step_s = steps_done > 0 ? r->train_s / steps_done : 0.0, forward_s = forward_seconds(r, step);
    double evals = (double)events_left(step, r->steps, r->eval_every) * (r->eval_batches > 0);
    double saves = (double)events_left(step, r->steps, r->save_every);
    double final_forwards = r->final_chars > 0 ? ceil((double)r->final_chars / r->tokens_per_step) : 0.0;
    double probe_s = r->probes > 0 ? r->probe_s / r->probes : 0.0;
    double early = r->early_probes ? (double)probe_schedule_left(r->early_probes, step, r->steps, r->eval_every) : 0.0;
    return (r->steps - step) * step_s + evals * (r->eval_batches * forward_s + probe_s) + early * probe_s +
           saves * (r->saves > 0 ? r->save_s / r->saves : 0.0) + final_forwards * forward_s;
}

// "<what> | ETA <eta>", fitted to width (the ETA goes first).
static void task_line(const char *what, double eta, int width, char *line, size_t size) {
    char eta_text[32], fields[2][96];
    format_duration(eta_text, sizeof(eta_text), eta);
    snprintf(fields[0], sizeof(fields[0]), "%s", what);
    snprintf(fields[1], sizeof(fields[1]), "ETA %s", eta_text);
    static const int importance[2] = {0, 1};
    const char *texts[2] = {fields[0], fields[1]};
    progress_line_fit(texts, importance, 2, width, line, size);
}

void progress_report_eval_line(const ProgressReport *r, long step, long done, long total, double seconds, int width,
                               char *line, size_t size) {
    double per_batch = done > 0 ? seconds / done : forward_seconds(r, step);
    char what[96];
    snprintf(what, sizeof(what), "step %ld/%ld | evaluating: %ld/%ld batches", step, r->steps, done, total);
    task_line(what, (total - done) * per_batch + progress_report_eta(r, step), width, line, size);
}

void progress_report_task_line(const char *task, long done, long total, const char *units, double seconds, int width,
                               char *line, size_t size) {
    char what[96];
    snprintf(what, sizeof(what), "%s: %ld/%ld %s", task, done, total, units);
    task_line(what, done > 0 ? (total - done) * seconds / done : 0.0, width, line, size);
}

void progress_report_final_line(long done, long total, double seconds, int width, char *line, size_t size) {
    progress_report_task_line("whole-validation pass", done, total, "characters", seconds, width, line, size);
}

void progress_report_step(ProgressReport *r, double loss, double seconds, double comm_seconds) {
    r->loss_sum += loss;
    r->loss_count++;
    r->ms_sum += 1000.0 * seconds;
    r->train_s += seconds;
    r->comm_s += comm_seconds;
}

void progress_report_line(const ProgressReport *r, long step, double val_loss, float lr, double elapsed_s, int width,
                          char *line, size_t size) {
    double ms_per_step = r->ms_sum / r->loss_count;
    double tok_per_s = r->tokens_per_step / (ms_per_step / 1000.0);
    double eta = progress_report_eta(r, step);
    char elapsed_text[32], eta_text[32];
    format_duration(elapsed_text, sizeof(elapsed_text), elapsed_s);
    format_duration(eta_text, sizeof(eta_text), eta);
    char fields[8][64];
    snprintf(fields[0], 64, "step %ld/%ld", step, r->steps);
    snprintf(fields[1], 64, "loss %.4f (mean of %d)", r->loss_sum / r->loss_count, r->loss_count);
    if (isnan(val_loss)) snprintf(fields[2], 64, "val -");
    else snprintf(fields[2], 64, "val %.4f", val_loss);
    snprintf(fields[3], 64, "lr %.2e", lr);
    snprintf(fields[4], 64, "%.1f ms/step", ms_per_step);
    snprintf(fields[5], 64, "%.0f tok/s", tok_per_s);
    snprintf(fields[6], 64, "%s elapsed", elapsed_text);
    snprintf(fields[7], 64, "ETA %s", eta_text);
    // dropped first when the line does not fit: elapsed, ms/step, lr, tok/s, val, ETA
    static const int importance[8] = {0, 1, 3, 5, 6, 4, 7, 2};
    const char *field_texts[8];
    for (int i = 0; i < 8; i++) field_texts[i] = fields[i];
    progress_line_fit(field_texts, importance, 8, width, line, size);
}

double progress_report_close(ProgressReport *r) {
    double mean = r->loss_sum / r->loss_count;
    r->report_loss = mean;
    r->report_count = r->loss_count;
    r->loss_sum = r->ms_sum = 0.0;
    r->loss_count = 0;
    return mean;
}

void progress_report_summary(const ProgressReport *r, long step, double wall_s, double val_loss, double best_val_loss,
                             int processes, char *text, size_t size) {
    long steps_run = step - r->start_step;
    size_t used = (size_t)snprintf(text, size,
                                   "done: %ld steps in %.1f s: %.1f s training at %.0f tok/s, %.1f s evaluating "
                                   "and saving", steps_run, wall_s, r->train_s,
                                   steps_run * (double)r->tokens_per_step / (r->train_s > 0 ? r->train_s : 1),
                                   wall_s - r->train_s);
    if (used < size && r->report_count > 0)
        used += (size_t)snprintf(text + used, size - used, "; final train loss %.4f (mean of the last %d steps)",
                                 r->report_loss, r->report_count);
    if (used < size && isfinite(best_val_loss))
        used += (size_t)snprintf(text + used, size - used, ", val loss %.4f, best val loss %.4f", val_loss,
                                 best_val_loss);
    if (used < size && processes > 1)
        snprintf(text + used, size - used,
                 "\ncommunication: %.2f ms/step in the steps' collectives over %d processes (waiting included)",
                 1000.0 * r->comm_s / (steps_run > 0 ? steps_run : 1), processes);
}

// ----------------------------------------------------------------------------
// on the terminal

void pass_line_show(void *context, long done, long total) {
    PassLine *p = context;
    double now = now_seconds();
    if (done < total && now - p->drawn < 0.2) return;
    p->drawn = now;
    char line[300];
    int width = terminal_width(STDOUT_FILENO);
    if (strcmp(p->what, "evaluation") == 0)
        progress_report_eval_line(p->report, p->step, done, total, now - p->start, width, line, sizeof(line));
    else
        progress_report_final_line(done, total, now - p->start, width, line, sizeof(line));
    printf("\r\033[K%s", line);
    p->flush();
}
