// ./train: trains a character-level GPT on a text corpus (plain or gzip) and writes
// safetensors checkpoints that ./generate, PyTorch and --resume read.
// Exit status: 0 done, 1 bad data or I/O, 2 bad usage or a run too large for the memory,
// 3 non-finite loss, 130/143/129 stopped by SIGINT/SIGTERM/SIGHUP after saving.
// Built with MPI (`make MPI=1`), `mpirun -np N` runs one training on N processes (dist/,
// training/data_parallel.h): rank 0 alone prints and writes, and the processes agree on
// failures and signals at fixed points of the run, so that they all leave together.
//
// main is the outline: the options, then the run set up (its checkpoint, output directory,
// text, memory and model), trained step by step (take_step, evaluate, report,
// save_checkpoints) and finished (the summary and the whole-validation pass). The machinery is in
// training/; docs/how-a-step-runs.md follows one step through it.
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/errors.h"
#include "common/platform.h"
#include "common/program.h"
#include "data/batch.h"
#include "data/corpus.h"
#include "data/corpus_fingerprint.h"
#include "data/corpus_set.h"
#include "data/encoding.h"
#include "data/utf8.h"
#include "data/vocab.h"
#include "dist/dist.h"
#include "format/atomic_file.h"
#include "format/checkpoint.h"
#include "kernels/kernels.h"
#include "model/adamw.h"
#include "model/gpt.h"
#include "model/rng.h"
#include "training/data_parallel.h"
#include "training/loss_history.h"
#include "training/out_dir.h"
#include "training/progress_line.h"
#include "training/progress_report.h"
#include "training/run_checkpoint.h"
#include "training/run_dir.h"
#include "training/run_identity.h"
#include "training/run_lock.h"
#include "training/run_log.h"
#include "training/run_probe.h"
#include "training/run_state.h"
#include "training/run_text.h"
#include "training/same_run.h"
#include "training/schedule.h"
#include "training/stop_signals.h"
#include "training/update_ratio.h"
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
    .mpi_timeout = 300, .separator = "\\n", .encoding = ENCODING_UTF8, .min_char_count = 1, .sample_chars = 200,
    .final_val_chars = VALIDATION_PASS_DEFAULT_CHARS,
};

// --help, in two parts: what to train on and where to write, then the model and training.
static void usage_data_and_output(FILE *f, const TrainOptions *d) {
    fprintf(f,
            "usage: %s [options]\n"
            "Trains a character-level GPT on a text corpus: files (plain or gzip), directories of\n"
            "them, or standard input.\n\n"
            "data and output:\n"
            "  --data PATH          what to train on, given once or more: a file (plain text or\n"
            "                       gzip; a pipe too), a directory (every file under it, in the byte\n"
            "                       order of their names; hidden entries and files that are not\n"
            "                       text skipped and counted) or - for standard input (xz -dc\n"
            "                       corpus.xz | %s --data -); default: Tiny Shakespeare, shipped\n"
            "                       with chargpt as tinyshakespeare.txt.gz\n"
            "  --separator TEXT     put between two documents (files); \\n, \\t, \\r and \\\\ are\n"
            "                       escapes (default '\\n', a newline; '' joins them as cat does)\n"
            "  --encoding E         utf-8, latin-1 or cp1252 (Windows-1252): the corpus's encoding\n"
            "                       (default utf-8; a corpus that is not UTF-8 is refused, naming the\n"
            "                       encoding it most likely is and the iconv command)\n"
            "  --min-char-count N   characters seen fewer than N times share one unknown token,\n"
            "                       U+FFFD, so that a large corpus's vocabulary is its real alphabet\n"
            "                       (default 1: every character has its own)\n"
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
            "                       --data, --separator, --encoding, --decay-steps, --warmup,\n"
            "                       --grad-accum, --zero, --precision, --final-val-chars,\n"
            "                       --mpi-timeout, --force, --sample-every and --no-probe may be given\n"
            "                       again (what is probed is the run's probe.bin's). --out defaults to\n"
            "                       CKPT's directory; one holding another run, or newer checkpoints\n"
            "                       of this one, needs --force. --data must give the same text (its\n"
            "                       length and CRC-32, kept in CKPT, are checked); without it the\n"
            "                       saved paths are used, a relative one looked for in the current\n"
            "                       directory, then beside CKPT.\n"
            "                       --decay-steps or --warmup start a new learning-rate schedule at\n"
            "                       CKPT's step: warm-up from CKPT's step (default 0 steps), then\n"
            "                       cosine decay to --min-lr at --decay-steps (default --steps)\n"
            "  --init-from CKPT     fine-tune: a new run (step 0, new optimizer state and schedule,\n"
            "                       any --data) from CKPT's weights, architecture and vocabulary;\n"
            "                       the model options come from CKPT (--dropout may be given); its\n"
            "                       warm-up is a tenth of --steps (at most 100) unless --warmup\n"
            "  --grow-vocab         with --init-from: add the corpus's characters CKPT lacks to the\n"
            "                       vocabulary (their embedding rows start as a new model's; the\n"
            "                       others keep CKPT's)\n"
            "  --skip-unknown       with --init-from: drop corpus characters CKPT's vocabulary lacks\n"
            "                       (default: they take CKPT's unknown token if it has one, else an\n"
            "                       error naming them with their counts)\n",
            program_invocation(), program_invocation(), d->val_fraction, d->out);
}

static void usage_model_and_training(FILE *f, const TrainOptions *d) {
    fprintf(f,
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
            "  --final-val-chars N  at the end, the loss of the validation split's first N\n"
            "                       characters, each once (default %ld, about 12 s on the default\n"
            "                       model here; 0 skips it; all: the whole split)\n"
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
            "                       past it); default: the memory available now, less a margin kept\n"
            "                       free (the least of MemAvailable, the cgroup's limit less its use\n"
            "                       and RLIMIT_AS on Linux; free and inactive pages on macOS;\n"
            "                       elsewhere unknown: no limit)\n"
            "  --precision P        fp32, or bf16: matrix products on bf16 copies of the weights and\n"
            "                       activations with fp32 sums, faster where the CPU has AVX512_BF16;\n"
            "                       master weights, gradients and optimizer stay fp32 (default fp32;\n"
            "                       --resume keeps the run's unless given)\n"
            "  --mpi-timeout S      with mpirun, end every process when one has waited S seconds\n"
            "                       for the others in a collective (a process stopped or cut\n"
            "                       off); 0 = wait without limit (default %g)\n"
            "the timeline (the run's probe.bin and timeline.html, a page that shows the model learn):\n"
            "  --probe FILE         the passage run through the model at each evaluation, its first\n"
            "                       block-size + 1 characters (default: that many of the validation\n"
            "                       split, from the start of its first whole line)\n"
            "  --sample-prompt TEXT the prompt of the samples (default: the passage's first line)\n"
            "  --sample-chars N     characters of each sample, printed under the progress at each\n"
            "                       evaluation and kept for the timeline; 0 = none (default %d)\n"
            "  --sample-every N     a sample every N steps too (default: at evaluations only)\n"
            "  --no-probe           no probe, samples or timeline\n"
            "  -h, --help           show this help\n"
            "progress: on a terminal one line rewritten in place, fitted to its width (else\n"
            "$COLUMNS, else 80 columns) by dropping the least important figures first (elapsed,\n"
            "ms/step, lr, tok/s, val, ETA); otherwise one plain line per report. 'loss' is the mean\n"
            "train loss of the steps since the last report ('mean of N'), as log.csv and done:'s\n"
            "final train loss give it; ms/step and tok/s count training steps only, and the ETA\n"
            "counts what is left of them, the evaluations, the saves and the final validation pass;\n"
            "an evaluation shows on the line while it runs. Ctrl-C, SIGTERM or SIGHUP: the step\n"
            "ends, an evaluation under way\n"
            "is abandoned, the checkpoint is saved; a second one exits at once without saving. During\n"
            "the whole-validation pass at the end (after the last save) it stops the pass.\n",
            d->n_layer, d->n_head, d->n_embd, d->block_size, d->dropout, d->batch_size, d->steps, d->lr, d->min_lr,
            d->warmup, d->weight_decay, d->grad_clip, d->eval_every, d->eval_batches, d->final_val_chars,
            d->save_every, d->log_every, d->seed, THREADS_PER_CORE, d->threads, d->mpi_timeout, d->sample_chars);
}

static void usage(FILE *f) {
    usage_data_and_output(f, &default_options);
    usage_model_and_training(f, &default_options);
}

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
    DistAgreement a = dist_agree(0, stop_signals_received());
    if (a.status) exit(a.status);
    return a.signal;
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
// options

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

enum {
    OPT_DATA = 256, OPT_OUT, OPT_RESUME, OPT_N_LAYER, OPT_N_HEAD, OPT_N_EMBD, OPT_HEAD_SIZE,
    OPT_BLOCK_SIZE, OPT_BATCH_SIZE, OPT_DROPOUT, OPT_NO_QKV_BIAS, OPT_STEPS, OPT_LR, OPT_MIN_LR,
    OPT_WARMUP, OPT_DECAY_STEPS, OPT_WEIGHT_DECAY, OPT_GRAD_CLIP, OPT_EVAL_EVERY, OPT_EVAL_BATCHES,
    OPT_SAVE_EVERY, OPT_LOG_EVERY, OPT_SEED, OPT_THREADS, OPT_VAL_FRACTION, OPT_GRAD_ACCUM, OPT_ZERO,
    OPT_MAX_MEMORY, OPT_INIT_FROM, OPT_SKIP_UNKNOWN, OPT_KEEP_CR, OPT_FORCE, OPT_PRECISION, OPT_MPI_TIMEOUT,
    OPT_SEPARATOR, OPT_ENCODING, OPT_MIN_CHAR_COUNT, OPT_GROW_VOCAB, OPT_FINAL_VAL_CHARS,
    OPT_PROBE, OPT_SAMPLE_PROMPT, OPT_SAMPLE_CHARS, OPT_SAMPLE_EVERY, OPT_NO_PROBE,
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
    {"separator", required_argument, 0, OPT_SEPARATOR},
    {"encoding", required_argument, 0, OPT_ENCODING},
    {"min-char-count", required_argument, 0, OPT_MIN_CHAR_COUNT},
    {"grow-vocab", no_argument, 0, OPT_GROW_VOCAB},
    {"final-val-chars", required_argument, 0, OPT_FINAL_VAL_CHARS},
    {"probe", required_argument, 0, OPT_PROBE},
    {"sample-prompt", required_argument, 0, OPT_SAMPLE_PROMPT},
    {"sample-chars", required_argument, 0, OPT_SAMPLE_CHARS},
    {"sample-every", required_argument, 0, OPT_SAMPLE_EVERY},
    {"no-probe", no_argument, 0, OPT_NO_PROBE},
    {"help", no_argument, 0, 'h'},
    {0, 0, 0, 0},
};

// Which options were given on the command line (to check what --resume allows).
typedef struct {
    int given[OPT_COUNT];
} GivenOptions;

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
        case OPT_MIN_CHAR_COUNT: o->min_char_count = option_long(name, value, 1, 1000000000000000L); break;
        case OPT_GROW_VOCAB: o->grow_vocab = 1; break;
        case OPT_FINAL_VAL_CHARS:
            o->final_val_chars = strcmp(value, "all") == 0 ? -1 : option_long(name, value, 0, LONG_MAX);
            break;
        case OPT_PROBE: copy_path(o->probe, name, value); break;
        case OPT_SAMPLE_PROMPT: o->sample_prompt = value; break;
        case OPT_SAMPLE_CHARS: o->sample_chars = (int)option_long(name, value, 0, PROBE_MAX_SAMPLE); break;
        case OPT_SAMPLE_EVERY: o->sample_every = option_long(name, value, 1, TRAIN_MAX_STEPS); break;
        case OPT_NO_PROBE: o->no_probe = 1; break;
    }
}

// The --name of option c.
static const char *option_name(int c) {
    for (int i = 0; long_options[i].name; i++)
        if (long_options[i].val == c) return long_options[i].name;
    return "?";
}

// What the options given allow together, checked before anything touches the disk.
static void check_given_options(const GivenOptions *given) {
    if (given->given[OPT_INIT_FROM] && given->given[OPT_RESUME])
        die(EXIT_USAGE, "--init-from starts a new run and --resume continues one: give one of them");
    if (given->given[OPT_INIT_FROM]) {
        static const int model_options[] = {OPT_N_LAYER, OPT_N_HEAD, OPT_N_EMBD, OPT_HEAD_SIZE,
                                            OPT_BLOCK_SIZE, OPT_NO_QKV_BIAS};
        for (size_t k = 0; k < sizeof(model_options) / sizeof(model_options[0]); k++)
            if (given->given[model_options[k]])
                die(EXIT_USAGE, "--%s cannot be given with --init-from: the model is the checkpoint's",
                    option_name(model_options[k]));
        if (given->given[OPT_GROW_VOCAB] && given->given[OPT_SKIP_UNKNOWN])
            die(EXIT_USAGE, "--grow-vocab adds the characters --skip-unknown would drop: give one of them");
        if (given->given[OPT_MIN_CHAR_COUNT] && !given->given[OPT_GROW_VOCAB])
            die(EXIT_USAGE, "--min-char-count makes a new vocabulary: with --init-from, whose vocabulary is the "
                "checkpoint's, it needs --grow-vocab (and then says which new characters are added)");
    } else if (given->given[OPT_SKIP_UNKNOWN] || given->given[OPT_GROW_VOCAB]) {
        die(EXIT_USAGE, "--%s is for --init-from (a new run's vocabulary is its corpus's)",
            option_name(given->given[OPT_SKIP_UNKNOWN] ? OPT_SKIP_UNKNOWN : OPT_GROW_VOCAB));
    }
    if (!given->given[OPT_RESUME]) return;
    static const int allowed[] = {OPT_RESUME, OPT_STEPS, OPT_OUT, OPT_THREADS, OPT_SAVE_EVERY, OPT_EVAL_EVERY,
                                  OPT_MAX_MEMORY, OPT_DATA, OPT_DECAY_STEPS, OPT_WARMUP, OPT_GRAD_ACCUM,
                                  OPT_ZERO, OPT_PRECISION, OPT_MPI_TIMEOUT, OPT_FORCE, OPT_SEPARATOR, OPT_ENCODING,
                                  OPT_FINAL_VAL_CHARS, OPT_SAMPLE_EVERY, OPT_NO_PROBE};
    for (int i = 0; long_options[i].name; i++) {
        int v = long_options[i].val, ok = 0;
        for (size_t k = 0; k < sizeof(allowed) / sizeof(allowed[0]); k++) ok |= allowed[k] == v;
        if (v < OPT_COUNT && given->given[v] && !ok)
            die(EXIT_USAGE, "--%s cannot be changed when resuming (only --steps, --out, --threads, "
                "--save-every, --eval-every, --max-memory, --data, --separator, --encoding, --decay-steps, "
                "--warmup, --grad-accum, --zero, --precision, --final-val-chars, --mpi-timeout, --force, "
                "--sample-every and --no-probe can; what the timeline probes is its probe.bin's)",
                long_options[i].name);
    }
}

static void parse_options(int argc, char **argv, TrainOptions *o, GivenOptions *given) {
    *o = default_options;
    memset(given, 0, sizeof(*given));
    opterr = 0;
    int c, index = -1;
    while ((c = getopt_long(argc, argv, ":h", long_options, &index)) != -1) {
        switch (c) {
            case 'h': usage(stdout); stdout_flush_or_die(); exit(0);
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
        set_option(o, c, name, optarg);
    }
    if (optind < argc) die(EXIT_USAGE, "unexpected argument '%s' (see --help)", argv[optind]);
    check_given_options(given);
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

// A resumed run without --data reads the saved paths: a relative one where it is from here, or
// beside the checkpoint (run_dir_find_corpus); standard input cannot be read again.
static void find_saved_data(TrainOptions *o, const char *checkpoint_path) {
    DataPaths saved;
    char err[ERR_LEN];
    if (data_paths_split(o->data, &saved, err) != 0) die(EXIT_DATA, "%s: train.data: %s", checkpoint_path, err);
    o->data[0] = '\0';
    for (int i = 0; i < saved.n; i++) {
        if (strcmp(saved.paths[i], CORPUS_STDIN) == 0)
            die(EXIT_USAGE, "%s was trained on standard input (--data -), which cannot be read again: give --data, "
                "with the same text", checkpoint_path);
        char found[sizeof(o->data)];
        run_dir_find_corpus(saved.paths[i], checkpoint_path, found, sizeof(found));
        add_data_path(o, found);
    }
}

// Restores the saved options (keeping those --resume may change: check_given_options refused
// the others) and the training state.
static void resume_options(const Checkpoint *ck, TrainOptions *o, const GivenOptions *given, TrainState *s) {
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
    // the text, checked against the fingerprint: --data's, or the saved paths, found again
    if (given->given[OPT_DATA]) strcpy(o->data, given_values.data);
    else find_saved_data(o, ck->path);
    if (given->given[OPT_SEPARATOR]) strcpy(o->separator, given_values.separator);
    if (given->given[OPT_ENCODING]) o->encoding = given_values.encoding;
    o->final_val_chars = given_values.final_val_chars;
    if (given->given[OPT_SAVE_EVERY]) o->save_every = given_values.save_every;
    if (given->given[OPT_EVAL_EVERY]) o->eval_every = given_values.eval_every;
    o->grad_accum = given_values.grad_accum;
    o->zero = given_values.zero;
    o->mpi_timeout = given_values.mpi_timeout;
    o->sample_every = given_values.sample_every;
    o->no_probe = given_values.no_probe;
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

// A fine-tuning run's model is its checkpoint's: its architecture, and its dropout unless
// --dropout is given.
static void init_from_options(const Checkpoint *ck, TrainOptions *o, const GivenOptions *given) {
    const GPTConfig *c = &ck->config;
    o->n_layer = c->n_layer, o->n_head = c->n_head, o->n_embd = c->n_embd, o->head_size = c->head_size;
    o->block_size = c->block_size, o->qkv_bias = c->qkv_bias;
    if (!given->given[OPT_DROPOUT]) o->dropout = c->dropout;
    if (!given->given[OPT_WARMUP]) o->warmup = schedule_fine_tune_warmup(o->steps);
}

// ----------------------------------------------------------------------------
// the run

// What main sets up, trains and reports on; what it holds is freed by an exit handler
// whichever way the program ends.
typedef struct {
    TrainOptions o;
    GivenOptions given;
    TrainState state;
    int resuming, initializing;  // --resume, --init-from
    Checkpoint ck;               // --resume's or --init-from's
    OutPaths paths;              // the files in --out
    RunDirPlan out_plan;         // what the run does to --out once every check has passed
    RunLock lock;                // of --out, held by rank 0
    Corpus corpus;               // its text, then its tokens
    char data_name[1100];        // --data's paths for messages ("books/, notes.txt")
    double text_bytes;           // the text's memory, as read
    char fingerprint[CORPUS_FINGERPRINT_LEN];
    Vocab vocab;
    Dataset ds;                  // the train and validation splits of the tokens
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
} Run;

static Run run;

static void free_run(void) {
    atomic_file_remove_open();
    char err[ERR_LEN];
    run_log_close(&run.log, err);  // a failure here was already reported, or does not matter any more
    run_lock_release(&run.lock);
    loss_history_free(&run.losses);
    run_probe_free(&run.probe);
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

// Threads per process: --threads, else the cores this process may use, shared with the
// other processes of the run on this machine.
static void set_threads(int threads) {
    if (threads == 0 && dist_local_size() > 1) {
        long share = platform_cpu_count() / dist_local_size();
        threads = share < 1 ? 1 : share < omp_get_max_threads() ? (int)share : omp_get_max_threads();
    }
    if (threads > 0) omp_set_num_threads(threads);
}

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
    gpt_format_bytes(limit, limit_text, sizeof(limit_text));
    if (limit > 0) printf("memory: %s; %s %s\n", needed, limit_text, source);
    else printf("memory: %s; no limit: the memory available is %s (--max-memory sets one)\n", needed, source);
    stdout_flush_or_die();
    if (limit > 0 && gpt_memory_total(plan) > limit) {
        gpt_format_bytes(gpt_memory_total(plan), needed, sizeof(needed));
        die(EXIT_USAGE, "the run needs %s of memory, more than the %s %s: use a smaller model, --batch-size or "
            "--block-size, a larger --grad-accum, a smaller corpus%s", needed, limit_text, source,
            o->max_memory > 0 ? "" : ", or set --max-memory");
    }
}

// ----------------------------------------------------------------------------
// setting up the run

// Before anything in the output directory is read or written (rank 0): it exists and this run
// holds its lock (training/out_dir.h). A --resume of a checkpoint that does not exist locks
// nothing (checkpoint_open says why next).
static void lock_out_dir(const TrainOptions *o) {
    if (o->resume[0] && access(o->resume, F_OK) != 0) return;
    char err[ERR_LEN];
    int status = out_dir_lock(o->out, &run.lock, err);
    if (status != 0) die(status, "%s", err);
    if (err[0]) fprintf(stderr, "%s: warning: %s\n", program_name(), err);
}

// The checkpoint at path read and checked (format/checkpoint.h) within the memory limit.
static void open_checkpoint(const char *path, const TrainOptions *o, Checkpoint *ck) {
    char err[ERR_LEN];
    const char *source;
    int rc = checkpoint_open_within(path, run_memory_limit(o, &source), ck, err);
    if (rc != 0) die(rc == -2 ? EXIT_USAGE : EXIT_DATA, "%s%s%s", err, rc == -2 ? " " : "", rc == -2 ? source : "");
}

// The run's options: a resumed run's are its checkpoint's (with those --resume may change),
// a fine-tuning run's model is its checkpoint's; the run's identity (training/run_identity.h)
// is its checkpoint's when it resumes one that has it, else new. --out is locked before the
// checkpoint is read.
static void set_up_options(Run *r) {
    TrainOptions *o = &r->o;
    char err[ERR_LEN];
    r->state = (TrainState){0, {0}, INFINITY, NAN, 0, 0.0};
    rng_seed(&r->state.rng, o->seed);
    r->resuming = o->resume[0] != '\0', r->initializing = o->init_from[0] != '\0';
    if (r->resuming) resume_out_dir(o, &r->given);
    if (dist_rank() == 0) lock_out_dir(o);
    if (r->resuming) {
        open_checkpoint(o->resume, o, &r->ck);
        resume_options(&r->ck, o, &r->given, &r->state);
    }
    if (r->initializing) {
        open_checkpoint(o->init_from, o, &r->ck);
        init_from_options(&r->ck, o, &r->given);
    }
    if (!r->resuming || !o->run_id[0]) run_id_new(o->run_id);
    check_options(o);
    if (kernels_init(err) != 0) die(EXIT_USAGE, "%s", err);
    set_threads(o->threads);
}

// Before any work (rank 0): what the run will do to --out is planned, nothing changed yet.
static void set_up_out_dir(Run *r) {
    out_paths(r->o.out, &r->paths);
    if (dist_rank() != 0) return;
    char err[ERR_LEN];
    int removed;
    int status = out_dir_prepare(&r->o, r->state.step, &r->paths, &r->out_plan, &removed, err);
    if (removed > 0)
        printf("removed %d temporary file%s left in %s by a run that was stopped\n", removed, removed == 1 ? "" : "s",
               r->o.out);
    if (status != 0) die(status, "%s", err);
}

// Stopped by a signal before the first step (while the corpus was read, or the model built):
// the run ends with 128 + the signal, before anything in --out is written.
static void stop_before_the_run(int signal) {
    die(128 + signal, "stopped by %s before the first step: no run was started, nothing was written in --out",
        stop_signal_name(signal));
}

// Reads --data (training/run_text.h) within the memory limit less the checkpoint being read,
// and says what the set held and skipped and what reading changed; a stop signal ends the
// reading at once.
static void read_text(Run *r) {
    TrainOptions *o = &r->o;
    char err[ERR_LEN], note[ERR_LEN], pipe_into[1100];
    if (!o->data[0] && corpus_default_path(o->data, sizeof(o->data), err) != 0)
        die(EXIT_DATA, "%s; give --data FILE", err);
    if (run_meta_check_paths(o, err) != 0) die(EXIT_USAGE, "%s", err);
    char name[sizeof(r->data_name)];
    data_paths_name(o->data, name, sizeof(name));
    utf8_shown(name, r->data_name, sizeof(r->data_name));  // for messages, the loss plot and the page
    DataPaths paths;
    if (data_paths_split(o->data, &paths, err) != 0) die(EXIT_USAGE, "%s", err);
    for (int i = 0; i < paths.n && dist_size() > 1; i++)
        if (strcmp(paths.paths[i], CORPUS_STDIN) == 0)
            die(EXIT_USAGE, "--data - reads standard input, which mpirun gives to rank 0 alone: every process reads "
                "the corpus itself, so give it a file");
    snprintf(pipe_into, sizeof(pipe_into), "%s --data -", program_invocation());
    TextSource source = {o->data, o->separator, {o->keep_cr, o->encoding, NULL, pipe_into, stop_signals_received}};
    TextBudget budget = {.limit_given = o->max_memory > 0, .held = (double)r->ck.file.file_len};
    budget.limit = run_memory_limit(o, &budget.source);
    CorpusSetReport report;
    int status = run_text_read(&source, &budget, &r->corpus, &report, err);
    if (status != 0 && stop_signals_received()) stop_before_the_run(stop_signals_received());
    if (status != 0)
        die(status, "%s%s", err, status == EXIT_DATA && r->resuming && !r->given.given[OPT_DATA]
                                     ? " (give --data if the corpus moved)" : "");
    if (report.directories || report.files > 1 || report.empty) {
        corpus_set_describe(&report, note, sizeof(note));
        printf("%s: %s\n", r->data_name, note);
    }
    r->text_bytes = (double)r->corpus.len * sizeof(uint32_t);
    text_cleanup_describe(&r->corpus.cleanup, note, sizeof(note));
    if (note[0])
        printf("%s: %s%s\n", r->data_name, note,
               r->corpus.cleanup.crlf || r->corpus.cleanup.lone_cr ? " (--keep-cr keeps them)" : "");
}

// corpus -> vocabulary -> tokens -> train/val split (training/run_text.h); the text takes 4
// bytes a character (its code points, then its tokens in their place), and no more than the
// memory limit leaves beside the checkpoint being resumed or fine-tuned.
static void set_up_text(Run *r) {
    TrainOptions *o = &r->o;
    const int *given = r->given.given;
    char err[ERR_LEN], note[ERR_LEN];
    read_text(r);
    corpus_fingerprint(r->corpus.text, r->corpus.len, r->fingerprint);
    int saved_fingerprint = o->corpus_fingerprint[0] != '\0', status;
    if (r->resuming && (status = run_text_recognise(r->data_name, r->fingerprint, o->resume, o->corpus_fingerprint,
                                                    given[OPT_DATA], err)))
        die(status, "%s", err);
    strcpy(o->corpus_fingerprint, r->fingerprint);
    const Checkpoint *ck = r->resuming || r->initializing ? &r->ck : NULL;
    VocabOptions vocab = {o->min_char_count, o->skip_unknown, o->grow_vocab, r->resuming};
    if ((status = run_text_vocabulary(ck, r->data_name, &vocab, &r->corpus, &r->vocab, note, err)) != 0)
        die(status, "%s", err);
    if (note[0]) printf("%s\n", note);
    if (r->resuming && !saved_fingerprint &&
        (status = run_text_same_vocabulary(&r->corpus, &r->vocab, r->data_name, o->resume, err)) != 0)
        die(status, "%s", err);
    size_t bad_pos;
    corpus_encode(&r->corpus, &r->vocab, &bad_pos);  // every character has a token by now
    if (dataset_split(&r->ds, r->corpus.tokens, r->corpus.len, o->val_fraction, o->block_size, err) != 0)
        die(given[OPT_BLOCK_SIZE] || given[OPT_VAL_FRACTION] ? EXIT_USAGE : EXIT_DATA, "%s: %s", r->data_name, err);
}

// The first agreement: every process has read its corpus and checkpoint, which must be the
// same everywhere, with the same options, before any collective sized by them.
static void agree_on_the_run(Run *r) {
    agree();
    char err[ERR_LEN];
    SameRun same = {&r->o, r->fingerprint, &r->vocab, r->resuming || r->initializing ? &r->ck : NULL, r->state.step};
    if (same_run_check(&same, err) != 0) die(EXIT_DATA, "%s", err);
}

// The model's size and the memory the run needs (this process's share: activations of one
// micro-batch's rows, moments of its shard), printed and checked before anything is allocated.
static void plan_memory(Run *r) {
    const TrainOptions *o = &r->o;
    char err[ERR_LEN];
    r->config = (GPTConfig){r->vocab.size, o->block_size, o->n_layer, o->n_head, o->n_embd, o->head_size, o->qkv_bias,
                            o->dropout};
    if (gpt_config_validate(&r->config, err) != 0) die(EXIT_USAGE, "%s", err);
    // what the timeline probes (rank 0), checked before anything in --out changes
    const char *resumed_run_id = checkpoint_meta(&r->ck, "train.run_id");
    int probe_ready = run_probe_prepare(&r->probe, o, &r->config, &r->vocab, &r->ds,
                                        r->resuming ? (resumed_run_id ? resumed_run_id : "") : NULL, err);
    if (probe_ready != 0) die(probe_ready == -2 ? EXIT_USAGE : EXIT_DATA, "%s", err);
    int B = o->batch_size, T = o->block_size;
    r->tty = isatty(STDOUT_FILENO) && dist_size() == 1;  // mpirun forwards output: no rewritten line
    printf("chargpt: %s, %zu characters, vocabulary %d%s; train %zu, val %zu\n", r->data_name, r->corpus.len,
           r->vocab.size, r->vocab.unknown ? " (an unknown token among them)" : "", r->ds.train_len, r->ds.val_len);
    GPTMemoryPlan plan;
    gpt_memory_plan(&r->config, B, 1, &plan);
    DataParallel *dp = &r->dp;
    size_t num_parameters = (size_t)(plan.parameters / sizeof(float));
    if (data_parallel_plan(dp, B, T, o->grad_accum, o->zero, num_parameters, err) != 0) die(EXIT_USAGE, "%s", err);
    gpt_memory_plan(&r->config, dp->rows, 1, &plan);
    gpt_memory_plan_precision(&plan, &r->config, dp->rows, GPT_PLAN_TRAINING, o->precision);
    plan.optimizer *= (double)dp->shard_n / (double)num_parameters;
    plan.text = r->text_bytes;
    plan.probe = run_probe_memory(&r->probe, &r->config);
    char precision[64], precision_note[ERR_LEN];
    precision_describe(o->precision, precision, sizeof(precision));
    int threads = omp_get_max_threads();
    printf("model: %d layers, %d heads of %d, n_embd %d, block %d, %zu parameters; batch %d, %d thread%s; "
           "precision %s\n", o->n_layer, o->n_head, o->head_size, o->n_embd, o->block_size, num_parameters, B,
           threads, threads == 1 ? "" : "s", precision);
    if (kernels_precision_note(o->precision, precision_note, sizeof(precision_note))) printf("%s\n", precision_note);
    if (dist_size() > 1 || o->grad_accum > 1)
        printf("data parallel: %d process%s x %d micro-batch%s of %d sequences%s\n", dist_size(),
               dist_size() == 1 ? "" : "es", o->grad_accum, o->grad_accum == 1 ? "" : "es", dp->rows,
               dp->zero ? "; optimizer state sharded (ZeRO stage 1)" : "");
    check_memory(&plan, o);
}

// The model (the checkpoint's, or new weights from the seed), its activations, the optimizer
// and the batch; failing to allocate what the plan allowed is also "too large".
static void build_model(Run *r) {
    const TrainOptions *o = &r->o;
    char err[ERR_LEN];
    if (r->initializing && r->vocab.size != r->ck.config.vocab_size) {  // --grow-vocab added characters
        if (checkpoint_load_model_grown(&r->ck, &r->vocab, o->seed, &r->model, 1, err) != 0) die(EXIT_USAGE, "%s", err);
        r->model.config.dropout = o->dropout;
        checkpoint_close(&r->ck);
    } else if (r->resuming || r->initializing) {
        if (checkpoint_load_model(&r->ck, &r->model, 1, err) != 0) die(EXIT_USAGE, "%s", err);
        r->model.config.dropout = o->dropout;  // --init-from may change it
        if (r->initializing) checkpoint_close(&r->ck);
    } else {
        if (gpt_build(&r->model, &r->config, 1, err) != 0) die(EXIT_USAGE, "%s", err);
        gpt_init_weights(&r->model, o->seed);
    }
    if (gpt_set_precision(&r->model, o->precision, err) != 0) die(EXIT_USAGE, "%s", err);
    if (gpt_alloc_activations(&r->model, r->dp.rows, err) != 0) die(EXIT_USAGE, "%s", err);
    if (data_parallel_init(&r->dp, &r->model, &r->opt, o->beta1, o->beta2, o->eps, o->weight_decay, err) != 0)
        die(EXIT_USAGE, "%s", err);
    if (r->resuming) {
        if (checkpoint_load_optimizer(&r->ck, &r->opt, err) != 0) die(EXIT_DATA, "%s", err);
        checkpoint_close(&r->ck);
    }
    int B = o->batch_size, T = o->block_size;
    r->inputs = malloc((size_t)B * T * sizeof(int));
    r->targets = malloc((size_t)B * T * sizeof(int));
    if (!r->inputs || !r->targets) die(EXIT_USAGE, "out of memory for batches of %d x %d tokens", B, T);
}

// What a fine-tuning or resumed run starts from, and what the learning rate does over the
// run's steps (training/schedule.h), with a warning when the run ends inside its warm-up.
static void say_how_the_run_starts(const Run *r) {
    const TrainOptions *o = &r->o;
    long step = r->state.step;
    char schedule[1024], warning[512];
    schedule_describe(o, step, o->steps, schedule, sizeof(schedule));
    if (r->initializing)
        printf("fine-tuning %s's weights from step 0 of %ld: new optimizer state; learning rate: %s\n", o->init_from,
               o->steps, schedule);
    else if (r->resuming)
        printf("resuming %s at step %ld of %ld on %s learning-rate schedule: %s\n", o->resume, step, o->steps,
               r->given.given[OPT_DECAY_STEPS] || r->given.given[OPT_WARMUP] ? "a new" : "the saved", schedule);
    else
        printf("learning rate: %s\n", schedule);
    if (schedule_warning(o, step, o->steps, warning, sizeof(warning))) printf("%s\n", warning);
}

// Once every check has passed, unless a stop signal came: --out changed as planned, log.csv and probe.bin opened (rank 0;
// a resumed run's rows and records after its step dropped), the loss plot's points so far, and
// the processes agree that each has its data and memory (or all leave, with the failure's
// status).
static void start_out_dir(Run *r) {
    char err[ERR_LEN];
    int stop = agree();
    if (stop) stop_before_the_run(stop);
    if (dist_rank() == 0) {
        if (run_dir_apply(r->o.out, &r->out_plan, err) != 0) die(EXIT_DATA, "%s", err);
        if (r->out_plan.message[0]) printf("%s\n", r->out_plan.message);
        if (run_log_open(&r->log, r->paths.log, !r->out_plan.fresh_log, r->state.step, err) != 0)
            die(EXIT_DATA, "%s", err);
        if (r->log.torn_bytes)
            printf("%s: cut %zu bytes of a row that a stopped run left unfinished\n", r->paths.log, r->log.torn_bytes);
    }
    char probe_message[2 * ERR_LEN];
    if (run_probe_open(&r->probe, &r->model, r->state.step, probe_message, sizeof(probe_message), err) != 0)
        die(EXIT_DATA, "%s", err);
    if (probe_message[0]) printf("%s\n", probe_message);
    snprintf(r->plot_title, sizeof(r->plot_title), "chargpt: %s", r->data_name);
    if (r->resuming && dist_rank() == 0 && loss_history_read(&r->losses, r->paths.log, err) != 0)
        die(EXIT_DATA, "%s", err);
    stdout_flush_or_die();
    agree();
}

// ----------------------------------------------------------------------------
// training: step, evaluate, report, save

// One optimizer step on a batch of the training split: forward, backward, gradient clipping
// and AdamW over the processes and micro-batches (training/data_parallel.h). A loss or
// gradient norm that is not finite (the same on every process) ends the run, exit 3, the last
// checkpoint as it was.
static void take_step(Run *r) {
    const TrainOptions *o = &r->o;
    TrainState *s = &r->state;
    int B = o->batch_size, T = o->block_size;
    double t0 = now_seconds();
    dataset_train_batch(&r->ds, &s->rng, B, T, r->inputs, r->targets);
    uint64_t dropout_seed = hash_mix64(o->seed ^ hash_mix64((uint64_t)s->step + 1));
    r->lr = learning_rate(o, s->step);
    double comm_before = dist_comm_seconds();
    double norm = data_parallel_step(&r->dp, &r->model, &r->opt, r->inputs, r->targets, dropout_seed, r->lr,
                                     o->grad_clip);
    double comm_s = dist_comm_seconds() - comm_before;
    if (!isfinite(r->model.mean_loss) || !isfinite(norm)) {
        if (dist_rank() == 0)
            fprintf(stderr, "%s%s: step %ld: %s is not finite; stopping (the last saved checkpoint is unchanged)\n",
                    r->tty ? "\n" : "", program_name(), s->step + 1,
                    isfinite(r->model.mean_loss) ? "the gradient norm" : "the loss");
        exit(EXIT_NONFINITE);
    }
    s->step++;
    s->tokens_seen += (long)B * T;
    r->grad_norm = (float)norm;
    r->grad_norm_sum += norm;
    r->clipped_steps += grad_clipped(norm, o->grad_clip);
    progress_report_step(&r->report, r->model.mean_loss, now_seconds() - t0, comm_s);
    s->elapsed_s = r->elapsed_before + now_seconds() - r->run_start;
}

// A pass in progress on the terminal's progress line (an evaluation, or the whole-validation
// pass at the end), redrawn at most 5 times a second.
typedef struct {
    Run *run;
    const char *what;  // "evaluation" or "final"
    double start, drawn;
} Progress;

static void show_progress(void *context, long done, long total) {
    Progress *p = context;
    double now = now_seconds();
    if (done < total && now - p->drawn < 0.2) return;
    p->drawn = now;
    char line[300];
    int width = terminal_width(STDOUT_FILENO);
    if (strcmp(p->what, "evaluation") == 0)
        progress_report_eval_line(&p->run->report, p->run->state.step, done, total, now - p->start, width, line,
                                  sizeof(line));
    else
        progress_report_final_line(done, total, now - p->start, width, line, sizeof(line));
    printf("\r\033[K%s", line);
    flush_progress();
}

// Every --eval-every steps and at the last: the loss on the validation batches; a new best is
// to be saved to best.safetensors (*best). A stop signal abandons it (every process agrees on
// that signal, *stop). Returns 1 when it evaluated.
static int evaluate(Run *r, int last, int *stop, const char **best) {
    TrainState *s = &r->state;
    if (r->ds.val_len == 0 || (s->step % r->o.eval_every != 0 && !last)) return 0;
    Progress shown = {r, "evaluation", now_seconds(), 0.0};
    PassProgress progress = {show_progress, &shown};
    double val_loss = data_parallel_evaluate(&r->dp, &r->model, &r->ds, r->o.eval_batches, r->tty ? &progress : NULL,
                                             r->inputs, r->targets);
    progress_report_evaluated(&r->report, now_seconds() - shown.start);
    if (isnan(val_loss)) {
        *stop = *stop ? *stop : agree();  // the signal that abandoned it, agreed by every process
        printf("%sevaluation at step %ld abandoned\n", r->tty ? "\n" : "", s->step);
        return 0;
    }
    s->last_val_loss = val_loss;
    if (s->last_val_loss < s->best_val_loss) {
        s->best_val_loss = s->last_val_loss;
        *best = r->paths.best;
    }
    return 1;
}

// Writes best.safetensors and ckpt.safetensors when asked (paths NULL or not).
static void save_checkpoints(Run *r, const char *best, const char *ckpt) {
    const char *paths[2] = {best, ckpt};
    if (!best && !ckpt) return;
    char err[ERR_LEN];
    double start = now_seconds();
    int status = run_checkpoint_save(paths, &r->dp, &r->model, &r->opt, &r->vocab, &r->o, &r->state, err);
    if (status != 0) die(status, "%s", err);
    progress_report_saved(&r->report, now_seconds() - start);
}

// After an evaluation (rank 0): loss.svg redrawn; a failure is only a warning.
static void draw_loss_plot(Run *r) {
    char err[ERR_LEN];
    if (loss_plot_write(r->paths.plot, r->losses.points, r->losses.n, r->plot_title, err) != 0)
        fprintf(stderr, "%s%s: warning: %s (training goes on)\n", r->tty ? "\n" : "", program_name(),
                err);
    else
        r->plot_written = 1;
}

// The timeline's record of the step (rank 0, training/run_probe.h), before its checkpoint is
// saved: the probe at an evaluation, with the update-to-weight ratios (collective under ZeRO);
// the sample when due. A failure is reported and ends the probing, not the run.
static void probe_step(Run *r, int evaluated) {
    float ratios[PROBE_MAX_GROUPS];
    if (evaluated && (r->dp.zero || dist_rank() == 0)) update_ratios(&r->dp, &r->model, &r->opt, r->lr, ratios);
    const ProgressReport *p = &r->report;
    RunProbeStep step = {r->state.step, evaluated, (float)(p->loss_sum / p->loss_count),
                         evaluated ? (float)r->state.last_val_loss : NAN, r->lr, r->grad_norm,
                         (float)grad_clipped(r->grad_norm, r->o.grad_clip), evaluated ? ratios : NULL};
    char err[ERR_LEN];
    double start = now_seconds();
    if (run_probe_step(&r->probe, &step, err) != 0)
        fprintf(stderr, "%s%s: warning: %s; the timeline stops here (training goes on)\n", r->tty ? "\n" : "",
                program_name(), err);
    if (evaluated) progress_report_probed(&r->report, now_seconds() - start);  // for the ETA
}

// timeline.html rewritten (rank 0) after an evaluation's report; a failure is only a warning.
static void draw_timeline(Run *r) {
    char err[ERR_LEN];
    if (run_probe_page(&r->probe, &r->losses, r->plot_title, err) != 0)
        fprintf(stderr, "%s%s: warning: %s (training goes on)\n", r->tty ? "\n" : "", program_name(), err);
}

// A new run's timeline starts with the untrained model, probed at step 0.
static void start_timeline(Run *r) {
    if (r->resuming || r->ds.val_len == 0) return;
    char err[ERR_LEN];
    RunProbeStep step = {0, 1, NAN, NAN, NAN, NAN, NAN, NULL};
    if (run_probe_step(&r->probe, &step, err) != 0)
        fprintf(stderr, "%s: warning: %s; the timeline stops here (training goes on)\n", program_name(), err);
    draw_timeline(r);
}

// The step's report. The progress line, rewritten every step on a terminal (fitted to its
// width), and when a report is due (every --log-every steps, at an evaluation, the last step or
// a stop) kept, with a log.csv row and a point of the loss plot: the mean loss and gradient
// norm since the last report, and how many of its steps were clipped. The row is written here,
// before the step's checkpoint; the line is composed here and printed after the checkpoint
// (print_report): at a Ctrl-C mpirun stops reading its processes' output, and a print blocked
// on that must not keep the checkpoint from being saved.
static void report(Run *r, int due, int evaluated) {
    const TrainState *s = &r->state;
    if (r->tty || due)
        progress_report_line(&r->report, s->step, s->last_val_loss, r->lr, s->elapsed_s,
                             r->tty ? terminal_width(STDOUT_FILENO) : 100000, r->progress_line,
                             sizeof(r->progress_line));
    if (!due) return;
    double grad_norm = r->grad_norm_sum / r->report.loss_count;
    double mean_loss = progress_report_close(&r->report), val_loss = evaluated ? s->last_val_loss : NAN;
    RunLogRow row = {s->step, mean_loss, val_loss, r->lr, s->tokens_seen, s->elapsed_s, grad_norm, r->clipped_steps};
    char err[ERR_LEN];
    if (dist_rank() == 0 && run_log_row(&r->log, &row, err) != 0) die(EXIT_DATA, "%s", err);
    LossPoint point = {s->step, mean_loss, val_loss, r->lr, grad_norm, r->clipped_steps};
    if (loss_history_add(&r->losses, point, err) != 0) die(EXIT_DATA, "%s", err);
    r->grad_norm_sum = 0.0, r->clipped_steps = 0;
    if (evaluated && dist_rank() == 0) {
        draw_loss_plot(r);
        draw_timeline(r);
    }
}

// The progress line report() composed, then the sample made at the step, if any.
static void print_report(Run *r, int due, int evaluated) {
    if (r->tty || due)
        printf("%s%s%s", r->tty ? "\r\033[K" : "", r->progress_line, r->tty && !evaluated ? "" : "\n");
    if (r->probe.sampled) {  // under the progress
        if (r->tty && !evaluated) printf("\n");
        run_probe_print_sample(&r->probe, stdout);
    }
    if (r->tty || due) flush_progress();
}

static void close_log(Run *r) {
    char err[ERR_LEN];
    if (dist_rank() == 0 && run_log_close(&r->log, err) != 0) die(EXIT_DATA, "%s", err);
}

// Stopped by a signal after saving: says how to continue; the exit status is 128 + the signal.
static int stopped(const Run *r, int signal) {
    printf("%sstopped by %s after step %ld; saved %s (continue with --resume %s)\n", r->tty ? "\n" : "",
           stop_signal_name(signal), r->state.step, r->paths.ckpt, r->paths.ckpt);
    return 128 + signal;
}

// ----------------------------------------------------------------------------
// the end of the run

// "done: ...", then the files this run wrote, and what the timeline cost.
static void print_summary(const Run *r) {
    const TrainState *s = &r->state;
    double wall = now_seconds() - r->run_start;
    if (r->tty) printf("\n");
    char summary[1024];
    progress_report_summary(&r->report, s->step, wall, s->last_val_loss, s->best_val_loss, dist_size(), summary,
                            sizeof(summary));
    int have_best = access(r->paths.best, F_OK) == 0;
    printf("%s\ncheckpoints: %s%s%s; log: %s%s%s\n", summary, r->paths.ckpt, have_best ? ", " : "",
           have_best ? r->paths.best : "", r->paths.log, r->plot_written ? "; loss plot: " : "",
           r->plot_written ? r->paths.plot : "");
    const RunProbe *p = &r->probe;
    if (p->probes > 0) {
        char cost[160];
        run_probe_describe_cost(p, cost, sizeof(cost));
        printf("timeline: %s (%ld step%s probed in this run in %.2f s, %.1f%% of the run: %s)\n", r->paths.timeline,
               p->probes, p->probes == 1 ? "" : "s", p->seconds, 100.0 * p->seconds / wall, cost);
    }
}

// The loss of the whole validation split, each character once (training/validation_pass.h),
// shared by the processes; a stop signal ends it (exit 128 + the signal). Returns the exit
// status.
static int whole_validation(Run *r) {
    long chars = validation_pass_chars(r->ds.val_len, r->o.final_val_chars);
    flush_progress();  // what came before is out, whatever the pass does
    if (r->ds.val_len > 0 && chars == 0)
        printf("whole-validation pass skipped (--final-val-chars 0; ./generate %s --score FILE --stride %d scores a "
               "text)\n", r->paths.ckpt, r->o.block_size);
    if (r->ds.val_len == 0 || chars == 0) return 0;
    long scored;
    int T = r->o.block_size;
    Progress shown = {r, "final", now_seconds(), 0.0};
    PassProgress progress = {show_progress, &shown};
    double loss = validation_pass(&r->model, &r->ds, r->o.final_val_chars, r->dp.rows, T, dist_rank(), dist_size(),
                                  r->tty ? &progress : NULL, r->inputs, r->targets, &scored);
    if (r->tty) printf("\r\033[K");
    int stop = agree();  // a stop signal ends the pass on every process
    if (stop) {
        printf("stopped by %s during the whole-validation pass (%s was saved at step %ld before it)\n",
               stop_signal_name(stop), r->paths.ckpt, r->state.step);
        return 128 + stop;
    }
    dist_sum_doubles(&loss, 1);
    long all = (long)r->ds.val_len - 1;
    if (scored < all)
        printf("validation split: loss %.6f over its first %ld of %ld characters (--final-val-chars; all scores the "
               "whole split), in consecutive windows of %d (as ./generate --score --stride %d gives it)\n", loss,
               scored, all, T, T);
    else
        printf("whole validation split: loss %.6f over %ld characters, in consecutive windows of %d (as ./generate "
               "--score --stride %d gives it)\n", loss, scored, T, T);
    flush_progress();
    return 0;
}

int main(int argc, char **argv) {
    Run *r = &run;
    start_processes(&argc, &argv);
    parse_options(argc, argv, &r->o, &r->given);
    install_signal_handlers();
    dist_set_timeout(r->o.mpi_timeout, on_stalled);

    // set up the run: nothing in --out changes until every check has passed
    set_up_options(r);    // the checkpoint's options when resuming or fine-tuning
    set_up_out_dir(r);    // what the run will do to --out
    set_up_text(r);       // corpus -> vocabulary -> tokens -> train/val split
    agree_on_the_run(r);  // every process has the same text, checkpoint and options
    plan_memory(r);       // the model's size and the memory it needs, before allocating it
    build_model(r);       // the model, its activations, the optimizer, a batch
    say_how_the_run_starts(r);
    start_out_dir(r);     // --out changed as planned, log.csv and probe.bin opened
    start_timeline(r);    // a new run's timeline starts at step 0

    // train: step, evaluate, report, save, print
    long start_step = r->state.step;
    progress_report_init(&r->report, start_step, r->o.steps, (long)r->o.batch_size * r->o.block_size);
    int have_val = r->ds.val_len > 0;
    progress_report_plan(&r->report, r->o.eval_every, have_val ? r->o.eval_batches : 0, r->o.save_every,
                         have_val ? validation_pass_chars(r->ds.val_len, r->o.final_val_chars) : 0);
    r->run_start = now_seconds(), r->elapsed_before = r->state.elapsed_s;
    while (r->state.step < r->o.steps) {
        take_step(r);
        int stop = agree();  // every process stops after the same step
        int last = r->state.step == r->o.steps;
        const char *best = NULL;
        int evaluated = evaluate(r, last, &stop, &best);
        probe_step(r, evaluated);  // the timeline's record, before the step's checkpoint
        // log.csv's row, like the probe's record, before the step's checkpoint: a run killed
        // between them resumes from the checkpoint before, dropping what came after it
        int due = r->state.step % r->o.log_every == 0 || last || evaluated || stop;
        report(r, due, evaluated);
        int save = r->state.step % r->o.save_every == 0 || last || stop;
        save_checkpoints(r, best, save ? r->paths.ckpt : NULL);
        print_report(r, due, evaluated);  // after the checkpoint, which a blocked print must not hold up
        if (stop) close_log(r);
        agree();  // what rank 0 wrote above was written, or every process leaves
        if (stop) return stopped(r, stop);
    }

    // finish: a run with no step left still saves, then the summary and the whole split's loss
    if (r->state.step == start_step) save_checkpoints(r, NULL, r->paths.ckpt);
    close_log(r);
    agree();
    print_summary(r);
    return whole_validation(r);
}
