#include "progress_report.h"

#include <math.h>
#include <stdio.h>

#include "progress_line.h"

void progress_report_init(ProgressReport *r, long start_step, long steps, long tokens_per_step) {
    *r = (ProgressReport){.start_step = start_step, .steps = steps, .tokens_per_step = tokens_per_step,
                          .report_loss = NAN};
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
    double eta = (r->steps - step) * r->train_s / (step - r->start_step);
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

void format_duration(char *buf, size_t n, double seconds) {
    if (!isfinite(seconds) || seconds < 0) seconds = 0;
    long t = (long)(seconds + 0.5);
    if (t >= 3600) snprintf(buf, n, "%ldh%02ldm", t / 3600, t / 60 % 60);
    else snprintf(buf, n, "%ldm%02lds", t / 60, t % 60);
}
