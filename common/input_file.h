// Opening a file that must be a regular file to be read (a checkpoint, a run's log.csv or
// probe.bin, a prompt file, a corpus named on its own) without waiting: open(2) with
// O_NONBLOCK, so that a FIFO, whose open would wait for a writer for ever, is found to be one
// and refused at once; the flag is cleared once the file is known to be a regular file.
#ifndef CHARGPT_INPUT_FILE_H
#define CHARGPT_INPUT_FILE_H

#include <stdio.h>
#include <sys/stat.h>

#include "errors.h"

// Opens path read-only, with flags added (0, or O_NOFOLLOW for a run's own files, which are
// never read through a symbolic link: format/atomic_file.h). Returns its descriptor, with *st
// its status; -1 with errno when it cannot be opened (ENOENT: there is no such file; ELOOP:
// a link, with O_NOFOLLOW); -2 when it is not a regular file (*st says what it is:
// input_file_kind).
int input_file_open(const char *path, int flags, struct stat *st);
// What st is, in messages: "a directory", "a FIFO", "a device", "a socket", else "not a
// regular file".
const char *input_file_kind(const struct stat *st);
// input_file_open as a stream ("rb"). Returns NULL with err "cannot read PATH: why" ("it is
// a symbolic link" with O_NOFOLLOW), or "PATH is a FIFO, not a regular file"; *missing (when
// not NULL) is 1 when there is no such file, else 0.
FILE *input_file_fopen(const char *path, int flags, int *missing, char err[ERR_LEN]);

#endif
