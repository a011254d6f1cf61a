// Scoring a task's validation split (data/task.h) as ./train's evaluations read it: each row
// of block_size + 1 characters is one window whose first block_size characters predict its
// last block_size, SCORE_BATCH rows to a forward pass. The loss is summed over every predicted
// character and over the scored ones, the part the task can be predicted on (the repeated
// half, the answer), and the scored characters the model gets right (its most likely next
// character is the one that comes) are counted, as the evaluations' accuracy counts them.
#ifndef CHARGPT_TASK_SCORE_H
#define CHARGPT_TASK_SCORE_H

#include <stdint.h>

#include "../data/task.h"
#include "score.h"

#define TASK_SCORE_MAX_ROWS 1000000  // --rows: at most this many

typedef struct {
    Score all;       // every predicted character
    Score scored;    // the scored ones
    double correct;  // scored characters predicted right
} TaskScore;

// The memory task_score allocates beside the model's forward over SCORE_BATCH windows
// (GPT_PLAN_FORWARD): the rows' characters and flags, and the batch's inputs and targets.
double task_score_memory(int block_size, long rows);
// Scores rows 0 .. rows - 1 of the validation split of `task` made from `seed`. Returns 0, or
// -1 with err when memory runs out or a loss is not finite.
int task_score(GPT *model, Task task, uint64_t seed, long rows, TaskScore *out, char err[ERR_LEN]);

// The validation split of the task a checkpoint's run trained on, as --score-task scores it.
typedef struct {
    const char *name;  // the task's name; "" for a run on a text
    Task task;         // set by check_scored_task
    uint64_t seed;     // the run's seed, which made the split
    long rows;         // the rows scored
} ScoredTask;

#endif
