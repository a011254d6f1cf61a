// ./generate: samples text from a checkpoint written by ./train, streaming it to stdout (one
// sample or several decoded together), optionally recording the attention weights of every
// layer and head for a viewer (and the logits); or, with --score, measures the model's loss on
// a text; or, with --export, writes the model for llama.cpp (GGUF) or ONNX runtimes.
// Exit status: 0 done, 1 bad checkpoint, text or I/O, 2 bad usage, prompt or text characters,
// or a checkpoint too large for the memory.
//
// This file holds the options and main, the outline of each job: the options and the files it
// will write checked, the checkpoint opened, then one job's stages: sampling (a prompt read,
// the model loaded, the samples generated and the attention recorded), --score, --score-task,
// --export, --circuits or --patch; or --timeline, a training run's page rebuilt. The stages
// are in generation/, each in the file of its job (generation/job.h lists them), and
// --timeline's in training/timeline_rebuild.h.
#include <getopt.h>
#include <limits.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/errors.h"
#include "common/platform.h"
#include "common/program.h"
#include "format/atomic_file.h"
#include "generation/job.h"
#include "generation/options.h"
#include "generation/outputs.h"
#include "kernels/parallel.h"
#include "training/out_dir.h"
#include "training/progress.h"
#include "training/run_state.h"
#include "training/timeline_rebuild.h"

static const GenerateOptions default_options = {
    .max_new = 500, .sampler = {0.8f, 0, 1.0f}, .seed = 1337, .stride = 1, .num_samples = 1, .threads = 0,
    .use_cache = 1, .max_memory = 0.0, .precision = PRECISION_FP32, .encoding = ENCODING_UTF8,
};

// ----------------------------------------------------------------------------
// the options

// Sets option c, given as `flag` (argv[optind - 1]), from its value optarg; -h or --help prints
// the help and exits.
static void set_option(GenerateOptions *o, int c, const char *flag, char **argv) {
    switch (c) {
        case 'n': o->max_new = option_long("--max-new", optarg, 0, LONG_AT_MOST(1LL << 40)); break;
        case 't': o->sampler.temperature = (float)option_double("--temperature", optarg, 0.0, 100.0, 1); break;
        case 'k': o->sampler.top_k = (int)option_long("--top-k", optarg, 0, 1 << 30); break;
        case 'p': {
            double p = option_double("--top-p", optarg, 0.0, 1.0, 1);
            if (p <= 0.0) die(EXIT_USAGE, "--top-p must be above 0, got %s", optarg);
            o->sampler.top_p = (float)p;
            break;
        }
        case 's': o->seed = (uint64_t)option_long("--seed", optarg, 0, LONG_MAX); break;
        case 'f': o->prompt_file = optarg; break;
        case GEN_OPT_NO_CACHE: o->use_cache = 0; break;
        case GEN_OPT_ATTENTION:
            if (o->num_attention == MAX_ATTENTION_FILES)
                die(EXIT_USAGE, "--attention may be given at most %d times", MAX_ATTENTION_FILES);
            o->attention[o->num_attention++] = optarg;
            break;
        case GEN_OPT_THREADS:
            o->threads = (int)option_long("--threads", optarg, 0, THREADS_PER_CORE * (long)omp_get_num_procs());
            break;
        case GEN_OPT_SKIP_UNKNOWN: o->skip_unknown = 1; break;
        case GEN_OPT_MAX_MEMORY: o->max_memory = option_double("--max-memory", optarg, 1.0, 1e12, 1) * MIB; break;
        case GEN_OPT_STRIDE: o->stride = (int)option_long("--stride", optarg, 1, 1 << 16); break;
        case GEN_OPT_NUM_SAMPLES: o->num_samples = (int)option_long("--num-samples", optarg, 1, MAX_SAMPLES); break;
        case GEN_OPT_SCORE: o->score = optarg; break;
        case GEN_OPT_SURPRISAL: o->surprisal = optarg; break;
        case GEN_OPT_ABLATE: o->ablate = optarg; break;
        case GEN_OPT_SCORE_TASK: o->score_task = 1; break;
        case GEN_OPT_ROWS: o->rows = option_long("--rows", optarg, 1, TASK_SCORE_MAX_ROWS); break;
        case GEN_OPT_PRECISION:
            if (precision_parse(optarg, &o->precision) != 0)
                die(EXIT_USAGE, "--precision must be fp32 or bf16, got '%s'", optarg);
            break;
        case GEN_OPT_ENCODING:
            if (encoding_parse(optarg, &o->encoding) != 0)
                die(EXIT_USAGE, "--encoding must be utf-8, latin-1 or cp1252, got '%s'", optarg);
            o->encoding_given = 1;
            break;
        case GEN_OPT_TIMELINE: o->timeline = optarg; break;
        case GEN_OPT_CSV: o->csv = optarg; break;
        case GEN_OPT_CIRCUITS: o->circuits = optarg; break;
        case GEN_OPT_ABLATE_MEAN: o->ablate_mean = optarg; break;
        case GEN_OPT_MEAN_OVER: o->mean_over = optarg; break;
        case GEN_OPT_PATCH: o->patch = optarg; break;
        case GEN_OPT_FORCE: o->force = 1; break;
        case GEN_OPT_EXPORT:
            if (o->num_exports == MAX_EXPORT_FILES)
                die(EXIT_USAGE, "--export may be given at most %d times", MAX_EXPORT_FILES);
            o->exports[o->num_exports++] = optarg;
            break;
        case GEN_OPT_LOGITS: o->logits = optarg; break;
        case 'h':
            // "-h" or "--help" (or its abbreviation); "-hi" is a prompt given before "--"
            if (strcmp(flag, "-h") != 0 && strncmp(flag, "--h", 3) != 0)
                die(EXIT_USAGE, "unknown option '%s' (a prompt that starts with '-' goes after '--': %s CKPT "
                    "-- '%s'; see --help)", argv[optind], program_invocation(), argv[optind]);
            generate_usage(stdout, &default_options);
            stdout_flush_or_die();
            exit(0);
        case ':': die(EXIT_USAGE, "option '%s' needs a value (see --help)", flag); break;
        default:
            if (optopt)
                die(EXIT_USAGE, "unknown option '-%c' (a prompt that starts with '-' goes after '--': %s CKPT "
                    "-- PROMPT; see --help)", optopt, program_invocation());
            die(EXIT_USAGE, "unknown option '%s' (a prompt that starts with '-' goes after '--': %s CKPT -- "
                "PROMPT; see --help)", flag, program_invocation());
    }
}

static void parse_options(int argc, char **argv, GenerateOptions *o) {
    *o = default_options;
    unsigned char given[GEN_OPT_COUNT] = {0};  // each option once (but --attention)
    const char *first_value[GEN_OPT_COUNT] = {0};
    opterr = 0;
    int c, index = -1;
    while ((c = getopt_long(argc, argv, ":n:t:k:p:s:f:h", generate_long_options, &index)) != -1) {
        const char *flag = argv[optind - 1];
        char name[40];  // the option as its name, whether its value came with it or after it
        if (index >= 0) snprintf(name, sizeof(name), "--%s", generate_long_options[index].name);
        else snprintf(name, sizeof(name), "-%c", c);
        index = -1;
        generate_options_note(o, c, name);
        set_option(o, c, flag, argv);
        if (c == GEN_OPT_ABLATE && given[c])
            die(EXIT_USAGE, "--ablate is given twice ('%s', then '%s'): give it once, with every head in its list "
                "(--ablate %s,%s)", first_value[c], optarg, first_value[c], optarg);
        if (c != GEN_OPT_ATTENTION && c != GEN_OPT_EXPORT && given[c]) {
            for (int i = 0; generate_long_options[i].name; i++)
                if (generate_long_options[i].val == c) snprintf(name, sizeof(name), "--%s", generate_long_options[i].name);
            option_given_twice(name, first_value[c], optarg, "--attention and --export may be given once per file");
        }
        given[c] = 1;
        first_value[c] = optarg;
    }
    if (o->timeline) {
        if (o->other_flag[0] || o->num_exports || optind < argc)
            die(EXIT_USAGE, "--timeline rebuilds a run's page from its directory: it takes only --csv, --force and "
                "--max-memory, not '%s'",
                o->other_flag[0] ? o->other_flag : o->num_exports ? "--export" : argv[optind]);
        return;
    }
    if (o->csv) die(EXIT_USAGE, "--csv writes a run's head scores: give --timeline RUN_DIR too");
    if (optind >= argc)
        die(EXIT_USAGE, "no checkpoint given (usage: %s CKPT [PROMPT]; see --help)", program_invocation());
    o->checkpoint = argv[optind++];
    if (optind < argc) o->prompt = argv[optind++];
    if (optind < argc) die(EXIT_USAGE, "unexpected argument '%s' (quote a prompt with spaces)", argv[optind]);
    char err[ERR_LEN];
    if (generate_options_check(o, err) != 0) die(EXIT_USAGE, "%s", err);
}

// ----------------------------------------------------------------------------
// the program

// What main opens, reads and loads, freed by an exit handler whichever way the program ends.
static Job job;
static OutDirLock timeline_lock;  // --timeline: the run directory's, while its page is rewritten

static void free_job(void) {
    atomic_file_remove_open();
    out_dir_unlock(&timeline_lock);
    checkpoint_close(&job.ck);
    vocab_free(&job.vocab);
    free(job.prompt_text);
    prompt_free(&job.prompt);
    decoder_free(&job.decoder);
    gpt_free(&job.model);
    free(job.edits);
    free(job.mean_ablated);
    prompt_free(&job.reference);
    free(job.head_means);
    prompt_free(&job.corrupted);
}

// A stage that failed ends the program with its status and message.
static void or_die(int status, const char *err) {
    if (status != 0) die(status, "%s", err);
}

// The job's memory limit (0: unknown, no limit), and its source for messages.
static double generation_memory_limit(const GenerateOptions *o, const char **source) {
    return memory_limit(o->max_memory, 1, source);
}

// The progress line of generating to a file, on stderr when it is a terminal, as ./train's:
// "generating: 1200/2000 characters | ETA 0m08s", shown from the first unit on, then rewritten
// at most twice a second, cleared at the end.
typedef struct {
    const char *task, *units;
    long total;
    int shown;            // 1: stderr is a terminal
    double start, last;   // when the task started, and the line was last written (a second
                          // before the start: the first unit shows it)
} ProgressLine;

static ProgressLine progress_start(const char *task, const char *units, long total) {
    double now = now_seconds();
    return (ProgressLine){task, units, total, platform_is_terminal(STDERR_FILENO), now, now - 1.0};
}

static void progress_show(ProgressLine *p, long done) {
    double now = now_seconds();
    if (!p->shown || now - p->last < 0.5) return;
    char line[256];
    progress_report_task_line(p->task, done, p->total, p->units, now - p->start, terminal_width(STDERR_FILENO), line,
                              sizeof(line));
    fprintf(stderr, "\r\033[K%s", line);
    p->last = now;
}

static void progress_end(const ProgressLine *p) {
    if (p->shown) fprintf(stderr, "\r\033[K");
}

// A stage's progress (done of total) on a ProgressLine, the context.
static void show_progress(void *context, long done, long total) {
    (void)total;
    progress_show(context, done);
}

// ----------------------------------------------------------------------------
// the jobs

// Decodes --max-new characters of every sample from the start text: the first sample streams
// to stdout as it is made, the others follow it; when stdout is not a terminal (a file), the
// progress line shows on stderr's. Returns the seconds the characters took.
static double generate_samples(Job *j, const int *start, long start_len) {
    char err[ERR_LEN];
    or_die(start_samples(j, start, start_len, err), err);  // the decoder set up, the prompt printed
    double t0 = now_seconds();
    ProgressLine progress = progress_start("generating", "characters", j->o.max_new);
    progress.shown &= !platform_is_terminal(STDOUT_FILENO);
    or_die(decode_samples(j, show_progress, &progress, err), err);
    progress_end(&progress);
    double secs = now_seconds() - t0;
    or_die(print_other_samples(j, start_len, err), err);
    return secs;
}

// Sampling: the prompt read, the model loaded once its memory was found to fit, the samples
// generated, and what --attention and --logits record of the first.
static void sample_text(Job *j) {
    char err[ERR_LEN];
    const GenerateOptions *o = &j->o;
    size_t prompt_bytes;
    or_die(read_prompt(j, &prompt_bytes, err), err);
    const Prompt *prompt = &j->prompt;
    if (prompt->len == 0 && o->max_new == 0 && !o->num_attention && !o->logits) return;  // nothing to do

    // the model, after its memory was found to fit; an empty prompt starts from a newline
    long start_len = prompt->len > 0 ? prompt->len : 1;
    or_die(check_generation_memory(j, start_len + o->max_new, (double)prompt_bytes + (double)prompt->len * sizeof(int),
                                   err), err);
    or_die(load_model(j, err), err);
    int newline = vocab_index(&j->vocab, '\n');
    int start_token = newline >= 0 ? newline : 0;
    double secs = generate_samples(j, prompt->len > 0 ? prompt->tokens : &start_token, start_len);
    report_speed(o, secs);
    const int *text = decoder_text(&j->decoder, 0);
    if (o->num_attention) or_die(record_attention(j, text, j->decoder.len, NULL, err), err);
    if (o->logits) or_die(record_logits(j, text, j->decoder.len, err), err);
}

// --score FILE: the text read and scored, its mean loss printed.
static void score_text(Job *j) {
    char err[ERR_LEN];
    or_die(read_text_to_score(j, err), err);  // within the memory the model's scoring leaves
    or_die(load_model(j, err), err);
    or_die(score_read_text(j, err), err);
}

// --score-task: the validation split of the task the checkpoint was trained on (its options
// say which, and the seed that makes it), scored as its evaluations read it.
static void score_task_split(Job *j) {
    char err[ERR_LEN];
    TrainOptions train;
    TrainState state;
    if (run_meta_read(&j->ck, &train, &state, err) != 0) die(EXIT_DATA, "%s", err);
    ScoredTask st = {train.task, 0, train.seed, j->o.rows ? j->o.rows : train.eval_batches * (long)train.batch_size};
    or_die(check_scored_task(j, &st, err), err);  // a task's checkpoint, and the memory its scoring takes
    or_die(load_model(j, err), err);
    or_die(score_task_rows(j, &st, err), err);
}

// --export: the checkpoint's model written to each file, once every file's format was found to
// carry it and the parameters to fit in memory beside the checkpoint.
static void export_models(Job *j) {
    char err[ERR_LEN];
    ExportPlan plan;
    or_die(plan_exports(j, &plan, err), err);
    or_die(load_model(j, err), err);  // the checkpoint closed
    or_die(write_exports(j, &plan, err), err);
}

// --circuits: the weights' circuits, within the memory limit.
static void compute_circuits(Job *j) {
    char err[ERR_LEN];
    or_die(check_circuits_memory(j, err), err);
    or_die(load_model(j, err), err);
    or_die(write_circuits(j, err), err);
}

// --patch CLEAN CORRUPTED: both texts read, patched, the table printed, and with --attention
// the clean text recorded beside the patching.
static void patch_two_texts(Job *j) {
    char err[ERR_LEN];
    or_die(read_patch_texts(j, err), err);  // of the same length within the block, and the memory
    or_die(load_model(j, err), err);
    Patching patching;
    ProgressLine progress = progress_start("patching", "runs", patching_runs(j));
    int status = patch_texts(j, &patching, show_progress, &progress, err);
    progress_end(&progress);
    or_die(status, err);
    or_die(print_patching(j, &patching, err), err);
    if (j->o.num_attention) or_die(record_attention(j, j->prompt.tokens, j->prompt.len, &patching, err), err);
    patching_free(&patching);
}

int main(int argc, char **argv) {
    platform_init(argc, argv);
    Job *j = &job;
    const GenerateOptions *o = &j->o;
    char err[ERR_LEN];
    parse_options(argc, argv, &j->o);
    j->memory_limit = generation_memory_limit, j->flush_stdout = stdout_flush;
    atexit(free_job);
    if (o->timeline) {  // a training run's page rebuilt, or its heads' scores written
        fatal_signals_install(atomic_file_remove_open, 0);  // a killed run leaves no temporary file
        or_die(o->csv ? timeline_csv(j, err) : rebuild_timeline(j, &timeline_lock, err), err);
        return 0;
    }
    or_die(prepare_outputs(o, err), err);  // the files it will write can be written
    fatal_signals_install(atomic_file_remove_open, 0);  // a killed run leaves no temporary file
    or_die(start_kernels(o, err), err);
    or_die(open_checkpoint(j, err), err);  // checked whole; its vocabulary; the heads --ablate names
    if (o->num_exports) export_models(j);
    else if (o->score) score_text(j);
    else if (o->score_task) score_task_split(j);
    else if (o->circuits) compute_circuits(j);
    else if (o->patch) patch_two_texts(j);
    else sample_text(j);
    return 0;
}
