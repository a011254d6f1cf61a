#include "schedule.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// ----------------------------------------------------------------------------
// the learning-rate schedule

float learning_rate(const TrainOptions *o, long step) {
    long from = o->schedule_start;
    if (step - from < o->warmup) return o->lr * (float)(step - from + 1) / (float)(o->warmup + 1);
    if (step >= o->decay_steps) return o->min_lr;
    double ratio = (double)(step - from - o->warmup) / (double)(o->decay_steps - from - o->warmup);
    double coeff = 0.5 * (1.0 + cos(M_PI * ratio));
    return (float)(o->min_lr + coeff * (o->lr - o->min_lr));
}

// Adds the phase of step indices [begin, end) ∩ [from, to) (as steps begin + 1 ... end) when not empty.
static void add_phase(const TrainOptions *o, LrPhaseKind kind, long begin, long end, long from, long to,
                      LrPhase *phases, int *n) {
    if (begin < from) begin = from;
    if (end > to) end = to;
    if (begin >= end) return;
    phases[(*n)++] = (LrPhase){kind, begin + 1, end, learning_rate(o, begin), learning_rate(o, end - 1)};
}

int schedule_phases(const TrainOptions *o, long from, long to, LrPhase phases[LR_MAX_PHASES]) {
    // learning_rate's three cases as step indices: warm-up [start, start + warmup), then the
    // decay up to decay_steps, then min_lr (from the later of the two ends)
    long warm_end = o->schedule_start + o->warmup;
    long flat_start = o->decay_steps > warm_end ? o->decay_steps : warm_end;
    int n = 0;
    add_phase(o, LR_WARMUP, o->schedule_start, warm_end, from, to, phases, &n);
    add_phase(o, LR_DECAY, warm_end, o->decay_steps, from, to, phases, &n);
    add_phase(o, LR_FLAT, flat_start, to, from, to, phases, &n);
    return n;
}

// Appends to text at *used.
#define PUT(...)                                                                                   \
    do {                                                                                           \
        if (*used < size) *used += (size_t)snprintf(text + *used, size - *used, __VA_ARGS__);      \
    } while (0)

static void put_steps(char *text, size_t size, size_t *used, const LrPhase *p) {
    if (p->first == p->last) PUT("step %ld", p->first);
    else PUT("steps %ld-%ld", p->first, p->last);
}

void schedule_describe(const TrainOptions *o, long from, long to, char *text, size_t size) {
    LrPhase phases[LR_MAX_PHASES];
    int n = schedule_phases(o, from, to, phases);
    size_t zero = 0, *used = &zero;
    text[0] = '\0';
    if (n == 0) {
        PUT("no steps to take");
        return;
    }
    long warm_end = o->schedule_start + o->warmup;
    for (int i = 0; i < n; i++) {
        const LrPhase *p = &phases[i];
        PUT("%s", i ? ", then " : "");
        put_steps(text, size, used, p);
        if (p->kind == LR_WARMUP && p->first == p->last) {
            PUT(" warms up at %.3g", p->lr_first);  // the warning (schedule_warning) says what it misses
        } else if (p->kind == LR_WARMUP) {
            PUT(" warm up from %.3g to %.3g", p->lr_first, p->lr_last);
        } else if (p->kind == LR_DECAY && o->min_lr == o->lr) {
            PUT(" constant at %.3g (--min-lr is --lr)", p->lr_first);
        } else if (p->kind == LR_DECAY) {
            if (p->first == p->last) PUT(" decays (cosine) at %.3g", p->lr_first);
            else PUT(" decay (cosine) from %.3g to %.3g", p->lr_first, p->lr_last);
            if (p->last < o->decay_steps)
                PUT(" (--min-lr %g is reached at step %ld, after this run)", o->min_lr, o->decay_steps + 1);
        } else {
            PUT(" at --min-lr %g", o->min_lr);
            if (o->decay_steps < warm_end && p->first == warm_end + 1 && o->warmup > 0)
                PUT(" (--decay-steps %ld ends inside the warm-up, so the learning rate drops to --min-lr when the "
                    "warm-up ends)", o->decay_steps);
            else if (i == 0 && p->first > 1 && from >= o->decay_steps)
                PUT(" (the decay ended at step %ld: give --decay-steps, and --warmup, for a new schedule)",
                    o->decay_steps);
        }
    }
}

int schedule_warning(const TrainOptions *o, long from, long to, char *text, size_t size) {
    text[0] = '\0';
    long warm_end = o->schedule_start + o->warmup;
    if (to <= from || to > warm_end) return 0;
    snprintf(text, size, "warning: this run's last step, %ld, is inside its %ld-step warm-up: the learning rate only "
             "rises, to %.3g, and never decays; give a --warmup shorter than the run (say %ld) or more --steps", to,
             o->warmup, learning_rate(o, to - 1), (to - from) / 10);
    return 1;
}

long schedule_fine_tune_warmup(long steps) {
    long tenth = steps / 10;
    return tenth < LR_DEFAULT_WARMUP ? tenth : LR_DEFAULT_WARMUP;
}

// ----------------------------------------------------------------------------
// the evaluations and saves

long events_left(long step, long last_step, long every) {
    if (every <= 0 || step >= last_step) return 0;
    return last_step / every - step / every + (last_step % every != 0);
}

int evaluation_warning(long step, long last_step, long eval_every, long eval_batches, int B, int T, long final_chars,
                       char *text, size_t size) {
    double tokens = (double)B * T, train = 3.0 * tokens * (double)(last_step - step);
    long evaluations = events_left(step, last_step, eval_every);
    double evaluating = (double)evaluations * (double)eval_batches * tokens + (double)final_chars;
    text[0] = '\0';
    if (last_step <= step || evaluating <= train) return 0;
    int used = snprintf(text, size, "warning: evaluating will run about %.0f times as much of the model as training "
                        "(%ld step%s): %ld evaluation%s of %ld batch%s", evaluating / train, last_step - step,
                        last_step - step == 1 ? "" : "s", evaluations, evaluations == 1 ? "" : "s", eval_batches,
                        eval_batches == 1 ? "" : "es");
    if (final_chars > 0 && used > 0 && (size_t)used < size)
        used += snprintf(text + used, size - used, " and a pass over %ld characters of the validation split",
                         final_chars);
    if (used > 0 && (size_t)used < size)
        snprintf(text + used, size - used, "; fewer --eval-batches, a larger --eval-every or --final-val-chars 0 "
                 "shorten it");
    return 1;
}

// ----------------------------------------------------------------------------
// when the probe runs

// The default: 1, 2 and 5 times each power of ten from 10 on, below eval_every.
static void default_schedule(ProbeSchedule *s, long eval_every) {
    s->n = 0;
    for (long decade = 10; decade < eval_every && s->n + 3 <= PROBE_MAX_EARLY; decade *= 10)
        for (int k = 0; k < 3; k++) {
            long step = decade * (k == 0 ? 1 : k == 1 ? 2 : 5);
            if (step < eval_every) s->steps[s->n++] = step;
        }
}

int probe_schedule_make(ProbeSchedule *s, const char *text, long eval_every, long last_step, char err[ERR_LEN]) {
    s->n = 0;
    if (!text || !text[0]) {
        default_schedule(s, eval_every);
        return 0;
    }
    if (strcmp(text, "none") == 0) return 0;
    for (const char *item = text;; item++) {
        size_t len = strcspn(item, ",");
        char *end = (char *)item;
        long step = item[0] >= '0' && item[0] <= '9' ? strtol(item, &end, 10) : -1;
        if (step < 1 || end != item + len || len > 18) {
            snprintf(err, ERR_LEN, "--probe-steps %s: '%.*s' is not a step: give steps from 1 on separated by "
                     "commas (e.g. 10,20,50,100), or none", text, (int)(len < 40 ? len : 40), item);
            return -2;
        }
        if (s->n == PROBE_MAX_EARLY) {
            snprintf(err, ERR_LEN, "--probe-steps: more than %d steps (a probe costs time and room in probe.bin)",
                     PROBE_MAX_EARLY);
            return -2;
        }
        if (s->n > 0 && step <= s->steps[s->n - 1]) {
            snprintf(err, ERR_LEN, "--probe-steps %s: step %ld after %ld: give them in increasing order", text, step,
                     s->steps[s->n - 1]);
            return -2;
        }
        if (step > last_step) {
            snprintf(err, ERR_LEN, "--probe-steps %s: step %ld is after the run's last, %ld (--steps)", text, step,
                     last_step);
            return -2;
        }
        s->steps[s->n++] = step;
        item += len;
        if (!*item) return 0;
    }
}

int probe_schedule_has(const ProbeSchedule *s, long step) {
    for (int i = 0; i < s->n; i++)
        if (s->steps[i] == step) return 1;
    return 0;
}

long probe_schedule_left(const ProbeSchedule *s, long step, long last_step, long eval_every) {
    long n = 0;
    for (int i = 0; i < s->n; i++)
        n += s->steps[i] > step && s->steps[i] < last_step && s->steps[i] % eval_every != 0;
    return n;
}

void probe_schedule_describe(const ProbeSchedule *s, int from_start, long step, long eval_every, char *text,
                             size_t size) {
    size_t used = (size_t)snprintf(text, size, "%s", from_start ? "0" : "");
    for (int i = 0; i < s->n && used < size; i++)
        if (s->steps[i] > step) used += (size_t)snprintf(text + used, size - used, "%s%ld", used ? ", " : "", s->steps[i]);
    if (used < size) used += (size_t)snprintf(text + used, size - used, "%severy %ld", used ? " and " : "", eval_every);
    if (step > 0 && used < size) snprintf(text + used, size - used, " from step %ld", (step / eval_every + 1) * eval_every);
}
