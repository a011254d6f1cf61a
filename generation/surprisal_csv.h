// --surprisal FILE: one CSV row per scored character, written atomically,
//   position,char,loss_bits,probability,top1,top1_prob,...,top5,top5_prob
// position: the character's index in the scored text (0 is the first character, context
// only, so rows start at 1); char: the character, quoted per RFC 4180 when it is a comma,
// double quote, CR or LF; loss_bits: the scoring loss in bits (-log2 p, so the column's mean
// is the bits/char ./generate prints); probability: p = 2^-loss_bits, the model's
// probability of it; then the five characters the model found most likely there, most likely
// first, with their probabilities (fewer when the vocabulary is smaller; the rest empty).
// Numbers are printed with 9 significant digits.
#ifndef CHARGPT_SURPRISAL_CSV_H
#define CHARGPT_SURPRISAL_CSV_H

#include <stdint.h>

#include "../format/atomic_file.h"
#include "../model/gpt.h"

typedef struct {
    AtomicFile file;
    const uint32_t *vocab_chars;  // (V) the code point of each token
    int V;
} SurprisalCsv;

// Opens the temporary file and writes the header. Returns 0, or -1 with err.
int surprisal_csv_open(SurprisalCsv *csv, const char *path, const uint32_t *vocab_chars, int V, char err[ERR_LEN]);
// Appends the row of the character at position, token, its loss in nats and the logits (V)
// it was predicted from. Returns 0, or -1 with err when the write fails.
int surprisal_csv_row(SurprisalCsv *csv, long position, int token, float loss, const float *logits, char err[ERR_LEN]);
// Commits the file (0): over a file there when replace is 1, else only while nothing is there
// (ATOMIC_FILE_EXISTS when something is); or removes it and returns -1 with err.
int surprisal_csv_commit(SurprisalCsv *csv, int replace, char err[ERR_LEN]);

#endif
