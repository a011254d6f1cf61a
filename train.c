// ./train: trains a character-level GPT on a text corpus (plain or gzip) and writes
// safetensors checkpoints that ./generate, PyTorch and --resume read.
// Exit status: 0 done, 1 bad data or I/O, 2 bad usage or a run too large for the memory,
// 3 non-finite loss, 130/143/129 stopped by SIGINT/SIGTERM/SIGHUP after saving.
// Built with MPI (`make MPI=1`), `mpirun -np N` runs one training on N processes (dist/,
// training/data_parallel.h): rank 0 alone prints and writes, and the processes agree on
// failures and signals at fixed points of the run, so that they all leave together.
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/errors.h"
#include "data/batch.h"
#include "data/corpus.h"
#include "data/corpus_fingerprint.h"
#include "data/vocab.h"
#include "data/vocab_coverage.h"
#include "dist/dist.h"
#include "format/atomic_file.h"
#include "format/checkpoint.h"
#include "format/output.h"
#include "model/adamw.h"
#include "model/gpt.h"
#include "kernels/kernels.h"
#include "model/rng.h"
#include "training/data_parallel.h"
#include "training/loss_history.h"
#include "training/progress_line.h"
#include "training/run_dir.h"
#include "training/run_identity.h"
#include "training/run_lock.h"
#include "training/run_log.h"
#include "training/run_state.h"
#include "training/same_run.h"
#include "training/schedule.h"
#include "training/stop_signals.h"
#include "training/validation_pass.h"
#include "viewer/loss_plot.h"

#define THREADS_PER_CORE 4  // --threads may ask for at most this many per core
#define MIB (1024.0 * 1024.0)

static const TrainOptions default_options = {
    .data = "", .out = "out", .resume = "", .init_from = "",  // data "": the corpus shipped with chargpt
    .n_layer = 4, .n_head = 4, .n_embd = 128, .head_size = 0, .block_size = 64, .batch_size = 12,
    .qkv_bias = 1, .dropout = 0.0f,
    .steps = 2000, .decay_steps = 0, .warmup = 100,
    .lr = 1e-3f, .min_lr = 1e-4f, .weight_decay = 0.1f, .grad_clip = 1.0f, .val_fraction = 0.1f,
    .beta1 = 0.9f, .beta2 = 0.99f, .eps = 1e-8f,
    .eval_every = 250, .eval_batches = 200, .save_every = 500, .log_every = 10,
    .seed = 1337, .threads = 0, .max_memory = 0.0, .grad_accum = 1, .zero = 0, .precision = PRECISION_FP32,
    .mpi_timeout = 300,
};

static void usage(FILE *f) {
    const TrainOptions *d = &default_options;
    fprintf(f,
            "usage: %s [options]\n"
            "Trains a character-level GPT on a UTF-8 text corpus (plain or gzip).\n\n"
            "data and output:\n"
            "  --data FILE          corpus, plain text or gzip (default: Tiny Shakespeare, shipped\n"
            "                       with chargpt as tinyshakespeare.txt.gz)\n"
            "  --keep-cr            keep CR characters (default: CR LF and lone CR become LF, and a\n"
            "                       leading byte-order mark is dropped; what changed is reported)\n"
            "  --val-fraction F     last fraction of the corpus held out for validation (default %g)\n"
            "  --out DIR            checkpoints, log.csv and loss.svg go here (default %s/); a DIR that\n"
            "                       holds a run already (a checkpoint or log.csv) is refused unless\n"
            "                       --resume continues it or --force replaces it. One run at a time:\n"
            "                       a run holds DIR/.train.lock (flock) while it runs, and a second\n"
            "                       one there exits 2 naming its pid\n"
            "  --force              replace the run in --out (its checkpoints and loss.svg are removed\n"
            "                       and log.csv started afresh once every check has passed); with\n"
            "                       --resume, also replace another run there, or drop newer work of\n"
            "                       CKPT's own run (both refused without it, saying what is there)\n"
            "  --resume CKPT        continue the run saved in CKPT with its options; only --steps,\n"
            "                       --out, --threads, --save-every, --eval-every, --max-memory,\n"
            "                       --data, --decay-steps, --warmup, --grad-accum, --zero, --precision\n"
            "                       --mpi-timeout and --force may be given again. --out defaults to\n"
            "                       CKPT's directory; one holding another run, or newer checkpoints\n"
            "                       of this one, needs --force. --data must hold the same text (its\n"
            "                       length and CRC-32, kept in CKPT, are checked); without it the\n"
            "                       saved path is used, a relative one looked for in the current\n"
            "                       directory, then beside CKPT.\n"
            "                       --decay-steps or --warmup start a new learning-rate schedule at\n"
            "                       CKPT's step: warm-up from CKPT's step (default 0 steps), then\n"
            "                       cosine decay to --min-lr at --decay-steps (default --steps)\n"
            "  --init-from CKPT     fine-tune: a new run (step 0, new optimizer state and schedule,\n"
            "                       any --data) from CKPT's weights, architecture and vocabulary;\n"
            "                       the model options come from CKPT (--dropout may be given)\n"
            "  --skip-unknown       with --init-from: drop corpus characters CKPT's vocabulary lacks\n"
            "                       (default: an error naming them with their counts)\n"
            "model:\n"
            "  --n-layer N          transformer blocks (default %d)\n"
            "  --n-head N           attention heads (default %d)\n"
            "  --n-embd N           embedding width C (default %d)\n"
            "  --head-size N        width of each head (default n_embd / n_head)\n"
            "  --block-size N       context length T (default %d)\n"
            "  --dropout P          dropout on attention weights and residual branches (default %g)\n"
            "  --no-qkv-bias        no bias in the attention's q, k, v projection\n"
            "training:\n"
            "  --batch-size N       sequences per step, over all processes (default %d)\n"
            "  --grad-accum K       split each step into K micro-batches of batch-size / K sequences\n"
            "                       whose gradients are summed: the same step in less memory\n"
            "                       (default 1)\n"
            "  --steps N            optimizer steps (default %ld)\n"
            "  --lr F               peak learning rate (default %g)\n"
            "  --min-lr F           learning rate at the end of the cosine decay (default %g)\n"
            "  --warmup N           linear warm-up steps (default %ld)\n"
            "  --decay-steps N      step where the cosine decay reaches --min-lr (default --steps)\n"
            "  --weight-decay F     AdamW weight decay on matrices and embeddings (default %g)\n"
            "  --grad-clip F        clip the gradient's global L2 norm; 0 = off (default %g)\n"
            "  --eval-every N       validation every N steps and at the end (default %ld)\n"
            "  --eval-batches N     validation batches per evaluation (default %ld)\n"
            "  --save-every N       checkpoint every N steps and at the end (default %ld)\n"
            "  --log-every N        progress report and log.csv row every N steps (default %ld)\n"
            "  --seed N             seed for initialisation, batches and dropout (default %" PRIu64 ")\n"
            "  --threads N          OpenMP threads; 0 = all cores, or with mpirun the cores divided\n"
            "                       by the processes on the machine; at most %d per core (default %d)\n"
            "  --zero 1             with several processes (mpirun), each keeps the optimizer's\n"
            "                       moments of 1/N of the parameters only (ZeRO stage 1); 0 = off\n"
            "                       (default 0)\n"
            "  --max-memory MIB     refuse a run that needs more memory than MIB mebibytes, its corpus\n"
            "                       included at 4 bytes a character (a .gz stops being inflated once\n"
            "                       past it); default: the memory available now, MemAvailable in\n"
            "                       /proc/meminfo\n"
            "  --precision P        fp32, or bf16: matrix products on bf16 copies of the weights and\n"
            "                       activations with fp32 sums, faster where the CPU has AVX512_BF16;\n"
            "                       master weights, gradients and optimizer stay fp32 (default fp32;\n"
            "                       --resume keeps the run's unless given)\n"
            "  --mpi-timeout S      with mpirun, end every process when one has waited S seconds\n"
            "                       for the others in a collective (a process stopped or cut\n"
            "                       off); 0 = wait without limit (default %g)\n"
            "  -h, --help           show this help\n"
            "progress: on a terminal one line rewritten in place, fitted to its width (else\n"
            "$COLUMNS, else 80 columns) by dropping the least important figures first (elapsed,\n"
            "ms/step, lr, tok/s, val, ETA); otherwise one plain line per report. 'loss' is the mean\n"
            "train loss of the steps since the last report ('mean of N'), as log.csv and done:'s\n"
            "final train loss give it; ms/step, tok/s and the ETA count training steps only, not\n"
            "evaluation or saving. Ctrl-C, SIGTERM or SIGHUP: the step ends, an evaluation under way\n"
            "is abandoned, the checkpoint is saved; a second one exits at once without saving. During\n"
            "the whole-validation pass at the end (after the last save) it stops the pass.\n",
            program_invocation_name, d->val_fraction, d->out, d->n_layer, d->n_head, d->n_embd, d->block_size,
            d->dropout, d->batch_size, d->steps, d->lr, d->min_lr, d->warmup, d->weight_decay,
            d->grad_clip, d->eval_every, d->eval_batches, d->save_every, d->log_every, d->seed,
            THREADS_PER_CORE, d->threads, d->mpi_timeout);
}

// A process that fails meets the others at their next agreement (agree() below, dist.h), so
// that every process leaves with the same status; the lowest-ranked failure's message is
// printed, once.
static void die(int status, const char *fmt, ...) {
    DistAgreement a = dist_agree(status, 0);
    if (a.rank == dist_rank()) {
        va_list ap;
        va_start(ap, fmt);
        fprintf(stderr, "%s: ", program_invocation_short_name);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        va_end(ap);
    }
    exit(a.status);
}

// Flushes standard output before training starts; a write to it that failed ends the program
// (exit 1), so that no report is lost without a message.
static void flush_output(void) {
    char err[ERR_LEN];
    if (output_flush(stdout, "standard output", err) != 0) die(EXIT_DATA, "%s", err);
}

// Flushes the progress lines once training has started. A failed write no longer ends the run,
// whose work is worth more than its report: the run goes on (log.csv keeps every report) after
// one message on stderr. After a stop signal a write may fail by design (mpirun stops reading
// the output of processes it is stopping, and the signal interrupts the write): no message.
static void flush_progress(void) {
    static int warned = 0;
    char err[ERR_LEN];
    if (output_flush(stdout, "standard output", err) == 0) return;
    clearerr(stdout);
    if (!warned && !stop_signals_received())
        fprintf(stderr, "%s: %s; training goes on (log.csv has every report)\n", program_invocation_short_name, err);
    warned = 1;
}

// ----------------------------------------------------------------------------
// option parsing

static long parse_long(const char *flag, const char *s, long min, long max) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end)
        die(EXIT_USAGE, "%s expects a whole number, got '%s' (see --help)", flag, s);
    if (v < min || v > max) die(EXIT_USAGE, "%s must be between %ld and %ld, got %ld", flag, min, max, v);
    return v;
}

static float parse_float(const char *flag, const char *s, double min, double max, int max_inclusive) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v))
        die(EXIT_USAGE, "%s expects a number, got '%s' (see --help)", flag, s);
    if (v < min || v > max || (!max_inclusive && v == max))
        die(EXIT_USAGE, "%s must be in [%g, %g%c, got %s", flag, min, max, max_inclusive ? ']' : ')', s);
    return (float)v;
}

static void copy_path(char *dst, const char *flag, const char *s) {
    if (!*s) die(EXIT_USAGE, "%s needs a non-empty path", flag);
    if (strlen(s) >= 1024) die(EXIT_USAGE, "%s: path too long", flag);
    strcpy(dst, s);
}

enum {
    OPT_DATA = 256, OPT_OUT, OPT_RESUME, OPT_N_LAYER, OPT_N_HEAD, OPT_N_EMBD, OPT_HEAD_SIZE,
    OPT_BLOCK_SIZE, OPT_BATCH_SIZE, OPT_DROPOUT, OPT_NO_QKV_BIAS, OPT_STEPS, OPT_LR, OPT_MIN_LR,
    OPT_WARMUP, OPT_DECAY_STEPS, OPT_WEIGHT_DECAY, OPT_GRAD_CLIP, OPT_EVAL_EVERY, OPT_EVAL_BATCHES,
    OPT_SAVE_EVERY, OPT_LOG_EVERY, OPT_SEED, OPT_THREADS, OPT_VAL_FRACTION, OPT_GRAD_ACCUM, OPT_ZERO,
    OPT_MAX_MEMORY, OPT_INIT_FROM, OPT_SKIP_UNKNOWN, OPT_KEEP_CR, OPT_FORCE, OPT_PRECISION, OPT_MPI_TIMEOUT,
    OPT_COUNT
};

static const struct option long_options[] = {
    {"data", required_argument, 0, OPT_DATA},
    {"out", required_argument, 0, OPT_OUT},
    {"resume", required_argument, 0, OPT_RESUME},
    {"n-layer", required_argument, 0, OPT_N_LAYER},
    {"n-head", required_argument, 0, OPT_N_HEAD},
    {"n-embd", required_argument, 0, OPT_N_EMBD},
    {"head-size", required_argument, 0, OPT_HEAD_SIZE},
    {"block-size", required_argument, 0, OPT_BLOCK_SIZE},
    {"batch-size", required_argument, 0, OPT_BATCH_SIZE},
    {"dropout", required_argument, 0, OPT_DROPOUT},
    {"no-qkv-bias", no_argument, 0, OPT_NO_QKV_BIAS},
    {"steps", required_argument, 0, OPT_STEPS},
    {"lr", required_argument, 0, OPT_LR},
    {"min-lr", required_argument, 0, OPT_MIN_LR},
    {"warmup", required_argument, 0, OPT_WARMUP},
    {"decay-steps", required_argument, 0, OPT_DECAY_STEPS},
    {"weight-decay", required_argument, 0, OPT_WEIGHT_DECAY},
    {"grad-clip", required_argument, 0, OPT_GRAD_CLIP},
    {"eval-every", required_argument, 0, OPT_EVAL_EVERY},
    {"eval-batches", required_argument, 0, OPT_EVAL_BATCHES},
    {"save-every", required_argument, 0, OPT_SAVE_EVERY},
    {"log-every", required_argument, 0, OPT_LOG_EVERY},
    {"seed", required_argument, 0, OPT_SEED},
    {"threads", required_argument, 0, OPT_THREADS},
    {"val-fraction", required_argument, 0, OPT_VAL_FRACTION},
    {"grad-accum", required_argument, 0, OPT_GRAD_ACCUM},
    {"zero", required_argument, 0, OPT_ZERO},
    {"max-memory", required_argument, 0, OPT_MAX_MEMORY},
    {"init-from", required_argument, 0, OPT_INIT_FROM},
    {"skip-unknown", no_argument, 0, OPT_SKIP_UNKNOWN},
    {"keep-cr", no_argument, 0, OPT_KEEP_CR},
    {"force", no_argument, 0, OPT_FORCE},
    {"precision", required_argument, 0, OPT_PRECISION},
    {"mpi-timeout", required_argument, 0, OPT_MPI_TIMEOUT},
    {"help", no_argument, 0, 'h'},
    {0, 0, 0, 0},
};

// Which options were given on the command line (to check what --resume allows).
typedef struct {
    int given[OPT_COUNT];
} GivenOptions;

static void parse_options(int argc, char **argv, TrainOptions *o, GivenOptions *given) {
    *o = default_options;
    memset(given, 0, sizeof(*given));
    opterr = 0;
    int c, index = -1;
    long max_threads = THREADS_PER_CORE * (long)omp_get_num_procs();
    while ((c = getopt_long(argc, argv, ":h", long_options, &index)) != -1) {
        switch (c) {
            case 'h': usage(stdout); exit(0);
            case '?':
                if (optopt) die(EXIT_USAGE, "unknown option '-%c' (see --help)", optopt);
                die(EXIT_USAGE, "unknown option '%s' (see --help)", argv[optind - 1]);
                break;
            case ':': die(EXIT_USAGE, "option '%s' needs a value (see --help)", argv[optind - 1]); break;
            default: break;
        }
        given->given[c] = 1;
        char name[64];
        snprintf(name, sizeof(name), "--%s", long_options[index].name);
        switch (c) {
            case OPT_DATA: copy_path(o->data, name, optarg); break;
            case OPT_OUT: copy_path(o->out, name, optarg); break;
            case OPT_RESUME: copy_path(o->resume, name, optarg); break;
            case OPT_N_LAYER: o->n_layer = (int)parse_long(name, optarg, 1, 1024); break;
            case OPT_N_HEAD: o->n_head = (int)parse_long(name, optarg, 1, 1024); break;
            case OPT_N_EMBD: o->n_embd = (int)parse_long(name, optarg, 1, 65536); break;
            case OPT_HEAD_SIZE: o->head_size = (int)parse_long(name, optarg, 1, 65536); break;
            case OPT_BLOCK_SIZE: o->block_size = (int)parse_long(name, optarg, 1, 65536); break;
            case OPT_BATCH_SIZE: o->batch_size = (int)parse_long(name, optarg, 1, TRAIN_MAX_BATCH_SIZE); break;
            case OPT_DROPOUT: o->dropout = parse_float(name, optarg, 0.0, 1.0, 0); break;
            case OPT_NO_QKV_BIAS: o->qkv_bias = 0; break;
            case OPT_STEPS: o->steps = parse_long(name, optarg, 0, TRAIN_MAX_STEPS); break;
            case OPT_LR: o->lr = parse_float(name, optarg, 0.0, TRAIN_MAX_LR, 1); break;
            case OPT_MIN_LR: o->min_lr = parse_float(name, optarg, 0.0, TRAIN_MAX_LR, 1); break;
            case OPT_WARMUP: o->warmup = parse_long(name, optarg, 0, TRAIN_MAX_STEPS); break;
            case OPT_DECAY_STEPS: o->decay_steps = parse_long(name, optarg, 1, TRAIN_MAX_STEPS); break;
            case OPT_WEIGHT_DECAY: o->weight_decay = parse_float(name, optarg, 0.0, TRAIN_MAX_LR, 1); break;
            case OPT_GRAD_CLIP: o->grad_clip = parse_float(name, optarg, 0.0, TRAIN_MAX_GRAD_CLIP, 1); break;
            case OPT_EVAL_EVERY: o->eval_every = parse_long(name, optarg, 1, TRAIN_MAX_STEPS); break;
            case OPT_EVAL_BATCHES: o->eval_batches = parse_long(name, optarg, 1, TRAIN_MAX_EVAL_BATCHES); break;
            case OPT_SAVE_EVERY: o->save_every = parse_long(name, optarg, 1, TRAIN_MAX_STEPS); break;
            case OPT_LOG_EVERY: o->log_every = parse_long(name, optarg, 1, TRAIN_MAX_STEPS); break;
            case OPT_SEED: o->seed = (uint64_t)parse_long(name, optarg, 0, LONG_MAX); break;
            case OPT_THREADS:
                o->threads = (int)parse_long(name, optarg, 0, max_threads);
                break;
            case OPT_VAL_FRACTION: o->val_fraction = parse_float(name, optarg, 0.0, 1.0, 0); break;
            case OPT_GRAD_ACCUM: o->grad_accum = (int)parse_long(name, optarg, 1, TRAIN_MAX_BATCH_SIZE); break;
            case OPT_ZERO: o->zero = (int)parse_long(name, optarg, 0, 1); break;
            case OPT_MAX_MEMORY: o->max_memory = parse_float(name, optarg, 1.0, 1e12, 1) * MIB; break;
            case OPT_INIT_FROM: copy_path(o->init_from, name, optarg); break;
            case OPT_SKIP_UNKNOWN: o->skip_unknown = 1; break;
            case OPT_KEEP_CR: o->keep_cr = 1; break;
            case OPT_FORCE: o->force = 1; break;
            case OPT_PRECISION:
                if (precision_parse(optarg, &o->precision) != 0)
                    die(EXIT_USAGE, "--precision must be fp32 or bf16, got '%s'", optarg);
                break;
            case OPT_MPI_TIMEOUT: o->mpi_timeout = parse_float(name, optarg, 0.0, 1e9, 1); break;
        }
    }
    if (optind < argc) die(EXIT_USAGE, "unexpected argument '%s' (see --help)", argv[optind]);
    if (given->given[OPT_INIT_FROM] && given->given[OPT_RESUME])
        die(EXIT_USAGE, "--init-from starts a new run and --resume continues one: give one of them");
    if (given->given[OPT_INIT_FROM]) {
        static const int model_options[] = {OPT_N_LAYER, OPT_N_HEAD, OPT_N_EMBD, OPT_HEAD_SIZE,
                                            OPT_BLOCK_SIZE, OPT_NO_QKV_BIAS};
        for (size_t k = 0; k < sizeof(model_options) / sizeof(model_options[0]); k++)
            if (given->given[model_options[k]])
                for (int i = 0; long_options[i].name; i++)
                    if (long_options[i].val == model_options[k])
                        die(EXIT_USAGE, "--%s cannot be given with --init-from: the model is the checkpoint's",
                            long_options[i].name);
    } else if (given->given[OPT_SKIP_UNKNOWN]) {
        die(EXIT_USAGE, "--skip-unknown is for --init-from (a new run's vocabulary is its corpus's)");
    }
}

// Options the model and schedule need that depend on others.
static void check_options(TrainOptions *o) {
    if (o->head_size == 0) {
        if (o->n_embd % o->n_head != 0)
            die(EXIT_USAGE, "--n-embd %d is not divisible by --n-head %d: give --head-size", o->n_embd, o->n_head);
        o->head_size = o->n_embd / o->n_head;
    }
    if (o->decay_steps == 0) o->decay_steps = o->steps > 0 ? o->steps : 1;
    if (o->min_lr > o->lr) die(EXIT_USAGE, "--min-lr %g is larger than --lr %g", o->min_lr, o->lr);
}

// Restores the saved options (keeping those --resume may change) and the training state.
static void resume_options(const Checkpoint *ck, TrainOptions *o, const GivenOptions *given, TrainState *s) {
    static const int allowed[] = {OPT_RESUME, OPT_STEPS, OPT_OUT, OPT_THREADS, OPT_SAVE_EVERY, OPT_EVAL_EVERY,
                                  OPT_MAX_MEMORY, OPT_DATA, OPT_DECAY_STEPS, OPT_WARMUP, OPT_GRAD_ACCUM,
                                  OPT_ZERO, OPT_PRECISION, OPT_MPI_TIMEOUT, OPT_FORCE};
    for (int i = 0; long_options[i].name; i++) {
        int v = long_options[i].val, ok = 0;
        for (size_t k = 0; k < sizeof(allowed) / sizeof(allowed[0]); k++) ok |= allowed[k] == v;
        if (v < (int)(sizeof(given->given) / sizeof(int)) && given->given[v] && !ok)
            die(EXIT_USAGE, "--%s cannot be changed when resuming (only --steps, --out, --threads, "
                "--save-every, --eval-every, --max-memory, --data, --decay-steps, --warmup, --grad-accum, "
                "--zero, --precision, --mpi-timeout and --force can)", long_options[i].name);
    }
    if (!ck->has_optimizer)
        die(EXIT_DATA, "%s has no optimizer state, so its run cannot be resumed (./generate can still use it)",
            ck->path);
    TrainOptions given_values = *o;
    char err[ERR_LEN];
    if (run_meta_read(ck, o, s, err) != 0) die(EXIT_DATA, "%s", err);
    if (given->given[OPT_STEPS]) {
        o->steps = given_values.steps;
        if (o->steps < s->step) die(EXIT_USAGE, "--steps %ld is before the checkpoint's step %ld", o->steps, s->step);
    }
    if (given->given[OPT_DECAY_STEPS] || given->given[OPT_WARMUP]) {
        // a new schedule from the checkpoint's step
        o->schedule_start = s->step;
        o->warmup = given->given[OPT_WARMUP] ? given_values.warmup : 0;
        o->decay_steps = given->given[OPT_DECAY_STEPS] ? given_values.decay_steps : o->steps;
        if (o->decay_steps <= s->step)
            die(EXIT_USAGE, "the new schedule's decay must end after the checkpoint's step %ld: give --decay-steps "
                "(default --steps) above it", s->step);
    }
    if (given->given[OPT_DATA]) strcpy(o->data, given_values.data);  // checked against the fingerprint
    else {
        char saved[sizeof(o->data)];
        strcpy(saved, o->data);
        run_dir_find_corpus(saved, ck->path, o->data, sizeof(o->data));
    }
    if (given->given[OPT_SAVE_EVERY]) o->save_every = given_values.save_every;
    if (given->given[OPT_EVAL_EVERY]) o->eval_every = given_values.eval_every;
    o->grad_accum = given_values.grad_accum;
    o->zero = given_values.zero;
    o->mpi_timeout = given_values.mpi_timeout;
    if (given->given[OPT_PRECISION]) o->precision = given_values.precision;
}

// By default a resumed run goes on writing beside its checkpoint.
static void resume_out_dir(TrainOptions *o, const GivenOptions *given) {
    if (given->given[OPT_OUT]) return;
    const char *slash = strrchr(o->resume, '/');
    if (!slash) strcpy(o->out, ".");
    else snprintf(o->out, sizeof(o->out), "%.*s", (int)(slash - o->resume), o->resume);
    if (!o->out[0]) strcpy(o->out, "/");
}

// ----------------------------------------------------------------------------
// the run

// What main allocates, freed by an exit handler whichever way the program ends.
static struct {
    Checkpoint ck;
    Corpus corpus;
    Vocab vocab;
    int *inputs, *targets;
    GPT model;
    AdamW opt;
    DataParallel dp;
    RunLog log;
    RunLock lock;  // of --out, held by rank 0
    LossHistory losses;
} run;

static void free_run(void) {
    atomic_file_remove_open();
    char err[ERR_LEN];
    run_log_close(&run.log, err);  // a failure here was already reported, or does not matter any more
    run_lock_release(&run.lock);
    loss_history_free(&run.losses);
    adamw_free(&run.opt);
    data_parallel_free(&run.dp);
    gpt_free(&run.model);
    free(run.inputs);
    free(run.targets);
    vocab_free(&run.vocab);
    corpus_free(&run.corpus);
    checkpoint_close(&run.ck);
    dist_finalize();
}

// Meets the other processes (dist.h) at a point every one of them reaches: when one has
// failed, leaves with its status (it printed why); else returns the stop signal that any of
// them has received, or 0.
static int agree(void) {
    DistAgreement a = dist_agree(0, stop_signals_received());
    if (a.status) exit(a.status);
    return a.signal;
}

// Threads per process: --threads, else the cores this process may use, shared with the
// other processes of the run on this machine.
static void set_threads(int threads) {
    if (threads == 0 && dist_local_size() > 1) {
        long share = sysconf(_SC_NPROCESSORS_ONLN) / dist_local_size();
        threads = share < 1 ? 1 : share < omp_get_max_threads() ? (int)share : omp_get_max_threads();
    }
    if (threads > 0) omp_set_num_threads(threads);
}

// Other signals that end the program remove the temporary file of a save in progress first.
static void on_fatal_signal(int sig) {
    atomic_file_remove_open();
    signal(sig, SIG_DFL);
    raise(sig);
}

// A collective has waited --mpi-timeout seconds: a process has stopped or is cut off, and MPI
// cannot take the collective back, so every process ends.
static void on_stalled(const char *message) {
    fprintf(stderr, "%s: %s, longer than --mpi-timeout: a process has stopped or cannot be reached (if it is only "
            "slow, give a longer --mpi-timeout); ending every process\n", program_invocation_short_name, message);
    dist_abort(EXIT_DATA);
    exit(EXIT_DATA);  // without MPI, dist_abort returns
}

static void install_signal_handlers(void) {
    static const int fatal[] = {SIGQUIT, SIGPIPE, SIGALRM, SIGUSR1, SIGUSR2};
    for (size_t i = 0; i < sizeof(fatal) / sizeof(fatal[0]); i++) signal(fatal[i], on_fatal_signal);
    // SIGINT, SIGTERM, SIGHUP: stop after the step and save (several processes: see stop_signals.h)
    stop_signals_install(dist_size() > 1);
    // a file-size limit makes the write fail with EFBIG, reported, instead of killing the run
    signal(SIGXFSZ, SIG_IGN);
}

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static void make_dirs(const char *path) {
    char buf[1024];
    snprintf(buf, sizeof(buf), "%s", path);
    for (char *p = buf + 1; ; p++) {
        if (*p == '/' || *p == '\0') {
            char saved = *p;
            *p = '\0';
            if (mkdir(buf, 0777) != 0 && errno != EEXIST) die(EXIT_DATA, "cannot create directory %s: %s", buf, strerror(errno));
            *p = saved;
            if (saved == '\0') break;
        }
    }
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) die(EXIT_DATA, "%s is not a directory", path);
}

// Before anything in the output directory is read or written (rank 0): it exists and this run
// holds its lock (training/run_lock.h), so that a second run there exits 2 naming the first.
// A --resume of a checkpoint that does not exist locks nothing (checkpoint_open says why next).
static void lock_out_dir(const TrainOptions *o) {
    if (o->resume[0] && access(o->resume, F_OK) != 0) return;
    make_dirs(o->out);
    char err[ERR_LEN];
    int locked = run_lock_take(&run.lock, o->out, err);
    if (locked == RUN_LOCK_BUSY) die(EXIT_USAGE, "%s", err);
    if (locked == RUN_LOCK_FAILED) die(EXIT_DATA, "cannot write into --out %s: %s", o->out, err);
    if (locked == RUN_LOCK_UNSUPPORTED)
        fprintf(stderr, "%s: warning: %s (this file system has no locks: make sure no other run writes into %s)\n",
                program_invocation_short_name, err, o->out);
}

// Before any work (rank 0): what the run will do to its output directory is planned (a run
// there, or newer work of the resumed one, is refused unless --force: training/run_dir.h), but
// nothing is changed yet; the temporary files that a killed run left beside this run's outputs
// are removed, and the directory takes new files.
static void prepare_out_dir(const TrainOptions *o, long step, RunDirPlan *plan, const char *const outputs[4]) {
    char err[ERR_LEN];
    int planned = o->resume[0] ? run_dir_plan_resume(o->out, o->resume, step, o->force, plan, err)
                               : run_dir_plan_new(o->out, o->init_from[0] ? o->init_from : NULL, o->force, plan, err);
    if (planned != 0) die(planned == RUN_DIR_REFUSED ? EXIT_USAGE : EXIT_DATA, "%s", err);
    int removed = 0;
    for (int i = 0; i < 4; i++) {
        int n = atomic_file_remove_stale(outputs[i], err);
        if (n < 0) die(EXIT_DATA, "%s", err);
        removed += n;
    }
    if (removed > 0) printf("removed %d temporary file%s left in %s by a run that was stopped\n", removed,
                            removed == 1 ? "" : "s", o->out);
    AtomicFile probe;
    if (atomic_file_open(&probe, outputs[0], err) != 0) die(EXIT_DATA, "cannot write into --out %s: %s", o->out, err);
    atomic_file_abort(&probe);
}

// Once every check of the run has passed (rank 0): the output directory changed as planned,
// and log.csv opened (a resumed run's rows after its step dropped).
static void start_out_dir(const TrainOptions *o, const RunDirPlan *plan, long step, const char *log_path) {
    char err[ERR_LEN];
    if (run_dir_apply(o->out, plan, err) != 0) die(EXIT_DATA, "%s", err);
    if (plan->message[0]) printf("%s\n", plan->message);
    if (run_log_open(&run.log, log_path, !plan->fresh_log, step, err) != 0) die(EXIT_DATA, "%s", err);
}

static void format_duration(char *buf, size_t n, double s) {
    if (!isfinite(s) || s < 0) s = 0;
    long t = (long)(s + 0.5);
    if (t >= 3600) snprintf(buf, n, "%ldh%02ldm", t / 3600, t / 60 % 60);
    else snprintf(buf, n, "%ldm%02lds", t / 60, t % 60);
}

// The memory the run may take (0: unknown, no limit), and where that figure comes from. The
// memory available is shared by the processes of the run on this machine.
static double memory_limit(const TrainOptions *o, const char **source) {
    *source = o->max_memory > 0 ? "--max-memory"
              : dist_local_size() > 1 ? "available (MemAvailable) per process on this machine"
              : "available (MemAvailable)";
    return o->max_memory > 0 ? o->max_memory : gpt_memory_available() / dist_local_size();
}

// Prints the memory the run needs with its limit; exits 2 when it needs more.
static void check_memory(const GPTMemoryPlan *plan, const TrainOptions *o) {
    const char *source;
    double limit = memory_limit(o, &source);
    char needed[512], limit_text[32];
    gpt_memory_describe(plan, needed, sizeof(needed));
    gpt_format_bytes(limit, limit_text, sizeof(limit_text));
    printf("memory: %s; %s %s\n", needed, limit_text, source);
    flush_output();
    if (limit > 0 && gpt_memory_total(plan) > limit) {
        gpt_format_bytes(gpt_memory_total(plan), needed, sizeof(needed));
        die(EXIT_USAGE, "the run needs %s of memory, more than the %s %s: use a smaller model, --batch-size or "
            "--block-size, a larger --grad-accum, a smaller corpus%s", needed, limit_text, source,
            o->max_memory > 0 ? "" : ", or set --max-memory");
    }
}

// Writes the checkpoints asked for (paths NULL or not) from rank 0, with the optimizer state
// gathered from every process first.
static void save_checkpoints(const char *const paths[2], const TrainOptions *o, const TrainState *s) {
    static RunMeta meta;
    char err[ERR_LEN];
    AdamW copy;
    const AdamW *opt;
    if (data_parallel_gather_optimizer(&run.dp, &run.model, &run.opt, &copy, &opt, err) != 0)
        die(EXIT_USAGE, "%s", err);
    run_meta_write(&meta, o, s);
    for (int i = 0; i < 2 && dist_rank() == 0; i++)
        if (paths[i] && checkpoint_save(paths[i], &run.model, &run.vocab, opt, meta.entries, meta.count, err) != 0)
            die(EXIT_DATA, "%s", err);
    data_parallel_release_optimizer(&run.dp);
}

int main(int argc, char **argv) {
    char err[ERR_LEN];
    if (dist_init(&argc, &argv, err) != 0) {
        if (dist_rank() == 0) fprintf(stderr, "%s: %s\n", program_invocation_short_name, err);
        dist_finalize();
        return EXIT_USAGE;
    }
    if (dist_rank() != 0 && !freopen("/dev/null", "w", stdout)) return EXIT_DATA;  // rank 0 alone reports
    atexit(free_run);  // which ends MPI too, however the program ends
    TrainOptions o;
    GivenOptions given;
    parse_options(argc, argv, &o, &given);
    install_signal_handlers();
    dist_set_timeout(o.mpi_timeout, on_stalled);
    TrainState state = {0, {0}, INFINITY, NAN, 0, 0.0};
    rng_seed(&state.rng, o.seed);

    int resuming = o.resume[0] != '\0', initializing = o.init_from[0] != '\0';
    if (resuming) resume_out_dir(&o, &given);
    if (dist_rank() == 0) lock_out_dir(&o);
    if (resuming) {
        if (checkpoint_open(o.resume, &run.ck, err) != 0) die(EXIT_DATA, "%s", err);
        resume_options(&run.ck, &o, &given, &state);
    }
    if (initializing) {
        // the checkpoint's architecture; its dropout unless --dropout is given
        if (checkpoint_open(o.init_from, &run.ck, err) != 0) die(EXIT_DATA, "%s", err);
        const GPTConfig *c = &run.ck.config;
        o.n_layer = c->n_layer, o.n_head = c->n_head, o.n_embd = c->n_embd, o.head_size = c->head_size;
        o.block_size = c->block_size, o.qkv_bias = c->qkv_bias;
        if (!given.given[OPT_DROPOUT]) o.dropout = c->dropout;
    }
    // the run's identity: a resumed run keeps its checkpoint's (one from before train.run_id gets
    // a new one); a new run and a fine-tuning one get a new one (training/run_identity.h)
    if (!resuming || !o.run_id[0]) run_id_new(o.run_id);
    check_options(&o);
    if (kernels_init(err) != 0) die(EXIT_USAGE, "%s", err);
    set_threads(o.threads);
    char ckpt_path[1100], best_path[1100], log_path[1100], plot_path[1100];
    snprintf(ckpt_path, sizeof(ckpt_path), "%s/ckpt.safetensors", o.out);
    snprintf(best_path, sizeof(best_path), "%s/best.safetensors", o.out);
    snprintf(log_path, sizeof(log_path), "%s/log.csv", o.out);
    snprintf(plot_path, sizeof(plot_path), "%s/loss.svg", o.out);
    RunDirPlan out_plan;
    if (dist_rank() == 0) prepare_out_dir(&o, state.step, &out_plan, (const char *const[4]){ckpt_path, best_path,
                                                                                             log_path, plot_path});

    // corpus -> vocabulary -> tokens -> train/val split; the text takes 4 bytes a character
    // (its code points, then its tokens in their place), and no more than the memory limit
    // leaves beside the checkpoint being resumed or fine-tuned
    if (!o.data[0] && corpus_default_path(o.data, sizeof(o.data), err) != 0)
        die(EXIT_DATA, "%s; give --data FILE", err);
    const char *limit_source;
    double limit = memory_limit(&o, &limit_source), held = (double)run.ck.file.file_len;
    int loaded = corpus_load(o.data, o.keep_cr, limit > 0 ? corpus_max_chars(limit - held) : CORPUS_NO_LIMIT,
                             &run.corpus, err);
    if (loaded == -2) {
        char limit_text[32], held_text[64] = "";
        gpt_format_bytes(limit, limit_text, sizeof(limit_text));
        if (held > 0) {
            strcpy(held_text, " beside the checkpoint's ");
            gpt_format_bytes(held, held_text + strlen(held_text), sizeof(held_text) - strlen(held_text));
        }
        die(EXIT_USAGE, "%s: the text, at 4 bytes a character, needs more than the %s %s%s%s", err, limit_text,
            limit_source, held_text, o.max_memory > 0 ? "" : " (or set --max-memory)");
    }
    if (loaded != 0)
        die(EXIT_DATA, "%s%s", err, resuming && !given.given[OPT_DATA] ? " (give --data FILE if the corpus moved)" : "");
    double text_bytes = (double)run.corpus.len * sizeof(uint32_t);
    char cleaned[160];
    text_cleanup_describe(&run.corpus.cleanup, cleaned, sizeof(cleaned));
    if (cleaned[0])
        printf("%s: %s%s\n", o.data, cleaned,
               run.corpus.cleanup.crlf || run.corpus.cleanup.lone_cr ? " (--keep-cr keeps them)" : "");
    // the text's fingerprint, of the text as cleaned: a resumed run's must be the checkpoint's
    char fingerprint[CORPUS_FINGERPRINT_LEN];
    corpus_fingerprint(run.corpus.text, run.corpus.len, fingerprint);
    int saved_fingerprint = o.corpus_fingerprint[0] != '\0';
    if (resuming && saved_fingerprint && strcmp(fingerprint, o.corpus_fingerprint) != 0) {
        char have[64], want[64];
        corpus_fingerprint_describe(fingerprint, have, sizeof(have));
        corpus_fingerprint_describe(o.corpus_fingerprint, want, sizeof(want));
        die(EXIT_DATA, "%s is not the text %s was trained on: it has %s, the checkpoint's corpus %s", o.data,
            o.resume, have, want);
    }
    if (resuming && !saved_fingerprint && given.given[OPT_DATA])
        die(EXIT_USAGE, "%s keeps no corpus fingerprint (an older checkpoint), so --data cannot be checked: resume "
            "without --data", o.resume);
    strcpy(o.corpus_fingerprint, fingerprint);
    if (resuming || initializing) {
        // the checkpoint's vocabulary; a fine-tuning corpus may only use its characters
        if (vocab_from_chars(&run.vocab, run.ck.vocab, run.ck.config.vocab_size, err) != 0)
            die(EXIT_DATA, "%s: %s", run.ck.path, err);
        MissingChars missing;
        if (vocab_coverage_find(&run.vocab, run.corpus.text, run.corpus.len, &missing, err) != 0)
            die(EXIT_DATA, "%s", err);
        char listed[600];
        vocab_coverage_describe(&missing, 12, listed, sizeof(listed));
        size_t total = missing.total;
        int distinct = missing.distinct;
        vocab_coverage_free(&missing);
        if (distinct > 0 && !o.skip_unknown)
            die(EXIT_DATA, "%s: %zu character%s (%d distinct) not in the vocabulary of %s: %s; give --skip-unknown "
                "to drop them", o.data, total, total == 1 ? "" : "s", distinct, run.ck.path, listed);
        if (distinct > 0) {
            run.corpus.len = vocab_coverage_drop(&run.vocab, run.corpus.text, run.corpus.len);
            printf("%s: dropped %zu character%s (%d distinct) not in the vocabulary of %s: %s\n", o.data, total,
                   total == 1 ? "" : "s", distinct, run.ck.path, listed);
        }
    } else if (vocab_build(&run.vocab, run.corpus.text, run.corpus.len, err) != 0) {
        die(EXIT_DATA, "%s: %s", o.data, err);
    }
    Vocab corpus_vocab = {0};  // an older checkpoint, without a fingerprint: the corpus's vocabulary must be its
    if (resuming && !saved_fingerprint &&
        (vocab_build(&corpus_vocab, run.corpus.text, run.corpus.len, err) != 0 || corpus_vocab.size != run.vocab.size ||
         memcmp(corpus_vocab.chars, run.vocab.chars, run.vocab.size * sizeof(uint32_t)) != 0))
        die(EXIT_DATA, "%s: the vocabulary of %s differs from the checkpoint's; resume needs the same corpus",
            o.resume, o.data);
    vocab_free(&corpus_vocab);
    size_t bad_pos;
    corpus_encode(&run.corpus, &run.vocab, &bad_pos);  // every character is in the vocabulary by now
    Dataset ds;
    if (dataset_split(&ds, run.corpus.tokens, run.corpus.len, o.val_fraction, o.block_size, err) != 0)
        die(given.given[OPT_BLOCK_SIZE] || given.given[OPT_VAL_FRACTION] ? EXIT_USAGE : EXIT_DATA, "%s: %s", o.data, err);
    int have_val = ds.val_len > 0;
    const Vocab *vocab = &run.vocab;
    // the first agreement: every process has read its corpus and checkpoint, which must be the
    // same everywhere, with the same options, before any collective sized by them
    agree();
    SameRun same = {&o, fingerprint, vocab, resuming || initializing ? &run.ck : NULL, state.step};
    if (same_run_check(&same, err) != 0) die(EXIT_DATA, "%s", err);

    // the model's size, and the memory it needs, before anything is allocated for it
    GPTConfig config = {vocab->size, o.block_size, o.n_layer, o.n_head, o.n_embd, o.head_size, o.qkv_bias, o.dropout};
    if (gpt_config_validate(&config, err) != 0) die(EXIT_USAGE, "%s", err);
    int B = o.batch_size, T = o.block_size;
    int tty = isatty(STDOUT_FILENO) && dist_size() == 1;  // mpirun forwards output: no rewritten line
    printf("chargpt: %s, %zu characters, vocabulary %d; train %zu, val %zu\n", o.data, run.corpus.len, vocab->size,
           ds.train_len, ds.val_len);
    GPTMemoryPlan plan;
    gpt_memory_plan(&config, B, 1, &plan);
    DataParallel *dp = &run.dp;
    size_t num_parameters = (size_t)(plan.parameters / sizeof(float));
    if (data_parallel_plan(dp, B, T, o.grad_accum, o.zero, num_parameters, err) != 0) die(EXIT_USAGE, "%s", err);
    // this process's share: activations of one micro-batch's rows, moments of its shard
    gpt_memory_plan(&config, dp->rows, 1, &plan);
    gpt_memory_plan_precision(&plan, &config, dp->rows, GPT_PLAN_TRAINING, o.precision);
    plan.optimizer *= (double)dp->shard_n / (double)num_parameters;
    plan.text = text_bytes;
    char precision[64], precision_note[ERR_LEN];
    precision_describe(o.precision, precision, sizeof(precision));
    printf("model: %d layers, %d heads of %d, n_embd %d, block %d, %zu parameters; batch %d, %d threads; "
           "precision %s\n", o.n_layer, o.n_head, o.head_size, o.n_embd, o.block_size, num_parameters, B,
           omp_get_max_threads(), precision);
    if (kernels_precision_note(o.precision, precision_note, sizeof(precision_note))) printf("%s\n", precision_note);
    if (dist_size() > 1 || o.grad_accum > 1)
        printf("data parallel: %d process%s x %d micro-batch%s of %d sequences%s\n", dist_size(),
               dist_size() == 1 ? "" : "es", o.grad_accum, o.grad_accum == 1 ? "" : "es", dp->rows,
               dp->zero ? "; optimizer state sharded (ZeRO stage 1)" : "");
    check_memory(&plan, &o);

    // model and optimizer; failing to allocate what the plan allowed is also "too large"
    GPT *model = &run.model;
    AdamW *opt = &run.opt;
    if (resuming || initializing) {
        if (checkpoint_load_model(&run.ck, model, 1, err) != 0) die(EXIT_USAGE, "%s", err);
        model->config.dropout = o.dropout;  // --init-from may change it
        if (initializing) checkpoint_close(&run.ck);
    } else {
        if (gpt_build(model, &config, 1, err) != 0) die(EXIT_USAGE, "%s", err);
        gpt_init_weights(model, o.seed);
    }
    if (gpt_set_precision(model, o.precision, err) != 0) die(EXIT_USAGE, "%s", err);
    if (gpt_alloc_activations(model, dp->rows, err) != 0) die(EXIT_USAGE, "%s", err);
    if (data_parallel_init(dp, model, opt, o.beta1, o.beta2, o.eps, o.weight_decay, err) != 0)
        die(EXIT_USAGE, "%s", err);
    if (resuming) {
        if (checkpoint_load_optimizer(&run.ck, opt, err) != 0) die(EXIT_DATA, "%s", err);
        checkpoint_close(&run.ck);
    }
    run.inputs = malloc((size_t)B * T * sizeof(int));
    run.targets = malloc((size_t)B * T * sizeof(int));
    if (!run.inputs || !run.targets) die(EXIT_USAGE, "out of memory for batches of %d x %d tokens", B, T);
    if (initializing)
        printf("fine-tuning %s's weights from step 0 of %ld: new optimizer state, learning rate %g with %ld warm-up "
               "steps and cosine decay to %g at step %ld\n", o.init_from, o.steps, o.lr, o.warmup, o.min_lr,
               o.decay_steps);
    if (resuming) {
        printf("resuming %s at step %ld of %ld", o.resume, state.step, o.steps);
        if (given.given[OPT_DECAY_STEPS] || given.given[OPT_WARMUP])
            printf("; new learning-rate schedule: %ld warm-up steps from step %ld to %g, then cosine decay to %g at "
                   "step %ld\n", o.warmup, o.schedule_start, o.lr, o.min_lr, o.decay_steps);
        else if (state.step >= o.decay_steps && o.steps > state.step)
            printf("; the saved schedule's decay ended at step %ld, so the new steps train at --min-lr %g (give "
                   "--decay-steps, and --warmup, for a new schedule)\n", o.decay_steps, o.min_lr);
        else
            printf(" on the saved learning-rate schedule (cosine decay to %g at step %ld)\n", o.min_lr,
                   o.decay_steps);
    }
    if (dist_rank() == 0) start_out_dir(&o, &out_plan, state.step, log_path);
    // the loss plot's points: a resumed run's log.csv so far, then one per report
    char plot_title[1200];
    snprintf(plot_title, sizeof(plot_title), "chargpt: %s", o.data);
    if (resuming && dist_rank() == 0 && loss_history_read(&run.losses, log_path, err) != 0) die(EXIT_DATA, "%s", err);
    int plot_written = 0;
    flush_output();
    agree();  // every process has its data and memory (or all leave, with the failure's status)

    double run_start = now_seconds(), elapsed_before = state.elapsed_s;
    long start_step = state.step;
    double loss_sum = 0.0, ms_sum = 0.0, train_s = 0.0, report_loss = NAN, step_comm_s = 0.0;
    int loss_count = 0, report_count = 0;
    float lr = 0.0f, train_loss = NAN;
    while (state.step < o.steps) {
        double t0 = now_seconds();
        dataset_train_batch(&ds, &state.rng, B, T, run.inputs, run.targets);
        uint64_t dropout_seed = hash_mix64(o.seed ^ hash_mix64((uint64_t)state.step + 1));
        lr = learning_rate(&o, state.step);
        double comm_before = dist_comm_seconds();
        double norm = data_parallel_step(dp, model, opt, run.inputs, run.targets, dropout_seed, lr, o.grad_clip);
        step_comm_s += dist_comm_seconds() - comm_before;
        if (!isfinite(model->mean_loss) || !isfinite(norm)) {  // the same on every process
            if (dist_rank() == 0)
                fprintf(stderr, "%s%s: step %ld: %s is not finite; stopping (the last saved checkpoint is unchanged)\n",
                        tty ? "\n" : "", program_invocation_short_name, state.step + 1,
                        isfinite(model->mean_loss) ? "the gradient norm" : "the loss");
            return EXIT_NONFINITE;
        }
        state.step++;
        state.tokens_seen += (long)B * T;
        train_loss = model->mean_loss;
        loss_sum += train_loss;
        loss_count++;
        double step_s = now_seconds() - t0;
        ms_sum += 1000.0 * step_s;
        train_s += step_s;
        state.elapsed_s = elapsed_before + now_seconds() - run_start;
        int stop = agree();  // every process stops after the same step

        int last = state.step == o.steps;
        int evaluated = 0;
        const char *saves[2] = {NULL, NULL};
        if (have_val && (state.step % o.eval_every == 0 || last)) {
            double val_loss = data_parallel_evaluate(dp, model, &ds, o.eval_batches, NULL, run.inputs, run.targets);
            if (!isnan(val_loss)) {
                state.last_val_loss = val_loss;
                evaluated = 1;
                if (state.last_val_loss < state.best_val_loss) {
                    state.best_val_loss = state.last_val_loss;
                    saves[0] = best_path;
                }
            } else {
                stop = stop ? stop : agree();  // the signal that abandoned it, agreed by every process
                printf("%sevaluation at step %ld abandoned\n", tty ? "\n" : "", state.step);
            }
        }
        if (state.step % o.save_every == 0 || last || stop) saves[1] = ckpt_path;
        if (saves[0] || saves[1]) save_checkpoints(saves, &o, &state);

        // progress: the terminal line is rewritten every step, fitted to its width; reports
        // every log_every steps. The loss is the mean since the last report, as log.csv has it;
        // ms/step, tok/s and the ETA count training steps only.
        int report = state.step % o.log_every == 0 || last || evaluated || stop;
        double ms_per_step = ms_sum / loss_count;
        double tok_per_s = B * T / (ms_per_step / 1000.0);
        double eta = (o.steps - state.step) * train_s / (state.step - start_step);
        char elapsed_text[32], eta_text[32];
        format_duration(elapsed_text, sizeof(elapsed_text), state.elapsed_s);
        format_duration(eta_text, sizeof(eta_text), eta);
        char fields[8][64], line[600];
        snprintf(fields[0], 64, "step %ld/%ld", state.step, o.steps);
        snprintf(fields[1], 64, "loss %.4f (mean of %d)", loss_sum / loss_count, loss_count);
        if (isnan(state.last_val_loss)) snprintf(fields[2], 64, "val -");
        else snprintf(fields[2], 64, "val %.4f", state.last_val_loss);
        snprintf(fields[3], 64, "lr %.2e", lr);
        snprintf(fields[4], 64, "%.1f ms/step", ms_per_step);
        snprintf(fields[5], 64, "%.0f tok/s", tok_per_s);
        snprintf(fields[6], 64, "%s elapsed", elapsed_text);
        snprintf(fields[7], 64, "ETA %s", eta_text);
        static const int importance[8] = {0, 1, 3, 5, 6, 4, 7, 2};
        const char *field_texts[8];
        for (int i = 0; i < 8; i++) field_texts[i] = fields[i];
        progress_line_fit(field_texts, importance, 8, tty ? terminal_width(STDOUT_FILENO) : 100000, line, sizeof(line));
        if (tty || report) {
            printf("%s%s%s", tty ? "\r\033[K" : "", line, tty && !evaluated ? "" : "\n");
            flush_progress();
        }
        if (report) {
            double mean_loss = loss_sum / loss_count;
            if (dist_rank() == 0 && run_log_row(&run.log, state.step, mean_loss, evaluated ? state.last_val_loss : NAN,
                                                lr, state.tokens_seen, state.elapsed_s, err) != 0)
                die(EXIT_DATA, "%s", err);
            LossPoint point = {state.step, mean_loss, evaluated ? state.last_val_loss : NAN, lr};
            if (loss_history_add(&run.losses, point, err) != 0) die(EXIT_DATA, "%s", err);
            if (evaluated && dist_rank() == 0) {
                if (loss_plot_write(plot_path, run.losses.points, run.losses.n, plot_title, err) != 0)
                    fprintf(stderr, "%s%s: warning: %s (training goes on)\n", tty ? "\n" : "",
                            program_invocation_short_name, err);
                else
                    plot_written = 1;
            }
            report_loss = mean_loss;
            report_count = loss_count;
            loss_sum = ms_sum = 0.0;
            loss_count = 0;
        }
        if (stop && dist_rank() == 0 && run_log_close(&run.log, err) != 0) die(EXIT_DATA, "%s", err);
        agree();  // what rank 0 wrote above was written, or every process leaves
        if (stop) {
            printf("%sstopped by %s after step %ld; saved %s (continue with --resume %s)\n", tty ? "\n" : "",
                   stop_signal_name(stop), state.step, ckpt_path, ckpt_path);
            return 128 + stop;
        }
    }
    if (state.step == start_step) save_checkpoints((const char *const[2]){NULL, ckpt_path}, &o, &state);
    if (dist_rank() == 0 && run_log_close(&run.log, err) != 0) die(EXIT_DATA, "%s", err);
    agree();
    double wall = now_seconds() - run_start;
    long steps_run = state.step - start_step;
    if (tty) printf("\n");
    printf("done: %ld steps in %.1f s: %.1f s training at %.0f tok/s, %.1f s evaluating and saving", steps_run, wall,
           train_s, steps_run * (double)B * T / (train_s > 0 ? train_s : 1), wall - train_s);
    if (report_count > 0) printf("; final train loss %.4f (mean of the last %d steps)", report_loss, report_count);
    if (isfinite(state.best_val_loss))
        printf(", val loss %.4f, best val loss %.4f", state.last_val_loss, state.best_val_loss);
    int have_best = access(best_path, F_OK) == 0;
    if (dist_size() > 1)
        printf("\ncommunication: %.2f ms/step in the steps' collectives over %d processes (waiting included)",
               1000.0 * step_comm_s / (steps_run > 0 ? steps_run : 1), dist_size());
    printf("\ncheckpoints: %s%s%s; log: %s%s%s\n", ckpt_path, have_best ? ", " : "", have_best ? best_path : "",
           log_path, plot_written ? "; loss plot: " : "", plot_written ? plot_path : "");
    if (have_val) {
        fflush(stdout);
        long scored;
        double loss = validation_pass(model, &ds, -1, dp->rows, T, dist_rank(), dist_size(), NULL, run.inputs,
                                      run.targets, &scored);
        int stop = agree();  // a stop signal ends the pass on every process
        if (stop) {
            printf("stopped by %s during the whole-validation pass (%s was saved at step %ld before it)\n",
                   stop_signal_name(stop), ckpt_path, state.step);
            return 128 + stop;
        }
        dist_sum_doubles(&loss, 1);
        printf("whole validation split: loss %.6f over %ld characters, in consecutive windows of %d (as ./generate "
               "--score --stride %d gives it)\n", loss, scored, T, T);
    }
    flush_progress();
    return 0;
}
