// What ./train does for the timeline, on rank 0: the probe file (probe.bin) of its --out,
// the samples, and the timeline page (timeline.html), with one call at each place of the run:
//   run_probe_prepare  before anything in --out changes: what is probed (a new run's, from
//                      the options; a resumed run's, from its probe file's header), so that
//                      a bad --probe or --sample-prompt is refused while nothing is changed;
//   run_probe_open     once the run starts: the probe file made anew (a new run, --init-from)
//                      or continued (--resume: the records after the checkpoint's step, and
//                      any torn tail, are cut, so that the timeline goes on without a
//                      duplicate or a gap; none starts anew; a damaged one, or one whose run
//                      cannot be told, is moved aside first; another run's needs --force);
//   run_probe_step     after each step, before its checkpoint is saved (so that a record
//                      the checkpoint's step has is never lost to a kill, and one it lacks is
//                      cut on resume): the probe at an evaluation, the sample at an
//                      evaluation or every --sample-every steps, appended as one record;
//   run_probe_page     after the step's report: timeline.html rewritten, atomically.
// A write that fails is reported once and ends the probing, never the training.
#ifndef CHARGPT_RUN_PROBE_H
#define CHARGPT_RUN_PROBE_H

#include <stdio.h>

#include "../format/probe_file.h"
#include "loss_history.h"
#include "probe.h"
#include "run_state.h"

#define PROBE_FILE "probe.bin"
#define SAMPLE_TEMPERATURE 0.8f  // ./generate's default

typedef struct {
    int active;               // probing in this run (rank 0, without --no-probe)
    int resuming;             // a resumed run
    int continued;            // the header came from the directory's probe file (a resume)
    const char *set_aside;    // the directory's probe file is moved aside under this suffix, then
    char damage[ERR_LEN];     // started anew: what is wrong with it
    ProbeHeader header;
    ProbeFile file;
    Probe probe;
    ProbeRecord record;
    char path[1100];          // the probe file
    char page_path[1100];     // timeline.html
    int newline;              // the vocabulary's newline token, or -1
    long sample_every;
    int sampled;              // the last record has a sample not printed yet
    int failed;               // a write failed: the rest of the run writes no records
    double seconds;           // spent probing, sampling and writing the file and the page, in all;
    double probe_s, sample_s; // of which in the probe's passes and in the samples
    long probes, samples;     // evaluations probed, samples written
} RunProbe;

// Decides what a run probes. A new run (or --init-from) makes it from the options (probe.h);
// a resumed one (resumed_run_id: its checkpoint's train.run_id, "" when it has none; NULL for
// a new run) reads the header of its --out's probe file when that holds the same run (its
// train.run_id), else makes it anew. Nothing is written. Returns 0; -1 with err for bad data;
// -2 with err for bad usage (probe_header_make, or another run's probe file without --force).
int run_probe_prepare(RunProbe *rp, const TrainOptions *o, const GPTConfig *c, const Vocab *vocab,
                      const Dataset *ds, const char *resumed_run_id, char err[ERR_LEN]);
// The memory the probe takes beside training (0 when inactive).
double run_probe_memory(const RunProbe *rp, const GPTConfig *c);
// Opens the probe file for a run at `step` of model, writing what it did into message (or "").
// Returns 0, or -1 with err.
int run_probe_open(RunProbe *rp, GPT *model, long step, char *message, size_t size, char err[ERR_LEN]);

// One step's figures.
typedef struct {
    long step;
    int evaluated;            // an evaluation at this step (or the run's start, step 0)
    float train_loss, val_loss, lr, grad_norm, clipped;  // NAN where unknown
    const float *update_ratio;  // (groups), or NULL (unknown)
} RunProbeStep;
// Probes and samples what the step calls for and appends the record. Returns 0 (also when
// there was nothing to do or probing has ended), or -1 with err after a failure, which ends
// the probing.
int run_probe_step(RunProbe *rp, const RunProbeStep *s, char err[ERR_LEN]);
// Prints the sample the last record holds, once, indented, after a line naming its step.
void run_probe_print_sample(RunProbe *rp, FILE *fp);
// Rewrites timeline.html from the probe file and the loss history. Returns 0, or -1 with err.
int run_probe_page(RunProbe *rp, const LossHistory *losses, const char *title, char err[ERR_LEN]);
// What the probe cost, for the run's last lines: "the probe 31 ms, the sample 420 ms and the
// files 12 ms an evaluation".
void run_probe_describe_cost(const RunProbe *rp, char *text, size_t size);
void run_probe_free(RunProbe *rp);

#endif
