// The output directory of a run: whether it already holds one, so that a new run does not
// silently replace another's checkpoints and log (train --force does, on purpose).
#ifndef CHARGPT_RUN_DIR_H
#define CHARGPT_RUN_DIR_H

#include <stddef.h>

#include "../model/gpt.h"

// The files that make a run (ckpt.safetensors, best.safetensors, a log.csv with a row) in dir,
// named in `found` ("ckpt.safetensors and log.csv"); returns how many (0: none, or no dir).
int run_dir_find_run(const char *dir, char *found, size_t size);
// Removes the files of a run that a new run might not write again (best.safetensors, only
// written when validation improves, and loss.svg), so none is left from the run it replaces.
// Returns 0, or -1 with err.
int run_dir_remove_old_outputs(const char *dir, char err[ERR_LEN]);

// Where a resumed run finds its corpus: the path saved in its checkpoint, or, when that is a
// relative path the current directory does not have, the same path beside the checkpoint
// (then the file's name alone there). Writes the path to use into out (the saved one when
// none of the places has it, for the error message that follows).
void run_dir_find_corpus(const char *saved, const char *checkpoint_path, char *out, size_t size);

#endif
