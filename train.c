// ./train: trains a character-level GPT on a text corpus (plain or gzip) and writes
// safetensors checkpoints that ./generate, PyTorch and --resume read.
// Exit status: 0 done, 1 bad data or I/O, 2 bad usage, 3 non-finite loss, 130/143 stopped by
// SIGINT/SIGTERM after saving.
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
#include "model/adamw.h"
#include "format/checkpoint.h"
#include "model/gpt.h"
#include "model/rng.h"

#define EXIT_DATA 1
#define EXIT_USAGE 2
#define EXIT_NONFINITE 3

typedef struct {
    char data[1024];
    char out[1024];
    char resume[1024];
    int n_layer, n_head, n_embd, head_size, block_size, batch_size, qkv_bias;
    float dropout;
    long steps, decay_steps, warmup;
    float lr, min_lr, weight_decay, grad_clip, val_fraction;
    float beta1, beta2, eps;
    long eval_every, eval_batches, save_every, log_every;
    uint64_t seed;
    int threads;
} Options;

static const Options default_options = {
    .data = "", .out = "out", .resume = "",  // data "": the corpus shipped with chargpt
    .n_layer = 4, .n_head = 4, .n_embd = 128, .head_size = 0, .block_size = 64, .batch_size = 12,
    .qkv_bias = 1, .dropout = 0.0f,
    .steps = 2000, .decay_steps = 0, .warmup = 100,
    .lr = 1e-3f, .min_lr = 1e-4f, .weight_decay = 0.1f, .grad_clip = 1.0f, .val_fraction = 0.1f,
    .beta1 = 0.9f, .beta2 = 0.99f, .eps = 1e-8f,
    .eval_every = 250, .eval_batches = 200, .save_every = 500, .log_every = 10,
    .seed = 1337, .threads = 0,
};

static void usage(FILE *f) {
    const Options *d = &default_options;
    fprintf(f,
            "usage: %s [options]\n"
            "Trains a character-level GPT on a UTF-8 text corpus (plain or gzip).\n\n"
            "data and output:\n"
            "  --data FILE          corpus, plain text or gzip (default: Tiny Shakespeare, shipped\n"
            "                       with chargpt as tinyshakespeare.txt.gz)\n"
            "  --val-fraction F     last fraction of the corpus held out for validation (default %g)\n"
            "  --out DIR            checkpoints and log.csv go here (default %s/)\n"
            "  --resume CKPT        continue the run saved in CKPT with its options; only --steps,\n"
            "                       --out, --threads, --save-every, --eval-every may be given again\n"
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
            "  --threads N          OpenMP threads; 0 = all cores (default %d)\n"
            "  -h, --help           show this help\n",
            program_invocation_name, d->val_fraction, d->out, d->n_layer, d->n_head, d->n_embd, d->block_size,
            d->dropout, d->batch_size, d->steps, d->lr, d->min_lr, d->warmup, d->weight_decay,
            d->grad_clip, d->eval_every, d->eval_batches, d->save_every, d->log_every, d->seed,
            d->threads);
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
    OPT_SAVE_EVERY, OPT_LOG_EVERY, OPT_SEED, OPT_THREADS, OPT_VAL_FRACTION,
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
    {"help", no_argument, 0, 'h'},
    {0, 0, 0, 0},
};

// Which options were given on the command line (to check what --resume allows).
typedef struct {
    int given[OPT_VAL_FRACTION + 1];
} GivenOptions;

static void parse_options(int argc, char **argv, Options *o, GivenOptions *given) {
    *o = default_options;
    memset(given, 0, sizeof(*given));
    opterr = 0;
    int c, index = -1;
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
            case OPT_BATCH_SIZE: o->batch_size = (int)parse_long(name, optarg, 1, 1 << 20); break;
            case OPT_DROPOUT: o->dropout = parse_float(name, optarg, 0.0, 1.0, 0); break;
            case OPT_NO_QKV_BIAS: o->qkv_bias = 0; break;
            case OPT_STEPS: o->steps = parse_long(name, optarg, 0, 1L << 40); break;
            case OPT_LR: o->lr = parse_float(name, optarg, 0.0, 10.0, 1); break;
            case OPT_MIN_LR: o->min_lr = parse_float(name, optarg, 0.0, 10.0, 1); break;
            case OPT_WARMUP: o->warmup = parse_long(name, optarg, 0, 1L << 40); break;
            case OPT_DECAY_STEPS: o->decay_steps = parse_long(name, optarg, 1, 1L << 40); break;
            case OPT_WEIGHT_DECAY: o->weight_decay = parse_float(name, optarg, 0.0, 10.0, 1); break;
            case OPT_GRAD_CLIP: o->grad_clip = parse_float(name, optarg, 0.0, 1e9, 1); break;
            case OPT_EVAL_EVERY: o->eval_every = parse_long(name, optarg, 1, 1L << 40); break;
            case OPT_EVAL_BATCHES: o->eval_batches = parse_long(name, optarg, 1, 1L << 30); break;
            case OPT_SAVE_EVERY: o->save_every = parse_long(name, optarg, 1, 1L << 40); break;
            case OPT_LOG_EVERY: o->log_every = parse_long(name, optarg, 1, 1L << 40); break;
            case OPT_SEED: o->seed = (uint64_t)parse_long(name, optarg, 0, LONG_MAX); break;
            case OPT_THREADS: o->threads = (int)parse_long(name, optarg, 0, 4096); break;
            case OPT_VAL_FRACTION: o->val_fraction = parse_float(name, optarg, 0.0, 1.0, 0); break;
        }
    }
    if (optind < argc) die(EXIT_USAGE, "unexpected argument '%s' (see --help)", argv[optind]);
}

// Options the model and schedule need that depend on others.
static void check_options(Options *o) {
    if (o->head_size == 0) {
        if (o->n_embd % o->n_head != 0)
            die(EXIT_USAGE, "--n-embd %d is not divisible by --n-head %d: give --head-size", o->n_embd, o->n_head);
        o->head_size = o->n_embd / o->n_head;
    }
    if (o->decay_steps == 0) o->decay_steps = o->steps > 0 ? o->steps : 1;
    if (o->min_lr > o->lr) die(EXIT_USAGE, "--min-lr %g is larger than --lr %g", o->min_lr, o->lr);
}

// ----------------------------------------------------------------------------
// options and training state in the checkpoint's metadata

#define MAX_META 40

typedef struct {
    StMeta entries[MAX_META];
    char keys[MAX_META][48];
    char values[MAX_META][1100];
    int count;
} MetaList;

static void meta_add(MetaList *m, const char *key, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    snprintf(m->keys[m->count], sizeof(m->keys[0]), "%s", key);
    vsnprintf(m->values[m->count], sizeof(m->values[0]), fmt, ap);
    va_end(ap);
    m->entries[m->count] = (StMeta){m->keys[m->count], m->values[m->count]};
    m->count++;
}

typedef struct {
    long step;             // optimizer steps done
    Rng rng;               // batch sampler, after `step` batches
    double best_val_loss;  // INFINITY before the first evaluation
    double last_val_loss;  // NAN before the first evaluation
    long tokens_seen;
    double elapsed_s;
} TrainState;

static void train_meta(MetaList *m, const Options *o, const TrainState *s) {
    m->count = 0;
    meta_add(m, "train.data", "%s", o->data);
    meta_add(m, "train.val_fraction", "%.9g", o->val_fraction);
    meta_add(m, "train.batch_size", "%d", o->batch_size);
    meta_add(m, "train.steps", "%ld", o->steps);
    meta_add(m, "train.decay_steps", "%ld", o->decay_steps);
    meta_add(m, "train.warmup", "%ld", o->warmup);
    meta_add(m, "train.lr", "%.9g", o->lr);
    meta_add(m, "train.min_lr", "%.9g", o->min_lr);
    meta_add(m, "train.weight_decay", "%.9g", o->weight_decay);
    meta_add(m, "train.grad_clip", "%.9g", o->grad_clip);
    meta_add(m, "train.beta1", "%.9g", o->beta1);
    meta_add(m, "train.beta2", "%.9g", o->beta2);
    meta_add(m, "train.eps", "%.9g", o->eps);
    meta_add(m, "train.eval_every", "%ld", o->eval_every);
    meta_add(m, "train.eval_batches", "%ld", o->eval_batches);
    meta_add(m, "train.save_every", "%ld", o->save_every);
    meta_add(m, "train.log_every", "%ld", o->log_every);
    meta_add(m, "train.seed", "%" PRIu64, o->seed);
    meta_add(m, "state.step", "%ld", s->step);
    meta_add(m, "state.rng", "%" PRIu64, s->rng.state);
    meta_add(m, "state.best_val_loss", "%.17g", s->best_val_loss);
    meta_add(m, "state.last_val_loss", "%.17g", s->last_val_loss);
    meta_add(m, "state.tokens_seen", "%ld", s->tokens_seen);
    meta_add(m, "state.elapsed_s", "%.6f", s->elapsed_s);
}

// Reads a metadata value the checkpoint must have; exits 1 naming it otherwise.
static const char *require_meta(const Checkpoint *ck, const char *key) {
    const char *v = checkpoint_meta(ck, key);
    if (!v) die(EXIT_DATA, "%s: checkpoint has no '%s' in its metadata (not written by ./train?)", ck->path, key);
    return v;
}

static double meta_number(const Checkpoint *ck, const char *key) {
    const char *v = require_meta(ck, key);
    char *end;
    double x = strtod(v, &end);
    if (end == v || *end) die(EXIT_DATA, "%s: checkpoint metadata '%s' is not a number: '%.40s'", ck->path, key, v);
    return x;
}

// Restores the saved options (keeping those --resume may change) and the training state.
static void resume_options(const Checkpoint *ck, Options *o, const GivenOptions *given, TrainState *s) {
    static const int allowed[] = {OPT_RESUME, OPT_STEPS, OPT_OUT, OPT_THREADS, OPT_SAVE_EVERY, OPT_EVAL_EVERY};
    for (int i = 0; long_options[i].name; i++) {
        int v = long_options[i].val, ok = 0;
        for (size_t k = 0; k < sizeof(allowed) / sizeof(allowed[0]); k++) ok |= allowed[k] == v;
        if (v < (int)(sizeof(given->given) / sizeof(int)) && given->given[v] && !ok)
            die(EXIT_USAGE, "--%s cannot be changed when resuming (only --steps, --out, --threads, "
                "--save-every and --eval-every can)", long_options[i].name);
    }
    Options saved = *o;
    const char *data = require_meta(ck, "train.data");
    if (strlen(data) >= sizeof(o->data)) die(EXIT_DATA, "%s: checkpoint's data path is too long", ck->path);
    strcpy(o->data, data);
    o->val_fraction = (float)meta_number(ck, "train.val_fraction");
    o->batch_size = (int)meta_number(ck, "train.batch_size");
    o->steps = (long)meta_number(ck, "train.steps");
    o->decay_steps = (long)meta_number(ck, "train.decay_steps");
    o->warmup = (long)meta_number(ck, "train.warmup");
    o->lr = (float)meta_number(ck, "train.lr");
    o->min_lr = (float)meta_number(ck, "train.min_lr");
    o->weight_decay = (float)meta_number(ck, "train.weight_decay");
    o->grad_clip = (float)meta_number(ck, "train.grad_clip");
    o->beta1 = (float)meta_number(ck, "train.beta1");
    o->beta2 = (float)meta_number(ck, "train.beta2");
    o->eps = (float)meta_number(ck, "train.eps");
    o->eval_every = (long)meta_number(ck, "train.eval_every");
    o->eval_batches = (long)meta_number(ck, "train.eval_batches");
    o->save_every = (long)meta_number(ck, "train.save_every");
    o->log_every = (long)meta_number(ck, "train.log_every");
    o->seed = strtoull(require_meta(ck, "train.seed"), NULL, 10);
    if (o->batch_size < 1 || o->eval_every < 1 || o->eval_batches < 1 || o->save_every < 1 || o->log_every < 1)
        die(EXIT_DATA, "%s: checkpoint holds invalid training options", ck->path);
    if (given->given[OPT_STEPS]) o->steps = saved.steps;
    if (!given->given[OPT_OUT]) {
        // by default a resumed run goes on writing beside its checkpoint
        const char *slash = strrchr(ck->path, '/');
        if (!slash) strcpy(o->out, ".");
        else snprintf(o->out, sizeof(o->out), "%.*s", (int)(slash - ck->path), ck->path);
        if (!o->out[0]) strcpy(o->out, "/");
    }
    if (given->given[OPT_SAVE_EVERY]) o->save_every = saved.save_every;
    if (given->given[OPT_EVAL_EVERY]) o->eval_every = saved.eval_every;
    o->n_layer = ck->config.n_layer;
    o->n_head = ck->config.n_head;
    o->n_embd = ck->config.n_embd;
    o->head_size = ck->config.head_size;
    o->block_size = ck->config.block_size;
    o->qkv_bias = ck->config.qkv_bias;
    o->dropout = ck->config.dropout;
    s->step = (long)meta_number(ck, "state.step");
    if (given->given[OPT_STEPS] && o->steps < s->step)
        die(EXIT_USAGE, "--steps %ld is before the checkpoint's step %ld", o->steps, s->step);
    s->rng.state = strtoull(require_meta(ck, "state.rng"), NULL, 10);
    s->best_val_loss = meta_number(ck, "state.best_val_loss");
    s->last_val_loss = meta_number(ck, "state.last_val_loss");
    s->tokens_seen = (long)meta_number(ck, "state.tokens_seen");
    s->elapsed_s = meta_number(ck, "state.elapsed_s");
}

// ----------------------------------------------------------------------------
// the run

static volatile sig_atomic_t stop_signal = 0;
static void on_signal(int sig) { stop_signal = sig; }

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

// nanoGPT's schedule: linear warm-up, cosine decay to min_lr at decay_steps, then min_lr.
static float learning_rate(const Options *o, long step) {
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

static void format_duration(char *buf, size_t n, double s) {
    if (!isfinite(s) || s < 0) s = 0;
    long t = (long)(s + 0.5);
    if (t >= 3600) snprintf(buf, n, "%ldh%02ldm", t / 3600, t / 60 % 60);
    else snprintf(buf, n, "%ldm%02lds", t / 60, t % 60);
}

// Mean validation loss over the fixed evaluation windows, with dropout off.
static double evaluate(GPT *model, const Dataset *ds, const Options *o, int *inputs, int *targets) {
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

static void save_checkpoint(const char *path, const GPT *model, const Vocab *vocab, const AdamW *opt,
                            const Options *o, const TrainState *s) {
    static MetaList meta;
    train_meta(&meta, o, s);
    char err[ERR_LEN];
    if (checkpoint_save(path, model, vocab->chars, opt, meta.entries, meta.count, err) != 0)
        die(EXIT_DATA, "%s", err);
}

int main(int argc, char **argv) {
    Options o;
    GivenOptions given;
    parse_options(argc, argv, &o, &given);
    char err[ERR_LEN];
    TrainState state = {0, {0}, INFINITY, NAN, 0, 0.0};
    rng_seed(&state.rng, o.seed);

    Checkpoint ck;
    int resuming = o.resume[0] != '\0';
    if (resuming) {
        if (checkpoint_open(o.resume, &ck, err) != 0) die(EXIT_DATA, "%s", err);
        resume_options(&ck, &o, &given, &state);
    }
    check_options(&o);
    if (o.threads > 0) omp_set_num_threads(o.threads);

    // corpus -> vocabulary -> tokens -> train/val split
    if (!o.data[0] && corpus_default_path(o.data, sizeof(o.data), err) != 0)
        die(EXIT_DATA, "%s; give --data FILE", err);
    Corpus corpus;
    if (corpus_load(o.data, 0, &corpus, err) != 0) die(EXIT_DATA, "%s", err);
    Vocab vocab;
    if (vocab_build(&vocab, corpus.text, corpus.len, err) != 0) die(EXIT_DATA, "%s: %s", o.data, err);
    int *tokens = malloc(corpus.len * sizeof(int));
    size_t bad_pos;
    if (!tokens) die(EXIT_DATA, "out of memory for %zu tokens", corpus.len);
    vocab_encode(&vocab, corpus.text, corpus.len, tokens, &bad_pos);
    Dataset ds;
    if (dataset_split(&ds, tokens, corpus.len, o.val_fraction, o.block_size, err) != 0)
        die(given.given[OPT_BLOCK_SIZE] || given.given[OPT_VAL_FRACTION] ? EXIT_USAGE : EXIT_DATA, "%s: %s", o.data, err);
    int have_val = ds.val_len > 0;

    // model and optimizer
    GPT model;
    AdamW opt;
    if (resuming) {
        if (ck.config.vocab_size != vocab.size || memcmp(ck.vocab, vocab.chars, vocab.size * sizeof(uint32_t)) != 0)
            die(EXIT_DATA, "%s: the vocabulary of %s differs from the checkpoint's; resume needs the same corpus",
                o.resume, o.data);
        if (checkpoint_load_model(&ck, &model, err) != 0) die(EXIT_DATA, "%s", err);
    } else {
        GPTConfig config = {vocab.size, o.block_size, o.n_layer, o.n_head, o.n_embd, o.head_size, o.qkv_bias, o.dropout};
        if (gpt_build(&model, &config, err) != 0) die(EXIT_USAGE, "%s", err);
        gpt_init_weights(&model, o.seed);
    }
    if (gpt_alloc_activations(&model, o.batch_size, err) != 0) die(EXIT_DATA, "%s", err);
    if (adamw_init(&opt, &model, o.beta1, o.beta2, o.eps, o.weight_decay, err) != 0) die(EXIT_DATA, "%s", err);
    if (resuming) {
        if (checkpoint_load_optimizer(&ck, &opt, err) != 0) die(EXIT_DATA, "%s", err);
        checkpoint_close(&ck);
    }

    make_dirs(o.out);
    char ckpt_path[1100], best_path[1100], log_path[1100];
    snprintf(ckpt_path, sizeof(ckpt_path), "%s/ckpt.safetensors", o.out);
    snprintf(best_path, sizeof(best_path), "%s/best.safetensors", o.out);
    snprintf(log_path, sizeof(log_path), "%s/log.csv", o.out);
    int log_exists = access(log_path, F_OK) == 0;
    FILE *log = fopen(log_path, resuming && log_exists ? "a" : "w");
    if (!log) die(EXIT_DATA, "cannot write %s: %s", log_path, strerror(errno));
    if (!(resuming && log_exists)) fprintf(log, "step,train_loss,val_loss,lr,tokens_seen,elapsed_s\n");

    int B = o.batch_size, T = o.block_size;
    int *inputs = malloc((size_t)B * T * sizeof(int)), *targets = malloc((size_t)B * T * sizeof(int));
    if (!inputs || !targets) die(EXIT_DATA, "out of memory");
    int tty = isatty(STDOUT_FILENO);
    printf("chargpt: %s, %zu characters, vocabulary %d; train %zu, val %zu\n", o.data, corpus.len, vocab.size,
           ds.train_len, ds.val_len);
    printf("model: %d layers, %d heads of %d, n_embd %d, block %d, %zu parameters; batch %d, %d threads\n",
           o.n_layer, o.n_head, o.head_size, o.n_embd, o.block_size, model.num_parameters, B, omp_get_max_threads());
    if (resuming) printf("resuming %s at step %ld of %ld\n", o.resume, state.step, o.steps);
    fflush(stdout);

    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    double run_start = now_seconds(), elapsed_before = state.elapsed_s;
    long start_step = state.step;
    double loss_sum = 0.0, ms_sum = 0.0;
    int loss_count = 0;
    float lr = 0.0f, train_loss = NAN;
    while (state.step < o.steps) {
        double t0 = now_seconds();
        dataset_train_batch(&ds, &state.rng, B, T, inputs, targets);
        model.training = o.dropout > 0.0f;
        model.dropout_seed = hash_mix64(o.seed ^ hash_mix64((uint64_t)state.step + 1));
        gpt_forward(&model, inputs, targets, B, T);
        gpt_backward(&model);
        double norm = grad_global_norm(model.grads_memory, model.num_parameters);
        if (!isfinite(model.mean_loss) || !isfinite(norm)) {
            fprintf(stderr, "%s%s: step %ld: %s is not finite; stopping (the last saved checkpoint is unchanged)\n",
                    tty ? "\n" : "", program_invocation_short_name, state.step + 1, isfinite(model.mean_loss) ? "the gradient norm" : "the loss");
            return EXIT_NONFINITE;
        }
        grad_clip(model.grads_memory, model.num_parameters, norm, o.grad_clip);
        lr = learning_rate(&o, state.step);
        adamw_update(&opt, model.params_memory, model.grads_memory, lr);
        state.step++;
        state.tokens_seen += (long)B * T;
        train_loss = model.mean_loss;
        loss_sum += train_loss;
        loss_count++;
        ms_sum += 1000.0 * (now_seconds() - t0);
        state.elapsed_s = elapsed_before + now_seconds() - run_start;

        int last = state.step == o.steps;
        int evaluated = 0;
        if (have_val && (state.step % o.eval_every == 0 || last)) {
            state.last_val_loss = evaluate(&model, &ds, &o, inputs, targets);
            evaluated = 1;
            if (state.last_val_loss < state.best_val_loss) {
                state.best_val_loss = state.last_val_loss;
                save_checkpoint(best_path, &model, &vocab, &opt, &o, &state);
            }
        }
        if (state.step % o.save_every == 0 || last || stop_signal)
            save_checkpoint(ckpt_path, &model, &vocab, &opt, &o, &state);

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
            fprintf(log, "%ld,%.6f,", state.step, loss_sum / loss_count);
            if (evaluated) fprintf(log, "%.6f", state.last_val_loss);
            fprintf(log, ",%.6e,%ld,%.3f\n", lr, state.tokens_seen, state.elapsed_s);
            fflush(log);
            loss_sum = ms_sum = 0.0;
            loss_count = 0;
        }
        if (stop_signal) {
            printf("%sstopped by %s after step %ld; saved %s (continue with --resume %s)\n", tty ? "\n" : "",
                   stop_signal == SIGINT ? "SIGINT" : "SIGTERM", state.step, ckpt_path, ckpt_path);
            fclose(log);
            return 128 + stop_signal;
        }
    }
    if (state.step == start_step) save_checkpoint(ckpt_path, &model, &vocab, &opt, &o, &state);
    double wall = now_seconds() - run_start;
    if (tty) printf("\n");
    printf("done: %ld steps in %.1f s (%.0f tok/s); final train loss %.4f", state.step - start_step, wall,
           (state.step - start_step) * (double)B * T / (wall > 0 ? wall : 1), train_loss);
    int have_best = isfinite(state.best_val_loss);
    if (have_best) printf(", val loss %.4f, best val loss %.4f", state.last_val_loss, state.best_val_loss);
    printf("\ncheckpoints: %s%s%s; log: %s\n", ckpt_path, have_best ? ", " : "", have_best ? best_path : "", log_path);
    fclose(log);
    adamw_free(&opt);
    gpt_free(&model);
    free(inputs);
    free(targets);
    free(tokens);
    vocab_free(&vocab);
    corpus_free(&corpus);
    return 0;
}
