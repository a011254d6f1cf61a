// The learning-rate schedule's description against the learning rates themselves: a table of
// options (new runs, short runs, resumes on the saved schedule and on a new one, fine-tunes,
// a decay that ends inside the warm-up), each checked step by step: the phases described
// cover the run's steps, each does what it says (a warm-up rises, a decay falls, --min-lr is
// flat), their figures are the rates of their first and last steps, and the warning comes
// exactly when the run ends inside its warm-up. tests/test_train_runs.c checks the same
// descriptions against the rates ./train logs.
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../training/schedule.h"
#include "test.h"

typedef struct {
    const char *what;
    long warmup, decay_steps, schedule_start, from, to;
    const char *words[3];  // in the description (NULL: no more)
    int warned;
} ScheduleCase;

static const ScheduleCase cases[] = {
    {"the default run", 100, 2000, 0, 0, 2000, {"steps 1-100 warm up", "steps 101-2000 decay (cosine)", NULL}, 0},
    {"--steps 60 inside the warm-up", 100, 60, 0, 0, 60,
     {"steps 1-60 warm up from 9.9e-06 to 0.000594", NULL}, 1},
    {"its resume to 100, on the saved schedule", 100, 60, 0, 60, 100,
     {"steps 61-100 warm up from 0.000604 to 0.00099", NULL}, 1},
    {"a finished run resumed to 3000", 100, 2000, 0, 2000, 3000,
     {"steps 2001-3000 at --min-lr 0.0001", "the decay ended at step 2000", NULL}, 0},
    {"a resume halfway", 100, 2000, 0, 1000, 2000, {"steps 1001-2000 decay (cosine) from 0.000587", NULL}, 0},
    {"a resume inside the warm-up", 100, 2000, 0, 50, 2000, {"steps 51-100 warm up", "steps 101-2000 decay", NULL}, 0},
    {"a new schedule on resume", 50, 3000, 2000, 2000, 3000,
     {"steps 2001-2050 warm up", "steps 2051-3000 decay (cosine) from 0.001 to 0.0001", NULL}, 0},
    {"a new schedule without warm-up", 0, 3000, 2000, 2000, 3000, {"steps 2001-3000 decay (cosine) from 0.001", NULL},
     0},
    {"a resume stopped before the new decay ends", 0, 3000, 2000, 2000, 2500,
     {"(--min-lr 0.0001 is reached at step 3001, after this run)", NULL}, 0},
    {"--decay-steps inside the warm-up", 100, 50, 0, 0, 200,
     {"steps 1-100 warm up", "steps 101-200 at --min-lr", "ends inside the warm-up"}, 0},
    {"a fine-tune's default warm-up", 10, 100, 0, 0, 100, {"steps 1-10 warm up", "steps 11-100 decay", NULL}, 0},
    {"a fine-tune of 20 steps", 2, 20, 0, 0, 20, {"steps 1-2 warm up", "steps 3-20 decay", NULL}, 0},
    {"no warm-up", 0, 100, 0, 0, 100, {"steps 1-100 decay (cosine) from 0.001", NULL}, 0},
    {"steps past the decay", 10, 50, 0, 0, 100, {"steps 11-50 decay", "steps 51-100 at --min-lr", NULL}, 0},
    {"one step", 100, 1, 0, 0, 1, {"step 1 warms up at 9.9e-06", NULL}, 1},
    {"a warm-up as long as the run", 60, 60, 0, 0, 60, {"steps 1-60 warm up", NULL}, 1},
};

static int same_float(float a, float b) { return a == b; }

TEST(schedule_described_phases_match_every_rate) {
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        const ScheduleCase *k = &cases[c];
        TrainOptions o = {0};
        o.lr = 1e-3f, o.min_lr = 1e-4f, o.warmup = k->warmup, o.decay_steps = k->decay_steps;
        o.schedule_start = k->schedule_start;
        LrPhase phases[LR_MAX_PHASES];
        int n = schedule_phases(&o, k->from, k->to, phases);
        // the phases cover steps from + 1 .. to, in order
        long next = k->from + 1;
        for (int i = 0; i < n; i++) {
            CHECK(phases[i].first == next && phases[i].last >= phases[i].first, "%s: phase %d is steps %ld-%ld, "
                  "want it to start at %ld", k->what, i, phases[i].first, phases[i].last, next);
            next = phases[i].last + 1;
        }
        CHECK(n > 0 && next == k->to + 1, "%s: %d phases end at step %ld, not %ld", k->what, n, next - 1, k->to);
        // each does what it says, step by step, and its figures are its ends' rates
        for (int i = 0; i < n; i++) {
            const LrPhase *p = &phases[i];
            int ok = 1;
            float previous = NAN;
            for (long step = p->first; step <= p->last; step++) {
                float lr = learning_rate(&o, step - 1);
                if (p->kind == LR_WARMUP) ok &= isnan(previous) || lr > previous;
                if (p->kind == LR_DECAY) ok &= (isnan(previous) || lr <= previous) && lr >= o.min_lr && lr <= o.lr;
                if (p->kind == LR_FLAT) ok &= lr == o.min_lr;
                previous = lr;
            }
            CHECK(ok, "%s: phase %d (kind %d, steps %ld-%ld) does not do what it says", k->what, i, p->kind, p->first,
                  p->last);
            CHECK(same_float(p->lr_first, learning_rate(&o, p->first - 1)) &&
                      same_float(p->lr_last, learning_rate(&o, p->last - 1)), "%s: phase %d's figures", k->what, i);
        }
        char text[1024], warning[512];
        schedule_describe(&o, k->from, k->to, text, sizeof(text));
        for (int w = 0; w < 3 && k->words[w]; w++)
            CHECK(strstr(text, k->words[w]) != NULL, "%s: the description lacks \"%s\": %s", k->what, k->words[w],
                  text);
        // every phase's figures are in the text as the run prints them
        for (int i = 0; i < n; i++) {
            char figure[32];
            snprintf(figure, sizeof(figure), phases[i].kind == LR_FLAT ? "%g" : "%.3g",
                     phases[i].kind == LR_FLAT ? o.min_lr : phases[i].lr_first);
            CHECK(strstr(text, figure) != NULL, "%s: phase %d's rate %s is not in: %s", k->what, i, figure, text);
        }
        int warned = schedule_warning(&o, k->from, k->to, warning, sizeof(warning));
        CHECK(warned == k->warned, "%s: warned %d, want %d (%s)", k->what, warned, k->warned, warning);
        if (warned) {
            char last[32];
            snprintf(last, sizeof(last), "to %.3g", learning_rate(&o, k->to - 1));
            CHECK(strstr(warning, last) && strstr(warning, "never decays"), "%s: the warning: %s", k->what, warning);
        }
    }
}

// --min-lr equal to --lr (a task's recipe, training/options.c): after the warm-up the rate
// stays put, and the description says so rather than "decay from 0.001 to 0.001".
TEST(schedule_constant_when_min_lr_is_lr) {
    TrainOptions o = {0};
    o.lr = o.min_lr = 1e-3f, o.warmup = 100, o.decay_steps = 2000;
    int constant = 1;
    for (long step = 100; step < 2000; step++) constant &= learning_rate(&o, step) == 1e-3f;
    CHECK(constant, "the rate after the warm-up is not --lr");
    char text[1024];
    schedule_describe(&o, 0, 2000, text, sizeof(text));
    CHECK(strstr(text, "steps 101-2000 constant at 0.001") && !strstr(text, "cosine"), "the description: %s", text);
}

TEST(schedule_fine_tune_warmup_fits_the_run) {
    CHECK(schedule_fine_tune_warmup(100) == 10 && schedule_fine_tune_warmup(5) == 0 &&
              schedule_fine_tune_warmup(2000) == 100 && schedule_fine_tune_warmup(999) == 99,
          "a tenth of the steps, at most 100");
    // a fine-tune with its default warm-up passes it, whatever its length
    for (long steps = 1; steps <= 5000; steps = steps * 3 + 1) {
        TrainOptions o = {0};
        o.lr = 3e-4f, o.min_lr = 1e-4f, o.warmup = schedule_fine_tune_warmup(steps), o.decay_steps = steps;
        char warning[512];
        CHECK(!schedule_warning(&o, 0, steps, warning, sizeof(warning)) || o.warmup == 0,
              "a fine-tune of %ld steps: %s", steps, warning);
    }
}

// ./train warns when its evaluations will run more of the model than its training: lesson 6's
// measuring run of 20 steps with the default evaluation (200 batches and the whole split), not
// the default run, nor that run with 2 batches and no pass, nor a resume with no step left.
TEST(schedule_evaluation_warning) {
    char text[512];
    CHECK(!evaluation_warning(0, 2000, 250, 200, 12, 64, 111539, text, sizeof(text)), "the default run: '%s'", text);
    CHECK(evaluation_warning(0, 20, 250, 200, 8, 256, 10212, text, sizeof(text)) &&
              strstr(text, "warning: evaluating will run about 3 times as much of the model as training (20 steps): "
                           "1 evaluation of 200 batches and a pass over 10212 characters of the validation split; ") &&
              strstr(text, "--eval-batches") && strstr(text, "--final-val-chars 0"),
          "lesson 6's measuring run: '%s'", text);
    CHECK(!evaluation_warning(0, 20, 250, 2, 8, 256, 0, text, sizeof(text)), "2 batches, no pass: '%s'", text);
    CHECK(!evaluation_warning(2000, 2000, 250, 200, 12, 64, 111539, text, sizeof(text)), "no step left: '%s'", text);
    CHECK(evaluation_warning(10, 12, 1, 4, 2, 8, 0, text, sizeof(text)) && strstr(text, "2 evaluations of 4 batches;"),
          "every step evaluated: '%s'", text);
}
