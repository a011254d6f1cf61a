// --circuits FILE: the circuits of a model's weights (analysis/circuits.h) written to FILE
// (viewer/circuits_export.h), and a summary on a stream: each head's OV copying scores and,
// for each head of a later layer, the strongest Q-, K- and V-composition into it beside the
// random baseline.
#ifndef CHARGPT_CIRCUITS_REPORT_H
#define CHARGPT_CIRCUITS_REPORT_H

#include <stdio.h>

#include "../model/gpt.h"

// Computes the circuits of model (the composition baseline from seed), writes them to path
// (replace 0: only while nothing is there) with the vocabulary's characters (V) and title,
// and prints the summary to out. Returns 0; EXIT_USAGE with err for a model of one layer (no
// head has a later one to compose with), a path whose extension is not .json or .html, or
// (replace 0) a path that exists; EXIT_DATA with err when memory runs out or the file cannot
// be written.
int circuits_report(const GPT *model, const uint32_t *vocab_chars, uint64_t seed, const char *path, int replace,
                    const char *title, FILE *out, char err[ERR_LEN]);

#endif
