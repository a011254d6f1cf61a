// Saving a run: its checkpoints (ckpt.safetensors, best.safetensors) hold the model, the
// vocabulary, every parameter's AdamW moments and the run's options and state
// (training/run_state.h), so that --resume continues it exactly.
#ifndef CHARGPT_RUN_CHECKPOINT_H
#define CHARGPT_RUN_CHECKPOINT_H

#include "../data/vocab.h"
#include "data_parallel.h"
#include "run_state.h"

// Writes a checkpoint to each of paths[0], paths[1] that is not NULL, from rank 0, with the
// optimizer's moments gathered from every process first (ZeRO: data_parallel.h). Collective.
// Returns 0; EXIT_USAGE on every process when rank 0 has no memory to gather the moments;
// EXIT_DATA on rank 0 when a write fails; with err.
int run_checkpoint_save(const char *const paths[2], DataParallel *dp, GPT *model, const AdamW *opt,
                        const Vocab *vocab, const TrainOptions *o, const TrainState *s, char err[ERR_LEN]);

#endif
