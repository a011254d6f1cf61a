// --logits FILE.json: the model's logits over the last window of a text (its last block_size
// characters, run once more through the forward pass, as --attention's), for comparing
// chargpt with another program running the same model (an exported one, generation/export.h):
//   {"tokens": [t ids], "chars": [t characters], "logits": [t][V numbers]}
// logits[i] scores each token of the vocabulary as the one after tokens 0..i, before the
// softmax; the numbers have 9 significant digits, which read a float back exactly.
#ifndef CHARGPT_LOGITS_RECORD_H
#define CHARGPT_LOGITS_RECORD_H

#include "../data/vocab.h"
#include "../model/gpt.h"

// 0 when path names a .json file, else -1 with err (checked before any work).
int logits_check_path(const char *path, char err[ERR_LEN]);
// Runs the last window of text (len tokens) through model and writes its logits to path:
// over a file there when replace is 1, else only while nothing is there. Returns 0;
// EXIT_DATA when the logits are not finite or the file cannot be written, EXIT_USAGE when
// (replace 0) the path exists; with err.
int logits_record(GPT *model, const Vocab *vocab, const int *text, long len, const char *path, int replace,
                  char err[ERR_LEN]);

#endif
