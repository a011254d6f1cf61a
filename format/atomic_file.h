// Writing a file so that readers see the old file or the new one, never a torn one: write a
// temporary file in the same directory, fsync it, rename it over the target; or, for an
// output that must not replace anything (an output written without --force), rename it to
// the target only while the target is still absent (common/platform.h's platform_rename_new),
// so that of processes racing to write one file exactly one publishes it.
//
// The temporary file is called <target>.tmp.<pid>.<n>: the process id says whose it is, so a
// later run can remove those a killed run left (atomic_file_remove_stale), and a process can
// remove its own when it exits early (atomic_file_remove_open). Where that name would pass
// the file system's NAME_MAX (a target's name of more than about 240 bytes), the target's
// name in it is cut so that it is NAME_MAX bytes long.
#ifndef CHARGPT_ATOMIC_FILE_H
#define CHARGPT_ATOMIC_FILE_H

#include <stdio.h>

#include "../common/errors.h"

typedef struct {
    FILE *fp;
    char path[4096];
    char tmp_path[4096];
    int slot;  // in this process's table of open temporary files
} AtomicFile;

// Opens a temporary file beside `path` for writing. Returns 0, or -1 with err.
int atomic_file_open(AtomicFile *f, const char *path, char err[ERR_LEN]);
// Flushes, fsyncs, closes and renames over the target, then fsyncs the directory.
// On any failure the temporary file is removed and the target is untouched.
int atomic_file_commit(AtomicFile *f, char err[ERR_LEN]);
// The same, publishing the file only if nothing is at the target yet: returns
// ATOMIC_FILE_EXISTS with err naming the target when something is (the temporary file is
// removed, whatever is at the target kept).
int atomic_file_commit_new(AtomicFile *f, char err[ERR_LEN]);
#define ATOMIC_FILE_EXISTS (-2)
// Gives up: closes and removes the temporary file.
void atomic_file_abort(AtomicFile *f);

// A run's files that are written in place (log.csv, probe.bin) are opened never through a
// symbolic link, so that a link named like one cannot redirect a write out of the run's
// directory: open(2)'s O_NOFOLLOW, which fails with ELOOP at a link. no_follow_open takes
// open's flags (O_CLOEXEC added) and returns a descriptor, or -1 with errno; no_follow_fopen
// takes fopen's modes "a" and "w" (with or without "b") and returns a stream, or NULL with
// errno. A run's files are read, never through a link either, by common/input_file.h's
// input_file_open with O_NOFOLLOW, which also refuses what is not a regular file.
int no_follow_open(const char *path, int flags);
FILE *no_follow_fopen(const char *path, const char *mode);

// Removes the temporary files of `path` whose process no longer runs. Returns how many were
// removed, or -1 with err when the directory cannot be read.
int atomic_file_remove_stale(const char *path, char err[ERR_LEN]);
// Removes the temporary files this process has open. Async-signal-safe: meant for exit
// handlers and handlers of fatal signals.
void atomic_file_remove_open(void);

#endif
