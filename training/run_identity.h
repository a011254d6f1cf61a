// Which run a checkpoint belongs to, so that --resume never writes one run's files over
// another's (training/run_dir.h).
//
// A run gets a random identity when it starts, a new run or --init-from alike: 16 hex digits
// kept as `train.run_id` in every checkpoint it saves and by every run that resumes one of
// them. Checkpoints from before train.run_id have none; a run resumed from one gets a new
// identity, and two checkpoints of which one lacks it are told apart by the corpus
// fingerprint (when both have one) and by every option that shapes the run's steps and that
// a resume cannot change: the model's shape and dropout, the seed, the batch size, the
// validation split, the optimizer's (lr, min lr, weight decay, grad clip, betas, eps), the
// vocabulary's (min char count, keep CR, grow vocab, skip unknown) and the checkpoint
// --init-from started from; and the learning-rate schedule (warm-up, decay steps: --steps's
// by default) when both run it from the same step (a resume may start a new one there). Two
// runs that agree on all of those made the same steps, so taking them for one run loses
// nothing. (same_run.h compares the options of one run's processes, all of them.)
#ifndef CHARGPT_RUN_IDENTITY_H
#define CHARGPT_RUN_IDENTITY_H

#include <stddef.h>

#include "../common/errors.h"
#include "../data/corpus_fingerprint.h"

#define RUN_ID_LEN 17  // 16 hex digits and the NUL

#define RUN_LINEAGE_KEYS 26  // the metadata keys of the options above
#define RUN_LINEAGE_VALUE 1024

typedef struct {
    char run_id[RUN_ID_LEN];                   // "" in checkpoints from before train.run_id
    char fingerprint[CORPUS_FINGERPRINT_LEN];  // "" before train.corpus_fingerprint
    char lineage[RUN_LINEAGE_KEYS][RUN_LINEAGE_VALUE];  // their values ("" where a key is absent)
    long step;          // state.step
} RunIdentity;

// A new identity: 8 bytes from /dev/urandom (else the clock and the process id, mixed).
void run_id_new(char id[RUN_ID_LEN]);
// 1 when text is an identity run_id_new could make (16 lowercase hex digits).
int run_id_valid(const char *text);

// Reads a checkpoint's identity from its header alone (the metadata; memory in proportion to
// the header, whatever the tensors weigh). The file must be a regular file. Returns 0, or -1
// with err.
int run_identity_read(const char *path, RunIdentity *id, char err[ERR_LEN]);
// 0 when a and b are checkpoints of the same run; else 1, with how b differs from a in why
// ("has train.run_id 0123456789abcdef, not ...", "was trained on another corpus (...)").
int run_identity_compare(const RunIdentity *a, const RunIdentity *b, char *why, size_t size);

#endif
