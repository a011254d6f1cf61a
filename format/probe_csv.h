// The heads' scores that a run's probe file keeps (probe_file.h), as CSV for a spreadsheet or
// a plotting script: one row per head at each probed step,
//   step,layer,head,previous_token,induction,first_character,same_character,word_start,
//   last_space,entropy_bits,importance_bits
// the six patterns' scores of analysis/head_scores.h (the share of the head's attention that
// falls where the pattern says), the attention's entropy in bits, and the probe passage's loss
// change in bits per character when the head alone is knocked out. A value the file's layout did
// not keep (the newer patterns in version 1, importance before version 3) is left empty.
// `./generate --timeline RUN_DIR --csv FILE` writes it.
#ifndef CHARGPT_PROBE_CSV_H
#define CHARGPT_PROBE_CSV_H

#include "../common/errors.h"

// Writes csv_path from the probe file at probe_path, replacing a file there only with replace
// 1 (else ATOMIC_FILE_EXISTS with err), never half-written (atomic_file.h). The rows end at a
// torn or damaged record (*torn 1 then). Returns 0 with the rows written in *rows, or -1 (or
// ATOMIC_FILE_EXISTS) with err.
int probe_csv_write(const char *probe_path, const char *csv_path, int replace, long *rows, int *torn,
                    char err[ERR_LEN]);

#endif
