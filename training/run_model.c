// The run's model, from its sizes to its memory: the sizes the run is planned from (the
// model's config, the batch's split over the processes), the memory it needs, computed from
// them before anything is allocated, and the model, optimizer and batch built.
#include <stdlib.h>

#include "../format/checkpoint.h"
#include "../model/adamw.h"
#include "../model/gpt.h"
#include "data_parallel.h"
#include "probe.h"
#include "run.h"

int set_up_sizes(Run *r, char err[ERR_LEN]) {
    const TrainOptions *o = &r->o;
    r->config = (GPTConfig){r->vocab.size, o->block_size, o->n_layer, o->n_head, o->n_embd, o->head_size, o->qkv_bias,
                            o->dropout, o->position};
    if (gpt_config_validate(&r->config, err) != 0) return EXIT_USAGE;
    GPTMemoryPlan model;  // the model's size
    gpt_memory_plan(&r->config, o->batch_size, GPT_PLAN_TRAINING, &model);
    size_t num_parameters = (size_t)(model.parameters / sizeof(float));
    if (data_parallel_plan(&r->dp, o->batch_size, o->block_size, o->grad_accum, o->zero, num_parameters, err) != 0)
        return EXIT_USAGE;
    return 0;
}

void plan_memory(const Run *r, GPTMemoryPlan *plan) {
    const DataParallel *dp = &r->dp;
    gpt_memory_plan(&r->config, dp->rows, GPT_PLAN_TRAINING, plan);
    gpt_memory_plan_precision(plan, &r->config, dp->rows, GPT_PLAN_TRAINING, r->o.precision);
    int micro = data_parallel_micro_sequences(dp, &r->config, r->o.precision);
    if (micro) gpt_memory_plan_micro_batches(plan, &r->config, dp->rows, micro);
    plan->optimizer *= (double)dp->shard_n / (double)dp->num_parameters;  // the moments of this process's shard
    plan->text = r->text_bytes;
    plan->probe = run_probe_memory(&r->probe, &r->config);
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
    int micro = data_parallel_micro_sequences(&r->dp, &r->model.config, o->precision);
    if (micro && gpt_alloc_micro_batches(&r->model, r->dp.rows, micro, err) != 0) return EXIT_USAGE;
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
