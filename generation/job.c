// The stages every job of ./generate goes through: the threads and kernels started, the
// checkpoint opened, the memory a job plans checked against the limit, and the model loaded
// (with the heads --ablate and --ablate-mean edit: generation/ablation.c).
#include <omp.h>
#include <stdio.h>

#include "../kernels/kernels.h"
#include "job.h"

int start_kernels(const GenerateOptions *o, char err[ERR_LEN]) {
    if (o->threads > 0) omp_set_num_threads(o->threads);
    if (kernels_init(err) != 0) return EXIT_USAGE;
    if (kernels_precision_note(o->precision, err, ERR_LEN)) fprintf(stderr, "%s\n", err);
    return 0;
}

int check_job_memory(const Job *j, const GPTMemoryPlan *plan, const GPTConfig *c, const char *what,
                     char err[ERR_LEN]) {
    const char *source;
    double limit = j->memory_limit(&j->o, &source);
    if (limit <= 0 || gpt_memory_total(plan) <= limit) return 0;
    char needed[512], limit_text[32];
    gpt_memory_describe(plan, needed, sizeof(needed));
    format_bytes(limit, limit_text, sizeof(limit_text));
    return error_status(err, EXIT_USAGE, "%s: %s with this checkpoint (block size %d, %d layers, %d heads) needs %s, "
                        "more than the %s %s", j->o.checkpoint, what, c->block_size, c->n_layer, c->n_head, needed,
                        limit_text, source);
}

int open_checkpoint(Job *j, char err[ERR_LEN]) {
    const GenerateOptions *o = &j->o;
    const char *source;
    char why[ERR_LEN];
    int rc = checkpoint_open_within(o->checkpoint, j->memory_limit(o, &source), &j->ck, why);
    if (rc != 0)
        return error_status(err, rc == -2 ? EXIT_USAGE : EXIT_DATA, "%s%s%s", why, rc == -2 ? " " : "",
                            rc == -2 ? source : "");
    const GPTConfig *c = &j->ck.config;
    if (checkpoint_vocab(&j->ck, &j->vocab, err) != 0) return EXIT_DATA;
    if (o->stride > c->block_size)
        return error_status(err, EXIT_USAGE, "--stride %d is larger than the checkpoint's block size %d", o->stride,
                            c->block_size);
    return o->ablate || o->ablate_mean ? knock_out_heads(j, err) : 0;
}

int load_model(Job *j, char err[ERR_LEN]) {
    if (checkpoint_load_model(&j->ck, &j->model, 0, err) != 0) return EXIT_USAGE;
    int status = read_reference(j, err);
    if (status != 0) return status;
    checkpoint_close(&j->ck);
    if (gpt_set_precision(&j->model, j->o.precision, err) != 0) return EXIT_USAGE;
    j->model.hooks = j->hooks.n_heads ? &j->hooks : NULL;
    return take_head_means(j, err);
}
