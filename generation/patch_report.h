// --patch CLEAN CORRUPTED: activation patching (analysis/patching.h) of two texts, and its
// table on a stream: the two runs' answers and logit differences, the share each head's
// output restores (layers in rows, heads in columns), the heads that restore the most, and
// the share the residual stream restores at each position (positions in rows, the stream
// entering each block and ln_f in columns).
#ifndef CHARGPT_PATCH_REPORT_H
#define CHARGPT_PATCH_REPORT_H

#include <stdio.h>

#include "../analysis/patching.h"

// Prints p's table; chars (V) the vocabulary's characters, clean and corrupted (t) the texts.
void patch_report_print(FILE *out, const Patching *p, const uint32_t *chars, const int *clean, const int *corrupted);

#endif
