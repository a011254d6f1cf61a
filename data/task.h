// Tasks: text that chargpt makes itself from a seed (train --task NAME), each built so that a
// part of it can be predicted only by a mechanism the model has to learn:
//   induction  random strings, each written twice: "qzmfk" "qzmfk". The strings' lengths
//              vary, so the copy is at a varying distance and only attending by content
//              (the character after the earlier occurrence of this one: an induction head)
//              predicts it. Scored: the second copy after its first character.
//   reverse    "kdyb=bydk": a string, '=', the string backwards, a newline.
//   sort       "4713=1347": digits, '=', the same digits in order, a newline.
//   add        "62+75=137": two numbers, '=', their sum, a newline.
//              Scored in these three: what follows '=', the newline included.
// An example is one such string; a row of the text (block_size + 1 characters, one training
// sequence with its next characters) is whole examples from its start, the last one cut
// where the row ends.
//
// Rows are a pure function of (seed, split, row index): row i of a split draws its examples
// from a generator seeded by a hash of the three, so a step's batch follows from the step's
// number (rows step * B to step * B + B - 1 of the training split) and a resumed run goes on
// with the same stream. The two splits never share an example: a hash of an example's text
// puts it in one of them (one in TASK_VALIDATION_SHARE), and each split's rows skip the
// examples that are the other's.
#ifndef CHARGPT_TASK_H
#define CHARGPT_TASK_H

#include <stdint.h>

#include "../common/errors.h"

typedef enum { TASK_INDUCTION, TASK_REVERSE, TASK_SORT, TASK_ADD, TASK_COUNT } Task;
typedef enum { TASK_TRAIN, TASK_VALIDATION } TaskSplit;

#define TASK_NAMES "induction, reverse, sort, add"
#define TASK_VALIDATION_SHARE 8  // one example in 8 is the validation split's
#define TASK_NAME_MAX 16         // the longest name with its NUL

// The task called name, or -1 when there is none.
int task_find(const char *name);
const char *task_name(Task task);
// The task's characters, in increasing order: its vocabulary.
const char *task_alphabet(Task task);
// What the task's accuracy counts, for a report: "the repeated half", "the answers".
const char *task_scored_part(Task task);

// Row `index` of a split, len characters as token ids (indices into task_alphabet), and
// scored[i] = 1 where character i can be predicted from those before it (the part the
// task's accuracy counts; scored[0] is 0).
void task_row(Task task, uint64_t seed, TaskSplit split, uint64_t index, int len, int *tokens,
              unsigned char *scored);
// The training batch of optimizer step `step` (0 for the first): rows step * B + b of the
// training split, each split into inputs (B, T), its first T characters, and targets (B, T),
// its last T.
void task_train_batch(Task task, uint64_t seed, long step, int B, int T, int *inputs, int *targets);

// The validation split as one text: its rows 0 .. rows - 1, row_len characters each, one after
// the other, in *tokens and *scored (malloc'd, rows * row_len each), so that an evaluation
// of `rows` windows of row_len characters spread over it (dataset_val_batch) reads the rows
// whole. Returns 0, or -1 with err when memory runs out.
int task_validation_text(Task task, uint64_t seed, long rows, int row_len, int **tokens, unsigned char **scored,
                         char err[ERR_LEN]);

// Of n predictions, those of scored characters (scored[i]: the flag of the character that
// prediction i is of, targets[i]): adds to *correct those whose largest logit (of V in row i of
// logits; the first of equal ones) is the target's, and to *total how many they are.
void task_count_correct(const float *logits, int V, const int *targets, const unsigned char *scored, int n,
                        double *correct, double *total);

// The split an example's text belongs to.
TaskSplit task_example_split(const char *text, int len);

#endif
