// The output directory of a run: whether it already holds one, so that a new run or a resumed
// one does not silently replace another's checkpoints and log, nor newer work of its own
// (train --force does, on purpose).
#ifndef CHARGPT_RUN_DIR_H
#define CHARGPT_RUN_DIR_H

#include <stddef.h>

#include "../common/platform.h"
#include "../model/gpt.h"

// The files that make a run (ckpt.safetensors, best.safetensors, a log.csv with a row) in dir,
// named in `found` ("ckpt.safetensors and log.csv"); returns how many (0: none, or no dir).
int run_dir_find_run(const char *dir, char *found, size_t size);

// What starting a run does to its --out: decided before anything in it changes
// (run_dir_plan_new, run_dir_plan_resume), done once every check of the run has passed
// (run_dir_apply), so that a run refused for any reason leaves the directory as it was.
typedef struct {
    int remove_ckpt, remove_best;  // files run_dir_apply removes
    int remove_plot;        // and loss.svg, with the timeline's probe.bin and timeline.html
    int fresh_log;          // 1: log.csv starts afresh; 0: the resumed run appends (run_log_open)
    int has_source;         // the checkpoint read from (resumed or fine-tuned), never removed:
    PlatformFileInfo source;
    char message[ERR_LEN];  // what run_dir_apply did, to print, or ""
} RunDirPlan;

enum { RUN_DIR_REFUSED = 1 };  // the plan functions' answer when the run needs --force

// A new run in dir (source: the checkpoint of --init-from, or NULL). A dir that holds a run
// (run_dir_find_run) is refused unless force, which replaces it: its checkpoints, loss.svg,
// probe.bin and timeline.html are removed and log.csv starts afresh. The refusal says how the
// run there can be continued: --resume DIR/ckpt.safetensors, or DIR/best.safetensors when it
// has only that, or not at all when it has only log.csv (a run stopped before its first
// save). Returns 0, RUN_DIR_REFUSED with the message in err, or -1 with err.
int run_dir_plan_new(const char *dir, const char *source, int force, RunDirPlan *plan, char err[ERR_LEN]);
// A run resumed from `checkpoint` (at `step`) into dir. Refused unless force (RUN_DIR_REFUSED,
// the message in err) when
// - a checkpoint in dir (ckpt.safetensors, best.safetensors) is of another run
//   (run_identity.h), or cannot be read: force replaces that run as run_dir_plan_new does;
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
// RUN_DIR_REFUSED or -1 with err.
int run_dir_plan_resume(const char *dir, const char *checkpoint, long step, int force, RunDirPlan *plan,
                        char err[ERR_LEN]);
// Removes the files the plan names (never its source). Returns 0, or -1 with err.
int run_dir_apply(const char *dir, const RunDirPlan *plan, char err[ERR_LEN]);

// Where a resumed run finds its corpus: the path saved in its checkpoint, or, when that is a
// relative path the current directory does not have, the same path beside the checkpoint
// (then the file's name alone there). Writes the path to use into out (the saved one when
// none of the places has it, for the error message that follows).
void run_dir_find_corpus(const char *saved, const char *checkpoint_path, char *out, size_t size);

#endif
