// Writing a file so that readers see the old file or the new one, never a torn one:
// write a temporary file in the same directory, fsync it, rename it over the target.
#ifndef CHARGPT_ATOMIC_FILE_H
#define CHARGPT_ATOMIC_FILE_H

#include <stdio.h>

#include "../model/gpt.h"

typedef struct {
    FILE *fp;
    char path[4096];
    char tmp_path[4096];
} AtomicFile;

// Opens a temporary file beside `path` for writing. Returns 0, or -1 with err.
int atomic_file_open(AtomicFile *f, const char *path, char err[ERR_LEN]);
// Flushes, fsyncs, closes and renames over the target, then fsyncs the directory.
// On any failure the temporary file is removed and the target is untouched.
int atomic_file_commit(AtomicFile *f, char err[ERR_LEN]);
// Gives up: closes and removes the temporary file.
void atomic_file_abort(AtomicFile *f);

#endif
