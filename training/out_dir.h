// What a run does to its output directory (--out), in the order it does it (rank 0 alone):
//   1. before anything in it is read or written: the directory is made (with its parents) and
//      the run takes its lock (training/run_lock.h), so a second run there is refused;
//   2. before any work: what the run will do to it is planned (training/run_dir.h: a run there,
//      or newer work of the resumed one, is refused unless --force), the temporary files a
//      killed run left beside its outputs are removed, and it is checked to take new files;
//   3. once every check of the run has passed: the plan is carried out (run_dir_apply) and
//      log.csv opened (training/run_log.h).
// The functions return 0 or the exit status the program ends with (common/errors.h), with a
// message in err.
#ifndef CHARGPT_OUT_DIR_H
#define CHARGPT_OUT_DIR_H

#include "run_dir.h"
#include "run_lock.h"
#include "run_state.h"

// The files of a run in its --out.
typedef struct {
    char ckpt[1100];  // ckpt.safetensors: the last checkpoint
    char best[1100];  // best.safetensors: the checkpoint of the best validation loss
    char log[1100];   // log.csv
    char plot[1100];  // loss.svg
    char probe[1100];     // probe.bin: what the probe measured at each evaluation (training/run_probe.h)
    char timeline[1100];  // timeline.html: the page made from it (viewer/timeline.h)
} OutPaths;

void out_paths(const char *dir, OutPaths *paths);

// Step 1: makes dir and its parents, and takes its lock. Returns 0 (with err "" or, on a file
// system without locks, a warning to print: the run goes on unlocked), EXIT_USAGE when
// another run holds the lock (err names its pid), or EXIT_DATA.
int out_dir_lock(const char *dir, RunLock *lock, char err[ERR_LEN]);
// Step 2 for the run of options o, resumed at `step` or new: fills plan (nothing is changed
// yet) and *removed with the temporary files removed (to say so, also when the directory then
// takes no files). Returns 0, EXIT_USAGE when the run needs --force, or EXIT_DATA.
int out_dir_prepare(const TrainOptions *o, long step, const OutPaths *paths, RunDirPlan *plan, int *removed,
                    char err[ERR_LEN]);

#endif
