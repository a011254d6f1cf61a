// ./generate: samples text from a checkpoint written by ./train, streaming it to stdout (one
// sample or several decoded together), optionally recording the attention weights of every
// layer and head for a viewer (and the logits); or, with --score, measures the model's loss on
// a text; or, with --export, writes the model for llama.cpp (GGUF) or ONNX runtimes.
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

#include "analysis/circuits.h"
#include "analysis/head_means.h"
#include "analysis/patching.h"
#include "common/clock.h"
#include "common/errors.h"
#include "common/platform.h"
#include "common/program.h"
#include "data/corpus.h"
#include "data/encoding.h"
#include "common/utf8.h"
#include "data/vocab.h"
#include "format/atomic_file.h"
#include "format/checkpoint.h"
#include "format/onnx.h"
#include "format/output.h"
#include "format/probe_csv.h"
#include "generation/attention_record.h"
#include "generation/circuits_report.h"
#include "generation/decoder.h"
#include "generation/export.h"
#include "generation/logits_record.h"
#include "generation/patch_report.h"
#include "generation/prompt.h"
#include "generation/reference_text.h"
#include "generation/score.h"
#include "generation/score_progress.h"
#include "generation/surprisal_csv.h"
#include "generation/task_score.h"
#include "kernels/kernels.h"
#include "kernels/parallel.h"
#include "model/gpt.h"
#include "training/out_dir.h"
#include "training/progress.h"
#include "training/run_log.h"
#include "training/run_state.h"
#include "viewer/attention_export.h"
#include "viewer/circuits_export.h"
#include "viewer/timeline.h"

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
            "      --score-task       for a model of ./train --task: score the task's validation split\n"
            "                         as the run's evaluations read it, on what can be predicted (the\n"
            "                         repeated half, the answer) and on every character, in bits per\n"
            "                         character, with the share of the predictable ones it gets right\n"
            "      --rows N           with --score-task: score the split's first N rows of block_size + 1\n"
            "                         characters (default: the rows the run's evaluations read)\n"
            "      --encoding E       with --score: the text's encoding, utf-8, latin-1 or cp1252\n"
            "                         (default utf-8)\n"
            "      --surprisal FILE   with --score: write one CSV row per scored character (position,\n"
            "                         character, loss in bits, probability, top 5 predictions); FILE\n"
            "                         is checked before the text is read, as --attention's are\n"
            "      --logits FILE      write the logits over the processed text (its last block_size\n"
            "                         characters, as --attention's) to FILE, a .json: {\"tokens\",\n"
            "                         \"chars\", \"logits\": [position][vocabulary]}, 9 digits each\n"
            "      --ablate L.H,...   knock heads out: head H of layer L (both from 0) gives nothing\n"
            "                         to the residual stream (its output is zeroed before the\n"
            "                         projection), for sampling, --score and --attention alike\n"
            "      --ablate-mean L.H,...\n"
            "                         replace heads by their mean output over a reference text (the\n"
            "                         validation split of the checkpoint's run, or --mean-over's)\n"
            "                         instead of zeroing them, for sampling, --score, --score-task,\n"
            "                         --attention and --patch\n"
            "      --mean-over FILE   the reference text of --ablate-mean and of the pages' importance\n"
            "                         by the mean (default: the run's validation split, when its task\n"
            "                         or its one corpus file makes it)\n"
            "      --patch CLEAN CORRUPTED\n"
            "                         activation patching of two texts of the same length (at most\n"
            "                         block_size characters): the corrupted text run with each head's\n"
            "                         output, and the residual stream at each position, taken from\n"
            "                         the clean run; prints the share of logit(clean's answer) -\n"
            "                         logit(corrupted's) each restores; with --attention, the clean\n"
            "                         text recorded with the patching beside it\n"
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
            "      --circuits FILE    write the circuits of the checkpoint's weights, no text: each head's\n"
            "                         OV circuit and its copying score, its QK circuits over positions and\n"
            "                         characters, and the Q-, K- and V-composition between heads beside\n"
            "                         a random baseline (drawn from --seed), to FILE (.json, or .html: a\n"
            "                         page that draws them), and a summary; no prompt\n"
            "      --timeline RUN_DIR rebuild RUN_DIR/timeline.html, the page of a training run, from its\n"
            "                         probe.bin and log.csv (a run copied from elsewhere), which must\n"
            "                         be of one run, while no run holds RUN_DIR; no CKPT; --max-memory\n"
            "                         bounds it too\n"
            "      --csv FILE         with --timeline: write every head's scores and importance at every\n"
            "                         probed step of RUN_DIR/probe.bin to FILE as CSV, not the page\n"
            "      --export FILE      write the model for other programs, no text: FILE.gguf for\n"
            "                         llama.cpp (architecture gpt2, or gptneox for RoPE; one token a\n"
            "                         character) or FILE.onnx for ONNX runtimes (opset %d: input_ids\n"
            "                         [batch, sequence] -> logits [batch, sequence, vocabulary]); may be\n"
            "                         given up to %d times; takes only --force and --max-memory\n"
            "      --force            replace files that are there already (--attention, --surprisal,\n"
            "                         --logits, --export, --timeline's page); without it they are refused\n"
            "  -h, --help             show this help\n"
            "An empty prompt starts from a newline (if the vocabulary has one). A prompt file may hold\n"
            "at most %d bytes.\n",
            program_invocation(), program_invocation(), program_invocation(), d->max_new, d->sampler.temperature,
            d->sampler.top_k, d->sampler.top_p, d->seed, d->num_samples, d->stride, MAX_ATTENTION_FILES,
            THREADS_PER_CORE, d->threads, ONNX_OPSET, MAX_EXPORT_FILES, PROMPT_MAX_BYTES);
}

enum {
    OPT_NO_CACHE = 256, OPT_ATTENTION, OPT_THREADS, OPT_SKIP_UNKNOWN, OPT_MAX_MEMORY, OPT_STRIDE, OPT_NUM_SAMPLES,
    OPT_SCORE, OPT_SURPRISAL, OPT_PRECISION, OPT_ENCODING, OPT_TIMELINE, OPT_FORCE, OPT_ABLATE, OPT_SCORE_TASK,
    OPT_ROWS, OPT_CSV, OPT_CIRCUITS, OPT_ABLATE_MEAN, OPT_MEAN_OVER, OPT_PATCH, OPT_EXPORT, OPT_LOGITS, OPT_COUNT
};

// Options that only generating text uses (--score refuses them).
static int is_sampling_option(int c) {
    switch (c) {
        case 'n': case 't': case 'k': case 'p': case 's': case 'f':
        case OPT_NUM_SAMPLES: case OPT_ATTENTION: case OPT_LOGITS: return 1;
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
    {"score-task", no_argument, 0, OPT_SCORE_TASK}, {"rows", required_argument, 0, OPT_ROWS},
    {"csv", required_argument, 0, OPT_CSV}, {"circuits", required_argument, 0, OPT_CIRCUITS},
    {"ablate-mean", required_argument, 0, OPT_ABLATE_MEAN}, {"mean-over", required_argument, 0, OPT_MEAN_OVER},
    {"patch", required_argument, 0, OPT_PATCH},
    {"export", required_argument, 0, OPT_EXPORT}, {"logits", required_argument, 0, OPT_LOGITS},
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
        case OPT_SCORE_TASK: o->score_task = 1; break;
        case OPT_ROWS: o->rows = option_long("--rows", optarg, 1, TASK_SCORE_MAX_ROWS); break;
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
        case OPT_CSV: o->csv = optarg; break;
        case OPT_CIRCUITS: o->circuits = optarg; break;
        case OPT_ABLATE_MEAN: o->ablate_mean = optarg; break;
        case OPT_MEAN_OVER: o->mean_over = optarg; break;
        case OPT_PATCH: o->patch = optarg; break;
        case OPT_FORCE: o->force = 1; break;
        case OPT_EXPORT:
            if (o->num_exports == MAX_EXPORT_FILES)
                die(EXIT_USAGE, "--export may be given at most %d times", MAX_EXPORT_FILES);
            o->exports[o->num_exports++] = optarg;
            break;
        case OPT_LOGITS: o->logits = optarg; break;
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
        if (!o->decoding_flag[0] && is_sampling_option(c) && c != OPT_ATTENTION)
            snprintf(o->decoding_flag, sizeof(o->decoding_flag), "%s", name);
        if (!o->other_flag[0] && c != OPT_TIMELINE && c != OPT_CSV && c != OPT_EXPORT && c != OPT_FORCE &&
            c != OPT_MAX_MEMORY &&
            c != 'h' && c != ':' && c != '?')
            snprintf(o->other_flag, sizeof(o->other_flag), "%s", name);
        if (!o->circuits_other[0] && c != OPT_CIRCUITS && c != 's' && c != OPT_THREADS && c != OPT_MAX_MEMORY &&
            c != OPT_FORCE && c != 'h' && c != ':' && c != '?')
            snprintf(o->circuits_other, sizeof(o->circuits_other), "%s", name);
        set_option(o, c, flag, argv);
        if (c == OPT_ABLATE && given[c])
            die(EXIT_USAGE, "--ablate is given twice ('%s', then '%s'): give it once, with every head in its list "
                "(--ablate %s,%s)", first_value[c], optarg, first_value[c], optarg);
        if (c != OPT_ATTENTION && c != OPT_EXPORT && given[c]) {
            for (int i = 0; long_options[i].name; i++)
                if (long_options[i].val == c) snprintf(name, sizeof(name), "--%s", long_options[i].name);
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
    check_option_combinations(o);
}

// What the options given allow together, and the --attention files' formats.
static void check_option_combinations(const Options *o) {
    if (o->prompt && o->prompt_file) die(EXIT_USAGE, "give a prompt or --prompt-file, not both");
    if (o->surprisal && !o->score) die(EXIT_USAGE, "--surprisal writes what --score computes: give --score FILE too");
    if (o->score && o->prompt) die(EXIT_USAGE, "--score reads its text from FILE: give no prompt ('%s')", o->prompt);
    if (o->encoding_given && !o->score) die(EXIT_USAGE, "--encoding is --score's text's: give --score FILE too");
    if (o->rows && !o->score_task) die(EXIT_USAGE, "--rows is --score-task's: give --score-task too");
    if (o->score_task && (o->score || o->prompt || o->sampling_flag[0] || o->surprisal || o->stride != 1 ||
                          !o->use_cache))
        die(EXIT_USAGE, "--score-task scores the task's own rows, one window each: it takes only --rows, --ablate, "
            "--ablate-mean, --mean-over, --threads, --precision and --max-memory");
    if (o->score && o->sampling_flag[0])
        die(EXIT_USAGE, "%s is for generating text; --score only takes --stride, --skip-unknown, --surprisal, "
            "--encoding, --no-cache, --ablate, --ablate-mean, --mean-over, --threads, --precision and --max-memory",
            o->sampling_flag);
    if (o->circuits && (o->circuits_other[0] || o->prompt))
        die(EXIT_USAGE, "--circuits reads the weights alone: it takes only --seed, --threads, --max-memory and --force, "
            "not %s%s%s", o->prompt ? "a prompt ('" : o->circuits_other, o->prompt ? o->prompt : "", o->prompt ? "')" : "");
    if (o->patch && !o->prompt)
        die(EXIT_USAGE, "--patch needs two texts of the same length: --patch CLEAN CORRUPTED (the corrupted one "
            "after the clean one)");
    if (o->patch && (o->decoding_flag[0] || o->score || o->circuits || o->score_task))
        die(EXIT_USAGE, "--patch runs two texts through the model and generates nothing: it takes --attention, "
            "--ablate, --ablate-mean, --mean-over, --skip-unknown, --threads, --precision, --max-memory and --force, "
            "not %s", o->decoding_flag[0] ? o->decoding_flag : o->score ? "--score" : o->circuits ? "--circuits"
                                                                                                   : "--score-task");
    if (o->mean_over && !o->ablate_mean && !o->num_attention)
        die(EXIT_USAGE, "--mean-over gives the text --ablate-mean and the pages' importance take the heads' means "
            "over: give --ablate-mean L.H or --attention FILE too");
    if (o->num_samples > 1 && (o->num_attention || o->logits))
        die(EXIT_USAGE, "%s records one text: it cannot be combined with --num-samples %d",
            o->num_attention ? "--attention" : "--logits", o->num_samples);
    char err[ERR_LEN];
    for (int i = 0; i < o->num_attention; i++)
        if (attention_check_path(o->attention[i], err) != 0) die(EXIT_USAGE, "%s", err);
    if (o->circuits && circuits_check_path(o->circuits, err) != 0) die(EXIT_USAGE, "%s", err);
    if (o->logits && logits_check_path(o->logits, err) != 0) die(EXIT_USAGE, "%s", err);
    ExportFormat format;
    for (int i = 0; i < o->num_exports; i++)
        if (export_format(o->exports[i], &format, err) != 0) die(EXIT_USAGE, "%s", err);
    if (o->num_exports && (o->other_flag[0] || o->prompt))
        die(EXIT_USAGE, "--export writes the checkpoint's model: it takes only --force and --max-memory, not '%s'",
            o->other_flag[0] ? o->other_flag : o->prompt);
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
    const char *paths[MAX_ATTENTION_FILES + MAX_EXPORT_FILES + 3], *flags[MAX_ATTENTION_FILES + MAX_EXPORT_FILES + 3];
    int n = 0, removed = 0;
    for (int i = 0; i < o->num_attention; i++) paths[n] = o->attention[i], flags[n++] = "--attention";
    if (o->surprisal) paths[n] = o->surprisal, flags[n++] = "--surprisal";
    if (o->circuits) paths[n] = o->circuits, flags[n++] = "--circuits";
    if (o->logits) paths[n] = o->logits, flags[n++] = "--logits";
    for (int i = 0; i < o->num_exports; i++) paths[n] = o->exports[i], flags[n++] = "--export";
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
    ActivationEdit *edits;        // (2 L H) the heads --ablate knocks out, then those --ablate-mean replaces
    ForwardHooks hooks;           // the model's hooks: those edits
    unsigned char *mean_ablated;  // (L, H) the heads --ablate-mean replaces by their mean, or NULL
    Prompt reference;             // the text the heads' means are taken over (generation/reference_text.h)
    char reference_name[1200];    // what it is, for messages and the pages; "" when there is none
    float *head_means;            // (L, H, hs) each head's mean output over it, or NULL
    Prompt corrupted;             // --patch's corrupted text
    OutDirLock lock;              // --timeline: the run directory's, while its page is rewritten
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
    free(run.edits);
    free(run.mean_ablated);
    prompt_free(&run.reference);
    free(run.head_means);
    prompt_free(&run.corrupted);
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
    format_bytes(limit, limit_text, sizeof(limit_text));
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
// With --patch, the patching beside the clean text (patching NULL otherwise); the heads'
// importance by the mean when their means were taken.
static void record_attention(GPT *model, const int *text, long len, const Patching *patching, const Options *o) {
    char err[ERR_LEN];
    AttentionExtras extras = {run.head_means, run.reference_name, patching, run.corrupted.tokens};
    int written, status = attention_record(model, &run.vocab, text, len, &extras, o->attention, o->num_attention,
                                           o->force, &written, err);
    const GPTConfig *c = &model->config;
    int t = len < c->block_size ? (int)len : c->block_size;
    for (int i = 0; i < written; i++)
        fprintf(stderr, "attention of %d layers x %d heads over %d characters written to %s\n", c->n_layer, c->n_head,
                t, o->attention[i]);
    if (status != 0) die(status, "%s", err);
}

// --logits: the logits over the text's last window (generation/logits_record.h).
static void record_logits(GPT *model, const int *text, long len, const Options *o) {
    char err[ERR_LEN];
    int status = logits_record(model, &run.vocab, text, len, o->logits, o->force, err);
    if (status != 0) die(status, "%s", err);
    const GPTConfig *c = &model->config;
    fprintf(stderr, "logits of %ld characters written to %s\n", len < c->block_size ? len : (long)c->block_size,
            o->logits);
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

// --score: what each scored character does besides counting, its CSV row; and what the
// scoring shows on stderr as it goes (generation/score_progress.h).
typedef struct {
    SurprisalCsv *csv;  // or NULL
    long scored;        // characters scored so far
    double start;
    ScoreProgress progress;
} ScoreOutput;

static int on_scored(void *context, long position, int token, float loss, const float *logits, char err[ERR_LEN]) {
    ScoreOutput *out = context;
    out->scored++;
    return out->csv ? surprisal_csv_row(out->csv, position, token, loss, logits, err) : 0;
}

static void on_score_progress(void *context, double done, double total) {
    ScoreOutput *out = context;
    char text[512];
    score_progress_text(&out->progress, now_seconds() - out->start, done, total, out->scored, program_name(), text,
                        sizeof(text));
    fputs(text, stderr);
}

// The reference text of the heads' means (generation/reference_text.h), read while the
// checkpoint is open, within what the memory limit leaves beside the model: for --ablate-mean
// (which exits when there is none) and for the pages' importance by the mean (which are left
// without it, saying why).
static void read_reference(const Options *o) {
    if (!o->ablate_mean && !o->num_attention) return;
    GPTMemoryPlan plan;
    gpt_memory_plan(&run.ck.config, 1, GPT_PLAN_FORWARD, &plan);
    const char *source;
    double limit = generation_memory_limit(o, &source), held = gpt_memory_total(&plan) + (double)run.ck.file.file_len;
    size_t max_chars = limit > 0 ? corpus_max_chars(limit > held ? limit - held : 0) : CORPUS_NO_LIMIT;
    char err[ERR_LEN];
    int rc = reference_text_load(&run.ck, &run.vocab, o->mean_over, max_chars, &run.reference, run.reference_name,
                                 sizeof(run.reference_name), err);
    if (rc != 0 && (o->ablate_mean || o->mean_over)) die(rc, "%s%s", o->ablate_mean ? "--ablate-mean: " : "", err);
    if (rc != 0) {
        fprintf(stderr, "%s: note: the pages show no importance by the mean: %s\n", program_name(), err);
        run.reference_name[0] = '\0';
    }
    if (rc == 0 && o->mean_over) warn_dropped(&run.reference, o->mean_over);
}

// Each head's mean over the reference text (analysis/head_means.h), on at most
// MEANS_MAX_WINDOWS windows of it, and --ablate-mean's edits added to the model's hooks.
#define MEANS_MAX_WINDOWS 64
static void take_head_means(GPT *model) {
    if (!run.reference_name[0]) return;
    const GPTConfig *c = &model->config;
    char err[ERR_LEN];
    long len = run.reference.len < (long)MEANS_MAX_WINDOWS * c->block_size ? run.reference.len
                                                                             : (long)MEANS_MAX_WINDOWS * c->block_size;
    run.head_means = malloc((size_t)c->n_layer * c->n_head * c->head_size * sizeof(float));
    if (!run.head_means) die(EXIT_DATA, "out of memory for the heads' means");
    if (gpt_alloc_activations(model, 1, err) != 0 || head_means(model, run.reference.tokens, len, run.head_means, err) != 0)
        die(EXIT_DATA, "%s", err);
    if (!run.mean_ablated) return;
    run.hooks.n_heads += head_means_edits(c, run.head_means, run.mean_ablated, run.edits + run.hooks.n_heads);
    model->hooks = &run.hooks;
}

// The model, in the precision asked for, with --ablate's heads knocked out and --ablate-mean's
// replaced by their means (the checkpoint is closed once it and the reference text are read).
static GPT *load_model(const Options *o) {
    char err[ERR_LEN];
    if (checkpoint_load_model(&run.ck, &run.model, 0, err) != 0) die(EXIT_USAGE, "%s", err);
    read_reference(o);
    checkpoint_close(&run.ck);
    if (gpt_set_precision(&run.model, o->precision, err) != 0) die(EXIT_USAGE, "%s", err);
    run.model.hooks = run.hooks.n_heads ? &run.hooks : NULL;
    take_head_means(&run.model);
    return &run.model;
}

// --export: the checkpoint's model written to each file (generation/export.h), once every
// file's format was found to carry it and the parameters to fit in memory beside the
// checkpoint; a line on stdout for each, and the checkpoint's size beside theirs.
static void export_models(const Options *o) {
    char err[ERR_LEN], name[256], written[ERR_LEN];
    const GPTConfig *c = &run.ck.config;
    for (int i = 0; i < o->num_exports; i++)
        if (export_check(o->exports[i], c, err) != 0) die(EXIT_DATA, "%s: %s", o->checkpoint, err);
    // the parameters, the checkpoint they are read from, and the largest file's own lists
    GPTMemoryPlan plan;
    gpt_memory_plan(c, 1, GPT_PLAN_FORWARD, &plan);
    double checkpoint_bytes = (double)run.ck.file.file_len, file_bytes = 0.0;
    for (int i = 0; i < o->num_exports; i++) file_bytes = fmax(file_bytes, export_memory(o->exports[i], c));
    const char *source;
    double limit = generation_memory_limit(o, &source), need = plan.parameters + checkpoint_bytes + file_bytes;
    if (limit > 0 && need > limit) {
        char text[4][32];
        double parts[4] = {need, plan.parameters, checkpoint_bytes, limit};
        for (int i = 0; i < 4; i++) format_bytes(parts[i], text[i], sizeof(text[i]));
        die(EXIT_USAGE, "%s: exporting the model needs %s (its parameters %s beside the checkpoint's %s), more than "
            "the %s %s", o->checkpoint, text[0], text[1], text[2], text[3], source);
    }
    export_model_name(&run.ck, name, sizeof(name));
    int has_optimizer = run.ck.has_optimizer;
    GPT *model = load_model(o);  // the checkpoint closed
    for (int i = 0; i < o->num_exports; i++) {
        int rc = export_model(o->exports[i], model, &run.vocab, name, o->force, written, err);
        if (rc != 0) die(rc == ATOMIC_FILE_EXISTS ? EXIT_USAGE : EXIT_DATA, "%s", err);
        printf("%s\n", written);
    }
    char size[32], params[32];
    format_bytes(checkpoint_bytes, size, sizeof(size));
    format_bytes(plan.parameters, params, sizeof(params));
    printf("from %s: %s, its parameters %s%s\n", o->checkpoint, size, params,
           has_optimizer ? " (the rest: AdamW's moments and the header)" : "");
    stdout_flush_or_die();
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
        format_bytes(limit, limit_text, sizeof(limit_text));
        format_bytes(held, model_text, sizeof(model_text));
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
    ScoreOutput out = {.csv = o->surprisal ? &csv : NULL, .start = now_seconds()};
    double fastest = score_work(c, text->len, c->block_size, 0) / score_work(c, text->len, o->stride, o->use_cache);
    int terminal = platform_is_terminal(STDERR_FILENO);
    score_progress_init(&out.progress, text->len - 1, terminal, omp_get_max_threads(), c->block_size, fastest);
    const ScoreReport report = {on_scored, on_score_progress, &out};
    if (o->surprisal && surprisal_csv_open(&csv, o->surprisal, run.vocab.chars, c->vocab_size, err) != 0)
        die(EXIT_DATA, "%s", err);
    Score score;
    rc = score_tokens(model, text->tokens, text->len, o->stride, o->use_cache, &report, &score, err);
    if (terminal && out.progress.line_seconds >= 0.0) fprintf(stderr, "\r\033[K");
    if (rc != 0) die(EXIT_DATA, "%s: %s", name, err);
    if (o->surprisal && (rc = surprisal_csv_commit(&csv, o->force, err)) != 0)
        die(rc == ATOMIC_FILE_EXISTS ? EXIT_USAGE : EXIT_DATA, "%s", err);
    double nats = score.sum_nats / score.scored;
    printf("%s: %ld characters scored (block size %d, stride %d%s%s%s%s%s): %.6f nats/char, %.6f bits/char, perplexity "
           "%.4f\n", name, score.scored, c->block_size, o->stride,
           score_rolls(c, o->stride, o->use_cache) ? ", rolling cache" : "", o->ablate ? ", heads knocked out " : "",
           o->ablate ? o->ablate : "", o->ablate_mean ? ", heads replaced by their mean " : "",
           o->ablate_mean ? o->ablate_mean : "", nats, nats / M_LN2, exp(nats));
    stdout_flush_or_die();
    if (o->surprisal) fprintf(stderr, "surprisal of %ld characters written to %s\n", score.scored, o->surprisal);
}

// --score-task: the validation split of the task the checkpoint was trained on (its options
// say which, and the seed that makes it), scored as its evaluations read it.
static void score_task_split(const Options *o) {
    char err[ERR_LEN];
    TrainOptions train;
    TrainState state;
    if (run_meta_read(&run.ck, &train, &state, err) != 0) die(EXIT_DATA, "%s", err);
    if (!train.task[0])
        die(EXIT_USAGE, "%s was trained on a text, not a --task: --score FILE scores a text", o->checkpoint);
    Task task = (Task)task_find(train.task);
    const char *alphabet = task_alphabet(task);
    int same = run.vocab.size == (int)strlen(alphabet) && !run.vocab.unknown;
    for (int i = 0; same && i < run.vocab.size; i++) same = run.vocab.chars[i] == (uint32_t)(unsigned char)alphabet[i];
    if (!same)
        die(EXIT_DATA, "%s: its vocabulary is not the %s task's %zu characters (a checkpoint of another version of "
            "chargpt?)", o->checkpoint, train.task, strlen(alphabet));
    const GPTConfig *c = &run.ck.config;
    long rows = o->rows ? o->rows : train.eval_batches * (long)train.batch_size;
    GPTMemoryPlan plan;
    gpt_memory_plan(c, SCORE_BATCH, GPT_PLAN_FORWARD, &plan);
    gpt_memory_plan_precision(&plan, c, SCORE_BATCH, GPT_PLAN_FORWARD, o->precision);
    plan.text = task_score_memory(c->block_size, rows);
    check_memory(&plan, c, o, "scoring the task's validation split");
    GPT *model = load_model(o);
    c = &model->config;  // the checkpoint is closed
    TaskScore s;
    if (task_score(model, task, train.seed, rows, &s, err) != 0) die(EXIT_DATA, "%s: %s", o->checkpoint, err);
    if (s.scored.scored == 0)  // a block too short to hold an example's predictable part
        die(EXIT_DATA, "%s: the %ld rows of %d characters hold no %s to score", o->checkpoint, rows, c->block_size + 1,
            task_scored_part(task));
    printf("%s task (seed %" PRIu64 "), validation rows 0-%ld of %d characters%s%s%s%s: %s %.4f bits/char over %ld "
           "characters, %.1f%% right; every character %.4f bits/char\n", train.task, train.seed, rows - 1,
           c->block_size + 1, o->ablate ? ", heads knocked out " : "", o->ablate ? o->ablate : "",
           o->ablate_mean ? ", heads replaced by their mean " : "", o->ablate_mean ? o->ablate_mean : "",
           task_scored_part(task), s.scored.sum_nats / s.scored.scored / M_LN2, s.scored.scored,
           100.0 * s.correct / s.scored.scored, s.all.sum_nats / s.all.scored / M_LN2);
    stdout_flush_or_die();
}

// --circuits: the weights' circuits (generation/circuits_report.h), within the memory limit.
static void write_circuits(const Options *o) {
    const GPTConfig *c = &run.ck.config;
    GPTMemoryPlan plan;
    gpt_memory_plan(c, 1, GPT_PLAN_FORWARD, &plan);
    plan.generation = circuits_bytes(c);
    check_memory(&plan, c, o, "computing its circuits");
    GPT *model = load_model(o);
    char err[ERR_LEN];
    int rc = circuits_report(model, run.vocab.chars, o->seed, o->circuits, o->force, o->checkpoint, stdout, err);
    if (rc != 0) die(rc, "%s", err);
    stdout_flush_or_die();
    fprintf(stderr, "circuits of %d layers x %d heads written to %s\n", model->config.n_layer, model->config.n_head,
            o->circuits);
}

static void show_patching(void *context, long done, long total) {
    (void)total;
    progress_show(context, done);
}

// --patch CLEAN CORRUPTED: both texts as tokens (the clean one in run.prompt), of the same
// length within the block, patched (generation/patch_report.h), and with --attention the clean
// text recorded beside the patching.
static void patch_texts(const Options *o) {
    char err[ERR_LEN];
    int rc = prompt_encode(&run.prompt, &run.vocab, o->patch, strlen(o->patch), o->skip_unknown, "the clean text", err);
    if (rc == 0)
        rc = prompt_encode(&run.corrupted, &run.vocab, o->prompt, strlen(o->prompt), o->skip_unknown, "the corrupted text",
                           err);
    if (rc != 0) die(rc == -1 ? EXIT_USAGE : EXIT_DATA, "--patch: %s", err);
    const GPTConfig *c = &run.ck.config;
    long t = run.prompt.len;
    if (t != run.corrupted.len)
        die(EXIT_USAGE, "--patch: the clean text has %ld characters and the corrupted one %ld: patching replaces a "
            "position's activations by the other text's, so both need the same length", t, run.corrupted.len);
    if (t < 1 || t > c->block_size)
        die(EXIT_USAGE, "--patch: the texts have %ld characters: give 1 to %d (the block size)", t, c->block_size);
    GPTMemoryPlan plan;
    gpt_memory_plan(c, 1, GPT_PLAN_FORWARD, &plan);
    plan.generation = patching_bytes(c, (int)t) + (o->num_attention ? attention_record_memory(c, (int)t) : 0.0);
    check_memory(&plan, c, o, "patching two texts");
    GPT *model = load_model(o);
    if (gpt_alloc_activations(model, 1, err) != 0) die(EXIT_DATA, "%s", err);
    Patching patching;
    const GPTConfig *mc = &model->config;
    ProgressLine progress = progress_start("patching", "runs", (long)mc->n_layer * mc->n_head + (mc->n_layer + 1) * t);
    rc = patching_run(&patching, model, run.prompt.tokens, run.corrupted.tokens, (int)t, show_patching, &progress, err);
    progress_end(&progress);
    if (rc != 0) die(rc == -2 ? EXIT_USAGE : EXIT_DATA, "--patch: %s", err);
    patch_report_print(stdout, &patching, run.vocab.chars, run.prompt.tokens, run.corrupted.tokens);
    stdout_flush_or_die();
    if (o->num_attention) record_attention(model, run.prompt.tokens, t, &patching, o);
    patching_free(&patching);
}

// The threads and the kernels (kernels/kernels.h), and what bf16 costs on them when asked for.
static void start_kernels(const Options *o) {
    if (o->threads > 0) omp_set_num_threads(o->threads);
    char err[ERR_LEN];
    if (kernels_init(err) != 0) die(EXIT_USAGE, "%s", err);
    if (kernels_precision_note(o->precision, err, sizeof(err))) fprintf(stderr, "%s\n", err);
}

// --ablate LIST and --ablate-mean LIST (flag): (L, H) flags of each head of LIST, "L.H" items
// (layer L's head H, both counted from 0) separated by commas, or exit 2 naming the item that is
// not one of config's heads.
static unsigned char *parse_heads(const char *flag, const char *list, const GPTConfig *c) {
    unsigned char *flags = calloc((size_t)c->n_layer * c->n_head, 1);
    if (!flags) die(EXIT_DATA, "out of memory for %s's heads", flag);
    for (const char *item = list;; item++) {
        size_t len = strcspn(item, ",");
        char *end = (char *)item;
        long layer = -1, head = -1;
        if (isdigit((unsigned char)item[0])) layer = strtol(item, &end, 10);
        if (layer >= 0 && *end == '.' && isdigit((unsigned char)end[1])) head = strtol(end + 1, &end, 10);
        if (head < 0 || end != item + len)
            die(EXIT_USAGE, "%s %s: '%.*s' is not a head: a head is LAYER.HEAD, both counted from 0 (e.g. "
                "%s 1.3 or %s 0.0,1.2)", flag, list, (int)len, item, flag, flag);
        if (layer >= c->n_layer || head >= c->n_head)
            die(EXIT_USAGE, "%s %.*s: the model has no such head (layers 0 to %d, heads 0 to %d)", flag, (int)len,
                item, c->n_layer - 1, c->n_head - 1);
        flags[layer * c->n_head + head] = 1;
        item += len;
        if (!*item) break;
    }
    return flags;
}

// --ablate and --ablate-mean: the model's hooks knock out each head --ablate names (each once,
// however often it is named); --ablate-mean's heads are flagged, their edits added once their
// means are taken (take_head_means). Exit 2 for a head named by both.
static void knock_out_heads(const Options *o, const GPTConfig *c) {
    const int heads = c->n_layer * c->n_head;
    run.edits = calloc(2 * (size_t)heads, sizeof(ActivationEdit));
    if (!run.edits) die(EXIT_DATA, "out of memory for --ablate's heads");
    run.hooks = (ForwardHooks){.heads = run.edits};
    unsigned char *knocked = o->ablate ? parse_heads("--ablate", o->ablate, c) : NULL;
    if (o->ablate_mean) run.mean_ablated = parse_heads("--ablate-mean", o->ablate_mean, c);
    for (int i = 0; knocked && i < heads; i++) {
        if (knocked[i] && run.mean_ablated && run.mean_ablated[i])
            die(EXIT_USAGE, "head %d.%d is in --ablate and in --ablate-mean: it can be knocked out or replaced by its "
                "mean, not both", i / c->n_head, i % c->n_head);
        if (knocked[i]) run.edits[run.hooks.n_heads++] = (ActivationEdit){.layer = i / c->n_head, .head = i % c->n_head};
    }
    free(knocked);
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
    if (o->ablate || o->ablate_mean) knock_out_heads(o, c);
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
    format_bytes(bytes, needed, sizeof(needed));
    format_bytes(limit, limit_text, sizeof(limit_text));
    die(EXIT_USAGE, "--timeline %s: making its page needs %s of memory (a record of %s at a time, and its loss "
        "history), more than the %s %s", o->timeline, needed, probe, limit_text, source);
}

// --timeline RUN_DIR's probe.bin, in probe (n bytes), when the directory holds one (else exit 1).
static void timeline_probe_path(const Options *o, char *probe, size_t n) {
    snprintf(probe, n, "%s/probe.bin", o->timeline);
    struct stat st;
    if (stat(o->timeline, &st) != 0 || !S_ISDIR(st.st_mode))
        die(EXIT_DATA, "--timeline %s: %s", o->timeline, errno == ENOENT ? "no such directory" : "not a directory");
    if (access(probe, F_OK) != 0)
        die(EXIT_DATA, "--timeline %s: it holds no probe.bin (a run from before the timeline, or with --no-probe)",
            o->timeline);
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
    timeline_probe_path(o, probe, sizeof(probe));
    snprintf(log, sizeof(log), "%s/log.csv", o->timeline);
    snprintf(page, sizeof(page), "%s/%s", o->timeline, TIMELINE_FILE);
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

// --timeline RUN_DIR --csv FILE: the heads' scores and importance at every probed step of the
// run's probe.bin (format/probe_csv.h); an existing FILE needs --force.
static void timeline_csv(const Options *o) {
    char probe[4200], err[ERR_LEN];
    timeline_probe_path(o, probe, sizeof(probe));
    refuse_existing("--csv", o->csv, o->force);
    long rows;
    int torn;
    int rc = probe_csv_write(probe, o->csv, o->force, &rows, &torn, err);
    if (rc != 0) die(rc == ATOMIC_FILE_EXISTS ? EXIT_USAGE : EXIT_DATA, "--timeline %s", err);
    printf("%s: %ld rows, a head each at every probed step of %s%s\n", o->csv, rows, probe,
           torn ? " (up to a torn or damaged record)" : "");
    stdout_flush_or_die();
}

int main(int argc, char **argv) {
    platform_init(argc, argv);
    Options o;
    parse_options(argc, argv, &o);
    atexit(free_run);
    if (o.timeline) {
        fatal_signals_install(atomic_file_remove_open, 0);  // a killed run leaves no temporary file
        if (o.csv) timeline_csv(&o);
        else rebuild_timeline(&o);
        return 0;
    }
    prepare_outputs(&o);  // the files it will write can be written
    fatal_signals_install(atomic_file_remove_open, 0);  // a killed run leaves no temporary file
    start_kernels(&o);
    open_checkpoint(&o);
    if (o.num_exports) {
        export_models(&o);
        return 0;
    }
    if (o.score) {
        score_text(&o);
        return 0;
    }
    if (o.score_task) {
        score_task_split(&o);
        return 0;
    }
    if (o.circuits) {
        write_circuits(&o);
        return 0;
    }
    if (o.patch) {
        patch_texts(&o);
        return 0;
    }

    size_t prompt_bytes = read_prompt(&o);
    const Prompt *prompt = &run.prompt;
    if (prompt->len == 0 && o.max_new == 0 && !o.num_attention && !o.logits) return 0;  // nothing to do

    // the model, after its memory was found to fit; an empty prompt starts from a newline
    long start_len = prompt->len > 0 ? prompt->len : 1;
    check_generation_memory(&run.ck.config, &o, start_len + o.max_new,
                            (double)prompt_bytes + (double)prompt->len * sizeof(int));
    GPT *model = load_model(&o);
    int newline = vocab_index(&run.vocab, '\n');
    int start_token = newline >= 0 ? newline : 0;
    double secs = generate_samples(model, prompt->len > 0 ? prompt->tokens : &start_token, start_len, &o);
    report_speed(&o, secs);
    if (o.num_attention) record_attention(model, decoder_text(&run.decoder, 0), run.decoder.len, NULL, &o);
    if (o.logits) record_logits(model, decoder_text(&run.decoder, 0), run.decoder.len, &o);
    return 0;
}
