#include "task_score.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
