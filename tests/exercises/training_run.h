// The exercises' training run (docs/exercises.md): 200 steps of `./train --task induction` on
// one thread, with the learner's function in the loop, step by step against the project's.
#ifndef CHARGPT_EXERCISE_TRAINING_RUN_H
#define CHARGPT_EXERCISE_TRAINING_RUN_H

#include "check.h"

// The project's run: `train` (the project's ./train) with the run's options, into dir
// (dir/log.csv). Returns the exit status for main: 0, or 1 with a message.
int training_reference(const char *train, const char *dir);
// The learner's run (train, linked with their function) into dir, then its log against
// reference_dir's, each step's loss and gradient norm; prints an ok or FAIL line with what
// the difference points to. Returns 1 when they agree.
int training_compare(const Exercise *e, const char *train, const char *dir, const char *reference_dir);

#endif
