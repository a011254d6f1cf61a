// --attention: the attention of every layer and head over the last window of a text (its last
// block_size characters, run once more through the model's forward pass): the weights, the
// queries, keys and values behind them and each head's output, what each head does
// (analysis/head_scores.h: its pattern scores on the text and its label), what the model
// predicted at each position and the logit lens over them (analysis/logit_lens.h), written for
// the viewer (viewer/attention_export.h).
#ifndef CHARGPT_ATTENTION_RECORD_H
#define CHARGPT_ATTENTION_RECORD_H

#include "../data/vocab.h"
#include "../model/gpt.h"

// Runs the last window of text (len tokens) through model and writes what it recorded to each
// of the n paths in the format its extension names; *written counts the files written.
// replace 0: a path is written only while nothing is there (attention_export). Returns 0;
// EXIT_DATA when the model's logits are not finite or a file cannot be written; EXIT_USAGE when
// a path's extension names no format, or (replace 0) when a path exists; with err.
int attention_record(GPT *model, const Vocab *vocab, const int *text, long len, const char *const *paths, int n,
                     int replace, int *written, char err[ERR_LEN]);
// attention_record, the heads' importance measured only when `importance` is 1; with 0 it is
// left unknown (NaN) and its 1 + L*H forwards, most of the time of a page over a short text, are
// saved (the page's inspector as one types: web/inspect.c).
int attention_record_with(GPT *model, const Vocab *vocab, const int *text, long len, int importance,
                          const char *const *paths, int n, int replace, int *written, char err[ERR_LEN]);
// The memory attention_record takes besides the model, for a window of t characters (before
// what writing a file takes: attention_export_memory).
double attention_record_memory(const GPTConfig *c, int t);

#endif
