// One run at a time in an output directory: a lock (common/platform.h's platform_lock:
// flock(2), Windows's LockFileEx) on DIR/.train.lock, taken before anything in DIR is written
// and held until the process ends; the system releases it however the process ends, SIGKILL
// (TerminateProcess) included. The file holds the holder's process
// id, so that a run refused by it can name the one running. The file is left in place (an
// empty file once its holder has ended normally): removing it could let two runs lock two
// files of the same name. It is not part of a run: run_dir.h does not count it, and --force
// does not remove it. Under MPI, rank 0 alone takes it.
#ifndef CHARGPT_RUN_LOCK_H
#define CHARGPT_RUN_LOCK_H

#include "../common/errors.h"

#define RUN_LOCK_NAME ".train.lock"

typedef struct {
    int held;  // 0 (as zeroed): not held
    int fd;
} RunLock;

enum { RUN_LOCK_HELD = 0, RUN_LOCK_BUSY = 1, RUN_LOCK_UNSUPPORTED = 2, RUN_LOCK_FAILED = -1 };

// Takes the lock of dir (an existing directory). Returns RUN_LOCK_HELD; RUN_LOCK_BUSY when
// another process holds it (err names its pid, read from the file); RUN_LOCK_UNSUPPORTED when
// the file system has no locks (err says so; the lock is not held); RUN_LOCK_FAILED when the
// file cannot be created or opened (err).
int run_lock_take(RunLock *lock, const char *dir, char err[ERR_LEN]);
// Empties the file and releases the lock (if held).
void run_lock_release(RunLock *lock);

#endif
