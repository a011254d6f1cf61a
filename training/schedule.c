#include "schedule.h"

#include <math.h>
#include <stdio.h>

#define DEFAULT_WARMUP 100  // a new run's --warmup, and at most a fine-tune's

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
    return tenth < DEFAULT_WARMUP ? tenth : DEFAULT_WARMUP;
}
