// A run's output directory (--out): its files, the lock that keeps one run at a time in it,
// and whether it already holds a run, so that a new run or a resumed one does not silently
// replace another's checkpoints and log, nor newer work of its own (train --force does, on
// purpose). Nothing in it is created until the run is accepted. What a run does to it, in the
// order it does it (rank 0 alone):
//   1. before anything in it is read: when the directory and its lock file are there, the run
//      takes the lock, so a second run there is refused (out_dir_lock_if_there); nothing is
//      created;
//   2. before any work: what the run will do to it is planned (a run there, or newer work of
//      the resumed one, is refused unless --force), the temporary files a killed run left
//      beside its outputs are removed, and it is checked to take new files, or, when it is
//      not there, that it can be made (out_dir_prepare);
//   3. once every check of the run has passed: the directory is made (with its parents) and
//      locked when step 1 found no lock to take, and then planned once more, now that no other
//      run can start there (out_dir_lock, out_dir_prepare); the plan is carried out
//      (out_dir_apply) and log.csv opened (training/run_log.h).
// The functions of steps 1 to 3 return 0 or the exit status the program ends with
// (common/errors.h), with a message in err.
#ifndef CHARGPT_OUT_DIR_H
#define CHARGPT_OUT_DIR_H

#include <stddef.h>

#include "../common/errors.h"
#include "../common/platform.h"
#include "run_state.h"

// The files of a run in its --out.
typedef struct {
    char ckpt[1100];  // ckpt.safetensors: the last checkpoint
    char best[1100];  // best.safetensors: the checkpoint of the best validation loss
    char log[1100];   // log.csv
    char plot[1100];  // loss.svg
    char probe[1100];     // probe.bin: what the probe measured at each evaluation (training/probe.h)
    char timeline[1100];  // timeline.html: the page made from it (viewer/timeline.h)
} OutPaths;

void out_paths(const char *dir, OutPaths *paths);

// ----------------------------------------------------------------------------
// the lock
//
// One run at a time in an output directory: a lock (common/platform.h's platform_lock:
// flock(2), Windows's LockFileEx) on DIR/.train.lock, taken before anything in DIR is written
// and held until the process ends; the system releases it however the process ends, SIGKILL
// (TerminateProcess) included. The file holds the holder's process
// id, so that a run refused by it can name the one running. The file is left in place (an
// empty file once its holder has ended normally): removing it could let two runs lock two
// files of the same name. It is not part of a run: out_dir_find_run does not count it, and
// --force does not remove it. Under MPI, rank 0 alone takes it.
#define OUT_DIR_LOCK_NAME ".train.lock"

typedef struct {
    int held;       // 0 (as zeroed): not held
    int fd;
    int lockless;   // 1: the file system has no locks (said once): the run goes on unlocked
} OutDirLock;

// Step 1: takes the lock of dir when dir and its lock file are there, creating nothing.
// Returns 0 (lock->held 1 when taken, 0 when there was none to take; err "" or, on a file
// system without locks, a warning to print: the run goes on unlocked), EXIT_USAGE when another
// run holds it (err names its pid, read from the file), or EXIT_DATA.
int out_dir_lock_if_there(const char *dir, OutDirLock *lock, char err[ERR_LEN]);
// Makes dir and its parents, and takes its lock, creating its file. Returns as
// out_dir_lock_if_there does (the warning of a file system without locks only once).
int out_dir_lock(const char *dir, OutDirLock *lock, char err[ERR_LEN]);
// Empties the lock's file and releases the lock (if held).
void out_dir_unlock(OutDirLock *lock);

// ----------------------------------------------------------------------------
// what it holds, and what the run does to it

// The files that make a run (ckpt.safetensors, best.safetensors, a log.csv with a row) in dir,
// named in `found` ("ckpt.safetensors and log.csv"); returns how many (0: none, or no dir).
int out_dir_find_run(const char *dir, char *found, size_t size);

// What starting a run does to its --out: decided before anything in it changes
// (out_dir_plan_new, out_dir_plan_resume), done once every check of the run has passed
// (out_dir_apply), so that a run refused for any reason leaves the directory as it was.
typedef struct {
    int remove_ckpt, remove_best;  // files out_dir_apply removes
    int remove_plot;        // and loss.svg, with the timeline's probe.bin and timeline.html
    int fresh_log;          // 1: log.csv starts afresh; 0: the resumed run appends (run_log_open)
    int has_source;         // the checkpoint read from (resumed or fine-tuned), never removed:
    PlatformFileInfo source;
    char message[ERR_LEN];  // what out_dir_apply did, to print, or ""
} OutDirPlan;

enum { OUT_DIR_REFUSED = 1 };  // the plan functions' answer when the run needs --force

// A new run in dir (source: the checkpoint of --init-from, or NULL). A dir that holds a run
// (out_dir_find_run) is refused unless force, which replaces it: its checkpoints, loss.svg,
// probe.bin and timeline.html are removed and log.csv starts afresh. The refusal says how the
// run there can be continued: --resume DIR/ckpt.safetensors, or DIR/best.safetensors when it
// has only that, or not at all when it has only log.csv (a run stopped before its first
// save). Returns 0, OUT_DIR_REFUSED with the message in err, or -1 with err.
int out_dir_plan_new(const char *dir, const char *source, int force, OutDirPlan *plan, char err[ERR_LEN]);
// A run resumed from `checkpoint` (at `step`) into dir. Refused unless force (OUT_DIR_REFUSED,
// the message in err) when
// - a checkpoint in dir (ckpt.safetensors, best.safetensors) is of another run (its identity,
//   training/run_state.h), or cannot be read: force replaces that run as out_dir_plan_new does;
// - dir has no checkpoint but a log.csv with rows, and is not the checkpoint's directory (the
//   log of a run that cannot be told apart): force replaces it;
// - dir's newest checkpoint (ckpt.safetensors, else best.safetensors) is of the same run at a
//   later step: the message names it (and best.safetensors when it is later too) and
//   log.csv's rows after `step`; force drops them (those checkpoints are removed). A
//   best.safetensors alone later than the resumed ckpt.safetensors (saved at an evaluation
//   after the last save of ckpt.safetensors, or just before a kill) is left: the resumed run
//   makes those steps again.
// Otherwise the run goes on in dir; log.csv's rows after `step` (of a run stopped after its
// last save) are dropped by run_log_open, and the message says so. Returns 0,
// OUT_DIR_REFUSED or -1 with err.
int out_dir_plan_resume(const char *dir, const char *checkpoint, long step, int force, OutDirPlan *plan,
                        char err[ERR_LEN]);
// Step 2 for the run of options o, resumed at `step` or new: fills plan (nothing is changed
// yet) and *removed with the temporary files removed (to say so, also when the directory then
// takes no files). A directory that is not there is checked to be one that can be made (its
// nearest existing parent a directory that takes new entries). Returns 0, EXIT_USAGE when the
// run needs --force, or EXIT_DATA.
int out_dir_prepare(const TrainOptions *o, long step, const OutPaths *paths, OutDirPlan *plan, int *removed,
                    char err[ERR_LEN]);
// The nearest of dir and its parents that is there (dir itself when it is), into existing:
// where the disk that will hold dir is asked about before dir is made.
void out_dir_existing_parent(const char *dir, char *existing, size_t size);
// Step 3: removes the files the plan names (never its source). Returns 0, or -1 with err.
int out_dir_apply(const char *dir, const OutDirPlan *plan, char err[ERR_LEN]);

#endif
