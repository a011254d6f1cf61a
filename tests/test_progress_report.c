// Tests of the ETA: the steps left at the mean step's time, plus the evaluations, saves and
// whole-validation pass still to come, each at what it took so far (or, before the first
// evaluation, a forward at a third of a step); and the line an evaluation shows while it runs.
#include <math.h>
#include <string.h>

#include "../common/clock.h"
#include "../training/progress.h"
#include "test.h"

// A run of `steps` steps of 64 tokens, from step 0, evaluating 20 batches every 50 steps
// and saving every 25, with a final pass over final_chars characters.
static ProgressReport planned(long steps, long eval_batches, long final_chars) {
    ProgressReport r;
    progress_report_init(&r, 0, steps, 64);
    progress_report_plan(&r, 50, eval_batches, 25, final_chars);
    return r;
}

TEST(progress_report_eta_counts_evaluations_saves_and_the_final_pass) {
    static const struct {
        const char *what;
        long steps, step, eval_batches, final_chars;
        double train_s, eval_s, save_s;  // eval_s for one evaluation, save_s for one save (0: none yet)
        double eta;
    } cases[] = {
        // 90 steps at 1 s; evaluations at 50 and 100, 20 forwards each at a third of a step
        {"before any evaluation", 100, 10, 20, 0, 10.0, 0.0, 0.0, 90.0 + 2 * 20 / 3.0},
        // 40 steps; one evaluation (100) of 20 forwards at 0.2 s; saves at 75 and 100 at 2 s;
        // the final pass's ceil(1000 / 64) = 16 forwards at 0.2 s
        {"after an evaluation and a save", 100, 60, 20, 1000, 60.0, 4.0, 2.0, 40.0 + 4.0 + 4.0 + 3.2},
        {"at the last step: the final pass alone", 100, 100, 20, 1000, 100.0, 4.0, 2.0, 3.2},
        // evaluations at 50, 100 and the last, 105; --eval-batches 0 would make none
        {"a last step off the evaluations' beat", 105, 10, 20, 0, 10.0, 0.0, 0.0, 95.0 + 3 * 20 / 3.0},
        {"no evaluations", 105, 10, 0, 0, 10.0, 0.0, 0.0, 95.0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        ProgressReport r = planned(cases[i].steps, cases[i].eval_batches, cases[i].final_chars);
        r.train_s = cases[i].train_s;
        if (cases[i].eval_s > 0) progress_report_evaluated(&r, cases[i].eval_s);
        if (cases[i].save_s > 0) progress_report_saved(&r, cases[i].save_s);
        double eta = progress_report_eta(&r, cases[i].step);
        CHECK(fabs(eta - cases[i].eta) < 1e-9, "%s: ETA %.6f s, want %.6f", cases[i].what, eta, cases[i].eta);
        // the timeline's probe, 1.5 s at an evaluation, at each evaluation left
        progress_report_probed(&r, 1.0), progress_report_probed(&r, 2.0);
        long evals_left = cases[i].eval_batches ? (cases[i].steps - 1) / 50 - cases[i].step / 50 + 1 : 0;
        double probed = progress_report_eta(&r, cases[i].step);
        CHECK(fabs(probed - (cases[i].eta + 1.5 * evals_left)) < 1e-9, "%s with probes: ETA %.6f s, want %.6f",
              cases[i].what, probed, cases[i].eta + 1.5 * evals_left);
    }
}

// The timeline's early probes (training/schedule.h) count too, at the mean probe's time: those after
// the step, up to the last, that no evaluation makes.
TEST(progress_report_eta_counts_the_early_probes) {
    ProgressReport r = planned(300, 20, 0);
    r.train_s = 10.0;
    progress_report_probed(&r, 3.0);
    double without = progress_report_eta(&r, 10);
    char err[ERR_LEN];
    ProbeSchedule schedule;
    if (!CHECK(probe_schedule_make(&schedule, "5,20,50,60,150,300", 50, 300, err) == 0, "%s", err)) return;
    r.early_probes = &schedule;
    // after step 10: 20 and 60 (50, 150 and 300 are evaluations', 5 is past)
    double with = progress_report_eta(&r, 10);
    CHECK(fabs(with - without - 2 * 3.0) < 1e-9, "ETA %.6f s with early probes, %.6f without: want 6 s more", with,
          without);
}

TEST(progress_report_evaluation_line_shows_the_evaluation_and_the_rest) {
    ProgressReport r = planned(100, 20, 0);
    r.train_s = 10.0;
    char line[256], eta[32];
    // 5 of 20 batches in 1 s: 15 more at 0.2 s, then the rest of the run (step 10: 103.3 s)
    progress_report_eval_line(&r, 10, 5, 20, 1.0, 200, line, sizeof(line));
    format_duration(eta, sizeof(eta), 3.0 + progress_report_eta(&r, 10));
    CHECK(strstr(line, "step 10/100 | evaluating: 5/20 batches") && strstr(line, eta), "'%s' (want ETA %s)", line,
          eta);
    // a narrow terminal drops the ETA first and keeps the start of the rest, in width - 1 columns
    progress_report_eval_line(&r, 10, 5, 20, 1.0, 30, line, sizeof(line));
    CHECK(!strstr(line, "ETA") && strncmp(line, "step 10/100 | evaluating", 24) == 0 && strlen(line) <= 29,
          "30 columns: '%s'", line);
}
