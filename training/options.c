#include "options.h"

#include <inttypes.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../common/platform.h"
#include "../dist/dist.h"
#include "../kernels/kernels.h"
#include "../kernels/parallel.h"
#include "run.h"
#include "schedule.h"

// ----------------------------------------------------------------------------
// the table and --help

const struct option train_long_options[] = {
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
    {"pos", required_argument, 0, OPT_POS},
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
    {"probe-steps", required_argument, 0, OPT_PROBE_STEPS},
    {"task", required_argument, 0, OPT_TASK},
    {"help", no_argument, 0, 'h'},
    {0, 0, 0, 0},
};

// --help, in two parts: what to train on and where to write, then the model and training.
static void usage_data_and_output(FILE *f, const TrainOptions *d) {
    fprintf(f,
            "usage: %s [options]\n"
            "Trains a character-level GPT on a text corpus: files (plain or gzip), directories of\n"
            "them, or standard input. Each option is given once; --data may be given once per path.\n\n"
            "data and output:\n"
            "  --data PATH          what to train on, given once or more: a file (plain text or\n"
            "                       gzip; a pipe too), a directory (every file under it, in the byte\n"
            "                       order of their names; hidden entries and files that are not\n"
            "                       text skipped and counted) or - for standard input (xz -dc\n"
            "                       corpus.xz | %s --data -); default: Tiny Shakespeare, shipped\n"
            "                       with chargpt as tinyshakespeare.txt.gz\n"
            "  --task NAME          train on text chargpt makes from --seed instead of a corpus,\n"
            "                       one of %s (data/task.h says what each\n"
            "                       is); the task's recipe sets the other options' defaults\n"
            "                       (--task NAME --help shows them), and each evaluation prints\n"
            "                       the accuracy on the part of the text that can be predicted\n"
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
            "                       a run holds a lock on DIR/.train.lock while it runs, and a second\n"
            "                       one there exits 2 naming its pid\n"
            "  --force              replace the run in --out (its checkpoints and loss.svg are removed\n"
            "                       and log.csv started afresh once every check has passed); with\n"
            "                       --resume, also replace another run there, or drop newer work of\n"
            "                       CKPT's own run (both refused without it, saying what is there)\n"
            "  --resume CKPT        continue the run saved in CKPT with its options; only --steps,\n"
            "                       --out, --threads, --save-every, --eval-every, --max-memory,\n"
            "                       --data, --separator, --encoding, --decay-steps, --warmup,\n"
            "                       --grad-accum, --zero, --precision, --final-val-chars,\n"
            "                       --mpi-timeout, --force, --sample-every, --probe-steps,\n"
            "                       --no-probe and the run's own --task may be given again (what is\n"
            "                       probed is the run's probe.bin's; a task's run goes on with its\n"
            "                       stream of text, and takes no --data). --out defaults to CKPT's\n"
            "                       directory; one holding another run, or newer checkpoints of this\n"
            "                       one, needs --force. --data must give the same text (its\n"
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
            program_invocation(), program_invocation(), TASK_NAMES, d->val_fraction, d->out);
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
            "  --pos KIND           positions: learned (a table, nanoGPT's; the default) or rope\n"
            "                       (rotary, on q and k: no table, and generation past the block\n"
            "                       costs one position per character)\n"
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
            "                       characters, each once, with a progress line (default %ld; 0\n"
            "                       skips it; all: the whole split)\n"
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
            "                       block-size + 1 characters, read as the corpus is (--encoding,\n"
            "                       --keep-cr) (default: that many of the validation split, from the\n"
            "                       start of its first whole line)\n"
            "  --sample-prompt TEXT the prompt of the samples (default: the passage's first line)\n"
            "  --sample-chars N     characters of each sample, printed under the progress at each\n"
            "                       evaluation and kept for the timeline; 0 = none (default %d)\n"
            "  --sample-every N     a sample every N steps too (default: at probes only)\n"
            "  --probe-steps LIST   early steps the probe (and sample) runs at besides step 0 and\n"
            "                       the evaluations, where the model changes fastest: steps\n"
            "                       separated by commas, or none (default: 10, 20, 50, 100, 200,\n"
            "                       500, ... below --eval-every)\n"
            "  --no-probe           no probe, samples or timeline\n"
            "  -h, --help           show this help\n"
            "progress: on a terminal one line rewritten in place, fitted to its width (else\n"
            "$COLUMNS, else 80 columns) by dropping the least important figures first (elapsed,\n"
            "ms/step, lr, tok/s, val, ETA); otherwise one plain line per report. 'loss' is the mean\n"
            "train loss of the steps since the last report ('mean of N'), as log.csv and done:'s\n"
            "final train loss give it; ms/step and tok/s count training steps only, and the ETA\n"
            "counts what is left of them, the evaluations, the saves and the final validation pass;\n"
            "an evaluation shows on the line while it runs. Ctrl-C, SIGTERM or SIGHUP (on Windows\n"
            "Ctrl-C, Ctrl-Break or closing the console, each as SIGINT): the step ends, an\n"
            "evaluation under way is abandoned, the checkpoint is saved; a second one exits at once\n"
            "without saving. During the whole-validation pass at the end (after the last save) it\n"
            "stops the pass.\n",
            d->n_layer, d->n_head, d->n_embd, d->block_size, d->dropout, d->batch_size, d->steps, d->lr, d->min_lr,
            d->warmup, d->weight_decay, d->grad_clip, d->eval_every, d->eval_batches, d->final_val_chars,
            d->save_every, d->log_every, d->seed, THREADS_PER_CORE, d->threads, d->mpi_timeout, d->sample_chars);
}

void train_usage(FILE *f, const TrainOptions *d) {
    usage_data_and_output(f, d);
    usage_model_and_training(f, d);
}

// ----------------------------------------------------------------------------
// the rules

// The --name of option c.
static const char *option_name(int c) {
    for (int i = 0; train_long_options[i].name; i++)
        if (train_long_options[i].val == c) return train_long_options[i].name;
    return "?";
}

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

// The first of options[0, n) given on the command line, or -1.
static int first_given(const GivenOptions *given, const int *options, size_t n) {
    for (size_t k = 0; k < n; k++)
        if (given->given[options[k]]) return options[k];
    return -1;
}

int options_check_given(const GivenOptions *given, char err[ERR_LEN]) {
    static const int text_options[] = {OPT_DATA, OPT_SEPARATOR, OPT_ENCODING, OPT_KEEP_CR, OPT_MIN_CHAR_COUNT,
                                       OPT_VAL_FRACTION, OPT_INIT_FROM};
    int clash = given->given[OPT_TASK] ? first_given(given, text_options, ARRAY_LEN(text_options)) : -1;
    if (clash >= 0)
        return error_status(err, EXIT_USAGE, "--%s cannot be given with --task: a task's run trains new weights on the "
                            "text chargpt makes", option_name(clash));
    if (given->given[OPT_INIT_FROM] && given->given[OPT_RESUME])
        return error_status(err, EXIT_USAGE, "--init-from starts a new run and --resume continues one: give one of "
                            "them");
    if (given->given[OPT_PROBE_STEPS] && given->given[OPT_NO_PROBE])
        return error_status(err, EXIT_USAGE, "--probe-steps says when the probe runs, and --no-probe runs none: give "
                            "one of them");
    if (given->given[OPT_INIT_FROM]) {
        static const int model_options[] = {OPT_N_LAYER, OPT_N_HEAD, OPT_N_EMBD, OPT_HEAD_SIZE,
                                            OPT_BLOCK_SIZE, OPT_NO_QKV_BIAS, OPT_POS};
        if ((clash = first_given(given, model_options, ARRAY_LEN(model_options))) >= 0)
            return error_status(err, EXIT_USAGE, "--%s cannot be given with --init-from: the model is the "
                                "checkpoint's", option_name(clash));
        if (given->given[OPT_GROW_VOCAB] && given->given[OPT_SKIP_UNKNOWN])
            return error_status(err, EXIT_USAGE, "--grow-vocab adds the characters --skip-unknown would drop: give "
                                "one of them");
        if (given->given[OPT_MIN_CHAR_COUNT] && !given->given[OPT_GROW_VOCAB])
            return error_status(err, EXIT_USAGE, "--min-char-count makes a new vocabulary: with --init-from, whose "
                                "vocabulary is the checkpoint's, it needs --grow-vocab (and then says which new "
                                "characters are added)");
    } else if (given->given[OPT_SKIP_UNKNOWN] || given->given[OPT_GROW_VOCAB]) {
        return error_status(err, EXIT_USAGE, "--%s is for --init-from (a new run's vocabulary is its corpus's)",
                            option_name(given->given[OPT_SKIP_UNKNOWN] ? OPT_SKIP_UNKNOWN : OPT_GROW_VOCAB));
    }
    if (!given->given[OPT_RESUME]) return 0;
    static const int allowed[] = {OPT_RESUME, OPT_STEPS, OPT_OUT, OPT_THREADS, OPT_SAVE_EVERY, OPT_EVAL_EVERY,
                                  OPT_MAX_MEMORY, OPT_DATA, OPT_DECAY_STEPS, OPT_WARMUP, OPT_GRAD_ACCUM,
                                  OPT_ZERO, OPT_PRECISION, OPT_MPI_TIMEOUT, OPT_FORCE, OPT_SEPARATOR, OPT_ENCODING,
                                  OPT_FINAL_VAL_CHARS, OPT_SAMPLE_EVERY, OPT_NO_PROBE, OPT_PROBE_STEPS, OPT_TASK};
    for (int i = 0; train_long_options[i].name; i++) {
        int v = train_long_options[i].val, ok = 0;
        for (size_t k = 0; k < sizeof(allowed) / sizeof(allowed[0]); k++) ok |= allowed[k] == v;
        if (v < OPT_COUNT && given->given[v] && !ok)
            return error_status(err, EXIT_USAGE, "--%s cannot be changed when resuming (only --steps, --out, "
                                "--threads, --save-every, --eval-every, --max-memory, --data, --separator, --encoding, "
                                "--decay-steps, --warmup, --grad-accum, --zero, --precision, --final-val-chars, "
                                "--mpi-timeout, --force, --sample-every, --probe-steps, --no-probe and the run's own "
                                "--task can; what the timeline probes is its probe.bin's)", train_long_options[i].name);
    }
    return 0;
}

// Options the model and schedule need that depend on others. Returns 0, or EXIT_USAGE with err.
static int complete_options(TrainOptions *o, char err[ERR_LEN]) {
    if (o->head_size == 0) {
        if (o->n_embd % o->n_head != 0)
            return error_status(err, EXIT_USAGE, "--n-embd %d is not divisible by --n-head %d: give --head-size",
                                o->n_embd, o->n_head);
        o->head_size = o->n_embd / o->n_head;
    }
    if (o->decay_steps == 0) o->decay_steps = o->steps > 0 ? o->steps : 1;
    if (o->min_lr > o->lr)
        return error_status(err, EXIT_USAGE, "--min-lr %g is larger than --lr %g", o->min_lr, o->lr);
    return 0;
}

// ----------------------------------------------------------------------------
// a resumed or fine-tuning run's options

// Where a resumed run finds its corpus: the path saved in its checkpoint, or, when that is a
// relative path the current directory does not have, the same path beside the checkpoint
// (then the file's name alone there). Writes the path to use into out (the saved one when
// none of the places has it, for the error message that follows).
static void find_corpus(const char *saved, const char *checkpoint_path, char *out, size_t size) {
    snprintf(out, size, "%s", saved);
    if (platform_path_is_absolute(saved) || access(saved, F_OK) == 0) return;
    const char *slash = platform_path_last_separator(checkpoint_path);
    int dir_len = slash ? (int)(slash - checkpoint_path) : 0;
    const char *name = platform_path_last_separator(saved);
    const char *candidates[] = {saved, name ? name + 1 : saved};
    for (int i = 0; i < 2; i++) {
        char path[4200];
        if (slash) snprintf(path, sizeof(path), "%.*s/%s", dir_len, checkpoint_path, candidates[i]);
        else snprintf(path, sizeof(path), "%s", candidates[i]);
        if (access(path, F_OK) == 0 && strlen(path) < size) {
            snprintf(out, size, "%s", path);
            return;
        }
    }
}

// A resumed run without --data reads the saved paths: a relative one where it is from here, or
// beside the checkpoint (find_corpus); standard input cannot be read again. Returns 0, or the
// exit status with err.
static int find_saved_data(TrainOptions *o, const char *checkpoint_path, char err[ERR_LEN]) {
    DataPaths saved;
    char why[ERR_LEN];
    if (data_paths_split(o->data, &saved, why) != 0)
        return error_status(err, EXIT_DATA, "%s: train.data: %s", checkpoint_path, why);
    o->data[0] = '\0';
    for (int i = 0; i < saved.n; i++) {
        if (strcmp(saved.paths[i], CORPUS_STDIN) == 0)
            return error_status(err, EXIT_USAGE, "%s was trained on standard input (--data -), which cannot be read "
                                "again: give --data, with the same text", checkpoint_path);
        char found[sizeof(o->data)];
        find_corpus(saved.paths[i], checkpoint_path, found, sizeof(found));
        if (data_paths_add(o->data, sizeof(o->data), found, err) != 0) return EXIT_USAGE;
    }
    return 0;
}

// Restores the saved options (keeping those --resume may change: options_check_given refused
// the others) and the training state. Returns 0, or the exit status with err.
static int resume_options(const Checkpoint *ck, TrainOptions *o, const GivenOptions *given, TrainState *s,
                          char err[ERR_LEN]) {
    if (!ck->has_optimizer)
        return error_status(err, EXIT_DATA, "%s has no optimizer state, so its run cannot be resumed (./generate "
                            "can still use it)", ck->path);
    TrainOptions given_values = *o;
    if (run_meta_read(ck, o, s, err) != 0) return EXIT_DATA;
    if (given->given[OPT_STEPS]) {
        o->steps = given_values.steps;
        if (o->steps < s->step)
            return error_status(err, EXIT_USAGE, "--steps %ld is before the checkpoint's step %ld", o->steps, s->step);
    }
    if (given->given[OPT_DECAY_STEPS] || given->given[OPT_WARMUP]) {
        // a new schedule from the checkpoint's step
        o->schedule_start = s->step;
        o->warmup = given->given[OPT_WARMUP] ? given_values.warmup : 0;
        o->decay_steps = given->given[OPT_DECAY_STEPS] ? given_values.decay_steps : o->steps;
        if (o->decay_steps <= s->step)
            return error_status(err, EXIT_USAGE, "the new schedule's decay must end after the checkpoint's step %ld: "
                                "give --decay-steps (default --steps) above it", s->step);
    }
    // a task's run goes on with its task; another's text is checked against the fingerprint:
    // --data's, or the saved paths, found again
    if (o->task[0] && given->given[OPT_DATA])
        return error_status(err, EXIT_USAGE, "--data: %s was trained on the %s task, whose text chargpt makes: "
                            "resume it without --data", ck->path, o->task);
    if (given->given[OPT_TASK] && strcmp(given_values.task, o->task) != 0)
        return error_status(err, EXIT_USAGE, "--task %s: %s was trained on %s%s", given_values.task, ck->path,
                            o->task[0] ? "the task " : "", o->task[0] ? o->task : "--data");
    int status;
    if (given->given[OPT_DATA]) strcpy(o->data, given_values.data);
    else if (!o->task[0] && (status = find_saved_data(o, ck->path, err)) != 0) return status;
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
    strcpy(o->probe_steps, given_values.probe_steps);
    if (given->given[OPT_PRECISION]) o->precision = given_values.precision;
    return 0;
}

// By default a resumed run goes on writing beside its checkpoint.
static void resume_out_dir(TrainOptions *o, const GivenOptions *given) {
    if (given->given[OPT_OUT]) return;
    const char *slash = platform_path_last_separator(o->resume);
    if (!slash) strcpy(o->out, ".");
    else snprintf(o->out, sizeof(o->out), "%.*s", (int)(slash - o->resume), o->resume);
    if (!o->out[0]) strcpy(o->out, "/");
}

// A fine-tuning run's model is its checkpoint's: its architecture, and its dropout unless
// --dropout is given.
static void init_from_options(const Checkpoint *ck, TrainOptions *o, const GivenOptions *given) {
    const GPTConfig *c = &ck->config;
    o->n_layer = c->n_layer, o->n_head = c->n_head, o->n_embd = c->n_embd, o->head_size = c->head_size;
    o->block_size = c->block_size, o->qkv_bias = c->qkv_bias, o->position = c->position;
    if (!given->given[OPT_DROPOUT]) o->dropout = c->dropout;
    if (!given->given[OPT_WARMUP]) o->warmup = schedule_fine_tune_warmup(o->steps);
}

// ----------------------------------------------------------------------------
// the set-up

// Before anything in the output directory is read (rank 0): when it and its lock file are
// there, this run holds the lock (training/out_dir.h: nothing is created until the run is
// accepted, start_out_dir); a file system without locks is a warning. A --resume of a
// checkpoint that does not exist locks nothing (checkpoint_open says why next). Returns 0, or
// the exit status with err.
static int lock_out_dir(const TrainOptions *o, OutDirLock *lock, char err[ERR_LEN]) {
    if (o->resume[0] && access(o->resume, F_OK) != 0) return 0;
    int status = out_dir_lock_if_there(o->out, lock, err);
    if (status != 0) return status;
    if (err[0]) fprintf(stderr, "%s: warning: %s\n", program_name(), err);
    return 0;
}

// The checkpoint at path read and checked (format/checkpoint.h) within the run's memory limit.
// Returns 0, or the exit status with err.
static int open_checkpoint(const Run *r, const char *path, Checkpoint *ck, char err[ERR_LEN]) {
    const char *source;
    int rc = checkpoint_open_within(path, r->memory_limit(&r->o, &source), ck, err);
    if (rc == -2) snprintf(err + strlen(err), ERR_LEN - strlen(err), " %s", source);
    return rc == 0 ? 0 : rc == -2 ? EXIT_USAGE : EXIT_DATA;
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

int set_up_options(Run *r, char err[ERR_LEN]) {
    TrainOptions *o = &r->o;
    int status = 0;
    r->state = (TrainState){0, {0}, INFINITY, NAN, 0, 0.0};
    r->accuracy = NAN;
    rng_seed(&r->state.rng, o->seed);
    r->resuming = o->resume[0] != '\0', r->initializing = o->init_from[0] != '\0';
    if (r->resuming) resume_out_dir(o, &r->given);
    if (dist_rank() == 0 && (status = lock_out_dir(o, &r->lock, err)) != 0) return status;
    if (r->resuming && ((status = open_checkpoint(r, o->resume, &r->ck, err)) != 0 ||
                        (status = resume_options(&r->ck, o, &r->given, &r->state, err)) != 0))
        return status;
    if (r->initializing) {
        if ((status = open_checkpoint(r, o->init_from, &r->ck, err)) != 0) return status;
        init_from_options(&r->ck, o, &r->given);
    }
    if (!r->resuming || !o->run_id[0]) run_id_new(o->run_id);
    if ((status = complete_options(o, err)) != 0) return status;
    if (kernels_init(err) != 0) return EXIT_USAGE;
    set_threads(o->threads);
    return 0;
}

// ----------------------------------------------------------------------------
// the tasks' recipes

// Every task trains the same small model: 2 layers of 2 heads of 32 (n_embd 64), block 64,
// batch 32, the learning rate 1e-3 after 100 steps of warm-up and then constant (--min-lr is
// --lr), no weight decay, an evaluation (with the timeline's probe) every 100 steps of 4
// batches. What was measured on the way, on the induction task (the best head's score at
// step 2,000 is the probe's, analysis/head_scores.h; seeds 1337, 1 and 2):
//   - 2 layers: an induction head needs a previous-token head below it, whose output its keys
//     read. 4 heads of 16 formed one at steps 800-1,200, scoring 0.29-0.33; 2 heads of 32 at
//     800-1,000, scoring 0.33-0.39; 1 head a layer first (600-800), but its score fell back
//     from 0.38 to 0.30 (these with the rate decaying, cosine, to 1e-4 at step 2,000).
//   - a constant rate: with the rate held at 1e-3 the head keeps sharpening, 0.56 at step
//     2,000 and 0.61-0.66 at 3,000 (2 heads). At 3e-3 no head formed in 2,000 steps.
//   - block 64 and strings of 4-24 letters written twice: at block 32 (strings of 4-16) or 48
//     no head formed, or it formed later; 52 letters with strings of up to 32, or a random gap
//     between a string and its copy, slowed it past 2,000 steps.
static const long task_steps[TASK_COUNT] = {
    [TASK_INDUCTION] = 2000,
    [TASK_REVERSE] = 3500,
    [TASK_SORT] = 1500,
    [TASK_ADD] = 4000,
};

void task_recipe(Task task, TrainOptions *o) {
    snprintf(o->task, sizeof(o->task), "%s", task_name(task));
    snprintf(o->out, sizeof(o->out), "out-%s", task_name(task));
    o->n_layer = 2, o->n_head = 2, o->n_embd = 64, o->block_size = 64, o->batch_size = 32;
    o->steps = task_steps[task], o->warmup = LR_DEFAULT_WARMUP;
    o->lr = 1e-3f, o->min_lr = 1e-3f, o->weight_decay = 0.0f;
    o->eval_every = 100, o->eval_batches = 4, o->save_every = 500, o->log_every = 25;
    // no pass over the whole split at the end: its windows of the block start anywhere in an
    // example, where the evaluations' start at an example, so its loss (2.67 against 2.15 on
    // induction) would read as a worse model
    o->final_val_chars = 0;
}
