// What a run says, on standard output (rank 0's; the other processes' goes to /dev/null), and
// the report it keeps: at its start, what it trains and how it starts; at each step, the
// progress line and, when a report is due, a log.csv row and a point of the loss plot (and the
// plots redrawn); at a stop, how to continue; at its end, the summary. The figures and lines
// are training/progress.h's.
#include <inttypes.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <unistd.h>

#include "../common/clock.h"
#include "../common/platform.h"
#include "../data/task.h"
#include "../dist/dist.h"
#include "../kernels/kernels.h"
#include "../viewer/loss_plot.h"
#include "evaluation.h"
#include "probe.h"
#include "progress.h"
#include "run.h"
#include "run_log.h"
#include "schedule.h"

// ----------------------------------------------------------------------------
// the run's start

void say_what_the_run_trains(const Run *r) {
    const TrainOptions *o = &r->o;
    const DataParallel *dp = &r->dp;
    int B = o->batch_size;
    if (o->task[0])
        printf("chargpt: %s, made from seed %" PRIu64 ", vocabulary %d; train %d new sequences a step, val %zu "
               "characters; accuracy counted on %s\n", r->data_name, o->seed, r->vocab.size, B, r->ds.val_len,
               task_scored_part(r->task.task));
    else
        printf("chargpt: %s, %zu characters, vocabulary %d%s; train %zu, val %zu\n", r->data_name, r->corpus.len,
               r->vocab.size, r->vocab.unknown ? " (an unknown token among them)" : "", r->ds.train_len,
               r->ds.val_len);
    char precision[64], precision_note[ERR_LEN];
    precision_describe(o->precision, precision, sizeof(precision));
    int threads = omp_get_max_threads();
    printf("model: %d layers, %d heads of %d, n_embd %d, block %d, %zu parameters; batch %d, %d thread%s; "
           "precision %s\n", o->n_layer, o->n_head, o->head_size, o->n_embd, o->block_size, dp->num_parameters, B,
           threads, threads == 1 ? "" : "s", precision);
    if (kernels_precision_note(o->precision, precision_note, sizeof(precision_note))) printf("%s\n", precision_note);
    if (dist_size() > 1 || o->grad_accum > 1)
        printf("data parallel: %d process%s x %d micro-batch%s of %d sequences%s\n", dist_size(),
               dist_size() == 1 ? "" : "es", o->grad_accum, o->grad_accum == 1 ? "" : "es", dp->rows,
               dp->zero ? "; optimizer state sharded (ZeRO stage 1)" : "");
}

void say_how_the_run_starts(const Run *r) {
    const TrainOptions *o = &r->o;
    long step = r->state.step;
    char schedule[1024], warning[512];
    schedule_describe(o, step, o->steps, schedule, sizeof(schedule));
    if (r->initializing)
        printf("fine-tuning %s's weights from step 0 of %ld: new optimizer state; learning rate: %s\n", o->init_from,
               o->steps, schedule);
    else if (r->resuming)
        printf("resuming %s at step %ld of %ld on %s learning-rate schedule: %s\n", o->resume, step, o->steps,
               r->given.given[OPT_DECAY_STEPS] || r->given.given[OPT_WARMUP] ? "a new" : "the saved", schedule);
    else
        printf("learning rate: %s\n", schedule);
    if (schedule_warning(o, step, o->steps, warning, sizeof(warning))) printf("%s\n", warning);
    long final_chars = r->ds.val_len > 0 ? validation_pass_chars(r->ds.val_len, o->final_val_chars) : 0;
    long eval_batches = r->ds.val_len > 0 ? o->eval_batches : 0;
    if (evaluation_warning(step, o->steps, o->eval_every, eval_batches, o->batch_size, o->block_size, final_chars,
                           warning, sizeof(warning)))
        printf("%s\n", warning);
    char probes[1024];
    run_probe_plan(&r->probe, step, o->steps, o->eval_every, !r->resuming && r->ds.val_len > 0, probes, sizeof(probes));
    if (probes[0]) printf("%s\n", probes);
}

void start_progress(Run *r) {
    r->tty = platform_is_terminal(STDOUT_FILENO) && dist_size() == 1;  // mpirun forwards output: no rewritten line
    progress_report_init(&r->report, r->state.step, r->o.steps, (long)r->o.batch_size * r->o.block_size);
    int have_val = r->ds.val_len > 0;
    progress_report_plan(&r->report, r->o.eval_every, have_val ? r->o.eval_batches : 0, r->o.save_every,
                         have_val ? validation_pass_chars(r->ds.val_len, r->o.final_val_chars) : 0);
    r->report.early_probes = &r->probe.schedule;
    r->run_start = now_seconds(), r->elapsed_before = r->state.elapsed_s;
}

// ----------------------------------------------------------------------------
// each step

// After an evaluation (rank 0): loss.svg redrawn; a failure is only a warning.
static void draw_loss_plot(Run *r) {
    char err[ERR_LEN];
    if (loss_plot_write(r->paths.plot, r->losses.points, r->losses.n, r->plot_title, err) != 0)
        fprintf(stderr, "%s%s: warning: %s (training goes on)\n", r->tty ? "\n" : "", program_name(),
                err);
    else
        r->plot_written = 1;
}

int report_step(Run *r, int due, int evaluated, int probed, char err[ERR_LEN]) {
    const TrainState *s = &r->state;
    if (r->tty || due)
        progress_report_line(&r->report, s->step, s->last_val_loss, r->lr, s->elapsed_s,
                             r->tty ? terminal_width(STDOUT_FILENO) : 100000, r->progress_line,
                             sizeof(r->progress_line));
    if (!due) return 0;
    double grad_norm = r->grad_norm_sum / r->report.loss_count;
    double mean_loss = progress_report_close(&r->report), val_loss = evaluated ? s->last_val_loss : NAN;
    double accuracy = evaluated ? r->accuracy : NAN;
    RunLogRow row = {s->step, mean_loss, val_loss, r->lr, s->tokens_seen, s->elapsed_s, grad_norm, r->clipped_steps,
                     accuracy};
    if (dist_rank() == 0 && run_log_row(&r->log, &row, err) != 0) return EXIT_DATA;
    LossPoint point = {s->step, mean_loss, val_loss, r->lr, grad_norm, r->clipped_steps, accuracy};
    if (loss_history_add(&r->losses, point, err) != 0) return EXIT_DATA;
    r->grad_norm_sum = 0.0, r->clipped_steps = 0;
    if (evaluated && dist_rank() == 0) draw_loss_plot(r);
    if (probed && dist_rank() == 0) draw_timeline(r);
    return 0;
}

void print_report(Run *r, int due, int evaluated) {
    if (r->tty || due)
        printf("%s%s%s", r->tty ? "\r\033[K" : "", r->progress_line, r->tty && !evaluated ? "" : "\n");
    if (evaluated && r->o.task[0])
        printf("  accuracy on %s (val): %.1f%%\n", task_scored_part(r->task.task), 100.0 * r->accuracy);
    if (r->probe.sampled) {  // under the progress
        if (r->tty && !evaluated) printf("\n");
        run_probe_print_sample(&r->probe, stdout);
    }
    if (r->tty || due) r->flush_progress();
}

// ----------------------------------------------------------------------------
// a stop, and the end

int stopped(const Run *r, int signal) {
    printf("%sstopped by %s after step %ld; saved %s (continue with --resume %s)\n", r->tty ? "\n" : "",
           platform_signal_name(signal), r->state.step, r->paths.ckpt, r->paths.ckpt);
    return 128 + signal;
}

void print_summary(const Run *r) {
    const TrainState *s = &r->state;
    double wall = now_seconds() - r->run_start;
    if (r->tty) printf("\n");
    char summary[1024];
    progress_report_summary(&r->report, s->step, wall, s->last_val_loss, s->best_val_loss, dist_size(), summary,
                            sizeof(summary));
    int have_best = access(r->paths.best, F_OK) == 0;
    printf("%s\ncheckpoints: %s%s%s; log: %s%s%s\n", summary, r->paths.ckpt, have_best ? ", " : "",
           have_best ? r->paths.best : "", r->paths.log, r->plot_written ? "; loss plot: " : "",
           r->plot_written ? r->paths.plot : "");
    const RunProbe *p = &r->probe;
    if (p->probes > 0) {
        char cost[160];
        run_probe_describe_cost(p, cost, sizeof(cost));
        printf("timeline: %s (%ld step%s probed in this run in %.2f s, %.1f%% of the run: %s)\n", r->paths.timeline,
               p->probes, p->probes == 1 ? "" : "s", p->seconds, 100.0 * p->seconds / wall, cost);
    }
}
