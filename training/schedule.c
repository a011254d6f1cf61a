#include "schedule.h"

#include <math.h>

float learning_rate(const TrainOptions *o, long step) {
    long from = o->schedule_start;
    if (step - from < o->warmup) return o->lr * (float)(step - from + 1) / (float)(o->warmup + 1);
    if (step >= o->decay_steps) return o->min_lr;
    double ratio = (double)(step - from - o->warmup) / (double)(o->decay_steps - from - o->warmup);
    double coeff = 0.5 * (1.0 + cos(M_PI * ratio));
    return (float)(o->min_lr + coeff * (o->lr - o->min_lr));
}
