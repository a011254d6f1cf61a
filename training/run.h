// A training run: what ./train's main (train.c) sets up, trains and reports on, and the stages
// it goes through, each in the file of its job. A stage returns 0 or the exit status the
// program ends with (common/errors.h), with a message in err; it prints what the run says on
// standard output (the other processes' goes to /dev/null: rank 0 alone reports), and leaves
// the meetings of the processes (dist.h) to main. This header holds the run and the list of
// its stages; each stage's file includes what else it uses.
#ifndef CHARGPT_RUN_H
#define CHARGPT_RUN_H

#include "../common/errors.h"
#include "../data/batch.h"
#include "../data/corpus.h"
#include "../data/vocab.h"
#include "../format/checkpoint.h"
#include "../model/adamw.h"
#include "../model/gpt.h"
#include "data_parallel.h"
#include "options.h"
#include "out_dir.h"
#include "probe.h"
#include "progress.h"
#include "run_log.h"
#include "run_state.h"
#include "run_text.h"

// What main sets up, trains and reports on; train.c frees what it holds whichever way the
// program ends.
typedef struct {
    TrainOptions o;
    GivenOptions given;
    TrainState state;
    int resuming, initializing;  // --resume, --init-from
    Checkpoint ck;               // --resume's or --init-from's
    OutPaths paths;              // the files in --out
    OutDirPlan out_plan;         // what the run does to --out once every check has passed
    OutDirLock lock;             // of --out, held by rank 0
    Corpus corpus;               // its text, then its tokens
    char data_name[1100];        // --data's paths for messages ("books/, notes.txt")
    double text_bytes;           // the text's memory, as read
    char fingerprint[CORPUS_FINGERPRINT_LEN];
    Vocab vocab;
    Dataset ds;                  // the train and validation splits of the tokens
    RunTask task;                // --task's text (its validation split), when the run has a task
    double accuracy;             // a task's accuracy at the last evaluation (NAN: none yet)
    GPTConfig config;
    GPT model;
    AdamW opt;
    DataParallel dp;
    int *inputs, *targets;       // a batch (B, T)
    RunLog log;
    LossHistory losses;          // the loss plot's points
    char plot_title[1200];
    int plot_written;
    int tty;                     // stdout a terminal: the progress line is rewritten in place
    ProgressReport report;
    char progress_line[600];     // the step's, composed before its checkpoint, printed after it
    float lr;                    // the last step's learning rate
    float grad_norm;             // the last step's gradient norm before clipping
    double grad_norm_sum;        // since the last report: the steps' gradient norms
    int clipped_steps;           // and how many of those steps were clipped
    RunProbe probe;              // rank 0's probe file, samples and timeline page
    double run_start, elapsed_before;  // when training started; the time of the steps before it
    // lent by the program (train.c) from common/program.h, which library code does not use:
    double (*memory_limit)(const TrainOptions *o, const char **source);  // the memory the run may
                                 // take, and where that figure comes from (0: unknown, no limit)
    void (*flush_progress)(void);  // standard output flushed; once training has started, a failed
                                   // write is a warning
} Run;

// ----------------------------------------------------------------------------
// setting up the run: nothing in --out changes until every check has passed

// training/options.c: the run's options. A resumed run's are its checkpoint's (with those
// --resume may change), a fine-tuning run's model is its checkpoint's; the run's identity
// (training/run_state.h) is its checkpoint's when it resumes one that has it, else new. --out's
// lock is taken (rank 0) before the checkpoint is read when its file is there; nothing is
// created.
int set_up_options(Run *r, char err[ERR_LEN]);
// training/out_dir.c: before any work (rank 0), what the run will do to --out is planned,
// nothing changed yet.
int set_up_out_dir(Run *r, char err[ERR_LEN]);
// training/run_text.c: corpus -> vocabulary -> tokens -> train/val split; the text takes 4
// bytes a character (its code points, then its tokens in their place), and no more than the
// memory limit leaves beside the checkpoint being resumed or fine-tuned. A stop signal ends
// the reading at once (stop_before_the_run). A task's run instead makes its vocabulary and
// validation split (its training batches are made at each step, take_step).
int set_up_text(Run *r, char err[ERR_LEN]);
// training/run_state.c: every process has read its corpus and checkpoint, which must be the
// same everywhere, with the same options, before any collective sized by them. Collective.
int check_same_run(Run *r, char err[ERR_LEN]);
// training/run_model.c: the sizes the run is planned from: the model's config (from the
// options and the vocabulary), checked, and the batch's split over the processes and
// micro-batches (r->dp: training/data_parallel.h).
int set_up_sizes(Run *r, char err[ERR_LEN]);
// training/run_timeline.c: what the timeline probes (rank 0), decided before anything in --out
// changes: a new run's from the options (reading --probe FILE), a resumed run's from the
// header of its --out's probe file; and the early probes' schedule (every process).
int set_up_probe(Run *r, char err[ERR_LEN]);
// training/run_model.c: the memory the run needs (this process's share: activations of one
// micro-batch's rows, moments of its shard), computed from the sizes set up above, to be
// checked before anything is allocated.
void plan_memory(const Run *r, GPTMemoryPlan *plan);
// training/run_report.c: what the run trains: its text, vocabulary and splits (or its task),
// the model and its precision, and its processes and micro-batches.
void say_what_the_run_trains(const Run *r);
// training/out_dir.c: what the timeline adds to probe.bin (training/probe.h), within the free
// space of the disk that will hold --out (rank 0), checked as the memory is, before anything is
// written.
int check_timeline_disk(Run *r, char err[ERR_LEN]);
// training/run_model.c: the model (the checkpoint's, or new weights from the seed), its
// activations, the optimizer and the batch; failing to allocate what the plan allowed is
// also "too large".
int set_up_model(Run *r, char err[ERR_LEN]);
// training/run_report.c: what a fine-tuning or resumed run starts from, what the learning
// rate does over the run's steps, with a warning when the run ends inside its warm-up, and
// what the timeline will probe.
void say_how_the_run_starts(const Run *r);
// training/out_dir.c: once every check has passed: --out made and locked when it had no lock
// to take (and planned once more under the lock), changed as planned, log.csv and probe.bin
// opened (rank 0; a resumed run's rows and records after its step dropped), and the loss
// plot's points so far read.
int start_out_dir(Run *r, char err[ERR_LEN]);
// training/run_report.c: the report's counts and the run's clock start; whether the progress
// line is rewritten in place (standard output a terminal, one process).
void start_progress(Run *r);
// training/run_timeline.c: a new run's timeline starts with the untrained model, probed at
// step 0 (its time counted for the ETA).
void start_timeline(Run *r);

// ----------------------------------------------------------------------------
// training: step, evaluate, report, save

// training/step.c: one optimizer step on a batch of the training split (a task's: the step's
// rows, data/task.h): forward, backward, gradient clipping and AdamW over the processes and
// micro-batches. A loss or gradient norm that is not finite (the same on every process) is
// said (rank 0) and returns EXIT_NONFINITE: the run ends, the last checkpoint as it was.
int take_step(Run *r);
// training/evaluation.c: every --eval-every steps and at the last, the loss on the validation
// batches; a new best is to be saved to best.safetensors (*best). Returns 1 when it evaluated.
// A stop signal abandons it (*abandoned 1: every process abandons it together, and says so).
int evaluate(Run *r, int last, int *abandoned, const char **best);
// training/run_timeline.c: the timeline's record of the step (rank 0), before its checkpoint
// is saved: the probe at an evaluation or an early step of the schedule, with the
// update-to-weight ratios (collective under ZeRO); the sample when due. Returns 1 when it
// probed. A failure is reported and ends the probing, not the run.
int probe_step(Run *r, int evaluated);
// training/run_timeline.c: timeline.html rewritten (rank 0) after an evaluation's report; a
// failure is only a warning.
void draw_timeline(Run *r);
// training/run_report.c: the step's report. The progress line, rewritten every step on a
// terminal (fitted to its width), and when a report is due (every --log-every steps, at an
// evaluation, the last step or a stop) kept, with a log.csv row and a point of the loss plot:
// the mean loss and gradient norm since the last report, and how many of its steps were
// clipped; after an evaluation loss.svg, and after a probe timeline.html, redrawn (rank 0). The row is
// written here, before the step's checkpoint; the line is composed here and printed after the
// checkpoint (print_report): at a Ctrl-C mpirun stops reading its processes' output, and a
// print blocked on that must not keep the checkpoint from being saved.
int report_step(Run *r, int due, int evaluated, int probed, char err[ERR_LEN]);
// training/run_state.c: writes best.safetensors and ckpt.safetensors when asked (paths NULL
// or not). Collective.
int save_checkpoints(Run *r, const char *best, const char *ckpt, char err[ERR_LEN]);
// training/run_report.c: the progress line report_step composed, a task's accuracy after an
// evaluation, then the sample made at the step, if any.
void print_report(Run *r, int due, int evaluated);
// training/run_log.c: log.csv closed (rank 0).
int close_log(Run *r, char err[ERR_LEN]);
// training/run_report.c: stopped by a signal after saving: says how to continue; returns the
// exit status, 128 + the signal.
int stopped(const Run *r, int signal);

// ----------------------------------------------------------------------------
// the end of the run

// training/run_report.c: "done: ...", then the files this run wrote, and what the timeline
// cost.
void print_summary(const Run *r);
// training/evaluation.c: the loss of the whole validation split, each character once, shared
// by the processes; a stop signal ends it (exit 128 + the signal). Returns the exit status.
// Collective.
int whole_validation(Run *r);

#endif
