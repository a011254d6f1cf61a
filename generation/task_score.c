#include "task_score.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job.h"

double task_score_memory(int block_size, long rows) {
    double row_len = block_size + 1.0;
    return (double)rows * row_len * (sizeof(int) + 1) + 2.0 * SCORE_BATCH * block_size * sizeof(int);
}

// Adds the last forward's `count` rows (their targets' flags in scored, row_len apart) to out.
static int add_rows(const GPT *model, const int *targets, const unsigned char *scored, int count, int row_len,
                    TaskScore *out, char err[ERR_LEN]) {
    const int T = row_len - 1, V = model->config.vocab_size;
    for (int b = 0; b < count; b++) {
        const unsigned char *flags = scored + (size_t)b * row_len + 1;  // of the characters predicted
        for (int i = 0; i < T; i++) {
            double loss = model->acts.losses[(size_t)b * T + i];
            if (!isfinite(loss)) {
                snprintf(err, ERR_LEN, "the model's loss is %g: its logits are not finite (the weights overflow "
                         "float)", loss);
                return -1;
            }
            out->all.sum_nats += loss, out->all.scored++;
            if (flags[i]) out->scored.sum_nats += loss, out->scored.scored++;
        }
        double total = 0.0;
        task_count_correct(model->acts.logits + (size_t)b * T * V, V, targets + (size_t)b * T, flags, T,
                           &out->correct, &total);
    }
    return 0;
}

int task_score(GPT *model, Task task, uint64_t seed, long rows, TaskScore *out, char err[ERR_LEN]) {
    const int T = model->config.block_size, row_len = T + 1;
    memset(out, 0, sizeof(*out));
    int *tokens = NULL;
    unsigned char *scored = NULL;
    if (task_validation_text(task, seed, rows, row_len, &tokens, &scored, err) != 0) return -1;
    int *inputs = malloc((size_t)SCORE_BATCH * T * sizeof(int));
    int *targets = malloc((size_t)SCORE_BATCH * T * sizeof(int));
    int rc = gpt_alloc_activations(model, SCORE_BATCH, err);
    if (rc == 0 && (!inputs || !targets)) {
        snprintf(err, ERR_LEN, "out of memory for %d rows of %d characters", SCORE_BATCH, row_len);
        rc = -1;
    }
    for (long r0 = 0; rc == 0 && r0 < rows; r0 += SCORE_BATCH) {
        int count = rows - r0 < SCORE_BATCH ? (int)(rows - r0) : SCORE_BATCH;
        for (int b = 0; b < count; b++) {
            const int *row = tokens + (size_t)(r0 + b) * row_len;
            memcpy(inputs + (size_t)b * T, row, (size_t)T * sizeof(int));
            memcpy(targets + (size_t)b * T, row + 1, (size_t)T * sizeof(int));
        }
        gpt_forward(model, inputs, targets, count, T, NULL);
        rc = add_rows(model, targets, scored + (size_t)r0 * row_len, count, row_len, out, err);
    }
    free(inputs);
    free(targets);
    free(tokens);
    free(scored);
    return rc;
}

// ----------------------------------------------------------------------------
// ./generate --score-task: the job's stages (generation/job.h)

int check_scored_task(const Job *j, ScoredTask *st, char err[ERR_LEN]) {
    const char *checkpoint = j->o.checkpoint;
    if (!st->name[0])
        return error_status(err, EXIT_USAGE, "%s was trained on a text, not a --task: --score FILE scores a text",
                            checkpoint);
    st->task = (Task)task_find(st->name);
    const char *alphabet = task_alphabet(st->task);
    const Vocab *vocab = &j->vocab;
    int same = vocab->size == (int)strlen(alphabet) && !vocab->unknown;
    for (int i = 0; same && i < vocab->size; i++) same = vocab->chars[i] == (uint32_t)(unsigned char)alphabet[i];
    if (!same)
        return error_status(err, EXIT_DATA, "%s: its vocabulary is not the %s task's %zu characters (a checkpoint of "
                            "another version of chargpt?)", checkpoint, st->name, strlen(alphabet));
    const GPTConfig *c = &j->ck.config;
    GPTMemoryPlan plan;
    gpt_memory_plan(c, SCORE_BATCH, GPT_PLAN_FORWARD, &plan);
    gpt_memory_plan_precision(&plan, c, SCORE_BATCH, GPT_PLAN_FORWARD, j->o.precision);
    plan.text = task_score_memory(c->block_size, st->rows);
    return check_job_memory(j, &plan, c, "scoring the task's validation split", err);
}

int score_task_rows(Job *j, const ScoredTask *st, char err[ERR_LEN]) {
    const GenerateOptions *o = &j->o;
    const GPTConfig *c = &j->model.config;
    TaskScore s;
    char why[ERR_LEN];
    if (task_score(&j->model, st->task, st->seed, st->rows, &s, why) != 0)
        return error_status(err, EXIT_DATA, "%s: %s", o->checkpoint, why);
    if (s.scored.scored == 0)  // a block too short to hold an example's predictable part
        return error_status(err, EXIT_DATA, "%s: the %ld rows of %d characters hold no %s to score", o->checkpoint,
                            st->rows, c->block_size + 1, task_scored_part(st->task));
    printf("%s task (seed %" PRIu64 "), validation rows 0-%ld of %d characters%s%s%s%s: %s %.4f bits/char over %ld "
           "characters, %.1f%% right; every character %.4f bits/char\n", st->name, st->seed, st->rows - 1,
           c->block_size + 1, o->ablate ? ", heads knocked out " : "", o->ablate ? o->ablate : "",
           o->ablate_mean ? ", heads replaced by their mean " : "", o->ablate_mean ? o->ablate_mean : "",
           task_scored_part(st->task), s.scored.sum_nats / s.scored.scored / M_LN2, s.scored.scored,
           100.0 * s.correct / s.scored.scored, s.all.sum_nats / s.all.scored / M_LN2);
    return j->flush_stdout(err) != 0 ? EXIT_DATA : 0;
}
