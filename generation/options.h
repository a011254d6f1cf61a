// ./generate's options: what each one holds, the table getopt_long reads, --help, and what the
// options given allow together. generate.c reads them from the command line (the values'
// ranges: common/program.h) and holds their defaults.
#ifndef CHARGPT_GENERATE_OPTIONS_H
#define CHARGPT_GENERATE_OPTIONS_H

#include <getopt.h>
#include <stdint.h>
#include <stdio.h>

#include "../common/errors.h"
#include "../data/encoding.h"
#include "../kernels/kernels.h"
#include "sampler.h"

#define PROMPT_MAX_BYTES (1 << 20)   // a longer prompt file is refused
#define MAX_SAMPLES (1 << 16)        // --num-samples may ask for at most this many
#define MAX_ATTENTION_FILES 16       // --attention may be given at most this many times
#define MAX_EXPORT_FILES 4           // --export may be given at most this many times

typedef struct {
    const char *checkpoint;
    const char *prompt;       // from the command line, or NULL
    const char *prompt_file;  // "-" for stdin, or NULL
    const char *attention[MAX_ATTENTION_FILES];  // output paths (--attention, each time given)
    int num_attention;
    const char *score;        // text to score ("-" for stdin), or NULL
    const char *surprisal;    // with score: the per-character CSV, or NULL
    const char *ablate;       // --ablate L.H[,L.H...]: the heads knocked out, or NULL
    const char *ablate_mean;  // --ablate-mean L.H[,...]: the heads replaced by their mean, or NULL
    const char *mean_over;    // --mean-over FILE: the text the means are taken over, or NULL
    const char *patch;        // --patch CLEAN: the clean text (the corrupted one is the argument after), or NULL
    char decoding_flag[40];   // the first option given that only decoding text uses, or ""
    int score_task;           // --score-task: the task's validation split scored
    long rows;                // --rows: its rows scored (0: as many as the run's evaluations read)
    char sampling_flag[40];   // the first option given that only sampling uses, or ""
    long max_new;
    SamplerConfig sampler;
    uint64_t seed;
    int stride;               // the window's move past block_size (generation/window.h)
    int num_samples;
    int threads;
    int use_cache;
    int skip_unknown;
    double max_memory;        // bytes generation may plan to use; 0: the machine's available memory
    Precision precision;      // of the matrix products
    TextEncoding encoding;    // of the text --score reads
    int encoding_given;
    const char *timeline;     // --timeline RUN_DIR: rebuild its timeline.html, or NULL
    const char *circuits;     // --circuits FILE: the weights' circuits written there, or NULL
    char circuits_other[40];  // the first option given that --circuits does not take, or ""
    const char *csv;          // --csv FILE: with --timeline, its heads' scores as CSV instead
    int force;                // --force: the files written may replace files that are there
    const char *exports[MAX_EXPORT_FILES];  // --export: the model's files (generation/export.h)
    int num_exports;
    const char *logits;       // --logits FILE.json, or NULL
    char other_flag[40];      // the first option given that --timeline and --export do not take, or ""
} GenerateOptions;

// The options beyond the letters of the short ones (getopt_long's values).
enum {
    GEN_OPT_NO_CACHE = 256, GEN_OPT_ATTENTION, GEN_OPT_THREADS, GEN_OPT_SKIP_UNKNOWN, GEN_OPT_MAX_MEMORY,
    GEN_OPT_STRIDE, GEN_OPT_NUM_SAMPLES, GEN_OPT_SCORE, GEN_OPT_SURPRISAL, GEN_OPT_PRECISION, GEN_OPT_ENCODING,
    GEN_OPT_TIMELINE, GEN_OPT_FORCE, GEN_OPT_ABLATE, GEN_OPT_SCORE_TASK, GEN_OPT_ROWS, GEN_OPT_CSV, GEN_OPT_CIRCUITS,
    GEN_OPT_ABLATE_MEAN, GEN_OPT_MEAN_OVER, GEN_OPT_PATCH, GEN_OPT_EXPORT, GEN_OPT_LOGITS, GEN_OPT_COUNT
};

// ./generate's options, for getopt_long (-h, --help: 'h').
extern const struct option generate_long_options[];

// --help, with the defaults d.
void generate_usage(FILE *f, const GenerateOptions *d);
// Option c, given as name, noted as the first given of each kind that a job refuses, for its
// message: the first that only sampling uses, that only decoding text uses, that --timeline
// and --export do not take, and that --circuits does not take.
void generate_options_note(GenerateOptions *o, int c, const char *name);
// What the options given allow together, and the formats of the files named. Returns 0, or
// EXIT_USAGE with err.
int generate_options_check(const GenerateOptions *o, char err[ERR_LEN]);

#endif
