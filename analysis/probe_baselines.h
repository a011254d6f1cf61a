// What the head scores of a probe (training/probe.h, format/probe_file.h) are measured against:
// the probe scores previous token, first character, word start and last space on its passage,
// and induction and same character on its repeated random run; each pattern's reach and chance
// (head_scores.h) on that text are what a head's label divides by and subtracts.
#ifndef CHARGPT_PROBE_BASELINES_H
#define CHARGPT_PROBE_BASELINES_H

#include "../format/probe_file.h"
#include "head_scores.h"

// 1 for the patterns the probe scores on its repeated run.
int probe_pattern_on_repeated(HeadPattern pattern);
// Where each of the passage's t positions' word starts, and its last space
// (head_word_starts), into word_start and last_space (t each). Returns 0, or -1 when memory
// runs out.
int probe_passage_words(const ProbeHeader *h, int *word_start, int *last_space);
// Each pattern's reach and chance on the text the probe scores it on (0 for the repeated
// run's patterns when the header has none). Returns 0, or -1 with err when memory runs out.
int probe_baselines(const ProbeHeader *h, float reach[HEAD_PATTERNS], float chance[HEAD_PATTERNS],
                    char err[ERR_LEN]);

#endif
