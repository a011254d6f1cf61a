// The output files the programs write atomically (atomic_file.h), whose paths are checked
// before the work. (Standard output's writes are checked by common/program.h.)
#ifndef CHARGPT_OUTPUT_H
#define CHARGPT_OUTPUT_H

#include "../common/errors.h"

// Before the work whose result goes to path: removes the temporary files that killed runs
// left beside it (atomic_file_remove_stale; *removed counts them) and checks that it can be
// written: it is not a directory, device or other special file, and its directory takes new
// files. Returns 0, or -1 with err naming path and the problem.
int output_prepare(const char *path, int *removed, char err[ERR_LEN]);

#endif
