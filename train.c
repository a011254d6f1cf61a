// ./train: trains a character-level GPT on a text corpus (plain or gzip) and writes
// safetensors checkpoints that ./generate, PyTorch and --resume read.
// Exit status: 0 done, 1 bad data or I/O, 2 bad usage or a run too large for the memory,
// 3 non-finite loss, 130/143/129 stopped by SIGINT/SIGTERM/SIGHUP after saving (Windows: 130
// for every console event, Ctrl-C as SIGINT).
// Built with MPI (`make MPI=1`), `mpirun -np N` runs one training on N processes (dist/,
// training/data_parallel.h): rank 0 alone prints and writes, and the processes agree on failures and
// signals at fixed points of the run, so that they all leave together.
//
// This file holds the options and main, the outline of a run: the options, then the run set
// up (its checkpoint, output directory, text, memory and model), trained step by step
// (take_step, evaluate, report, save_checkpoints) and finished (the summary and the
// whole-validation pass). The stages are in training/, each in the file of its job
// (training/run.h lists them); docs/how-a-step-runs.md follows one step through them.
#include <limits.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "common/platform.h"
#include "common/program.h"
#include "data/corpus_set.h"
#include "dist/dist.h"
#include "format/atomic_file.h"
#include "kernels/parallel.h"
#include "training/evaluation.h"
#include "training/options.h"
#include "training/run.h"
#include "training/run_log.h"
#include "training/schedule.h"
#include "training/stop_signals.h"

static const TrainOptions default_options = {
    .data = "", .out = "out", .resume = "", .init_from = "",  // data "": the corpus shipped with chargpt
    .n_layer = 4, .n_head = 4, .n_embd = 128, .head_size = 0, .block_size = 64, .batch_size = 12,
    .qkv_bias = 1, .dropout = 0.0f, .position = POSITION_LEARNED,
    .steps = 2000, .decay_steps = 0, .warmup = LR_DEFAULT_WARMUP,
    .lr = 1e-3f, .min_lr = 1e-4f, .weight_decay = 0.1f, .grad_clip = 1.0f, .val_fraction = 0.1f,
    .beta1 = 0.9f, .beta2 = 0.99f, .eps = 1e-8f,
    .eval_every = 250, .eval_batches = 200, .save_every = 500, .log_every = 10,
    .seed = 1337, .threads = 0, .max_memory = 0.0, .grad_accum = 1, .zero = 0, .precision = PRECISION_FP32,
    .mpi_timeout = 300, .separator = "\\n", .encoding = ENCODING_UTF8, .min_char_count = 1, .sample_chars = 200,
    .final_val_chars = VALIDATION_PASS_DEFAULT_CHARS,
};

// ----------------------------------------------------------------------------
// the options

static void copy_path(char *dst, const char *flag, const char *s) {
    if (!*s) die(EXIT_USAGE, "%s needs a non-empty path", flag);
    if (strlen(s) >= 1024) die(EXIT_USAGE, "%s: path too long", flag);
    strcpy(dst, s);
}

// --data given once more: its path joins the list (training/run_text.h).
static void add_data_path(TrainOptions *o, const char *path) {
    char err[ERR_LEN];
    if (data_paths_add(o->data, sizeof(o->data), path, err) != 0) die(EXIT_USAGE, "%s", err);
}

// --separator: checked now, kept as given (the checkpoint keeps it so).
static void set_separator(TrainOptions *o, const char *text) {
    uint32_t separator[CORPUS_SEPARATOR_MAX];
    size_t len;
    char err[ERR_LEN];
    if (corpus_separator_parse(text, separator, &len, err) != 0) die(EXIT_USAGE, "%s", err);
    if (strlen(text) >= sizeof(o->separator)) die(EXIT_USAGE, "--separator is too long");
    strcpy(o->separator, text);
}

// The task called name (data/task.h); an unknown one ends the program (exit 2).
static Task find_task(const char *name) {
    int task = task_find(name);
    if (task < 0) die(EXIT_USAGE, "--task: no task '%s'; the tasks are %s", name, TASK_NAMES);
    return (Task)task;
}

// Sets option c (its --name in `name`) from its value.
static void set_option(TrainOptions *o, int c, const char *name, const char *value) {
    long max_threads = THREADS_PER_CORE * (long)omp_get_num_procs();
    switch (c) {
        case OPT_DATA: add_data_path(o, value); break;
        case OPT_OUT: copy_path(o->out, name, value); break;
        case OPT_RESUME: copy_path(o->resume, name, value); break;
        case OPT_N_LAYER: o->n_layer = (int)option_long(name, value, 1, 1024); break;
        case OPT_N_HEAD: o->n_head = (int)option_long(name, value, 1, 1024); break;
        case OPT_N_EMBD: o->n_embd = (int)option_long(name, value, 1, 65536); break;
        case OPT_HEAD_SIZE: o->head_size = (int)option_long(name, value, 1, 65536); break;
        case OPT_BLOCK_SIZE: o->block_size = (int)option_long(name, value, 1, 65536); break;
        case OPT_BATCH_SIZE: o->batch_size = (int)option_long(name, value, 1, TRAIN_MAX_BATCH_SIZE); break;
        case OPT_DROPOUT: o->dropout = (float)option_double(name, value, 0.0, 1.0, 0); break;
        case OPT_NO_QKV_BIAS: o->qkv_bias = 0; break;
        case OPT_POS:
            if (position_parse(value, &o->position) != 0)
                die(EXIT_USAGE, "--pos must be " POSITION_ENCODING_NAMES ", got '%s'", value);
            break;
        case OPT_STEPS: o->steps = option_long(name, value, 0, TRAIN_MAX_STEPS); break;
        case OPT_LR: o->lr = (float)option_double(name, value, 0.0, TRAIN_MAX_LR, 1); break;
        case OPT_MIN_LR: o->min_lr = (float)option_double(name, value, 0.0, TRAIN_MAX_LR, 1); break;
        case OPT_WARMUP: o->warmup = option_long(name, value, 0, TRAIN_MAX_STEPS); break;
        case OPT_DECAY_STEPS: o->decay_steps = option_long(name, value, 1, TRAIN_MAX_STEPS); break;
        case OPT_WEIGHT_DECAY: o->weight_decay = (float)option_double(name, value, 0.0, TRAIN_MAX_LR, 1); break;
        case OPT_GRAD_CLIP: o->grad_clip = (float)option_double(name, value, 0.0, TRAIN_MAX_GRAD_CLIP, 1); break;
        case OPT_EVAL_EVERY: o->eval_every = option_long(name, value, 1, TRAIN_MAX_STEPS); break;
        case OPT_EVAL_BATCHES: o->eval_batches = option_long(name, value, 1, TRAIN_MAX_EVAL_BATCHES); break;
        case OPT_SAVE_EVERY: o->save_every = option_long(name, value, 1, TRAIN_MAX_STEPS); break;
        case OPT_LOG_EVERY: o->log_every = option_long(name, value, 1, TRAIN_MAX_STEPS); break;
        case OPT_SEED: o->seed = (uint64_t)option_long(name, value, 0, LONG_MAX); break;
        case OPT_THREADS: o->threads = (int)option_long(name, value, 0, max_threads); break;
        case OPT_VAL_FRACTION: o->val_fraction = (float)option_double(name, value, 0.0, 1.0, 0); break;
        case OPT_GRAD_ACCUM: o->grad_accum = (int)option_long(name, value, 1, TRAIN_MAX_BATCH_SIZE); break;
        case OPT_ZERO: o->zero = (int)option_long(name, value, 0, 1); break;
        case OPT_MAX_MEMORY: o->max_memory = (float)option_double(name, value, 1.0, 1e12, 1) * MIB; break;
        case OPT_INIT_FROM: copy_path(o->init_from, name, value); break;
        case OPT_SKIP_UNKNOWN: o->skip_unknown = 1; break;
        case OPT_KEEP_CR: o->keep_cr = 1; break;
        case OPT_FORCE: o->force = 1; break;
        case OPT_PRECISION:
            if (precision_parse(value, &o->precision) != 0)
                die(EXIT_USAGE, "--precision must be fp32 or bf16, got '%s'", value);
            break;
        case OPT_MPI_TIMEOUT: o->mpi_timeout = (float)option_double(name, value, 0.0, 1e9, 1); break;
        case OPT_SEPARATOR: set_separator(o, value); break;
        case OPT_ENCODING:
            if (encoding_parse(value, &o->encoding) != 0)
                die(EXIT_USAGE, "--encoding must be utf-8, latin-1 or cp1252, got '%s'", value);
            break;
        case OPT_MIN_CHAR_COUNT: o->min_char_count = option_long(name, value, 1, TRAIN_MAX_MIN_CHAR_COUNT); break;
        case OPT_GROW_VOCAB: o->grow_vocab = 1; break;
        case OPT_FINAL_VAL_CHARS:
            o->final_val_chars = strcmp(value, "all") == 0 ? -1 : option_long(name, value, 0, LONG_MAX);
            break;
        case OPT_PROBE: copy_path(o->probe, name, value); break;
        case OPT_SAMPLE_PROMPT: o->sample_prompt = value; break;
        case OPT_SAMPLE_CHARS: o->sample_chars = (int)option_long(name, value, 0, PROBE_MAX_SAMPLE); break;
        case OPT_SAMPLE_EVERY: o->sample_every = option_long(name, value, 1, TRAIN_MAX_STEPS); break;
        case OPT_NO_PROBE: o->no_probe = 1; break;
        case OPT_PROBE_STEPS:
            if (strlen(value) >= sizeof(o->probe_steps))
                die(EXIT_USAGE, "%s: the list is longer than %zu characters: it may hold at most %d steps", name,
                    sizeof(o->probe_steps) - 1, PROBE_MAX_EARLY);
            strcpy(o->probe_steps, value);
            break;
        case OPT_TASK: snprintf(o->task, sizeof(o->task), "%s", task_name(find_task(value))); break;
    }
}

// The task --task names, or -1: a first pass over the options, since the task's recipe
// (training/options.h) is the defaults the others override. getopt_long starts again after it
// (optind 0).
static int given_task(int argc, char **argv) {
    opterr = 0;
    int c, task = -1;
    while ((c = getopt_long(argc, argv, ":h", train_long_options, NULL)) != -1)
        if (c == OPT_TASK) task = find_task(optarg);
    optind = 0;
    return task;
}

static void parse_options(int argc, char **argv, TrainOptions *o, GivenOptions *given) {
    *o = default_options;
    int task = given_task(argc, argv);
    if (task >= 0) task_recipe((Task)task, o);
    memset(given, 0, sizeof(*given));
    const char *first_value[OPT_COUNT] = {0};
    opterr = 0;
    int c, index = -1;
    while ((c = getopt_long(argc, argv, ":h", train_long_options, &index)) != -1) {
        switch (c) {
            case 'h': train_usage(stdout, o); stdout_flush_or_die(); exit(0);
            case '?':
                if (optopt) die(EXIT_USAGE, "unknown option '-%c' (see --help)", optopt);
                die(EXIT_USAGE, "unknown option '%s' (see --help)", argv[optind - 1]);
                break;
            case ':': die(EXIT_USAGE, "option '%s' needs a value (see --help)", argv[optind - 1]); break;
            default: break;
        }
        char name[64];
        snprintf(name, sizeof(name), "--%s", train_long_options[index].name);
        if (given->given[c] && c != OPT_DATA)
            option_given_twice(name, first_value[c], optarg, "--data may be given once per path");
        given->given[c] = 1;
        first_value[c] = optarg;
        set_option(o, c, name, optarg);
    }
    if (optind < argc) die(EXIT_USAGE, "unexpected argument '%s' (see --help)", argv[optind]);
    char err[ERR_LEN];
    if (options_check_given(given, err) != 0) die(EXIT_USAGE, "%s", err);
}

// ----------------------------------------------------------------------------
// what the program lends the run (common/program.h)

// The memory the run may take (0: unknown, no limit), and where that figure comes from. The
// memory available is shared by the processes of the run on this machine.
static double run_memory_limit(const TrainOptions *o, const char **source) {
    return memory_limit(o->max_memory, dist_local_size(), source);
}

// Prints the memory the run needs with its limit; exits 2 when it needs more.
static void check_memory(const GPTMemoryPlan *plan, const TrainOptions *o) {
    const char *source;
    double limit = run_memory_limit(o, &source);
    char needed[512], limit_text[32];
    gpt_memory_describe(plan, needed, sizeof(needed));
    format_bytes(limit, limit_text, sizeof(limit_text));
    if (limit > 0) printf("memory: %s; %s %s\n", needed, limit_text, source);
    else printf("memory: %s; no limit: the memory available is %s (--max-memory sets one)\n", needed, source);
    stdout_flush_or_die();
    if (limit > 0 && gpt_memory_total(plan) > limit) {
        format_bytes(gpt_memory_total(plan), needed, sizeof(needed));
        die(EXIT_USAGE, "the run needs %s of memory, more than the %s %s: use a smaller model, --batch-size or "
            "--block-size, a larger --grad-accum, a smaller corpus%s", needed, limit_text, source,
            o->max_memory > 0 ? "" : ", or set --max-memory");
    }
}

// Flushes the progress lines once training has started. A failed write no longer ends the run,
// whose work is worth more than its report: the run goes on (log.csv keeps every report) after
// one message on stderr. After a stop signal a write may fail by design (mpirun stops reading
// the output of processes it is stopping, and the signal interrupts the write): no message.
static void flush_progress(void) {
    static int warned = 0;
    char err[ERR_LEN];
    if (stdout_flush(err) == 0) return;
    clearerr(stdout);
    if (!warned && !stop_signals_received())
        fprintf(stderr, "%s: %s; training goes on (log.csv has every report)\n", program_name(), err);
    warned = 1;
}

// ----------------------------------------------------------------------------
// the processes

// die's meeting (common/program.h): a process that fails meets the others at their next
// agreement (agree() below, dist.h), so that every process leaves with the same status; the
// lowest-ranked failure's message is printed, once.
static int meet_to_die(int status, int *report) {
    DistAgreement a = dist_agree(status, 0);
    *report = a.rank == dist_rank();
    return a.status;
}

// Meets the other processes (dist.h) at a point every one of them reaches: when one has
// failed, leaves with its status (it printed why); else returns the stop signal that any of
// them has received, or 0.
static int agree(void) {
    int signal, status = stop_signals_agree(&signal);
    if (status) exit(status);
    return signal;
}

// A stage of the run that failed ends the program with its status and message (after meeting
// the other processes: die).
static void or_die(int status, const char *err) {
    if (status != 0) die(status, "%s", err);
}

static Run run;

static void free_run(void) {
    atomic_file_remove_open();
    char err[ERR_LEN];
    run_log_close(&run.log, err);  // a failure here was already reported, or does not matter any more
    out_dir_unlock(&run.lock);
    loss_history_free(&run.losses);
    run_probe_free(&run.probe);
    adamw_free(&run.opt);
    data_parallel_free(&run.dp);
    gpt_free(&run.model);
    free(run.inputs);
    free(run.targets);
    vocab_free(&run.vocab);
    corpus_free(&run.corpus);
    run_task_free(&run.task);
    checkpoint_close(&run.ck);
    dist_finalize();
}

// MPI (when built with it) and the exit handler, which ends MPI too, however the program ends.
static void start_processes(int *argc, char ***argv) {
    platform_init(*argc, *argv);
    char err[ERR_LEN];
    if (dist_init(argc, argv, err) != 0) {
        if (dist_rank() == 0) fprintf(stderr, "%s: %s\n", program_name(), err);
        dist_finalize();
        exit(EXIT_USAGE);
    }
    if (dist_rank() != 0 && !freopen("/dev/null", "w", stdout)) exit(EXIT_DATA);  // rank 0 alone reports
    die_meets_others(meet_to_die);
    atexit(free_run);
}

// SIGINT, SIGTERM, SIGHUP stop the run after its step and save (several processes: see
// stop_signals.h); the other signals that end a program remove the temporary file of a save
// in progress first (common/program.h).
static void install_signal_handlers(void) {
    fatal_signals_install(atomic_file_remove_open, 1);
    stop_signals_install(dist_size() > 1);
}

// A collective has waited --mpi-timeout seconds: a process has stopped or is cut off, and MPI
// cannot take the collective back, so every process ends.
static void on_stalled(const char *message) {
    fprintf(stderr, "%s: %s, longer than --mpi-timeout: a process has stopped or cannot be reached (if it is only "
            "slow, give a longer --mpi-timeout); ending every process\n", program_name(), message);
    dist_abort(EXIT_DATA);
    exit(EXIT_DATA);  // without MPI, dist_abort returns
}

int main(int argc, char **argv) {
    Run *r = &run;
    char err[ERR_LEN];
    start_processes(&argc, &argv);
    parse_options(argc, argv, &r->o, &r->given);
    r->memory_limit = run_memory_limit, r->flush_progress = flush_progress;
    install_signal_handlers();
    dist_set_timeout(r->o.mpi_timeout, on_stalled);

    // set up the run: nothing in --out changes until every check has passed
    or_die(set_up_options(r, err), err);  // the checkpoint's options when resuming or fine-tuning
    or_die(set_up_out_dir(r, err), err);  // what the run will do to --out
    or_die(set_up_text(r, err), err);     // corpus -> vocabulary -> tokens -> train/val split (or a task's)
    agree();                              // every process has read its text and checkpoint,
    or_die(check_same_run(r, err), err);  // the same everywhere, with the same options
    or_die(set_up_sizes(r, err), err);    // the model's config, the batch's split over the processes
    or_die(set_up_probe(r, err), err);    // what the timeline probes: --probe, a resumed run's probe.bin
    GPTMemoryPlan plan;
    plan_memory(r, &plan);                // the memory the run needs, from those sizes,
    say_what_the_run_trains(r);
    check_memory(&plan, &r->o);           // printed and checked before anything is allocated
    or_die(check_timeline_disk(r, err), err);  // probe.bin's growth against the disk's free space
    or_die(set_up_model(r, err), err);    // the model, its activations, the optimizer, a batch
    say_how_the_run_starts(r);
    int stop = agree();  // every process has its data and memory, or all leave with the failure's status
    if (stop) or_die(stop_before_the_run(stop, err), err);
    or_die(start_out_dir(r, err), err);  // --out changed as planned, log.csv and probe.bin opened
    stdout_flush_or_die();
    agree();
    long start_step = r->state.step;
    start_progress(r);
    start_timeline(r);  // a new run's timeline starts at step 0

    // train: step, evaluate, report, save, print
    while (r->state.step < r->o.steps) {
        if (take_step(r) != 0) return EXIT_NONFINITE;  // a loss that is not finite ends the run
        stop = agree();  // every process stops after the same step
        int last = r->state.step == r->o.steps, abandoned;
        const char *best = NULL;
        int evaluated = evaluate(r, last, &abandoned, &best);
        if (abandoned && !stop) stop = agree();  // the signal that abandoned it, agreed by every process
        int probed = probe_step(r, evaluated);  // the timeline's record, before the step's checkpoint
        // log.csv's row, like the probe's record, before the step's checkpoint: a run killed
        // between them resumes from the checkpoint before, dropping what came after it
        int due = r->state.step % r->o.log_every == 0 || last || evaluated || probed || stop;
        or_die(report_step(r, due, evaluated, probed, err), err);
        int save = r->state.step % r->o.save_every == 0 || last || stop;
        or_die(save_checkpoints(r, best, save ? r->paths.ckpt : NULL, err), err);
        print_report(r, due, evaluated);  // after the checkpoint, which a blocked print must not hold up
        if (stop) or_die(close_log(r, err), err);
        agree();  // what rank 0 wrote above was written, or every process leaves
        if (stop) return stopped(r, stop);
    }

    // finish: a run with no step left still saves, then the summary and the whole split's loss
    if (r->state.step == start_step) or_die(save_checkpoints(r, NULL, r->paths.ckpt, err), err);
    or_die(close_log(r, err), err);
    agree();
    print_summary(r);
    return whole_validation(r);
}
