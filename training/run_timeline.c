// The run's timeline (training/probe.h), stage by stage: what it probes, decided while the run
// is set up; the untrained model's probe at step 0; the record of each step, before its
// checkpoint; the page redrawn after a report.
#include <math.h>
#include <stdio.h>

#include "../common/clock.h"
#include "../common/platform.h"
#include "../dist/dist.h"
#include "../model/adamw.h"
#include "probe.h"
#include "progress.h"
#include "run.h"
#include "schedule.h"
#include "update_ratios.h"

int set_up_probe(Run *r, char err[ERR_LEN]) {
    const char *resumed_run_id = checkpoint_meta(&r->ck, "train.run_id");
    int rc = run_probe_prepare(&r->probe, &r->o, &r->config, &r->vocab, &r->ds,
                               r->resuming ? (resumed_run_id ? resumed_run_id : "") : NULL, err);
    return rc == 0 ? 0 : rc == -2 ? EXIT_USAGE : EXIT_DATA;
}

void start_timeline(Run *r) {
    if (r->resuming || r->ds.val_len == 0) return;
    char err[ERR_LEN];
    RunProbeStep step = {0, 1, NAN, NAN, NAN, NAN, NAN, NULL};
    double start = now_seconds();
    if (run_probe_step(&r->probe, &step, err) != 0)
        fprintf(stderr, "%s: warning: %s; the timeline stops here (training goes on)\n", program_name(), err);
    if (r->probe.active) progress_report_probed(&r->report, now_seconds() - start);  // for the ETA
    draw_timeline(r);
}

int probe_step(Run *r, int evaluated) {
    float ratios[PROBE_MAX_GROUPS];
    int probed = evaluated || probe_schedule_has(&r->probe.schedule, r->state.step);
    if (probed && (r->dp.zero || dist_rank() == 0)) update_ratios(&r->dp, &r->model, &r->opt, r->lr, ratios);
    const ProgressReport *p = &r->report;
    RunProbeStep step = {r->state.step, probed, (float)(p->loss_sum / p->loss_count),
                         evaluated ? (float)r->state.last_val_loss : NAN, r->lr, r->grad_norm,
                         (float)grad_clipped(r->grad_norm, r->o.grad_clip), probed ? ratios : NULL};
    char err[ERR_LEN];
    double start = now_seconds();
    if (run_probe_step(&r->probe, &step, err) != 0)
        fprintf(stderr, "%s%s: warning: %s; the timeline stops here (training goes on)\n", r->tty ? "\n" : "",
                program_name(), err);
    if (probed && r->probe.active) progress_report_probed(&r->report, now_seconds() - start);  // for the ETA
    return probed;
}

void draw_timeline(Run *r) {
    char err[ERR_LEN];
    if (run_probe_page(&r->probe, &r->losses, r->plot_title, err) != 0)
        fprintf(stderr, "%s%s: warning: %s (training goes on)\n", r->tty ? "\n" : "", program_name(), err);
}
