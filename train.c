// ./train: trains a character-level GPT on a text corpus (plain or gzip) and writes
// safetensors checkpoints that ./generate, PyTorch and --resume read.
// Exit status: 0 done, 1 bad data or I/O, 2 bad usage or a run too large for the memory,
// 3 non-finite loss, 130/143 stopped by SIGINT/SIGTERM after saving.
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

#include "data/batch.h"
#include "data/corpus.h"
#include "data/vocab.h"
#include "format/atomic_file.h"
#include "format/checkpoint.h"
#include "model/adamw.h"
#include "model/gpt.h"
#include "model/precision.h"
#include "model/rng.h"
#include "model/train_step.h"
#include "training/run_log.h"
#include "training/run_state.h"
#include "training/validation_pass.h"

#define EXIT_DATA 1
#define EXIT_USAGE 2
#define EXIT_NONFINITE 3
#define THREADS_PER_CORE 4  // --threads may ask for at most this many per core
#define MIB (1024.0 * 1024.0)

static const TrainOptions default_options = {
    .data = "", .out = "out", .resume = "",  // data "": the corpus shipped with chargpt
    .n_layer = 4, .n_head = 4, .n_embd = 128, .head_size = 0, .block_size = 64, .batch_size = 12,
    .qkv_bias = 1, .dropout = 0.0f,
    .steps = 2000, .decay_steps = 0, .warmup = 100,
    .lr = 1e-3f, .min_lr = 1e-4f, .weight_decay = 0.1f, .grad_clip = 1.0f, .val_fraction = 0.1f,
    .beta1 = 0.9f, .beta2 = 0.99f, .eps = 1e-8f,
    .eval_every = 250, .eval_batches = 200, .save_every = 500, .log_every = 10,
    .seed = 1337, .threads = 0, .max_memory = 0.0, .precision = PRECISION_FP32,
};

static void usage(FILE *f) {
    const TrainOptions *d = &default_options;
    fprintf(f,
            "usage: %s [options]\n"
            "Trains a character-level GPT on a UTF-8 text corpus (plain or gzip).\n\n"
            "data and output:\n"
            "  --data FILE          corpus, plain text or gzip (default: Tiny Shakespeare, shipped\n"
            "                       with chargpt as tinyshakespeare.txt.gz)\n"
            "  --val-fraction F     last fraction of the corpus held out for validation (default %g)\n"
            "  --out DIR            checkpoints and log.csv go here (default %s/)\n"
            "  --resume CKPT        continue the run saved in CKPT with its options; only --steps,\n"
            "                       --out, --threads, --save-every, --eval-every, --precision and\n"
            "                       --max-memory may be given again\n"
            "model:\n"
            "  --n-layer N          transformer blocks (default %d)\n"
            "  --n-head N           attention heads (default %d)\n"
            "  --n-embd N           embedding width C (default %d)\n"
            "  --head-size N        width of each head (default n_embd / n_head)\n"
            "  --block-size N       context length T (default %d)\n"
            "  --dropout P          dropout on attention weights and residual branches (default %g)\n"
            "  --no-qkv-bias        no bias in the attention's q, k, v projection\n"
            "training:\n"
            "  --batch-size N       sequences per step (default %d)\n"
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
            "  --threads N          OpenMP threads; 0 = all cores; at most %d per core (default %d)\n"
            "  --max-memory MIB     refuse a run that needs more memory than MIB mebibytes (default:\n"
            "                       the memory available now, MemAvailable in /proc/meminfo)\n"
            "  --precision P        fp32, or bf16: matrix products on bf16 copies of the weights and\n"
            "                       activations with fp32 sums, faster where the CPU has AVX512_BF16;\n"
            "                       master weights, gradients and optimizer stay fp32 (default fp32;\n"
            "                       --resume keeps the run's unless given)\n"
            "  -h, --help           show this help\n",
            program_invocation_name, d->val_fraction, d->out, d->n_layer, d->n_head, d->n_embd, d->block_size,
            d->dropout, d->batch_size, d->steps, d->lr, d->min_lr, d->warmup, d->weight_decay,
            d->grad_clip, d->eval_every, d->eval_batches, d->save_every, d->log_every, d->seed,
            THREADS_PER_CORE, d->threads);
}

static void die(int status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: ", program_invocation_short_name);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(status);
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
    OPT_SAVE_EVERY, OPT_LOG_EVERY, OPT_SEED, OPT_THREADS, OPT_VAL_FRACTION, OPT_MAX_MEMORY, OPT_PRECISION,
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
    {"max-memory", required_argument, 0, OPT_MAX_MEMORY},
    {"precision", required_argument, 0, OPT_PRECISION},
    {"help", no_argument, 0, 'h'},
    {0, 0, 0, 0},
};

// Which options were given on the command line (to check what --resume allows).
typedef struct {
    int given[OPT_PRECISION + 1];
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
            case OPT_MAX_MEMORY: o->max_memory = parse_float(name, optarg, 1.0, 1e12, 1) * MIB; break;
            case OPT_PRECISION:
                if (precision_parse(optarg, &o->precision) != 0)
                    die(EXIT_USAGE, "--precision must be fp32 or bf16, got '%s'", optarg);
                break;
        }
    }
    if (optind < argc) die(EXIT_USAGE, "unexpected argument '%s' (see --help)", argv[optind]);
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
                                  OPT_MAX_MEMORY, OPT_PRECISION};
    for (int i = 0; long_options[i].name; i++) {
        int v = long_options[i].val, ok = 0;
        for (size_t k = 0; k < sizeof(allowed) / sizeof(allowed[0]); k++) ok |= allowed[k] == v;
        if (v < (int)(sizeof(given->given) / sizeof(int)) && given->given[v] && !ok)
            die(EXIT_USAGE, "--%s cannot be changed when resuming (only --steps, --out, --threads, "
                "--save-every, --eval-every, --precision and --max-memory can)", long_options[i].name);
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
    if (given->given[OPT_SAVE_EVERY]) o->save_every = given_values.save_every;
    if (given->given[OPT_EVAL_EVERY]) o->eval_every = given_values.eval_every;
    if (given->given[OPT_PRECISION]) o->precision = given_values.precision;
    if (!given->given[OPT_OUT]) {
        // by default a resumed run goes on writing beside its checkpoint
        const char *slash = strrchr(ck->path, '/');
        if (!slash) strcpy(o->out, ".");
        else snprintf(o->out, sizeof(o->out), "%.*s", (int)(slash - ck->path), ck->path);
        if (!o->out[0]) strcpy(o->out, "/");
    }
}

// ----------------------------------------------------------------------------
// the run

// What main allocates, freed by an exit handler whichever way the program ends.
static struct {
    Checkpoint ck;
    Corpus corpus;
    Vocab vocab;
    int *tokens, *inputs, *targets;
    GPT model;
    AdamW opt;
    RunLog log;
} run;

static void free_run(void) {
    atomic_file_remove_open();
    char err[ERR_LEN];
    run_log_close(&run.log, err);  // a failure here was already reported, or does not matter any more
    adamw_free(&run.opt);
    gpt_free(&run.model);
    free(run.tokens);
    free(run.inputs);
    free(run.targets);
    vocab_free(&run.vocab);
    corpus_free(&run.corpus);
    checkpoint_close(&run.ck);
}

// SIGINT and SIGTERM stop the run after the current step, which saves the checkpoint.
static volatile sig_atomic_t stop_signal = 0;
static void on_stop_signal(int sig) { stop_signal = sig; }

// Other signals that end the program remove the temporary file of a save in progress first.
static void on_fatal_signal(int sig) {
    atomic_file_remove_open();
    signal(sig, SIG_DFL);
    raise(sig);
}

static void install_signal_handlers(void) {
    static const int fatal[] = {SIGHUP, SIGQUIT, SIGPIPE, SIGALRM, SIGUSR1, SIGUSR2};
    for (size_t i = 0; i < sizeof(fatal) / sizeof(fatal[0]); i++) signal(fatal[i], on_fatal_signal);
    signal(SIGINT, on_stop_signal);
    signal(SIGTERM, on_stop_signal);
    // a file-size limit makes the write fail with EFBIG, reported, instead of killing the run
    signal(SIGXFSZ, SIG_IGN);
}

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

// nanoGPT's schedule: linear warm-up, cosine decay to min_lr at decay_steps, then min_lr.
static float learning_rate(const TrainOptions *o, long step) {
    if (step < o->warmup) return o->lr * (float)(step + 1) / (float)(o->warmup + 1);
    if (step >= o->decay_steps) return o->min_lr;
    double ratio = (double)(step - o->warmup) / (double)(o->decay_steps - o->warmup);
    double coeff = 0.5 * (1.0 + cos(M_PI * ratio));
    return (float)(o->min_lr + coeff * (o->lr - o->min_lr));
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

// Before any work: the output directory exists and takes new files, and the temporary files
// that a killed run left beside this run's outputs are removed.
static void prepare_out_dir(const char *out, const char *const outputs[3]) {
    make_dirs(out);
    char err[ERR_LEN];
    int removed = 0;
    for (int i = 0; i < 3; i++) {
        int n = atomic_file_remove_stale(outputs[i], err);
        if (n < 0) die(EXIT_DATA, "%s", err);
        removed += n;
    }
    if (removed > 0) printf("removed %d temporary file%s left in %s by a run that was stopped\n", removed,
                            removed == 1 ? "" : "s", out);
    AtomicFile probe;
    if (atomic_file_open(&probe, outputs[0], err) != 0) die(EXIT_DATA, "cannot write into --out %s: %s", out, err);
    atomic_file_abort(&probe);
}

static void format_duration(char *buf, size_t n, double s) {
    if (!isfinite(s) || s < 0) s = 0;
    long t = (long)(s + 0.5);
    if (t >= 3600) snprintf(buf, n, "%ldh%02ldm", t / 3600, t / 60 % 60);
    else snprintf(buf, n, "%ldm%02lds", t / 60, t % 60);
}

// Prints the memory the run needs with its limit; exits 2 when it needs more.
static void check_memory(const GPTMemoryPlan *plan, const TrainOptions *o) {
    double limit = o->max_memory > 0 ? o->max_memory : gpt_memory_available();
    const char *source = o->max_memory > 0 ? "--max-memory" : "available (MemAvailable)";
    char needed[512], limit_text[32];
    gpt_memory_describe(plan, needed, sizeof(needed));
    gpt_format_bytes(limit, limit_text, sizeof(limit_text));
    printf("memory: %s; %s %s\n", needed, limit_text, source);
    fflush(stdout);
    if (limit > 0 && gpt_memory_total(plan) > limit) {
        gpt_format_bytes(gpt_memory_total(plan), needed, sizeof(needed));
        die(EXIT_USAGE, "the run needs %s of memory, more than the %s %s: use a smaller model, --batch-size or "
            "--block-size%s", needed, limit_text, source, o->max_memory > 0 ? "" : ", or set --max-memory");
    }
}

// Mean validation loss over the fixed evaluation windows, with dropout off.
static double evaluate(GPT *model, const Dataset *ds, const TrainOptions *o, int *inputs, int *targets) {
    int saved = model->training;
    model->training = 0;
    double sum = 0.0;
    for (long b = 0; b < o->eval_batches; b++) {
        dataset_val_batch(ds, (int)b, (int)o->eval_batches, o->batch_size, o->block_size, inputs, targets);
        gpt_forward(model, inputs, targets, o->batch_size, o->block_size);
        sum += model->mean_loss;
    }
    model->training = saved;
    return sum / o->eval_batches;
}

static void save_checkpoint(const char *path, const TrainOptions *o, const TrainState *s) {
    static RunMeta meta;
    run_meta_write(&meta, o, s);
    char err[ERR_LEN];
    if (checkpoint_save(path, &run.model, run.vocab.chars, &run.opt, meta.entries, meta.count, err) != 0)
        die(EXIT_DATA, "%s", err);
}

int main(int argc, char **argv) {
    TrainOptions o;
    GivenOptions given;
    parse_options(argc, argv, &o, &given);
    atexit(free_run);
    install_signal_handlers();
    char err[ERR_LEN];
    TrainState state = {0, {0}, INFINITY, NAN, 0, 0.0};
    rng_seed(&state.rng, o.seed);

    int resuming = o.resume[0] != '\0';
    if (resuming) {
        if (checkpoint_open(o.resume, &run.ck, err) != 0) die(EXIT_DATA, "%s", err);
        resume_options(&run.ck, &o, &given, &state);
    }
    check_options(&o);
    if (o.threads > 0) omp_set_num_threads(o.threads);
    char ckpt_path[1100], best_path[1100], log_path[1100];
    snprintf(ckpt_path, sizeof(ckpt_path), "%s/ckpt.safetensors", o.out);
    snprintf(best_path, sizeof(best_path), "%s/best.safetensors", o.out);
    snprintf(log_path, sizeof(log_path), "%s/log.csv", o.out);
    prepare_out_dir(o.out, (const char *const[3]){ckpt_path, best_path, log_path});
    if (run_log_open(&run.log, log_path, resuming, state.step, err) != 0) die(EXIT_DATA, "%s", err);

    // corpus -> vocabulary -> tokens -> train/val split
    if (!o.data[0] && corpus_default_path(o.data, sizeof(o.data), err) != 0)
        die(EXIT_DATA, "%s; give --data FILE", err);
    if (corpus_load(o.data, 0, &run.corpus, err) != 0) die(EXIT_DATA, "%s", err);
    if (vocab_build(&run.vocab, run.corpus.text, run.corpus.len, err) != 0) die(EXIT_DATA, "%s: %s", o.data, err);
    run.tokens = malloc(run.corpus.len * sizeof(int));
    size_t bad_pos;
    if (!run.tokens) die(EXIT_DATA, "out of memory for %zu tokens", run.corpus.len);
    vocab_encode(&run.vocab, run.corpus.text, run.corpus.len, run.tokens, &bad_pos);
    Dataset ds;
    if (dataset_split(&ds, run.tokens, run.corpus.len, o.val_fraction, o.block_size, err) != 0)
        die(given.given[OPT_BLOCK_SIZE] || given.given[OPT_VAL_FRACTION] ? EXIT_USAGE : EXIT_DATA, "%s: %s", o.data, err);
    int have_val = ds.val_len > 0;
    const Vocab *vocab = &run.vocab;
    if (resuming && (run.ck.config.vocab_size != vocab->size ||
                     memcmp(run.ck.vocab, vocab->chars, vocab->size * sizeof(uint32_t)) != 0))
        die(EXIT_DATA, "%s: the vocabulary of %s differs from the checkpoint's; resume needs the same corpus",
            o.resume, o.data);

    // the model's size, and the memory it needs, before anything is allocated for it
    GPTConfig config = {vocab->size, o.block_size, o.n_layer, o.n_head, o.n_embd, o.head_size, o.qkv_bias, o.dropout};
    if (gpt_config_validate(&config, err) != 0) die(EXIT_USAGE, "%s", err);
    int B = o.batch_size, T = o.block_size;
    int tty = isatty(STDOUT_FILENO);
    printf("chargpt: %s, %zu characters, vocabulary %d; train %zu, val %zu\n", o.data, run.corpus.len, vocab->size,
           ds.train_len, ds.val_len);
    GPTMemoryPlan plan;
    gpt_memory_plan(&config, B, 1, &plan);
    gpt_memory_plan_precision(&plan, &config, B, GPT_PLAN_TRAINING, o.precision);
    char precision[64];
    precision_describe(o.precision, precision, sizeof(precision));
    printf("model: %d layers, %d heads of %d, n_embd %d, block %d, %.0f parameters; batch %d, %d threads; "
           "precision %s\n", o.n_layer, o.n_head, o.head_size, o.n_embd, o.block_size, plan.parameters / sizeof(float),
           B, omp_get_max_threads(), precision);
    check_memory(&plan, &o);

    // model and optimizer; failing to allocate what the plan allowed is also "too large"
    GPT *model = &run.model;
    AdamW *opt = &run.opt;
    if (resuming) {
        if (checkpoint_load_model(&run.ck, model, 1, err) != 0) die(EXIT_USAGE, "%s", err);
    } else {
        if (gpt_build(model, &config, 1, err) != 0) die(EXIT_USAGE, "%s", err);
        gpt_init_weights(model, o.seed);
    }
    if (gpt_set_precision(model, o.precision, err) != 0) die(EXIT_USAGE, "%s", err);
    if (gpt_alloc_activations(model, B, err) != 0) die(EXIT_USAGE, "%s", err);
    if (adamw_init(opt, model, o.beta1, o.beta2, o.eps, o.weight_decay, err) != 0) die(EXIT_USAGE, "%s", err);
    if (resuming) {
        if (checkpoint_load_optimizer(&run.ck, opt, err) != 0) die(EXIT_DATA, "%s", err);
        checkpoint_close(&run.ck);
    }
    run.inputs = malloc((size_t)B * T * sizeof(int));
    run.targets = malloc((size_t)B * T * sizeof(int));
    if (!run.inputs || !run.targets) die(EXIT_USAGE, "out of memory for batches of %d x %d tokens", B, T);
    if (resuming) printf("resuming %s at step %ld of %ld\n", o.resume, state.step, o.steps);
    fflush(stdout);

    double run_start = now_seconds(), elapsed_before = state.elapsed_s;
    long start_step = state.step;
    double loss_sum = 0.0, ms_sum = 0.0;
    int loss_count = 0;
    float lr = 0.0f, train_loss = NAN;
    while (state.step < o.steps) {
        double t0 = now_seconds();
        dataset_train_batch(&ds, &state.rng, B, T, run.inputs, run.targets);
        model->training = o.dropout > 0.0f;
        model->dropout_seed = hash_mix64(o.seed ^ hash_mix64((uint64_t)state.step + 1));
        lr = learning_rate(&o, state.step);
        double norm = train_step(model, opt, run.inputs, run.targets, B, T, lr, o.grad_clip);
        if (!isfinite(model->mean_loss) || !isfinite(norm)) {
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
        ms_sum += 1000.0 * (now_seconds() - t0);
        state.elapsed_s = elapsed_before + now_seconds() - run_start;

        int last = state.step == o.steps;
        int evaluated = 0;
        if (have_val && (state.step % o.eval_every == 0 || last)) {
            state.last_val_loss = evaluate(model, &ds, &o, run.inputs, run.targets);
            evaluated = 1;
            if (state.last_val_loss < state.best_val_loss) {
                state.best_val_loss = state.last_val_loss;
                save_checkpoint(best_path, &o, &state);
            }
        }
        if (state.step % o.save_every == 0 || last || stop_signal) save_checkpoint(ckpt_path, &o, &state);

        // progress: the terminal line is rewritten every step; reports every log_every steps
        int report = state.step % o.log_every == 0 || last || evaluated || stop_signal;
        double ms_per_step = ms_sum / loss_count;
        double tok_per_s = B * T / (ms_per_step / 1000.0);
        double run_elapsed = now_seconds() - run_start;
        double eta = (o.steps - state.step) * run_elapsed / (state.step - start_step);
        char elapsed_text[32], eta_text[32], val_text[32];
        format_duration(elapsed_text, sizeof(elapsed_text), state.elapsed_s);
        format_duration(eta_text, sizeof(eta_text), eta);
        if (isnan(state.last_val_loss)) snprintf(val_text, sizeof(val_text), "-");
        else snprintf(val_text, sizeof(val_text), "%.4f", state.last_val_loss);
        if (tty || report) {
            printf("%sstep %ld/%ld | loss %.4f | val %s | lr %.2e | %.1f ms/step | %.0f tok/s | %s elapsed | ETA %s%s",
                   tty ? "\r\033[K" : "", state.step, o.steps, report ? loss_sum / loss_count : train_loss, val_text,
                   lr, ms_per_step, tok_per_s, elapsed_text, eta_text, tty && !evaluated ? "" : "\n");
            fflush(stdout);
        }
        if (report) {
            if (run_log_row(&run.log, state.step, loss_sum / loss_count, evaluated ? state.last_val_loss : NAN, lr,
                            state.tokens_seen, state.elapsed_s, err) != 0)
                die(EXIT_DATA, "%s", err);
            loss_sum = ms_sum = 0.0;
            loss_count = 0;
        }
        if (stop_signal) {
            if (run_log_close(&run.log, err) != 0) die(EXIT_DATA, "%s", err);
            printf("%sstopped by %s after step %ld; saved %s (continue with --resume %s)\n", tty ? "\n" : "",
                   stop_signal == SIGINT ? "SIGINT" : "SIGTERM", state.step, ckpt_path, ckpt_path);
            return 128 + stop_signal;
        }
    }
    if (state.step == start_step) save_checkpoint(ckpt_path, &o, &state);
    if (run_log_close(&run.log, err) != 0) die(EXIT_DATA, "%s", err);
    double wall = now_seconds() - run_start;
    if (tty) printf("\n");
    printf("done: %ld steps in %.1f s (%.0f tok/s); final train loss %.4f", state.step - start_step, wall,
           (state.step - start_step) * (double)B * T / (wall > 0 ? wall : 1), train_loss);
    int have_best = isfinite(state.best_val_loss);
    if (have_best) printf(", val loss %.4f, best val loss %.4f", state.last_val_loss, state.best_val_loss);
    printf("\ncheckpoints: %s%s%s; log: %s\n", ckpt_path, have_best ? ", " : "", have_best ? best_path : "", log_path);
    if (have_val) {
        long scored;
        double loss = validation_pass(model, &ds, B, T, run.inputs, run.targets, &scored);
        printf("whole validation split: loss %.6f over %ld characters, in consecutive windows of %d (as ./generate "
               "--score --stride %d gives it)\n", loss, scored, T, T);
    }
    return 0;
}
