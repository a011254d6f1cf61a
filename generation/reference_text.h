// The text the heads' means are taken over (analysis/head_means.h: --ablate-mean, and the
// pages' importance by the mean): a file the user names, or else the validation split of the
// run the checkpoint comes from, made again as ./train made it:
//   a task's (train --task): REFERENCE_TASK_ROWS rows of block_size + 1 characters of its
//     validation split, from the run's seed (data/task.h);
//   a corpus of one file: the file (its path as the run saved it, else beside the checkpoint),
//     read in the run's encoding and line endings, its last val_fraction.
// A run of several files, a directory or standard input has no such split here: the user
// names a file.
#ifndef CHARGPT_REFERENCE_TEXT_H
#define CHARGPT_REFERENCE_TEXT_H

#include <stddef.h>

#include "../format/checkpoint.h"
#include "prompt.h"

#define REFERENCE_TASK_ROWS 64

// Reads the reference text into out as vocab's tokens: file when not NULL (characters the
// vocabulary lacks dropped and counted in out), else the run's validation split; at most
// max_chars characters are read. *what describes it for messages ("FILE", "the validation
// split of the induction task (64 rows)"). Returns 0; EXIT_USAGE with err when the checkpoint's
// run has no split to make or the text is too long; EXIT_DATA with err when it cannot be read
// or holds no character of the vocabulary.
int reference_text_load(const Checkpoint *ck, const Vocab *vocab, const char *file, size_t max_chars, Prompt *out,
                        char *what, size_t what_size, char err[ERR_LEN]);

#endif
