// The files a job of ./generate writes, checked before any work: each one new unless --force
// replaces it, writable, none named twice, and the temporary files that killed runs left
// beside them removed.
#ifndef CHARGPT_OUTPUTS_H
#define CHARGPT_OUTPUTS_H

#include "../common/errors.h"
#include "options.h"

// A file that is there already is replaced only with --force (EXIT_USAGE with err without it);
// what is not a regular file output_prepare refuses. Returns 0 or EXIT_USAGE.
int refuse_existing(const char *flag, const char *path, int force, char err[ERR_LEN]);
// Before the model runs: the files the job will write are new (or --force was given) and can
// be written, and the temporary files that killed runs left beside them are removed (a note
// on stderr says how many). Returns 0; EXIT_USAGE or EXIT_DATA with err.
int prepare_outputs(const GenerateOptions *o, char err[ERR_LEN]);

#endif
