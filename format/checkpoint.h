// The checkpoint: a safetensors file with nanoGPT's tensor names, readable by PyTorch and
// the Hugging Face tools. The header's metadata holds the format version, the model config,
// the vocabulary (a JSON array of code points), a CRC-32 of the data section, and whatever
// the caller adds (training options and state). With an optimizer, its moments are stored
// as tensors optimizer.m.<name> and optimizer.v.<name>.
#ifndef CHARGPT_CHECKPOINT_H
#define CHARGPT_CHECKPOINT_H

#include <stdint.h>

#include "../model/adamw.h"
#include "../model/gpt.h"
#include "safetensors.h"

#define CHECKPOINT_FORMAT "chargpt-1"

// Writes a checkpoint atomically. vocab: config.vocab_size code points, increasing.
// opt may be NULL (no optimizer state). extra: caller's metadata (keys must not clash).
int checkpoint_save(const char *path, const GPT *model, const uint32_t *vocab, const AdamW *opt,
                    const StMeta *extra, int num_extra, char err[ERR_LEN]);

typedef struct {
    char path[1024];  // for messages
    SafeTensors file;
    GPTConfig config;
    uint32_t *vocab;  // config.vocab_size code points
} Checkpoint;

// Reads a checkpoint and checks its format version, CRC, config and vocabulary.
// Returns 0, or -1 with a message naming the file and the problem.
int checkpoint_open(const char *path, Checkpoint *ck, char err[ERR_LEN]);
// Builds the model from the checkpoint (gpt_build, then every tensor, shapes checked).
int checkpoint_load_model(const Checkpoint *ck, GPT *model, char err[ERR_LEN]);
// Restores the optimizer moments and step (opt already initialised for the model).
int checkpoint_load_optimizer(const Checkpoint *ck, AdamW *opt, char err[ERR_LEN]);
// A metadata value, or NULL.
const char *checkpoint_meta(const Checkpoint *ck, const char *key);
void checkpoint_close(Checkpoint *ck);

#endif
