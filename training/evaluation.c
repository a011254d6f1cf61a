#include "evaluation.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../common/clock.h"
#include "../common/platform.h"
#include "../data/task.h"
#include "../dist/dist.h"
#include "run.h"
#include "stop_signals.h"

// ----------------------------------------------------------------------------
// the periodic evaluation

// Of the `rows` sequences of the last forward, windows k0, k0 + 1, ... of the K in ds's
// evaluation set: adds to counts[0] the task's scored targets the model predicts, to counts[1]
// how many there are (data/task.h).
static void count_correct(const GPT *model, const Dataset *ds, uint64_t k0, uint64_t K, int rows, int T,
                          const int *targets, double counts[2]) {
    int V = model->config.vocab_size;
    for (int r = 0; r < rows; r++) {
        size_t start = dataset_val_start(ds, k0 + (uint64_t)r, K, T);
        task_count_correct(model->acts.logits + (size_t)r * T * V, V, targets + (size_t)r * T,
                           ds->val_scored + start + 1, T, &counts[0], &counts[1]);
    }
}

double data_parallel_evaluate(DataParallel *dp, GPT *model, const Dataset *ds, long num_batches,
                              const PassProgress *progress, int *inputs, int *targets, double *accuracy) {
    size_t first, end, most, unused;
    dist_share((size_t)num_batches, dist_rank(), &first, &end);
    dist_share((size_t)num_batches, 0, &unused, &most);  // rank 0's share is the largest
    int B = dp->B, T = dp->T, rows = dp->rows;
    uint64_t K = (uint64_t)num_batches * (uint64_t)B;
    double sums[3] = {0.0, 0.0, 0.0};  // the batches' mean losses; correct and scored targets
    for (size_t i = 0; i < most; i++) {
        if (dist_agree(0, stop_signals_received()).signal)  // abandoned by every process together
            return NAN;
        pass_progress(progress, (long)(i * (size_t)num_batches / most), num_batches);
        size_t b = first + i;
        if (b >= end) continue;
        dataset_val_batch(ds, (int)b, (int)num_batches, B, T, inputs, targets);
        double batch_sum = 0.0;  // the activations hold `rows` sequences at a time
        for (int r = 0; r < B; r += rows) {
            gpt_forward(model, inputs + (size_t)r * T, targets + (size_t)r * T, rows, T, NULL);
            batch_sum += model->loss_sum;
            if (ds->val_scored)
                count_correct(model, ds, b * (uint64_t)B + (uint64_t)r, K, rows, T, targets + (size_t)r * T, sums + 1);
        }
        // one forward: the batch's mean as one process always took it
        sums[0] += rows == B ? model->mean_loss : batch_sum / ((double)B * T);
    }
    dist_sum_doubles(sums, 3);
    pass_progress(progress, num_batches, num_batches);
    *accuracy = ds->val_scored && sums[2] > 0 ? sums[1] / sums[2] : NAN;
    return sums[0] / num_batches;
}

// ----------------------------------------------------------------------------
// the whole-validation pass

long validation_pass_chars(size_t val_len, long max_chars) {
    long all = (long)val_len - 1;
    return max_chars >= 0 && max_chars < all ? max_chars : all;
}

double validation_pass(GPT *model, const Dataset *ds, long max_chars, int B, int T, int part, int parts,
                       const PassProgress *progress, int *inputs, int *targets, long *count) {
    long scored = validation_pass_chars(ds->val_len, max_chars);  // window k scores characters kT + 1 .. kT + t
    double sum = 0.0;
    for (long first = 0, forward = 0; first < scored; forward++) {
        // up to B windows of T, or the last, shorter one alone
        int t = scored - first < T ? (int)(scored - first) : T;
        long fit = (scored - first) / t;
        int b = fit < B ? (int)fit : B;
        if (forward % parts != part) {
            first += (long)b * t;
            continue;
        }
        if (stop_signals_received()) {
            sum = NAN;
            break;
        }
        pass_progress(progress, first, scored);
        for (int k = 0; k < b; k++) {
            const int *window = ds->val + first + (long)k * t;
            memcpy(inputs + (size_t)k * t, window, (size_t)t * sizeof(int));
            memcpy(targets + (size_t)k * t, window + 1, (size_t)t * sizeof(int));
        }
        gpt_forward(model, inputs, targets, b, t, NULL);
        for (long i = 0; i < (long)b * t; i++) sum += model->acts.losses[i];
        first += (long)b * t;
    }
    if (!isnan(sum)) pass_progress(progress, scored, scored);
    *count = scored;
    return sum / scored;
}

// ----------------------------------------------------------------------------
// the run's evaluations

int evaluate(Run *r, int last, int *abandoned, const char **best) {
    TrainState *s = &r->state;
    *abandoned = 0;
    if (r->ds.val_len == 0 || (s->step % r->o.eval_every != 0 && !last)) return 0;
    PassLine shown = {&r->report, s->step, "evaluation", now_seconds(), 0.0, r->flush_progress};
    PassProgress progress = {pass_line_show, &shown};
    double val_loss = data_parallel_evaluate(&r->dp, &r->model, &r->ds, r->o.eval_batches, r->tty ? &progress : NULL,
                                             r->inputs, r->targets, &r->accuracy);
    progress_report_evaluated(&r->report, now_seconds() - shown.start);
    if (isnan(val_loss)) {
        *abandoned = 1;
        printf("%sevaluation at step %ld abandoned\n", r->tty ? "\n" : "", s->step);
        return 0;
    }
    s->last_val_loss = val_loss;
    if (s->last_val_loss < s->best_val_loss) {
        s->best_val_loss = s->last_val_loss;
        *best = r->paths.best;
    }
    return 1;
}

int whole_validation(Run *r) {
    long chars = validation_pass_chars(r->ds.val_len, r->o.final_val_chars);
    r->flush_progress();  // what came before is out, whatever the pass does
    if (r->ds.val_len > 0 && chars == 0)
        printf("whole-validation pass skipped (--final-val-chars 0; ./generate %s --score FILE --stride %d scores a "
               "text)\n", r->paths.ckpt, r->o.block_size);
    if (r->ds.val_len == 0 || chars == 0) return 0;
    long scored;
    int T = r->o.block_size;
    PassLine shown = {&r->report, r->state.step, "final", now_seconds(), 0.0, r->flush_progress};
    PassProgress progress = {pass_line_show, &shown};
    double loss = validation_pass(&r->model, &r->ds, r->o.final_val_chars, r->dp.rows, T, dist_rank(), dist_size(),
                                  r->tty ? &progress : NULL, r->inputs, r->targets, &scored);
    if (r->tty) printf("\r\033[K");
    int stop, status = stop_signals_agree(&stop);  // a stop signal ends the pass on every process
    if (status != 0) return status;
    if (stop) {
        printf("stopped by %s during the whole-validation pass (%s was saved at step %ld before it)\n",
               platform_signal_name(stop), r->paths.ckpt, r->state.step);
        return 128 + stop;
    }
    dist_sum_doubles(&loss, 1);
    long all = (long)r->ds.val_len - 1;
    if (scored < all)
        printf("validation split: loss %.6f over its first %ld of %ld characters (--final-val-chars; all scores the "
               "whole split), in consecutive windows of %d (as ./generate --score --stride %d gives it)\n", loss,
               scored, all, T, T);
    else
        printf("whole validation split: loss %.6f over %ld characters, in consecutive windows of %d (as ./generate "
               "--score --stride %d gives it)\n", loss, scored, T, T);
    r->flush_progress();
    return 0;
}
