// --attention: the attention weights of every layer and head over the last window of a text
// (its last block_size characters, run once more through the model's forward pass), and what
// the model predicted at each position and the logit lens over them (viewer/logit_lens.h),
// written for the viewer (viewer/attention_export.h).
#ifndef CHARGPT_ATTENTION_RECORD_H
#define CHARGPT_ATTENTION_RECORD_H

#include "../data/vocab.h"
#include "../model/gpt.h"

// Runs the last window of text (len tokens) through model and writes its attention weights,
// (L, H, t, t), predictions and logit lens to each of the n paths in the format its extension names;
// *written counts the files written. replace 0: a path is written only while nothing is there
// (attention_export). Returns 0; EXIT_DATA when the model's logits are not finite or a file
// cannot be written; EXIT_USAGE when a path's extension names no format, or (replace 0) when
// a path exists; with err.
int attention_record(GPT *model, const Vocab *vocab, const int *text, long len, const char *const *paths, int n,
                     int replace, int *written, char err[ERR_LEN]);

#endif
