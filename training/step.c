// The training step of a run: the step's batch, dropout seed and learning rate, the step over
// the processes and micro-batches (training/data_parallel.h), and its figures counted.
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "../common/clock.h"
#include "../common/platform.h"
#include "../data/batch.h"
#include "../data/task.h"
#include "../dist/dist.h"
#include "../model/adamw.h"
#include "../common/rng.h"
#include "data_parallel.h"
#include "progress.h"
#include "run.h"
#include "schedule.h"

int take_step(Run *r) {
    const TrainOptions *o = &r->o;
    TrainState *s = &r->state;
    int B = o->batch_size, T = o->block_size;
    double t0 = now_seconds();
    if (o->task[0]) task_train_batch(r->task.task, o->seed, s->step, B, T, r->inputs, r->targets);
    else dataset_train_batch(&r->ds, &s->rng, B, T, r->inputs, r->targets);
    uint64_t dropout_seed = hash_mix64(o->seed ^ hash_mix64((uint64_t)s->step + 1));
    r->lr = learning_rate(o, s->step);
    double comm_before = dist_comm_seconds();
    double norm = data_parallel_step(&r->dp, &r->model, &r->opt, r->inputs, r->targets, dropout_seed, r->lr,
                                     o->grad_clip);
    double comm_s = dist_comm_seconds() - comm_before;
    if (!isfinite(r->model.mean_loss) || !isfinite(norm)) {
        if (dist_rank() == 0)
            fprintf(stderr, "%s%s: step %ld: %s is not finite; stopping (the last saved checkpoint is unchanged)\n",
                    r->tty ? "\n" : "", program_name(), s->step + 1,
                    isfinite(r->model.mean_loss) ? "the gradient norm" : "the loss");
        return EXIT_NONFINITE;
    }
    s->step++;
    s->tokens_seen += (long long)B * T;
    r->grad_norm = (float)norm;
    r->grad_norm_sum += norm;
    r->clipped_steps += grad_clipped(norm, o->grad_clip);
    progress_report_step(&r->report, r->model.mean_loss, now_seconds() - t0, comm_s);
    s->elapsed_s = r->elapsed_before + now_seconds() - r->run_start;
    return 0;
}
