#include "step.h"

#include <inttypes.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/clock.h"
#include "../common/platform.h"
#include "../common/rng.h"
#include "../dist/dist.h"
#include "../model/train_step.h"
#include "run.h"

// ----------------------------------------------------------------------------
// the learning-rate schedule

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
    return tenth < DEFAULT_WARMUP ? tenth : DEFAULT_WARMUP;
}

// ----------------------------------------------------------------------------
// the data-parallel step

int data_parallel_plan(DataParallel *dp, int B, int T, int grad_accum, int zero, size_t num_parameters,
                       char err[ERR_LEN]) {
    memset(dp, 0, sizeof(*dp));
    int N = dist_size();
    if (B % ((long)N * grad_accum) != 0) {
        if (N > 1)
            snprintf(err, ERR_LEN, "--batch-size %d is not divisible by %d processes x --grad-accum %d", B, N,
                     grad_accum);
        else
            snprintf(err, ERR_LEN, "--batch-size %d is not divisible by --grad-accum %d", B, grad_accum);
        return -1;
    }
    // MPI counts are ints
    if (N > 1 && num_parameters > (size_t)2147483647) {
        snprintf(err, ERR_LEN, "%zu parameters are more than the 2^31 - 1 that one MPI message can carry",
                 num_parameters);
        return -1;
    }
    dp->B = B;
    dp->T = T;
    dp->grad_accum = grad_accum;
    dp->zero = zero && N > 1;
    dp->rows = B / (N * grad_accum);
    dp->num_parameters = num_parameters;
    dp->shard_first = 0;
    dp->shard_n = num_parameters;
    if (dp->zero) {
        size_t end;
        dist_share(num_parameters, dist_rank(), &dp->shard_first, &end);
        dp->shard_n = end - dp->shard_first;
    }
    return 0;
}

int data_parallel_init(DataParallel *dp, const GPT *model, AdamW *opt, float beta1, float beta2, float eps,
                       float weight_decay, char err[ERR_LEN]) {
    return adamw_init_range(opt, model, dp->shard_first, dp->shard_n, beta1, beta2, eps, weight_decay, err);
}

void data_parallel_free(DataParallel *dp) { data_parallel_release_optimizer(dp); }

// Forward and backward of this process's rows of every micro-batch, in one parallel region;
// returns the sum of their token losses.
static double local_gradients(DataParallel *dp, GPT *model, const int *inputs, const int *targets,
                              uint64_t dropout_seed, int threads) {
    const int T = dp->T, micro = dp->B / dp->grad_accum;
    double loss_sum = 0.0;
#pragma omp parallel num_threads(threads)
    {
        gpt_zero_grad(model);
        for (int k = 0; k < dp->grad_accum; k++) {
            int offset = k * micro + dist_rank() * dp->rows;  // the first global row of this part
            const ForwardPass pass = {
                .training = 1, .dropout_seed = dropout_seed, .batch_offset = offset, .batch_rows = dp->B};
            gpt_forward(model, inputs + (size_t)offset * T, targets + (size_t)offset * T, dp->rows, T, &pass);
            gpt_backward(model);
            if (omp_get_thread_num() == 0) loss_sum += model->loss_sum;
        }
    }
    return loss_sum;
}

double data_parallel_step(DataParallel *dp, GPT *model, AdamW *opt, const int *inputs, const int *targets,
                          uint64_t dropout_seed, float lr, float max_norm) {
    if (dist_size() == 1 && dp->grad_accum == 1)  // the whole batch in one pass: as it always was
        return train_step(model, opt, inputs, targets, dp->B, dp->T, dropout_seed, lr, max_norm);

    size_t P = model->num_parameters;
    int threads = tuner_start(&dp->tuner, model, (long)dp->rows * dp->T);
    double loss_sum = local_gradients(dp, model, inputs, targets, dropout_seed, threads);
    tuner_stop(&dp->tuner, 1.0);
    dist_sum_doubles(&loss_sum, 1);
    model->mean_loss = (float)(loss_sum / ((double)dp->B * dp->T));

    double norm;
    float *grads = model->grads_memory, *params = model->params_memory;
    if (dp->zero) {
        dist_reduce_scatter_floats(grads, P);
        grads += dp->shard_first;
        params += dp->shard_first;
        double sum_of_squares = grad_sum_of_squares(grads, dp->shard_n);
        dist_sum_doubles(&sum_of_squares, 1);
        norm = sqrt(sum_of_squares);
    } else {
        dist_sum_floats(grads, P);
        norm = grad_global_norm(grads, P);
    }
    if (!isfinite(model->mean_loss) || !isfinite(norm)) return norm;
    grad_clip(grads, dp->shard_n, norm, max_norm);
    adamw_update(opt, params, grads, lr);
    if (dp->zero) dist_all_gather_floats(model->params_memory, P);
    gpt_params_changed(model);  // the kernels' copies of the parameters
    return norm;
}

int data_parallel_gather_optimizer(DataParallel *dp, GPT *model, const AdamW *opt, AdamW *copy, const AdamW **full,
                                   char err[ERR_LEN]) {
    *full = NULL;
    if (!dp->zero) {
        if (dist_rank() == 0) *full = opt;
        return 0;
    }
    size_t P = dp->num_parameters;
    int failed = 0;
    if (dist_rank() == 0) {
        dp->full_v = malloc(P * sizeof(float));
        failed = !dp->full_v;
    }
    if (dist_agree(failed, 0).status) {
        data_parallel_release_optimizer(dp);
        snprintf(err, ERR_LEN, "out of memory on rank 0 for the %zu optimizer moments a checkpoint holds", P);
        return -1;
    }
    dist_gather_floats(opt->m, model->grads_memory, P);
    dist_gather_floats(opt->v, dp->full_v, P);
    if (dist_rank() == 0) {
        *copy = *opt;
        copy->first = 0;
        copy->n = P;
        copy->m = model->grads_memory;
        copy->v = dp->full_v;
        copy->decay = NULL;  // a checkpoint keeps the moments and the step only
        *full = copy;
    }
    return 0;
}

void data_parallel_release_optimizer(DataParallel *dp) {
    free(dp->full_v);
    dp->full_v = NULL;
}

// ----------------------------------------------------------------------------
// the update-to-weight ratios

// The group of tensor `index` (gpt_tensor_info's numbering): its name without the layer's
// "transformer.h.<i>." prefix, looked up in or added to names (count so far).
static int group_of(const GPTConfig *c, int index, char names[][PROBE_GROUP_NAME], int *count) {
    TensorInfo info;
    gpt_tensor_info(c, index, &info);
    const char *name = info.name;
    if (strncmp(name, "transformer.h.", 14) == 0) {
        const char *dot = strchr(name + 14, '.');
        if (dot) name = dot + 1;
    }
    for (int g = 0; g < *count; g++)
        if (strcmp(names[g], name) == 0) return g;
    if (*count == PROBE_MAX_GROUPS) return PROBE_MAX_GROUPS - 1;
    snprintf(names[*count], PROBE_GROUP_NAME, "%s", name);
    return (*count)++;
}

int update_groups(const GPTConfig *c, char names[][PROBE_GROUP_NAME]) {
    int count = 0;
    for (int i = 0; i < gpt_num_tensors(c); i++) group_of(c, i, names, &count);
    return count;
}

void update_ratios(const DataParallel *dp, const GPT *model, const AdamW *opt, float lr, float *ratios) {
    const GPTConfig *c = &model->config;
    char names[PROBE_MAX_GROUPS][PROBE_GROUP_NAME];
    double updates[PROBE_MAX_GROUPS] = {0}, weights[PROBE_MAX_GROUPS] = {0};
    int count = 0;
    const float *params = model->params_memory + opt->first;  // indexed as the optimizer's
    for (int i = 0; i < gpt_num_tensors(c); i++) {
        TensorInfo info;
        gpt_tensor_info(c, i, &info);
        int g = group_of(c, i, names, &count);
        updates[g] += adamw_last_update_sum_of_squares(opt, params, lr, info.offset, info.size);
        const float *w = model->params_memory + info.offset;
        for (size_t k = 0; k < info.size; k++) weights[g] += (double)w[k] * w[k];
    }
    if (dp->zero) dist_sum_doubles(updates, count);  // each process has its shard's
    for (int g = 0; g < count; g++) ratios[g] = weights[g] > 0.0 ? (float)(sqrt(updates[g]) / sqrt(weights[g])) : NAN;
}

// ----------------------------------------------------------------------------
// the run's steps: planned, built and taken

int plan_memory(Run *r, GPTMemoryPlan *plan, char err[ERR_LEN]) {
    const TrainOptions *o = &r->o;
    r->config = (GPTConfig){r->vocab.size, o->block_size, o->n_layer, o->n_head, o->n_embd, o->head_size, o->qkv_bias,
                            o->dropout, o->position};
    if (gpt_config_validate(&r->config, err) != 0) return EXIT_USAGE;
    // what the timeline probes (rank 0), checked before anything in --out changes
    const char *resumed_run_id = checkpoint_meta(&r->ck, "train.run_id");
    int probe_ready = run_probe_prepare(&r->probe, o, &r->config, &r->vocab, &r->ds,
                                        r->resuming ? (resumed_run_id ? resumed_run_id : "") : NULL, err);
    if (probe_ready != 0) return probe_ready == -2 ? EXIT_USAGE : EXIT_DATA;
    int B = o->batch_size, T = o->block_size;
    r->tty = platform_is_terminal(STDOUT_FILENO) && dist_size() == 1;  // mpirun forwards output: no rewritten line
    if (o->task[0])
        printf("chargpt: %s, made from seed %" PRIu64 ", vocabulary %d; train %d new sequences a step, val %zu "
               "characters; accuracy counted on %s\n", r->data_name, o->seed, r->vocab.size, B, r->ds.val_len,
               task_scored_part(r->task.task));
    else
        printf("chargpt: %s, %zu characters, vocabulary %d%s; train %zu, val %zu\n", r->data_name, r->corpus.len,
               r->vocab.size, r->vocab.unknown ? " (an unknown token among them)" : "", r->ds.train_len,
               r->ds.val_len);
    gpt_memory_plan(&r->config, B, 1, plan);
    DataParallel *dp = &r->dp;
    size_t num_parameters = (size_t)(plan->parameters / sizeof(float));
    if (data_parallel_plan(dp, B, T, o->grad_accum, o->zero, num_parameters, err) != 0) return EXIT_USAGE;
    gpt_memory_plan(&r->config, dp->rows, 1, plan);
    gpt_memory_plan_precision(plan, &r->config, dp->rows, GPT_PLAN_TRAINING, o->precision);
    plan->optimizer *= (double)dp->shard_n / (double)num_parameters;
    plan->text = r->text_bytes;
    plan->probe = run_probe_memory(&r->probe, &r->config);
    char precision[64], precision_note[ERR_LEN];
    precision_describe(o->precision, precision, sizeof(precision));
    int threads = omp_get_max_threads();
    printf("model: %d layers, %d heads of %d, n_embd %d, block %d, %zu parameters; batch %d, %d thread%s; "
           "precision %s\n", o->n_layer, o->n_head, o->head_size, o->n_embd, o->block_size, num_parameters, B,
           threads, threads == 1 ? "" : "s", precision);
    if (kernels_precision_note(o->precision, precision_note, sizeof(precision_note))) printf("%s\n", precision_note);
    if (dist_size() > 1 || o->grad_accum > 1)
        printf("data parallel: %d process%s x %d micro-batch%s of %d sequences%s\n", dist_size(),
               dist_size() == 1 ? "" : "es", o->grad_accum, o->grad_accum == 1 ? "" : "es", dp->rows,
               dp->zero ? "; optimizer state sharded (ZeRO stage 1)" : "");
    return 0;
}

int set_up_model(Run *r, char err[ERR_LEN]) {
    const TrainOptions *o = &r->o;
    if (r->initializing && r->vocab.size != r->ck.config.vocab_size) {  // --grow-vocab added characters
        if (checkpoint_load_model_grown(&r->ck, &r->vocab, o->seed, &r->model, 1, err) != 0) return EXIT_USAGE;
        r->model.config.dropout = o->dropout;
        checkpoint_close(&r->ck);
    } else if (r->resuming || r->initializing) {
        if (checkpoint_load_model(&r->ck, &r->model, 1, err) != 0) return EXIT_USAGE;
        r->model.config.dropout = o->dropout;  // --init-from may change it
        if (r->initializing) checkpoint_close(&r->ck);
    } else {
        if (gpt_build(&r->model, &r->config, 1, err) != 0) return EXIT_USAGE;
        gpt_init_weights(&r->model, o->seed);
    }
    if (gpt_set_precision(&r->model, o->precision, err) != 0) return EXIT_USAGE;
    if (gpt_alloc_activations(&r->model, r->dp.rows, err) != 0) return EXIT_USAGE;
    if (data_parallel_init(&r->dp, &r->model, &r->opt, o->beta1, o->beta2, o->eps, o->weight_decay, err) != 0)
        return EXIT_USAGE;
    if (r->resuming) {
        if (checkpoint_load_optimizer(&r->ck, &r->opt, err) != 0) return EXIT_DATA;
        checkpoint_close(&r->ck);
    }
    int B = o->batch_size, T = o->block_size;
    r->inputs = malloc((size_t)B * T * sizeof(int));
    r->targets = malloc((size_t)B * T * sizeof(int));
    if (!r->inputs || !r->targets)
        return error_status(err, EXIT_USAGE, "out of memory for batches of %d x %d tokens", B, T);
    return 0;
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
    char probes[1024];
    run_probe_plan(&r->probe, step, o->steps, o->eval_every, !r->resuming && r->ds.val_len > 0, probes, sizeof(probes));
    if (probes[0]) printf("%s\n", probes);
}

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
