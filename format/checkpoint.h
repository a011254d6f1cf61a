// The checkpoint: a safetensors file with nanoGPT's tensor names, readable by PyTorch and
// the Hugging Face tools. The header's metadata holds the format version, the model config,
// the vocabulary (a JSON array of code points), a CRC-32 and whatever the caller adds
// (training options and state). With an optimizer, its moments are stored as tensors
// optimizer.m.<name> and optimizer.v.<name>.
//
// Format "chargpt-2" (written): "crc32" is the CRC-32 of the whole file, computed with its own
// value as "00000000" (safetensors_file_crc), so an edit to the header is detected as well as
// one to the data. Format "chargpt-1" (still read): "crc32" covers the data section only.
#ifndef CHARGPT_CHECKPOINT_H
#define CHARGPT_CHECKPOINT_H

#include <stdint.h>

#include "../data/vocab.h"
#include "../model/adamw.h"
#include "../model/gpt.h"
#include "safetensors.h"

#define CHECKPOINT_FORMAT "chargpt-2"
#define CHECKPOINT_FORMAT_V1 "chargpt-1"

// Writes a checkpoint atomically. vocab: config.vocab_size code points, increasing; with an
// unknown token, metadata vocab_unknown "65533" says so (U+FFFD's token stands for every other
// character). opt may be NULL (no optimizer state), else it holds every parameter's moments (a
// sharded optimizer's are gathered first). extra: caller's metadata (keys must not clash).
int checkpoint_save(const char *path, const GPT *model, const Vocab *vocab, const AdamW *opt, const StMeta *extra,
                    int num_extra, char err[ERR_LEN]);

typedef struct {
    char path[1024];     // for messages
    SafeTensors file;
    GPTConfig config;
    uint32_t *vocab;     // config.vocab_size code points
    int vocab_unknown;   // 1: U+FFFD's token stands for every character outside vocab (data/vocab.h)
    int has_optimizer;   // 1: every optimizer.m.* and optimizer.v.* tensor is present
    long optimizer_step;
} Checkpoint;

// Reads a checkpoint and checks all of it before anything sized by its config is allocated:
// format version, CRC, config, vocabulary, and every parameter tensor (and optimizer moment,
// when there are any): present, F32, of the shape the config gives, finite. Returns 0, or -1
// with a message naming the file, the problem and the tensor or metadata key.
int checkpoint_open(const char *path, Checkpoint *ck, char err[ERR_LEN]);
// The same within max_bytes of memory (0: no limit; safetensors_read_within): -2 with err
// when reading the file would take more.
int checkpoint_open_within(const char *path, double max_bytes, Checkpoint *ck, char err[ERR_LEN]);
// The same for a checkpoint held in memory (len bytes, copied); name is used in messages.
int checkpoint_parse(const void *bytes, size_t len, const char *name, Checkpoint *ck, char err[ERR_LEN]);
// The checkpoint's vocabulary, with its unknown token if it has one. Returns 0, or -1 with err.
int checkpoint_vocab(const Checkpoint *ck, Vocab *vocab, char err[ERR_LEN]);
// Builds the model (gpt_build, with gradients or not) and copies the parameters in.
// The checkpoint was checked when opened: this fails only when memory runs out.
int checkpoint_load_model(const Checkpoint *ck, GPT *model, int with_gradients, char err[ERR_LEN]);
// The same with a larger vocabulary, `grown`, which holds every character of ck's (train
// --init-from --grow-vocab): the parameters start as a new model's of that vocabulary
// (gpt_init_weights with seed), then every tensor of ck is copied over them, the token
// embedding (and tied output head) a row at a time to its character's row in grown, so the
// characters ck has keep their rows bit for bit and the new ones keep their new rows: drawn
// from N(0, 0.02) as a new model's are.
int checkpoint_load_model_grown(const Checkpoint *ck, const Vocab *grown, uint64_t seed, GPT *model, int with_gradients,
                                char err[ERR_LEN]);
// Restores the optimizer moments of opt's parameters (all of them or a range: adamw.h) and
// the step (opt already initialised for the model); fails when the checkpoint has no
// optimizer state.
int checkpoint_load_optimizer(const Checkpoint *ck, AdamW *opt, char err[ERR_LEN]);
// A metadata value, or NULL.
const char *checkpoint_meta(const Checkpoint *ck, const char *key);
void checkpoint_close(Checkpoint *ck);

#endif
