// --attention: the attention of every layer and head over the last window of a text (its last
// block_size characters, run once more through the model's forward pass): the weights, the
// queries, keys and values behind them and each head's output, what each head does
// (analysis/head_scores.h: its pattern scores on the text and its label), what the model
// predicted at each position and the logit lens over them (analysis/logit_lens.h), written for
// the viewer (viewer/attention_export.h).
#ifndef CHARGPT_ATTENTION_RECORD_H
#define CHARGPT_ATTENTION_RECORD_H

#include "../analysis/patching.h"
#include "../data/vocab.h"
#include "../model/gpt.h"

// What --attention records besides what it measures itself; NULL fields are left out.
typedef struct {
    const float *head_means;   // (L, H, hs): each head's importance by the mean too (analysis/head_means.h)
    const char *means_over;    // what the means were taken over, for the page
    const Patching *patching;  // activation patching of the text (then at most block_size long) ...
    const int *corrupted;      // ... against this one, of the same length
    int skip_importance;       // 1: each head's importance left unknown (NaN), its 1 + L*H forwards,
                               // most of the time of a page over a short text, saved (the page's
                               // inspector as one types: web/inspect.c)
} AttentionExtras;

// Runs the last window of text (len tokens) through model and writes what it recorded, with
// extras (NULL: none), to each of the n paths in the format its extension names; *written
// counts the files written.
// replace 0: a path is written only while nothing is there (attention_export). Returns 0;
// EXIT_DATA when the model's logits are not finite or a file cannot be written; EXIT_USAGE when
// a path's extension names no format, or (replace 0) when a path exists; with err.
int attention_record(GPT *model, const Vocab *vocab, const int *text, long len, const AttentionExtras *extras,
                     const char *const *paths, int n, int replace, int *written, char err[ERR_LEN]);
// The memory attention_record takes besides the model and the extras, for a window of t
// characters (before what writing a file takes: attention_export_memory).
double attention_record_memory(const GPTConfig *c, int t);

#endif
