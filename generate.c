// ./generate: samples text from a checkpoint written by ./train, streaming it to stdout (one
// sample or several decoded together), optionally recording the attention weights of every
// layer and head for a viewer; or, with --score, measures the model's loss on a text.
// Exit status: 0 done, 1 bad checkpoint, text or I/O, 2 bad usage, prompt or text characters,
// or a checkpoint too large for the memory.
//
// main is the outline: the options and the files it will write checked, the checkpoint
// opened, then either a text scored (score_text) or a prompt read, the model loaded, the
// samples generated (generation/decoder.h) and the attention recorded.
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "common/clock.h"
#include "common/errors.h"
#include "common/platform.h"
#include "common/program.h"
#include "data/corpus.h"
#include "data/encoding.h"
#include "data/utf8.h"
#include "data/vocab.h"
#include "format/atomic_file.h"
#include "format/checkpoint.h"
#include "format/output.h"
#include "generation/attention_record.h"
#include "generation/decoder.h"
#include "generation/prompt.h"
#include "generation/score.h"
#include "generation/surprisal_csv.h"
#include "kernels/kernels.h"
#include "model/gpt.h"
#include "training/out_dir.h"
#include "training/progress.h"
#include "training/run_log.h"
#include "viewer/attention_export.h"
#include "viewer/timeline.h"

#define THREADS_PER_CORE 4           // --threads may ask for at most this many per core
#define PROMPT_MAX_BYTES (1 << 20)   // a longer prompt file is refused
#define MAX_SAMPLES (1 << 16)        // --num-samples may ask for at most this many
#define MIB (1024.0 * 1024.0)
#define MAX_ATTENTION_FILES 16       // --attention may be given at most this many times

typedef struct {
    const char *checkpoint;
    const char *prompt;       // from the command line, or NULL
    const char *prompt_file;  // "-" for stdin, or NULL
    const char *attention[MAX_ATTENTION_FILES];  // output paths (--attention, each time given)
    int num_attention;
    const char *score;        // text to score ("-" for stdin), or NULL
    const char *surprisal;    // with score: the per-character CSV, or NULL
    const char *ablate;       // --ablate L.H[,L.H...]: the heads knocked out, or NULL
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
    int force;                // --force: the files written may replace files that are there
    char other_flag[40];      // the first option given that --timeline does not take, or ""
} Options;

static const Options default_options = {
    .max_new = 500, .sampler = {0.8f, 0, 1.0f}, .seed = 1337, .stride = 1, .num_samples = 1, .threads = 0,
    .use_cache = 1, .max_memory = 0.0, .precision = PRECISION_FP32, .encoding = ENCODING_UTF8,
};

static void usage(FILE *f) {
    const Options *d = &default_options;
    fprintf(f,
            "usage: %s CKPT [PROMPT] [options]   (a PROMPT that starts with '-' goes after '--':\n"
            "       %s CKPT [options] -- PROMPT)\n"
            "       %s --timeline RUN_DIR [--force]\n"
            "Streams text sampled from a checkpoint written by ./train (or, with --score, scores a text).\n"
            "Each option is given once; --attention may be given once per file.\n\n"
            "  -n, --max-new N        characters to generate; 0 only reads the prompt (default %ld)\n"
            "  -t, --temperature F    sampling temperature; 0 = greedy argmax (default %g)\n"
            "  -k, --top-k N          sample among the N most likely; 0 = off (default %d)\n"
            "  -p, --top-p F          nucleus sampling: smallest set with mass F; 1 = off (default %g)\n"
            "  -s, --seed N           random seed; same seed and options give the same text (default %" PRIu64 ")\n"
            "  -f, --prompt-file FILE read the prompt from FILE ('-' for stdin)\n"
            "      --num-samples N    N samples of the prompt, decoded together and printed one after\n"
            "                         another; sample i uses seed + i (default %d)\n"
            "      --stride S         once the text is longer than block_size, move the window on by S\n"
            "                         characters and prefill it again (1 <= S <= block_size); 1 = the\n"
            "                         window is always the last block_size characters, exactly as\n"
            "                         nanoGPT reads them, at a full prefill per character; larger S\n"
            "                         is faster and sees between block_size + 1 - S and block_size\n"
            "                         characters (default %d). A RoPE model (./train --pos rope) with\n"
            "                         stride 1 rolls its cache on instead, a position per character:\n"
            "                         each layer attends to the last block_size positions, whose\n"
            "                         cached keys saw the text before them too\n"
            "      --skip-unknown     drop prompt (or scored) characters the model never saw\n"
            "                         (default: they take the model's unknown token if it has one,\n"
            "                         else an error naming them)\n"
            "      --no-cache         recompute the whole window for every character (for checking;\n"
            "                         with --score, a RoPE model's exact window, not its rolling cache)\n"
            "      --attention FILE   record the attention weights of every layer and head over the\n"
            "                         processed text (its last block_size characters): .json, .csv,\n"
            "                         .png or .html (an interactive viewer); may be given up to %d\n"
            "                         times, every file's directory checked before the model runs\n"
            "      --score FILE       print the model's mean loss on FILE (plain or gzip; '-' for\n"
            "                         stdin) in nats and bits per character and as perplexity, each\n"
            "                         character after the first predicted from the ones before it\n"
            "                         through the window --stride gives\n"
            "      --encoding E       with --score: the text's encoding, utf-8, latin-1 or cp1252\n"
            "                         (default utf-8)\n"
            "      --surprisal FILE   with --score: write one CSV row per scored character (position,\n"
            "                         character, loss in bits, probability, top 5 predictions); FILE\n"
            "                         is checked before the text is read, as --attention's are\n"
            "      --ablate L.H,...   knock heads out: head H of layer L (both from 0) gives nothing\n"
            "                         to the residual stream (its output is zeroed before the\n"
            "                         projection), for sampling, --score and --attention alike\n"
            "      --threads N        OpenMP threads; 0 = all cores; at most %d per core (default %d)\n"
            "      --max-memory MIB   refuse a checkpoint whose generation needs more memory than MIB\n"
            "                         mebibytes, and a --score text that would take more beside the\n"
            "                         model, at 4 bytes a character (a .gz stops being inflated once\n"
            "                         past it); default: the memory available now, less a margin\n"
            "                         kept free (the least of MemAvailable, the cgroup's limit less\n"
            "                         its use and RLIMIT_AS on Linux; free and inactive pages on\n"
            "                         macOS; elsewhere unknown: no limit)\n"
            "      --precision P      fp32, or bf16: matrix products on bf16 weights and activations\n"
            "                         with fp32 sums, faster where the CPU has AVX512_BF16 (default\n"
            "                         fp32, whatever the checkpoint was trained in)\n"
            "      --timeline RUN_DIR rebuild RUN_DIR/timeline.html, the page of a training run, from its\n"
            "                         probe.bin and log.csv (a run copied from elsewhere), which must\n"
            "                         be of one run, while no run holds RUN_DIR; no CKPT; --max-memory\n"
            "                         bounds it too\n"
            "      --force            replace files that are there already (--attention, --surprisal,\n"
            "                         --timeline's page); without it they are refused\n"
            "  -h, --help             show this help\n"
            "An empty prompt starts from a newline (if the vocabulary has one). A prompt file may hold\n"
            "at most %d bytes.\n",
            program_invocation(), program_invocation(), program_invocation(), d->max_new, d->sampler.temperature,
            d->sampler.top_k, d->sampler.top_p, d->seed, d->num_samples, d->stride, MAX_ATTENTION_FILES,
            THREADS_PER_CORE, d->threads, PROMPT_MAX_BYTES);
}

enum {
    OPT_NO_CACHE = 256, OPT_ATTENTION, OPT_THREADS, OPT_SKIP_UNKNOWN, OPT_MAX_MEMORY, OPT_STRIDE, OPT_NUM_SAMPLES,
    OPT_SCORE, OPT_SURPRISAL, OPT_PRECISION, OPT_ENCODING, OPT_TIMELINE, OPT_FORCE, OPT_ABLATE, OPT_COUNT
};

// Options that only generating text uses (--score refuses them).
static int is_sampling_option(int c) {
    switch (c) {
        case 'n': case 't': case 'k': case 'p': case 's': case 'f':
        case OPT_NUM_SAMPLES: case OPT_ATTENTION: return 1;
        default: return 0;
    }
}

static void check_option_combinations(const Options *o);

static const struct option long_options[] = {
    {"max-new", required_argument, 0, 'n'},     {"temperature", required_argument, 0, 't'},
    {"top-k", required_argument, 0, 'k'},       {"top-p", required_argument, 0, 'p'},
    {"seed", required_argument, 0, 's'},        {"prompt-file", required_argument, 0, 'f'},
    {"no-cache", no_argument, 0, OPT_NO_CACHE}, {"attention", required_argument, 0, OPT_ATTENTION},
    {"threads", required_argument, 0, OPT_THREADS}, {"skip-unknown", no_argument, 0, OPT_SKIP_UNKNOWN},
    {"max-memory", required_argument, 0, OPT_MAX_MEMORY}, {"stride", required_argument, 0, OPT_STRIDE},
    {"num-samples", required_argument, 0, OPT_NUM_SAMPLES}, {"score", required_argument, 0, OPT_SCORE},
    {"surprisal", required_argument, 0, OPT_SURPRISAL}, {"precision", required_argument, 0, OPT_PRECISION},
    {"encoding", required_argument, 0, OPT_ENCODING},
    {"timeline", required_argument, 0, OPT_TIMELINE}, {"force", no_argument, 0, OPT_FORCE},
    {"ablate", required_argument, 0, OPT_ABLATE},
    {"help", no_argument, 0, 'h'},
    {0, 0, 0, 0},
};

// Sets option c, given as `flag` (argv[optind - 1]), from its value optarg; -h or --help prints
// the help and exits.
static void set_option(Options *o, int c, const char *flag, char **argv) {
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
        case OPT_NO_CACHE: o->use_cache = 0; break;
        case OPT_ATTENTION:
            if (o->num_attention == MAX_ATTENTION_FILES)
                die(EXIT_USAGE, "--attention may be given at most %d times", MAX_ATTENTION_FILES);
            o->attention[o->num_attention++] = optarg;
            break;
        case OPT_THREADS:
            o->threads = (int)option_long("--threads", optarg, 0, THREADS_PER_CORE * (long)omp_get_num_procs());
            break;
        case OPT_SKIP_UNKNOWN: o->skip_unknown = 1; break;
        case OPT_MAX_MEMORY: o->max_memory = option_double("--max-memory", optarg, 1.0, 1e12, 1) * MIB; break;
        case OPT_STRIDE: o->stride = (int)option_long("--stride", optarg, 1, 1 << 16); break;
        case OPT_NUM_SAMPLES: o->num_samples = (int)option_long("--num-samples", optarg, 1, MAX_SAMPLES); break;
        case OPT_SCORE: o->score = optarg; break;
        case OPT_SURPRISAL: o->surprisal = optarg; break;
        case OPT_ABLATE: o->ablate = optarg; break;
        case OPT_PRECISION:
            if (precision_parse(optarg, &o->precision) != 0)
                die(EXIT_USAGE, "--precision must be fp32 or bf16, got '%s'", optarg);
            break;
        case OPT_ENCODING:
            if (encoding_parse(optarg, &o->encoding) != 0)
                die(EXIT_USAGE, "--encoding must be utf-8, latin-1 or cp1252, got '%s'", optarg);
            o->encoding_given = 1;
            break;
        case OPT_TIMELINE: o->timeline = optarg; break;
        case OPT_FORCE: o->force = 1; break;
        case 'h':
            // "-h" or "--help" (or its abbreviation); "-hi" is a prompt given before "--"
            if (strcmp(flag, "-h") != 0 && strncmp(flag, "--h", 3) != 0)
                die(EXIT_USAGE, "unknown option '%s' (a prompt that starts with '-' goes after '--': %s CKPT "
                    "-- '%s'; see --help)", argv[optind], program_invocation(), argv[optind]);
            usage(stdout);
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

static void parse_options(int argc, char **argv, Options *o) {
    *o = default_options;
    unsigned char given[OPT_COUNT] = {0};  // each option once (but --attention)
    const char *first_value[OPT_COUNT] = {0};
    opterr = 0;
    int c, index = -1;
    while ((c = getopt_long(argc, argv, ":n:t:k:p:s:f:h", long_options, &index)) != -1) {
        const char *flag = argv[optind - 1];
        char name[40];  // the option as its name, whether its value came with it or after it
        if (index >= 0) snprintf(name, sizeof(name), "--%s", long_options[index].name);
        else snprintf(name, sizeof(name), "-%c", c);
        index = -1;
        if (!o->sampling_flag[0] && is_sampling_option(c))
            snprintf(o->sampling_flag, sizeof(o->sampling_flag), "%s", name);
        if (!o->other_flag[0] && c != OPT_TIMELINE && c != OPT_FORCE && c != OPT_MAX_MEMORY && c != 'h' &&
            c != ':' && c != '?')
            snprintf(o->other_flag, sizeof(o->other_flag), "%s", name);
        set_option(o, c, flag, argv);
        if (c == OPT_ABLATE && given[c])
            die(EXIT_USAGE, "--ablate is given twice ('%s', then '%s'): give it once, with every head in its list "
                "(--ablate %s,%s)", first_value[c], optarg, first_value[c], optarg);
        if (c != OPT_ATTENTION && given[c]) {
            for (int i = 0; long_options[i].name; i++)
                if (long_options[i].val == c) snprintf(name, sizeof(name), "--%s", long_options[i].name);
            option_given_twice(name, first_value[c], optarg, "--attention may be given once per file");
        }
        given[c] = 1;
        first_value[c] = optarg;
    }
    if (o->timeline) {
        if (o->other_flag[0] || optind < argc)
            die(EXIT_USAGE, "--timeline rebuilds a run's page from its directory: it takes only --force and "
                "--max-memory, not '%s'",
                o->other_flag[0] ? o->other_flag : argv[optind]);
        return;
    }
    if (optind >= argc)
        die(EXIT_USAGE, "no checkpoint given (usage: %s CKPT [PROMPT]; see --help)", program_invocation());
    o->checkpoint = argv[optind++];
    if (optind < argc) o->prompt = argv[optind++];
    if (optind < argc) die(EXIT_USAGE, "unexpected argument '%s' (quote a prompt with spaces)", argv[optind]);
    check_option_combinations(o);
}

// What the options given allow together, and the --attention files' formats.
static void check_option_combinations(const Options *o) {
    if (o->prompt && o->prompt_file) die(EXIT_USAGE, "give a prompt or --prompt-file, not both");
    if (o->surprisal && !o->score) die(EXIT_USAGE, "--surprisal writes what --score computes: give --score FILE too");
    if (o->score && o->prompt) die(EXIT_USAGE, "--score reads its text from FILE: give no prompt ('%s')", o->prompt);
    if (o->encoding_given && !o->score) die(EXIT_USAGE, "--encoding is --score's text's: give --score FILE too");
    if (o->score && o->sampling_flag[0])
        die(EXIT_USAGE, "%s is for generating text; --score only takes --stride, --skip-unknown, --surprisal, "
            "--encoding, --no-cache, --ablate, --threads, --precision and --max-memory", o->sampling_flag);
    if (o->num_samples > 1 && o->num_attention)
        die(EXIT_USAGE, "--attention records one text: it cannot be combined with --num-samples %d", o->num_samples);
    char err[ERR_LEN];
    for (int i = 0; i < o->num_attention; i++)
        if (attention_check_path(o->attention[i], err) != 0) die(EXIT_USAGE, "%s", err);
}

// A file that is there already is replaced only with --force (exit 2 without it); what is not a
// regular file output_prepare refuses.
static void refuse_existing(const char *flag, const char *path, int force) {
    struct stat st;
    if (!force && stat(path, &st) == 0 && S_ISREG(st.st_mode))
        die(EXIT_USAGE, "%s %s exists: give --force to replace it", flag, path);
}

// 1 when the output paths a and b, whose directories exist, name the same file: the same
// name in the same directory (links to it resolved).
static int same_output(const char *a, const char *b) {
    char dirs[2][4200], real[2][4200];
    const char *names[2], *paths[2] = {a, b};
    for (int i = 0; i < 2; i++) {
        const char *slash = platform_path_last_separator(paths[i]);
        names[i] = slash ? slash + 1 : paths[i];
        snprintf(dirs[i], sizeof(dirs[i]), "%.*s", slash ? (int)(slash - paths[i]) + 1 : 1, slash ? paths[i] : ".");
        if (platform_real_path(dirs[i], real[i], sizeof(real[i])) != 0) return strcmp(a, b) == 0;
    }
    return strcmp(real[0], real[1]) == 0 && strcmp(names[0], names[1]) == 0;
}

// Before the model runs: the files the run will write are new (or --force was given) and can
// be written, and the temporary files that killed runs left beside them are removed.
static void prepare_outputs(const Options *o) {
    const char *paths[MAX_ATTENTION_FILES + 1], *flags[MAX_ATTENTION_FILES + 1];
    int n = 0, removed = 0;
    for (int i = 0; i < o->num_attention; i++) paths[n] = o->attention[i], flags[n++] = "--attention";
    if (o->surprisal) paths[n] = o->surprisal, flags[n++] = "--surprisal";
    char err[ERR_LEN];
    for (int i = 0; i < n; i++) refuse_existing(flags[i], paths[i], o->force);
    for (int i = 0; i < n; i++) {
        int k;
        if (output_prepare(paths[i], &k, err) != 0) die(EXIT_DATA, "%s %s", flags[i], err);
        removed += k;
    }
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            if (same_output(paths[i], paths[j]))
                die(EXIT_USAGE, "%s %s and %s %s are the same file: give each file once", flags[i], paths[i],
                    flags[j], paths[j]);
    if (removed > 0)
        fprintf(stderr, "%s: removed %d temporary file%s left beside the outputs by a run that was stopped\n",
                program_name(), removed, removed == 1 ? "" : "s");
}

static void write_char(FILE *f, uint32_t cp) {
    char bytes[4];
    fwrite(bytes, 1, (size_t)utf8_encode(cp, bytes), f);
}

// What main allocates, freed by an exit handler whichever way the program ends.
static struct {
    Checkpoint ck;
    Vocab vocab;
    char *prompt_text;
    Prompt prompt;  // the prompt, or the text to score
    GPT model;
    Decoder decoder;
    unsigned char *knocked_out;  // (L, H) the heads --ablate knocks out, or NULL
    OutDirLock lock;             // --timeline: the run directory's, while its page is rewritten
} run;

static void free_run(void) {
    atomic_file_remove_open();
    out_dir_unlock(&run.lock);
    checkpoint_close(&run.ck);
    vocab_free(&run.vocab);
    free(run.prompt_text);
    prompt_free(&run.prompt);
    decoder_free(&run.decoder);
    gpt_free(&run.model);
    free(run.knocked_out);
}

// The generation's memory limit (0: unknown, no limit), and its source for messages.
static double generation_memory_limit(const Options *o, const char **source) {
    return memory_limit(o->max_memory, 1, source);
}

// Refuses (exit 2) a plan that needs more memory than the limit; `what` says what for.
static void check_memory(GPTMemoryPlan *plan, const GPTConfig *c, const Options *o, const char *what) {
    const char *source;
    double limit = generation_memory_limit(o, &source);
    if (limit <= 0 || gpt_memory_total(plan) <= limit) return;
    char needed[512], limit_text[32];
    gpt_memory_describe(plan, needed, sizeof(needed));
    gpt_format_bytes(limit, limit_text, sizeof(limit_text));
    die(EXIT_USAGE, "%s: %s with this checkpoint (block size %d, %d layers, %d heads) needs %s, more than the %s %s",
        o->checkpoint, what, c->block_size, c->n_layer, c->n_head, needed, limit_text, source);
}

// Generation: the model without gradients, its activations for a step of every sample, the
// key/value cache and logits of every sample, their texts, the prompt (its bytes and tokens)
// and, with --attention, what attention_record keeps.
static void check_generation_memory(const GPTConfig *c, const Options *o, long text_len, double prompt_bytes) {
    GPTMemoryPlan plan;
    gpt_memory_plan(c, o->num_samples, GPT_PLAN_GENERATION, &plan);
    gpt_memory_plan_precision(&plan, c, o->num_samples, GPT_PLAN_GENERATION, o->precision);
    plan.generation += (double)o->num_samples * text_len * sizeof(int);
    plan.text = prompt_bytes;
    int t = text_len < c->block_size ? (int)text_len : c->block_size;  // the window recorded
    char err[ERR_LEN];
    for (int i = 0; i < o->num_attention; i++)  // an image too large to write, before the model runs
        if (attention_check_size(o->attention[i], t, c->n_layer, c->n_head, err) != 0)
            die(EXIT_USAGE, "--attention %s", err);
    if (o->num_attention)  // the copy of the attention, its vectors and head scores, and the logit lens
        plan.generation += attention_record_memory(c, t);
    double files = 0.0;  // written one after another: the largest (a .png's image) at a time
    for (int i = 0; i < o->num_attention; i++) {
        double bytes = attention_export_memory(o->attention[i], t, c->n_layer, c->n_head);
        files = bytes > files ? bytes : files;
    }
    plan.generation += files;
    char what[128];
    if (o->num_samples == 1) snprintf(what, sizeof(what), "generating %ld characters", o->max_new);
    else snprintf(what, sizeof(what), "generating %d samples of %ld characters", o->num_samples, o->max_new);
    check_memory(&plan, c, o, what);
}

// --attention: the weights of every layer and head over the text's last window, written to
// each file (generation/attention_record.h).
static void record_attention(GPT *model, const int *text, long len, const Options *o) {
    char err[ERR_LEN];
    int written, status = attention_record(model, &run.vocab, text, len, o->attention, o->num_attention, o->force,
                                                &written, err);
    const GPTConfig *c = &model->config;
    int t = len < c->block_size ? (int)len : c->block_size;
    for (int i = 0; i < written; i++)
        fprintf(stderr, "attention of %d layers x %d heads over %d characters written to %s\n", c->n_layer, c->n_head,
                t, o->attention[i]);
    if (status != 0) die(status, "%s", err);
}

// Prints a warning about the characters prompt_from_chars dropped from `what`.
static void warn_dropped(const Prompt *p, const char *what) {
    if (p->dropped == 0 && p->unknown == 0) return;
    char shown[5];
    prompt_printable_char(p->first_dropped, shown);
    long n = p->dropped ? p->dropped : p->unknown;
    fprintf(stderr, "%s: %s %ld character%s of %s not in the vocabulary%s, the first '%s' (U+%04" PRIX32
            ") at position %ld\n", program_name(), p->dropped ? "warning: dropped" : "note:", n,
            n == 1 ? "" : "s", what, p->dropped ? "" : n == 1 ? " takes its unknown token U+FFFD" :
            " take its unknown token U+FFFD", shown, p->first_dropped, p->first_dropped_at);
}

// The progress line of a long task on stderr when it is a terminal, as ./train's: "scoring:
// 35000/111539 characters | ETA 0m08s", shown from the first unit on, then rewritten at most
// twice a second, cleared at the end.
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

// --score: what each scored character does besides counting: its CSV row, and the progress
// line.
typedef struct {
    SurprisalCsv *csv;  // or NULL
    ProgressLine progress;
} ScoreOutput;

static int on_scored(void *context, long position, int token, float loss, const float *logits, char err[ERR_LEN]) {
    ScoreOutput *out = context;
    if (out->csv && surprisal_csv_row(out->csv, position, token, loss, logits, err) != 0) return -1;
    progress_show(&out->progress, position);
    return 0;
}

// The model, in the precision asked for, with --ablate's heads knocked out (the checkpoint is
// closed once it is read).
static GPT *load_model(const Options *o) {
    char err[ERR_LEN];
    if (checkpoint_load_model(&run.ck, &run.model, 0, err) != 0) die(EXIT_USAGE, "%s", err);
    checkpoint_close(&run.ck);
    if (gpt_set_precision(&run.model, o->precision, err) != 0) die(EXIT_USAGE, "%s", err);
    run.model.knocked_out = run.knocked_out;
    return &run.model;
}

// --score: reads the text, scores it with the model and prints the mean loss.
static void score_text(const Options *o) {
    char err[ERR_LEN];
    const GPTConfig *c = &run.ck.config;
    const char *name = strcmp(o->score, "-") == 0 ? TEXT_STDIN_NAME : o->score;

    // the model's forward over SCORE_BATCH windows and their inputs and targets must fit; the
    // text may take what is left beside them and the checkpoint being read, 4 bytes a character
    // (its code points, then its tokens in their place), and is refused while it is read when
    // it holds more
    GPTMemoryPlan plan;
    gpt_memory_plan(c, SCORE_BATCH, GPT_PLAN_FORWARD, &plan);
    gpt_memory_plan_precision(&plan, c, SCORE_BATCH, GPT_PLAN_FORWARD, o->precision);
    plan.scratch += 2.0 * SCORE_BATCH * c->block_size * sizeof(int);
    if (score_rolls(c, o->stride, o->use_cache)) plan.generation = gpt_generation_floats(c, 1) * sizeof(float);
    check_memory(&plan, c, o, "scoring a text");
    const char *source;
    double limit = generation_memory_limit(o, &source);
    double held = gpt_memory_total(&plan) + (double)run.ck.file.file_len;
    size_t max_chars = limit > 0 ? corpus_max_chars(limit - held) : CORPUS_NO_LIMIT;
    Corpus scored;
    char pipe_into[1100];
    snprintf(pipe_into, sizeof(pipe_into), "%s %s --score -", program_invocation(), o->checkpoint);
    TextOptions read_as = {0, o->encoding, "scored text", pipe_into, NULL};
    int rc = strcmp(o->score, "-") == 0 ? corpus_read_as(stdin, name, &read_as, max_chars, &scored, err)
                                        : corpus_load_as(o->score, &read_as, max_chars, &scored, err);
    if (rc == -2) {
        char limit_text[32], model_text[32];
        gpt_format_bytes(limit, limit_text, sizeof(limit_text));
        gpt_format_bytes(held, model_text, sizeof(model_text));
        die(EXIT_USAGE, "%s: scoring it, at 4 bytes a character, needs more than the %s %s (the model and its "
            "checkpoint take %s of it)", err, limit_text, source, model_text);
    }
    if (rc != 0) die(EXIT_DATA, "%s", err);
    // the text's memory becomes the prompt's tokens
    rc = prompt_from_chars(&run.prompt, &run.vocab, scored.text, (long)scored.len, o->skip_unknown, name, err);
    if (rc != 0) die(EXIT_USAGE, "%s", err);
    warn_dropped(&run.prompt, name);
    const Prompt *text = &run.prompt;
    if (text->len < 2)
        die(EXIT_DATA, "%s: %ld character%s to read: scoring needs at least 2 (the first is context only)", name,
            text->len, text->len == 1 ? "" : "s");
    GPT *model = load_model(o);
    c = &model->config;

    SurprisalCsv csv;
    ScoreOutput out = {o->surprisal ? &csv : NULL, progress_start("scoring", "characters", text->len - 1)};
    if (o->surprisal && surprisal_csv_open(&csv, o->surprisal, run.vocab.chars, c->vocab_size, err) != 0)
        die(EXIT_DATA, "%s", err);
    Score score;
    rc = score_tokens(model, text->tokens, text->len, o->stride, o->use_cache, on_scored, &out, &score, err);
    progress_end(&out.progress);
    if (rc != 0) die(EXIT_DATA, "%s: %s", name, err);
    if (o->surprisal && (rc = surprisal_csv_commit(&csv, o->force, err)) != 0)
        die(rc == ATOMIC_FILE_EXISTS ? EXIT_USAGE : EXIT_DATA, "%s", err);
    double nats = score.sum_nats / score.scored;
    printf("%s: %ld characters scored (block size %d, stride %d%s%s%s): %.6f nats/char, %.6f bits/char, perplexity "
           "%.4f\n", name, score.scored, c->block_size, o->stride,
           score_rolls(c, o->stride, o->use_cache) ? ", rolling cache" : "", o->ablate ? ", heads knocked out " : "",
           o->ablate ? o->ablate : "", nats, nats / M_LN2, exp(nats));
    stdout_flush_or_die();
    if (o->surprisal) fprintf(stderr, "surprisal of %ld characters written to %s\n", score.scored, o->surprisal);
}

// The threads and the kernels (kernels/kernels.h), and what bf16 costs on them when asked for.
static void start_kernels(const Options *o) {
    if (o->threads > 0) omp_set_num_threads(o->threads);
    char err[ERR_LEN];
    if (kernels_init(err) != 0) die(EXIT_USAGE, "%s", err);
    if (kernels_precision_note(o->precision, err, sizeof(err))) fprintf(stderr, "%s\n", err);
}

// --ablate LIST: run.knocked_out flags each head of LIST, "L.H" items (layer L's head H, both
// counted from 0) separated by commas, or exits 2 naming the item that is not one of config's heads.
static void knock_out_heads(const char *list, const GPTConfig *c) {
    run.knocked_out = calloc((size_t)c->n_layer * c->n_head, 1);
    if (!run.knocked_out) die(EXIT_DATA, "out of memory for --ablate's heads");
    for (const char *item = list;; item++) {
        size_t len = strcspn(item, ",");
        char *end = (char *)item;
        long layer = -1, head = -1;
        if (isdigit((unsigned char)item[0])) layer = strtol(item, &end, 10);
        if (layer >= 0 && *end == '.' && isdigit((unsigned char)end[1])) head = strtol(end + 1, &end, 10);
        if (head < 0 || end != item + len)
            die(EXIT_USAGE, "--ablate %s: '%.*s' is not a head: a head is LAYER.HEAD, both counted from 0 (e.g. "
                "--ablate 1.3 or --ablate 0.0,1.2)", list, (int)len, item);
        if (layer >= c->n_layer || head >= c->n_head)
            die(EXIT_USAGE, "--ablate %.*s: the model has no such head (layers 0 to %d, heads 0 to %d)", (int)len,
                item, c->n_layer - 1, c->n_head - 1);
        run.knocked_out[layer * c->n_head + head] = 1;
        item += len;
        if (!*item) break;
    }
}

// The checkpoint, checked whole before anything sized by its config is allocated, and its
// vocabulary.
static void open_checkpoint(const Options *o) {
    char err[ERR_LEN];
    const char *source;
    int rc = checkpoint_open_within(o->checkpoint, generation_memory_limit(o, &source), &run.ck, err);
    if (rc != 0) die(rc == -2 ? EXIT_USAGE : EXIT_DATA, "%s%s%s", err, rc == -2 ? " " : "", rc == -2 ? source : "");
    const GPTConfig *c = &run.ck.config;
    if (checkpoint_vocab(&run.ck, &run.vocab, err) != 0) die(EXIT_DATA, "%s", err);
    if (o->stride > c->block_size)
        die(EXIT_USAGE, "--stride %d is larger than the checkpoint's block size %d", o->stride, c->block_size);
    if (o->ablate) knock_out_heads(o->ablate, c);
}

// The prompt (the command line's, or --prompt-file's): UTF-8 -> tokens. Returns its size in
// bytes.
static size_t read_prompt(const Options *o) {
    char err[ERR_LEN];
    size_t bytes = 0;
    if (o->prompt_file) {
        if (prompt_read_file(o->prompt_file, PROMPT_MAX_BYTES, &run.prompt_text, &bytes, err) != 0)
            die(EXIT_DATA, "%s", err);
    } else {
        run.prompt_text = strdup(o->prompt ? o->prompt : "");
        if (!run.prompt_text) die(EXIT_DATA, "out of memory for the prompt");
        bytes = strlen(run.prompt_text);
    }
    char what[1100];
    if (o->prompt_file)
        snprintf(what, sizeof(what), "prompt file %s", strcmp(o->prompt_file, "-") ? o->prompt_file : "stdin");
    else
        snprintf(what, sizeof(what), "the prompt");
    int rc = prompt_encode(&run.prompt, &run.vocab, run.prompt_text, bytes, o->skip_unknown, what, err);
    if (rc != 0) die(rc == -1 ? EXIT_USAGE : EXIT_DATA, "%s", err);
    warn_dropped(&run.prompt, "the prompt");
    return bytes;
}

// Decodes o->max_new characters of every sample (generation/decoder.h) from the start text:
// the first sample streams to stdout as it is made, the others follow it; when stdout is not a
// terminal (a file), the progress line shows on stderr's. Returns the seconds the characters
// took.
static double generate_samples(GPT *model, const int *start, long start_len, const Options *o) {
    char err[ERR_LEN];
    DecoderConfig config = {o->num_samples, o->stride, o->use_cache, o->sampler, o->seed};
    if (decoder_init(&run.decoder, model, start, start_len, o->max_new, &config, err) != 0) die(EXIT_USAGE, "%s", err);
    const Prompt *prompt = &run.prompt;
    Decoder *d = &run.decoder;
    for (long i = 0; i < prompt->len; i++) write_char(stdout, run.vocab.chars[prompt->tokens[i]]);
    stdout_flush_or_die();
    double t0 = now_seconds();
    ProgressLine progress = progress_start("generating", "characters", o->max_new);
    progress.shown &= !platform_is_terminal(STDOUT_FILENO);
    for (long n = 0; n < o->max_new; n++) {
        const int *next = decoder_step(d, err);
        if (!next) die(EXIT_DATA, "%s: %s", o->checkpoint, err);
        write_char(stdout, run.vocab.chars[next[0]]);
        stdout_flush_or_die();
        progress_show(&progress, n + 1);
    }
    progress_end(&progress);
    double secs = now_seconds() - t0;
    if (prompt->len > 0 || o->max_new > 0) printf("\n");
    for (int s = 1; s < o->num_samples; s++) {
        printf("--- sample %d of %d (seed %" PRIu64 ") ---\n", s + 1, o->num_samples, o->seed + (uint64_t)s);
        for (long i = 0; i < prompt->len; i++) write_char(stdout, run.vocab.chars[prompt->tokens[i]]);
        const int *text = decoder_text(d, s);
        for (long i = start_len; i < d->len; i++) write_char(stdout, run.vocab.chars[text[i]]);
        printf("\n");
    }
    stdout_flush_or_die();  // the text ends before the messages on stderr
    return secs;
}

// "generated 500 characters in 0.412 s (1214 chars/s, precision fp32)" on stderr.
static void report_speed(const Options *o, double secs) {
    if (o->max_new == 0) return;
    long chars = o->max_new * o->num_samples;
    char precision[96] = ", precision ";
    precision_describe(o->precision, precision + strlen(precision), sizeof(precision) - strlen(precision));
    fprintf(stderr, "generated %ld characters%s in %.3f s (%.0f chars/s%s%s)\n", chars,
            o->num_samples > 1 ? " in all samples" : "", secs, secs > 0 ? chars / secs : 0.0,
            o->use_cache ? "" : ", without the cache", precision);
}

// --timeline: the page's memory (viewer/timeline.h) and the loss history's (at most
// LOSS_HISTORY_MAX_POINTS points, training/run_log.h) within the memory limit, or exit 2.
static void check_timeline_memory(const Options *o, const char *probe) {
    char err[ERR_LEN];
    double bytes;
    if (timeline_memory(probe, &bytes, err) != 0) die(EXIT_DATA, "--timeline %s", err);
    bytes += LOSS_HISTORY_MAX_POINTS * sizeof(LossPoint);
    const char *source;
    double limit = generation_memory_limit(o, &source);
    if (limit <= 0 || bytes <= limit) return;
    char needed[32], limit_text[32];
    gpt_format_bytes(bytes, needed, sizeof(needed));
    gpt_format_bytes(limit, limit_text, sizeof(limit_text));
    die(EXIT_USAGE, "--timeline %s: making its page needs %s of memory (a record of %s at a time, and its loss "
        "history), more than the %s %s", o->timeline, needed, probe, limit_text, source);
}

// --timeline's summary: what the page holds, and what it left out of probe.bin, named as
// --resume names it.
static void say_what_the_page_holds(const char *page, const char *probe, const TimelineSummary *s) {
    printf("%s: %ld probed step%s of %ld in full, %ld of %ld records%s\n", page, s->kept_whole,
           s->kept_whole == 1 ? "" : "s", s->whole, s->kept, s->records,
           s->torn_bytes && !s->damage ? "; a torn record at the end of probe.bin left out" : "");
    stdout_flush_or_die();
    if (s->damage)
        fprintf(stderr, "%s: warning: %s: record %ld (at byte %llu) %s: the page holds the %ld records before it and "
                "leaves out the %llu bytes from there (./train --resume moves such a file aside)\n", program_name(),
                probe, s->records + 1, (unsigned long long)s->damaged_at, s->damage, s->records,
                (unsigned long long)s->torn_bytes);
}

// --timeline RUN_DIR: the run's timeline.html made anew from its probe.bin and log.csv, as
// ./train writes it at each evaluation (viewer/timeline.h), while no run holds the directory's
// lock (training/out_dir.h; it is held meanwhile), with a log.csv of the same run (the figures
// of its rows at the probed steps: training/run_log.h); an existing page needs --force.
static void rebuild_timeline(const Options *o) {
    char probe[4200], log[4200], page[4200], err[ERR_LEN], title[4300];
    snprintf(probe, sizeof(probe), "%s/probe.bin", o->timeline);
    snprintf(log, sizeof(log), "%s/log.csv", o->timeline);
    snprintf(page, sizeof(page), "%s/%s", o->timeline, TIMELINE_FILE);
    struct stat st;
    if (stat(o->timeline, &st) != 0 || !S_ISDIR(st.st_mode))
        die(EXIT_DATA, "--timeline %s: %s", o->timeline, errno == ENOENT ? "no such directory" : "not a directory");
    if (access(probe, F_OK) != 0)
        die(EXIT_DATA, "--timeline %s: it holds no probe.bin (a run from before the timeline, or with --no-probe)",
            o->timeline);
    int status = out_dir_lock_if_there(o->timeline, &run.lock, err);
    if (status != 0)
        die(status, "--timeline %s%s", err, status == EXIT_USAGE ? " (the run rewrites its timeline.html itself)" : "");
    if (err[0]) fprintf(stderr, "%s: warning: %s\n", program_name(), err);
    refuse_existing("--timeline", page, o->force);
    check_timeline_memory(o, probe);
    int removed;
    if (output_prepare(page, &removed, err) != 0) die(EXIT_DATA, "--timeline %s", err);
    LossHistory losses = {0};
    if (loss_history_read(&losses, log, err) != 0) die(EXIT_DATA, "%s", err);
    char why[ERR_LEN];
    int rc = loss_history_check_probe(&losses, probe, why);
    if (rc != 0) {
        loss_history_free(&losses);
        if (rc < 0) die(EXIT_DATA, "%s", why);
        die(EXIT_DATA, "--timeline %s: %s is not the log of the run probe.bin probed: %s (a log.csv of another run?); "
            "move it away to make the page without its loss curves", o->timeline, log, why);
    }
    snprintf(title, sizeof(title), "chargpt: %s", o->timeline);
    TimelineSummary s;
    rc = timeline_write(page, probe, losses.points, losses.n, title, TIMELINE_MAX_RECORD_BYTES, o->force, &s, err);
    loss_history_free(&losses);
    if (rc != 0) die(rc == ATOMIC_FILE_EXISTS ? EXIT_USAGE : EXIT_DATA, "%s", err);
    say_what_the_page_holds(page, probe, &s);
}

int main(int argc, char **argv) {
    platform_init(argc, argv);
    Options o;
    parse_options(argc, argv, &o);
    atexit(free_run);
    if (o.timeline) {
        fatal_signals_install(atomic_file_remove_open, 0);  // a killed run leaves no temporary file
        rebuild_timeline(&o);
        return 0;
    }
    prepare_outputs(&o);  // the files it will write can be written
    fatal_signals_install(atomic_file_remove_open, 0);  // a killed run leaves no temporary file
    start_kernels(&o);
    open_checkpoint(&o);
    if (o.score) {
        score_text(&o);
        return 0;
    }

    size_t prompt_bytes = read_prompt(&o);
    const Prompt *prompt = &run.prompt;
    if (prompt->len == 0 && o.max_new == 0 && !o.num_attention) return 0;  // nothing to do

    // the model, after its memory was found to fit; an empty prompt starts from a newline
    long start_len = prompt->len > 0 ? prompt->len : 1;
    check_generation_memory(&run.ck.config, &o, start_len + o.max_new,
                            (double)prompt_bytes + (double)prompt->len * sizeof(int));
    GPT *model = load_model(&o);
    int newline = vocab_index(&run.vocab, '\n');
    int start_token = newline >= 0 ? newline : 0;
    double secs = generate_samples(model, prompt->len > 0 ? prompt->tokens : &start_token, start_len, &o);
    report_speed(&o, secs);
    if (o.num_attention) record_attention(model, decoder_text(&run.decoder, 0), run.decoder.len, &o);
    return 0;
}
