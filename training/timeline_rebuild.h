// ./generate --timeline RUN_DIR: a training run's timeline.html made anew from its directory
// (its probe.bin and log.csv), or with --csv its heads' scores as CSV: the stages of a job of
// ./generate (generation/job.h), here and not in generation/ for they take the run directory's
// lock (training/out_dir.h) and read the run's log (training/run_log.h).
#ifndef CHARGPT_TIMELINE_REBUILD_H
#define CHARGPT_TIMELINE_REBUILD_H

#include "../common/errors.h"
#include "../generation/job.h"
#include "out_dir.h"

// --timeline RUN_DIR: the run's timeline.html made anew from its probe.bin and log.csv, as
// ./train writes it at each evaluation (viewer/timeline.h), while no run holds the directory's
// lock (training/out_dir.h; it is held meanwhile, in *lock), with a log.csv of the same run
// (the figures of its rows at the probed steps: training/run_log.h); an existing page needs
// --force. Returns 0; EXIT_USAGE or EXIT_DATA with err.
int rebuild_timeline(const Job *j, OutDirLock *lock, char err[ERR_LEN]);
// --timeline RUN_DIR --csv FILE: the heads' scores and importance at every probed step of the
// run's probe.bin (format/probe_csv.h); an existing FILE needs --force. Returns 0; EXIT_USAGE
// or EXIT_DATA with err.
int timeline_csv(const Job *j, char err[ERR_LEN]);

#endif
