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
#include "generation/options.h"
#include "generation/outputs.h"
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

static const GenerateOptions default_options = {
    .max_new = 500, .sampler = {0.8f, 0, 1.0f}, .seed = 1337, .stride = 1, .num_samples = 1, .threads = 0,
    .use_cache = 1, .max_memory = 0.0, .precision = PRECISION_FP32, .encoding = ENCODING_UTF8,
};

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

// A job of ./generate: its options and what main (generate.c) opens, reads and loads for it,
// freed by the program whichever way it ends.
typedef struct Job {
    GenerateOptions o;
    Checkpoint ck;
    Vocab vocab;
    char *prompt_text;
    Prompt prompt;                // the prompt, or the text to score, or --patch's clean text
    GPT model;
    Decoder decoder;
    ActivationEdit *edits;        // (2 L H) the heads --ablate knocks out, then those --ablate-mean replaces
    ForwardHooks hooks;           // the model's hooks: those edits
    unsigned char *mean_ablated;  // (L, H) the heads --ablate-mean replaces by their mean, or NULL
    Prompt reference;             // the text the heads' means are taken over (generation/reference_text.h)
    char reference_name[1200];    // what it is, for messages and the pages; "" when there is none
    float *head_means;            // (L, H, hs) each head's mean output over it, or NULL
    Prompt corrupted;             // --patch's corrupted text
    // lent by the program (generate.c) from common/program.h, which library code does not use:
    // the memory the job may take, and where that figure comes from (0: unknown, no limit)
    double (*memory_limit)(const GenerateOptions *o, const char **source);
    // standard output flushed: 0, or -1 with err when a write to it failed (stdout_flush)
    int (*flush_stdout)(char err[ERR_LEN]);
} Job;

// The threads and the kernels (kernels/kernels.h), and what bf16 costs on them when asked for
// (a note on stderr). Returns 0, or EXIT_USAGE with err.
static int start_kernels(const GenerateOptions *o, char err[ERR_LEN]) {
    if (o->threads > 0) omp_set_num_threads(o->threads);
    if (kernels_init(err) != 0) return EXIT_USAGE;
    if (kernels_precision_note(o->precision, err, ERR_LEN)) fprintf(stderr, "%s\n", err);
    return 0;
}

// A plan that needs more memory than the limit: EXIT_USAGE with err; `what` says what for.
static int check_job_memory(const Job *j, const GPTMemoryPlan *plan, const GPTConfig *c, const char *what,
                            char err[ERR_LEN]) {
    const char *source;
    double limit = j->memory_limit(&j->o, &source);
    if (limit <= 0 || gpt_memory_total(plan) <= limit) return 0;
    char needed[512], limit_text[32];
    gpt_memory_describe(plan, needed, sizeof(needed));
    format_bytes(limit, limit_text, sizeof(limit_text));
    return error_status(err, EXIT_USAGE, "%s: %s with this checkpoint (block size %d, %d layers, %d heads) needs %s, "
                        "more than the %s %s", j->o.checkpoint, what, c->block_size, c->n_layer, c->n_head, needed,
                        limit_text, source);
}

// Prints a warning about the characters prompt_from_chars dropped from `what`.
static void prompt_warn_dropped(const Prompt *p, const char *what) {
    if (p->dropped == 0 && p->unknown == 0) return;
    char shown[5];
    prompt_printable_char(p->first_dropped, shown);
    long n = p->dropped ? p->dropped : p->unknown;
    fprintf(stderr, "%s: %s %ld character%s of %s not in the vocabulary%s, the first '%s' (U+%04" PRIX32
            ") at position %ld\n", program_name(), p->dropped ? "warning: dropped" : "note:", n,
            n == 1 ? "" : "s", what, p->dropped ? "" : n == 1 ? " takes its unknown token U+FFFD" :
            " take its unknown token U+FFFD", shown, p->first_dropped, p->first_dropped_at);
}

// --ablate LIST and --ablate-mean LIST (flag): into *flags (freed by the caller however this
// returns), the (L, H) flags of each head of LIST, "L.H" items (layer L's head H, both counted
// from 0) separated by commas. Returns 0; EXIT_USAGE with err naming the item that is not one
// of config's heads; EXIT_DATA with err when memory runs out.
static int parse_heads(const char *flag, const char *list, const GPTConfig *c, unsigned char **flags,
                       char err[ERR_LEN]) {
    *flags = calloc((size_t)c->n_layer * c->n_head, 1);
    if (!*flags) return error_status(err, EXIT_DATA, "out of memory for %s's heads", flag);
    for (const char *item = list;; item++) {
        size_t len = strcspn(item, ",");
        char *end = (char *)item;
        long layer = -1, head = -1;
        if (isdigit((unsigned char)item[0])) layer = strtol(item, &end, 10);
        if (layer >= 0 && *end == '.' && isdigit((unsigned char)end[1])) head = strtol(end + 1, &end, 10);
        if (head < 0 || end != item + len)
            return error_status(err, EXIT_USAGE, "%s %s: '%.*s' is not a head: a head is LAYER.HEAD, both counted "
                                "from 0 (e.g. %s 1.3 or %s 0.0,1.2)", flag, list, (int)len, item, flag, flag);
        if (layer >= c->n_layer || head >= c->n_head)
            return error_status(err, EXIT_USAGE, "%s %.*s: the model has no such head (layers 0 to %d, heads 0 to %d)",
                                flag, (int)len, item, c->n_layer - 1, c->n_head - 1);
        (*flags)[layer * c->n_head + head] = 1;
        item += len;
        if (!*item) break;
    }
    return 0;
}

// --ablate and --ablate-mean: the model's hooks knock out each head --ablate names (each once,
// however often it is named); --ablate-mean's heads are flagged, their edits added once their
// means are taken (take_head_means). Returns 0; EXIT_USAGE with err for a head named by both,
// or as parse_heads.
static int knock_out_heads(Job *j, char err[ERR_LEN]) {
    const GenerateOptions *o = &j->o;
    const GPTConfig *c = &j->ck.config;
    const int heads = c->n_layer * c->n_head;
    j->edits = calloc(2 * (size_t)heads, sizeof(ActivationEdit));
    if (!j->edits) return error_status(err, EXIT_DATA, "out of memory for --ablate's heads");
    j->hooks = (ForwardHooks){.heads = j->edits};
    unsigned char *knocked = NULL;
    int status = o->ablate ? parse_heads("--ablate", o->ablate, c, &knocked, err) : 0;
    if (status == 0 && o->ablate_mean) status = parse_heads("--ablate-mean", o->ablate_mean, c, &j->mean_ablated, err);
    for (int i = 0; status == 0 && knocked && i < heads; i++) {
        if (knocked[i] && j->mean_ablated && j->mean_ablated[i])
            status = error_status(err, EXIT_USAGE, "head %d.%d is in --ablate and in --ablate-mean: it can be knocked "
                                  "out or replaced by its mean, not both", i / c->n_head, i % c->n_head);
        else if (knocked[i])
            j->edits[j->hooks.n_heads++] = (ActivationEdit){.layer = i / c->n_head, .head = i % c->n_head};
    }
    free(knocked);
    return status;
}

// The reference text of the heads' means (generation/reference_text.h), read while the
// checkpoint is open, within what the memory limit leaves beside the model: for --ablate-mean
// (which fails when there is none: its status with err) and for the pages' importance by the
// mean (which are left without it, a note saying why).
static int read_reference(Job *j, char err[ERR_LEN]) {
    const GenerateOptions *o = &j->o;
    if (!o->ablate_mean && !o->num_attention) return 0;
    GPTMemoryPlan plan;
    gpt_memory_plan(&j->ck.config, 1, GPT_PLAN_FORWARD, &plan);
    const char *source;
    double limit = j->memory_limit(o, &source), held = gpt_memory_total(&plan) + (double)j->ck.file.file_len;
    size_t max_chars = limit > 0 ? corpus_max_chars(limit > held ? limit - held : 0) : CORPUS_NO_LIMIT;
    char why[ERR_LEN];
    int rc = reference_text_load(&j->ck, &j->vocab, o->mean_over, max_chars, &j->reference, j->reference_name,
                                 sizeof(j->reference_name), why);
    if (rc != 0 && (o->ablate_mean || o->mean_over))
        return error_status(err, rc, "%s%s", o->ablate_mean ? "--ablate-mean: " : "", why);
    if (rc != 0) {
        fprintf(stderr, "%s: note: the pages show no importance by the mean: %s\n", program_name(), why);
        j->reference_name[0] = '\0';
    }
    if (rc == 0 && o->mean_over) prompt_warn_dropped(&j->reference, o->mean_over);
    return 0;
}

// Each head's mean over the reference text (analysis/head_means.h), on at most
// MEANS_MAX_WINDOWS windows of it, and --ablate-mean's edits added to the model's hooks.
// Returns 0, or EXIT_DATA with err.
#define MEANS_MAX_WINDOWS 64
static int take_head_means(Job *j, char err[ERR_LEN]) {
    if (!j->reference_name[0]) return 0;
    GPT *model = &j->model;
    const GPTConfig *c = &model->config;
    long len = j->reference.len < (long)MEANS_MAX_WINDOWS * c->block_size ? j->reference.len
                                                                           : (long)MEANS_MAX_WINDOWS * c->block_size;
    j->head_means = malloc((size_t)c->n_layer * c->n_head * c->head_size * sizeof(float));
    if (!j->head_means) return error_status(err, EXIT_DATA, "out of memory for the heads' means");
    if (gpt_alloc_activations(model, 1, err) != 0 || head_means(model, j->reference.tokens, len, j->head_means, err) != 0)
        return EXIT_DATA;
    if (!j->mean_ablated) return 0;
    j->hooks.n_heads += head_means_edits(c, j->head_means, j->mean_ablated, j->edits + j->hooks.n_heads);
    model->hooks = &j->hooks;
    return 0;
}

// The checkpoint, checked whole before anything sized by its config is allocated, its
// vocabulary, and --ablate's and --ablate-mean's heads. Returns 0; EXIT_USAGE or EXIT_DATA
// with err.
static int open_checkpoint(Job *j, char err[ERR_LEN]) {
    const GenerateOptions *o = &j->o;
    const char *source;
    char why[ERR_LEN];
    int rc = checkpoint_open_within(o->checkpoint, j->memory_limit(o, &source), &j->ck, why);
    if (rc != 0)
        return error_status(err, rc == -2 ? EXIT_USAGE : EXIT_DATA, "%s%s%s", why, rc == -2 ? " " : "",
                            rc == -2 ? source : "");
    const GPTConfig *c = &j->ck.config;
    if (checkpoint_vocab(&j->ck, &j->vocab, err) != 0) return EXIT_DATA;
    if (o->stride > c->block_size)
        return error_status(err, EXIT_USAGE, "--stride %d is larger than the checkpoint's block size %d", o->stride,
                            c->block_size);
    return o->ablate || o->ablate_mean ? knock_out_heads(j, err) : 0;
}

// The model, in the precision asked for, with --ablate's heads knocked out and --ablate-mean's
// replaced by their means (the checkpoint is closed once it and the reference text are read).
// Returns 0; EXIT_USAGE or EXIT_DATA with err.
static int load_model(Job *j, char err[ERR_LEN]) {
    if (checkpoint_load_model(&j->ck, &j->model, 0, err) != 0) return EXIT_USAGE;
    int status = read_reference(j, err);
    if (status != 0) return status;
    checkpoint_close(&j->ck);
    if (gpt_set_precision(&j->model, j->o.precision, err) != 0) return EXIT_USAGE;
    j->model.hooks = j->hooks.n_heads ? &j->hooks : NULL;
    return take_head_means(j, err);
}

static void write_char(FILE *f, uint32_t cp) {
    char bytes[4];
    fwrite(bytes, 1, (size_t)utf8_encode(cp, bytes), f);
}

// The prompt (the command line's, or --prompt-file's): UTF-8 -> tokens, its size in bytes in
// *bytes. Returns 0; EXIT_USAGE (a character the model does not know) or EXIT_DATA with err.
static int read_prompt(Job *j, size_t *bytes, char err[ERR_LEN]) {
    const GenerateOptions *o = &j->o;
    *bytes = 0;
    if (o->prompt_file) {
        if (prompt_read_file(o->prompt_file, PROMPT_MAX_BYTES, &j->prompt_text, bytes, err) != 0) return EXIT_DATA;
    } else {
        j->prompt_text = strdup(o->prompt ? o->prompt : "");
        if (!j->prompt_text) return error_status(err, EXIT_DATA, "out of memory for the prompt");
        *bytes = strlen(j->prompt_text);
    }
    char what[1100];
    if (o->prompt_file)
        snprintf(what, sizeof(what), "prompt file %s", strcmp(o->prompt_file, "-") ? o->prompt_file : "stdin");
    else
        snprintf(what, sizeof(what), "the prompt");
    int rc = prompt_encode(&j->prompt, &j->vocab, j->prompt_text, *bytes, o->skip_unknown, what, err);
    if (rc != 0) return rc == -1 ? EXIT_USAGE : EXIT_DATA;
    prompt_warn_dropped(&j->prompt, "the prompt");
    return 0;
}

// Generation: the model without gradients, its activations for a step of every sample, the
// key/value cache and logits of every sample, their texts (text_len characters each), the
// prompt (prompt_bytes: its bytes and tokens) and, with --attention, what attention_record
// keeps, within the memory limit. Returns 0, or EXIT_USAGE with err.
static int check_generation_memory(const Job *j, long text_len, double prompt_bytes, char err[ERR_LEN]) {
    const GenerateOptions *o = &j->o;
    const GPTConfig *c = &j->ck.config;
    GPTMemoryPlan plan;
    gpt_memory_plan(c, o->num_samples, GPT_PLAN_GENERATION, &plan);
    gpt_memory_plan_precision(&plan, c, o->num_samples, GPT_PLAN_GENERATION, o->precision);
    plan.generation += (double)o->num_samples * text_len * sizeof(int);
    plan.text = prompt_bytes;
    int t = text_len < c->block_size ? (int)text_len : c->block_size;  // the window recorded
    char why[ERR_LEN];
    for (int i = 0; i < o->num_attention; i++)  // an image too large to write, before the model runs
        if (attention_check_size(o->attention[i], t, c->n_layer, c->n_head, why) != 0)
            return error_status(err, EXIT_USAGE, "--attention %s", why);
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
    return check_job_memory(j, &plan, c, what, err);
}

// The decoder (generation/decoder.h) set up for every sample from the start text (start_len
// tokens), and the prompt printed. Returns 0; EXIT_USAGE or EXIT_DATA with err.
static int start_samples(Job *j, const int *start, long start_len, char err[ERR_LEN]) {
    const GenerateOptions *o = &j->o;
    DecoderConfig config = {o->num_samples, o->stride, o->use_cache, o->sampler, o->seed};
    if (decoder_init(&j->decoder, &j->model, start, start_len, o->max_new, &config, err) != 0) return EXIT_USAGE;
    for (long i = 0; i < j->prompt.len; i++) write_char(stdout, j->vocab.chars[j->prompt.tokens[i]]);
    return j->flush_stdout(err) != 0 ? EXIT_DATA : 0;
}

// Decodes o->max_new characters of every sample, the first streaming to stdout as it is made;
// show(context, done, total) after each character. Returns 0, or EXIT_DATA with err.
static int decode_samples(Job *j, void (*show)(void *context, long done, long total), void *context,
                          char err[ERR_LEN]) {
    const GenerateOptions *o = &j->o;
    char why[ERR_LEN];
    for (long n = 0; n < o->max_new; n++) {
        const int *next = decoder_step(&j->decoder, why);
        if (!next) return error_status(err, EXIT_DATA, "%s: %s", o->checkpoint, why);
        write_char(stdout, j->vocab.chars[next[0]]);
        if (j->flush_stdout(err) != 0) return EXIT_DATA;
        show(context, n + 1, o->max_new);
    }
    return 0;
}

// After the first sample, each of the others, with its prompt. Returns 0, or EXIT_DATA with
// err.
static int print_other_samples(const Job *j, long start_len, char err[ERR_LEN]) {
    const GenerateOptions *o = &j->o;
    const Prompt *prompt = &j->prompt;
    const Decoder *d = &j->decoder;
    if (prompt->len > 0 || o->max_new > 0) printf("\n");
    for (int s = 1; s < o->num_samples; s++) {
        printf("--- sample %d of %d (seed %" PRIu64 ") ---\n", s + 1, o->num_samples, o->seed + (uint64_t)s);
        for (long i = 0; i < prompt->len; i++) write_char(stdout, j->vocab.chars[prompt->tokens[i]]);
        const int *text = decoder_text(d, s);
        for (long i = start_len; i < d->len; i++) write_char(stdout, j->vocab.chars[text[i]]);
        printf("\n");
    }
    return j->flush_stdout(err) != 0 ? EXIT_DATA : 0;  // the text ends before the messages on stderr
}

// "generated 500 characters in 0.412 s (1214 chars/s, precision fp32)" on stderr.
static void report_speed(const GenerateOptions *o, double secs) {
    if (o->max_new == 0) return;
    long chars = o->max_new * o->num_samples;
    char precision[96] = ", precision ";
    precision_describe(o->precision, precision + strlen(precision), sizeof(precision) - strlen(precision));
    fprintf(stderr, "generated %ld characters%s in %.3f s (%.0f chars/s%s%s)\n", chars,
            o->num_samples > 1 ? " in all samples" : "", secs, secs > 0 ? chars / secs : 0.0,
            o->use_cache ? "" : ", without the cache", precision);
}

// --attention: the weights of every layer and head over the text's last window, written to
// each file (generation/attention_record.h), a line on stderr for each.
// With --patch, the patching beside the clean text (patching NULL otherwise); the heads'
// importance by the mean when their means were taken. Returns 0; EXIT_USAGE or EXIT_DATA
// with err.
static int record_attention(Job *j, const int *text, long len, const Patching *patching, char err[ERR_LEN]) {
    const GenerateOptions *o = &j->o;
    AttentionExtras extras = {.head_means = j->head_means, .means_over = j->reference_name, .patching = patching,
                             .corrupted = j->corrupted.tokens};
    int written, status = attention_record(&j->model, &j->vocab, text, len, &extras, o->attention, o->num_attention,
                                           o->force, &written, err);
    const GPTConfig *c = &j->model.config;
    int t = len < c->block_size ? (int)len : c->block_size;
    for (int i = 0; i < written; i++)
        fprintf(stderr, "attention of %d layers x %d heads over %d characters written to %s\n", c->n_layer, c->n_head,
                t, o->attention[i]);
    return status;
}

// --logits: the logits over the text's last window (generation/logits_record.h), and a line on
// stderr. Returns 0; EXIT_USAGE or EXIT_DATA with err.
static int record_logits(Job *j, const int *text, long len, char err[ERR_LEN]) {
    const GenerateOptions *o = &j->o;
    int status = logits_record(&j->model, &j->vocab, text, len, o->logits, o->force, err);
    if (status != 0) return status;
    const GPTConfig *c = &j->model.config;
    fprintf(stderr, "logits of %ld characters written to %s\n", len < c->block_size ? len : (long)c->block_size,
            o->logits);
    return 0;
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

// The scored text's name for messages: its path, or standard input's name.
static const char *scored_text_name(const GenerateOptions *o) {
    return strcmp(o->score, "-") == 0 ? TEXT_STDIN_NAME : o->score;
}

// --score FILE: the text read, within what the memory limit leaves beside the model's scoring,
// into j->prompt as tokens (at least 2). Returns 0; EXIT_USAGE or EXIT_DATA with err.
static int read_text_to_score(Job *j, char err[ERR_LEN]) {
    const GenerateOptions *o = &j->o;
    const GPTConfig *c = &j->ck.config;
    const char *name = scored_text_name(o);

    // the model's forward over SCORE_BATCH windows and their inputs and targets must fit; the
    // text may take what is left beside them and the checkpoint being read, 4 bytes a character
    // (its code points, then its tokens in their place), and is refused while it is read when
    // it holds more
    GPTMemoryPlan plan;
    gpt_memory_plan(c, SCORE_BATCH, GPT_PLAN_FORWARD, &plan);
    gpt_memory_plan_precision(&plan, c, SCORE_BATCH, GPT_PLAN_FORWARD, o->precision);
    plan.scratch += 2.0 * SCORE_BATCH * c->block_size * sizeof(int);
    if (score_rolls(c, o->stride, o->use_cache)) plan.generation = gpt_generation_floats(c, 1) * sizeof(float);
    int status = check_job_memory(j, &plan, c, "scoring a text", err);
    if (status != 0) return status;
    const char *source;
    double limit = j->memory_limit(o, &source);
    double held = gpt_memory_total(&plan) + (double)j->ck.file.file_len;
    size_t max_chars = limit > 0 ? corpus_max_chars(limit - held) : CORPUS_NO_LIMIT;
    Corpus scored;
    char pipe_into[1100], why[ERR_LEN];
    snprintf(pipe_into, sizeof(pipe_into), "%s %s --score -", program_invocation(), o->checkpoint);
    TextOptions read_as = {0, o->encoding, "scored text", pipe_into, NULL};
    int rc = strcmp(o->score, "-") == 0 ? corpus_read_as(stdin, name, &read_as, max_chars, &scored, why)
                                        : corpus_load_as(o->score, &read_as, max_chars, &scored, why);
    if (rc == -2) {
        char limit_text[32], model_text[32];
        format_bytes(limit, limit_text, sizeof(limit_text));
        format_bytes(held, model_text, sizeof(model_text));
        return error_status(err, EXIT_USAGE, "%s: scoring it, at 4 bytes a character, needs more than the %s %s (the "
                            "model and its checkpoint take %s of it)", why, limit_text, source, model_text);
    }
    if (rc != 0) return error_status(err, EXIT_DATA, "%s", why);
    // the text's memory becomes the prompt's tokens
    rc = prompt_from_chars(&j->prompt, &j->vocab, scored.text, (long)scored.len, o->skip_unknown, name, err);
    if (rc != 0) return EXIT_USAGE;
    prompt_warn_dropped(&j->prompt, name);
    const Prompt *text = &j->prompt;
    if (text->len < 2)
        return error_status(err, EXIT_DATA, "%s: %ld character%s to read: scoring needs at least 2 (the first is "
                            "context only)", name, text->len, text->len == 1 ? "" : "s");
    return 0;
}

// --score: the text scored with the model, its progress on stderr, --surprisal's CSV written,
// and the mean loss printed. Returns 0; EXIT_USAGE or EXIT_DATA with err.
static int score_read_text(Job *j, char err[ERR_LEN]) {
    const GenerateOptions *o = &j->o;
    GPT *model = &j->model;
    const GPTConfig *c = &model->config;
    const Prompt *text = &j->prompt;
    const char *name = scored_text_name(o);
    SurprisalCsv csv;
    ScoreOutput out = {.csv = o->surprisal ? &csv : NULL, .start = now_seconds()};
    double fastest = score_work(c, text->len, c->block_size, 0) / score_work(c, text->len, o->stride, o->use_cache);
    int terminal = platform_is_terminal(STDERR_FILENO);
    score_progress_init(&out.progress, text->len - 1, terminal, omp_get_max_threads(), c->block_size, fastest);
    const ScoreReport report = {on_scored, on_score_progress, &out};
    if (o->surprisal && surprisal_csv_open(&csv, o->surprisal, j->vocab.chars, c->vocab_size, err) != 0)
        return EXIT_DATA;
    Score score;
    char why[ERR_LEN];
    int rc = score_tokens(model, text->tokens, text->len, o->stride, o->use_cache, &report, &score, why);
    if (terminal && out.progress.line_seconds >= 0.0) fprintf(stderr, "\r\033[K");
    if (rc != 0) return error_status(err, EXIT_DATA, "%s: %s", name, why);
    if (o->surprisal && (rc = surprisal_csv_commit(&csv, o->force, err)) != 0)
        return rc == ATOMIC_FILE_EXISTS ? EXIT_USAGE : EXIT_DATA;
    double nats = score.sum_nats / score.scored;
    printf("%s: %ld characters scored (block size %d, stride %d%s%s%s%s%s): %.6f nats/char, %.6f bits/char, perplexity "
           "%.4f\n", name, score.scored, c->block_size, o->stride,
           score_rolls(c, o->stride, o->use_cache) ? ", rolling cache" : "", o->ablate ? ", heads knocked out " : "",
           o->ablate ? o->ablate : "", o->ablate_mean ? ", heads replaced by their mean " : "",
           o->ablate_mean ? o->ablate_mean : "", nats, nats / M_LN2, exp(nats));
    if (j->flush_stdout(err) != 0) return EXIT_DATA;
    if (o->surprisal) fprintf(stderr, "surprisal of %ld characters written to %s\n", score.scored, o->surprisal);
    return 0;
}

// The validation split of the task a checkpoint's run trained on, as --score-task scores it.
typedef struct {
    const char *name;  // the task's name; "" for a run on a text
    Task task;         // set by check_scored_task
    uint64_t seed;     // the run's seed, which made the split
    long rows;         // the rows scored
} ScoredTask;

// --score-task: the checkpoint's run trained on a task, whose vocabulary is the model's, and
// the scoring's memory within the limit. Returns 0; EXIT_USAGE or EXIT_DATA with err.
static int check_scored_task(const Job *j, ScoredTask *st, char err[ERR_LEN]) {
    const char *checkpoint = j->o.checkpoint;
    if (!st->name[0])
        return error_status(err, EXIT_USAGE, "%s was trained on a text, not a --task: --score FILE scores a text",
                            checkpoint);
    st->task = (Task)task_find(st->name);
    const char *alphabet = task_alphabet(st->task);
    const Vocab *vocab = &j->vocab;
    int same = vocab->size == (int)strlen(alphabet) && !vocab->unknown;
    for (int i = 0; same && i < vocab->size; i++) same = vocab->chars[i] == (uint32_t)(unsigned char)alphabet[i];
    if (!same)
        return error_status(err, EXIT_DATA, "%s: its vocabulary is not the %s task's %zu characters (a checkpoint of "
                            "another version of chargpt?)", checkpoint, st->name, strlen(alphabet));
    const GPTConfig *c = &j->ck.config;
    GPTMemoryPlan plan;
    gpt_memory_plan(c, SCORE_BATCH, GPT_PLAN_FORWARD, &plan);
    gpt_memory_plan_precision(&plan, c, SCORE_BATCH, GPT_PLAN_FORWARD, j->o.precision);
    plan.text = task_score_memory(c->block_size, st->rows);
    return check_job_memory(j, &plan, c, "scoring the task's validation split", err);
}

// --score-task: the split's rows scored with the model, as the run's evaluations read them,
// and printed. Returns 0, or EXIT_DATA with err.
static int score_task_rows(Job *j, const ScoredTask *st, char err[ERR_LEN]) {
    const GenerateOptions *o = &j->o;
    const GPTConfig *c = &j->model.config;
    TaskScore s;
    char why[ERR_LEN];
    if (task_score(&j->model, st->task, st->seed, st->rows, &s, why) != 0)
        return error_status(err, EXIT_DATA, "%s: %s", o->checkpoint, why);
    if (s.scored.scored == 0)  // a block too short to hold an example's predictable part
        return error_status(err, EXIT_DATA, "%s: the %ld rows of %d characters hold no %s to score", o->checkpoint,
                            st->rows, c->block_size + 1, task_scored_part(st->task));
    printf("%s task (seed %" PRIu64 "), validation rows 0-%ld of %d characters%s%s%s%s: %s %.4f bits/char over %ld "
           "characters, %.1f%% right; every character %.4f bits/char\n", st->name, st->seed, st->rows - 1,
           c->block_size + 1, o->ablate ? ", heads knocked out " : "", o->ablate ? o->ablate : "",
           o->ablate_mean ? ", heads replaced by their mean " : "", o->ablate_mean ? o->ablate_mean : "",
           task_scored_part(st->task), s.scored.sum_nats / s.scored.scored / M_LN2, s.scored.scored,
           100.0 * s.correct / s.scored.scored, s.all.sum_nats / s.all.scored / M_LN2);
    return j->flush_stdout(err) != 0 ? EXIT_DATA : 0;
}

// What --export reads from the checkpoint before it is closed, and the memory it needs.
typedef struct {
    char name[256];           // the model's name in the files (export_model_name)
    int has_optimizer;        // the checkpoint holds AdamW's moments
    double checkpoint_bytes;  // the checkpoint's size
    double parameters;        // the model's parameters' bytes
} ExportPlan;

// --export: every file's format carries the checkpoint's model, and the parameters fit in
// memory beside the checkpoint and the largest file's own lists; *plan what writing them
// needs from the checkpoint. Returns 0; EXIT_USAGE or EXIT_DATA with err.
static int plan_exports(const Job *j, ExportPlan *plan, char err[ERR_LEN]) {
    const GenerateOptions *o = &j->o;
    const GPTConfig *c = &j->ck.config;
    char why[ERR_LEN];
    for (int i = 0; i < o->num_exports; i++)
        if (export_check(o->exports[i], c, why) != 0) return error_status(err, EXIT_DATA, "%s: %s", o->checkpoint, why);
    // the parameters, the checkpoint they are read from, and the largest file's own lists
    GPTMemoryPlan memory;
    gpt_memory_plan(c, 1, GPT_PLAN_FORWARD, &memory);
    plan->parameters = memory.parameters;
    plan->checkpoint_bytes = (double)j->ck.file.file_len;
    double file_bytes = 0.0;
    for (int i = 0; i < o->num_exports; i++) file_bytes = fmax(file_bytes, export_memory(o->exports[i], c));
    const char *source;
    double limit = j->memory_limit(o, &source), need = plan->parameters + plan->checkpoint_bytes + file_bytes;
    if (limit > 0 && need > limit) {
        char text[4][32];
        double parts[4] = {need, plan->parameters, plan->checkpoint_bytes, limit};
        for (int i = 0; i < 4; i++) format_bytes(parts[i], text[i], sizeof(text[i]));
        return error_status(err, EXIT_USAGE, "%s: exporting the model needs %s (its parameters %s beside the "
                            "checkpoint's %s), more than the %s %s", o->checkpoint, text[0], text[1], text[2], text[3],
                            source);
    }
    export_model_name(&j->ck, plan->name, sizeof(plan->name));
    plan->has_optimizer = j->ck.has_optimizer;
    return 0;
}

// --export: the model written to each file (generation/export.h), a line on stdout for each,
// and the checkpoint's size beside theirs. Returns 0; EXIT_USAGE or EXIT_DATA with err.
static int write_exports(const Job *j, const ExportPlan *plan, char err[ERR_LEN]) {
    const GenerateOptions *o = &j->o;
    char written[ERR_LEN];
    for (int i = 0; i < o->num_exports; i++) {
        int rc = export_model(o->exports[i], &j->model, &j->vocab, plan->name, o->force, written, err);
        if (rc != 0) return rc == ATOMIC_FILE_EXISTS ? EXIT_USAGE : EXIT_DATA;
        printf("%s\n", written);
    }
    char size[32], params[32];
    format_bytes(plan->checkpoint_bytes, size, sizeof(size));
    format_bytes(plan->parameters, params, sizeof(params));
    printf("from %s: %s, its parameters %s%s\n", o->checkpoint, size, params,
           plan->has_optimizer ? " (the rest: AdamW's moments and the header)" : "");
    return j->flush_stdout(err) != 0 ? EXIT_DATA : 0;
}

// --circuits: what computing the weights' circuits takes, within the memory limit. Returns 0,
// or EXIT_USAGE with err.
static int check_circuits_memory(const Job *j, char err[ERR_LEN]) {
    const GPTConfig *c = &j->ck.config;
    GPTMemoryPlan plan;
    gpt_memory_plan(c, 1, GPT_PLAN_FORWARD, &plan);
    plan.generation = circuits_bytes(c);
    return check_job_memory(j, &plan, c, "computing its circuits", err);
}

// --circuits: the weights' circuits written and summed up (circuits_report), and a line on
// stderr. Returns 0; EXIT_USAGE or EXIT_DATA with err.
static int write_circuits(const Job *j, char err[ERR_LEN]) {
    const GenerateOptions *o = &j->o;
    int rc = circuits_report(&j->model, j->vocab.chars, o->seed, o->circuits, o->force, o->checkpoint, stdout, err);
    if (rc != 0) return rc;
    if (j->flush_stdout(err) != 0) return EXIT_DATA;
    fprintf(stderr, "circuits of %d layers x %d heads written to %s\n", j->model.config.n_layer, j->model.config.n_head,
            o->circuits);
    return 0;
}

// --patch CLEAN CORRUPTED: both texts as tokens (the clean one in j->prompt, the corrupted one
// in j->corrupted), of the same length within the block, and the memory patching them takes
// (with --attention, recording the clean one too) within the limit. Returns 0; EXIT_USAGE or
// EXIT_DATA with err.
static int read_patch_texts(Job *j, char err[ERR_LEN]) {
    const GenerateOptions *o = &j->o;
    char why[ERR_LEN];
    int rc = prompt_encode(&j->prompt, &j->vocab, o->patch, strlen(o->patch), o->skip_unknown, "the clean text", why);
    if (rc == 0)
        rc = prompt_encode(&j->corrupted, &j->vocab, o->prompt, strlen(o->prompt), o->skip_unknown, "the corrupted text",
                           why);
    if (rc != 0) return error_status(err, rc == -1 ? EXIT_USAGE : EXIT_DATA, "--patch: %s", why);
    const GPTConfig *c = &j->ck.config;
    long t = j->prompt.len;
    if (t != j->corrupted.len)
        return error_status(err, EXIT_USAGE, "--patch: the clean text has %ld characters and the corrupted one %ld: "
                            "patching replaces a position's activations by the other text's, so both need the same "
                            "length", t, j->corrupted.len);
    if (t < 1 || t > c->block_size)
        return error_status(err, EXIT_USAGE, "--patch: the texts have %ld characters: give 1 to %d (the block size)", t,
                            c->block_size);
    GPTMemoryPlan plan;
    gpt_memory_plan(c, 1, GPT_PLAN_FORWARD, &plan);
    plan.generation = patching_bytes(c, (int)t) + (o->num_attention ? attention_record_memory(c, (int)t) : 0.0);
    return check_job_memory(j, &plan, c, "patching two texts", err);
}

// The patching runs of the two texts: each head's output, then the residual stream at each
// position, taken from the clean run.
static long patching_runs(const Job *j) {
    const GPTConfig *c = &j->model.config;
    return (long)c->n_layer * c->n_head + (c->n_layer + 1) * j->prompt.len;
}

// --patch: the model's activations for one text, and the corrupted text run with each of the
// clean run's activations in turn (analysis/patching.h); show(context, done, total) as they go.
// Returns 0; EXIT_USAGE (the two texts' answers are the same) or EXIT_DATA with err.
static int patch_texts(Job *j, Patching *patching, PatchingProgress show, void *context, char err[ERR_LEN]) {
    char why[ERR_LEN];
    if (gpt_alloc_activations(&j->model, 1, err) != 0) return EXIT_DATA;
    int rc = patching_run(patching, &j->model, j->prompt.tokens, j->corrupted.tokens, (int)j->prompt.len, show, context,
                          why);
    if (rc != 0) return error_status(err, rc == -2 ? EXIT_USAGE : EXIT_DATA, "--patch: %s", why);
    return 0;
}

// --patch: the patching's table (generation/patch_report.h) on stdout. Returns 0, or EXIT_DATA
// with err.
static int print_patching(const Job *j, const Patching *patching, char err[ERR_LEN]) {
    patch_report_print(stdout, patching, j->vocab.chars, j->prompt.tokens, j->corrupted.tokens);
    return j->flush_stdout(err) != 0 ? EXIT_DATA : 0;
}

// --timeline: the page's memory (viewer/timeline.h) and the loss history's (at most
// LOSS_HISTORY_MAX_POINTS points, training/run_log.h) within the memory limit. Returns 0;
// EXIT_USAGE or EXIT_DATA with err.
static int check_timeline_memory(const Job *j, const char *probe, char err[ERR_LEN]) {
    char why[ERR_LEN];
    double bytes;
    if (timeline_memory(probe, &bytes, why) != 0) return error_status(err, EXIT_DATA, "--timeline %s", why);
    bytes += LOSS_HISTORY_MAX_POINTS * sizeof(LossPoint);
    const char *source;
    double limit = j->memory_limit(&j->o, &source);
    if (limit <= 0 || bytes <= limit) return 0;
    char needed[32], limit_text[32];
    format_bytes(bytes, needed, sizeof(needed));
    format_bytes(limit, limit_text, sizeof(limit_text));
    return error_status(err, EXIT_USAGE, "--timeline %s: making its page needs %s of memory (a record of %s at a time, "
                        "and its loss history), more than the %s %s", j->o.timeline, needed, probe, limit_text, source);
}

// --timeline RUN_DIR's probe.bin, in probe (n bytes), when the directory holds one (else
// EXIT_DATA with err).
static int timeline_probe_path(const GenerateOptions *o, char *probe, size_t n, char err[ERR_LEN]) {
    snprintf(probe, n, "%s/probe.bin", o->timeline);
    struct stat st;
    if (stat(o->timeline, &st) != 0 || !S_ISDIR(st.st_mode))
        return error_status(err, EXIT_DATA, "--timeline %s: %s", o->timeline,
                            errno == ENOENT ? "no such directory" : "not a directory");
    if (access(probe, F_OK) != 0)
        return error_status(err, EXIT_DATA, "--timeline %s: it holds no probe.bin (a run from before the timeline, or "
                            "with --no-probe)", o->timeline);
    return 0;
}

// --timeline's summary: what the page holds, and what it left out of probe.bin, named as
// --resume names it. Returns 0, or EXIT_DATA with err when stdout cannot be written.
static int say_what_the_page_holds(const Job *j, const char *page, const char *probe, const TimelineSummary *s,
                                   char err[ERR_LEN]) {
    printf("%s: %ld probed step%s of %ld in full, %ld of %ld records%s\n", page, s->kept_whole,
           s->kept_whole == 1 ? "" : "s", s->whole, s->kept, s->records,
           s->torn_bytes && !s->damage ? "; a torn record at the end of probe.bin left out" : "");
    if (j->flush_stdout(err) != 0) return EXIT_DATA;
    if (s->damage)
        fprintf(stderr, "%s: warning: %s: record %ld (at byte %llu) %s: the page holds the %ld records before it and "
                "leaves out the %llu bytes from there (./train --resume moves such a file aside)\n", program_name(),
                probe, s->records + 1, (unsigned long long)s->damaged_at, s->damage, s->records,
                (unsigned long long)s->torn_bytes);
    return 0;
}

// --timeline RUN_DIR: the run's timeline.html made anew from its probe.bin and log.csv, as
// ./train writes it at each evaluation (viewer/timeline.h), while no run holds the directory's
// lock (training/out_dir.h; it is held meanwhile, in *lock), with a log.csv of the same run
// (the figures of its rows at the probed steps: training/run_log.h); an existing page needs
// --force. Returns 0; EXIT_USAGE or EXIT_DATA with err.
static int rebuild_timeline(const Job *j, OutDirLock *lock, char err[ERR_LEN]) {
    const GenerateOptions *o = &j->o;
    char probe[4200], log[4200], page[4200], why[ERR_LEN], title[4300];
    int status = timeline_probe_path(o, probe, sizeof(probe), err);
    if (status != 0) return status;
    snprintf(log, sizeof(log), "%s/log.csv", o->timeline);
    snprintf(page, sizeof(page), "%s/%s", o->timeline, TIMELINE_FILE);
    status = out_dir_lock_if_there(o->timeline, lock, why);
    if (status != 0)
        return error_status(err, status, "--timeline %s%s", why,
                            status == EXIT_USAGE ? " (the run rewrites its timeline.html itself)" : "");
    if (why[0]) fprintf(stderr, "%s: warning: %s\n", program_name(), why);
    if (refuse_existing("--timeline", page, o->force, err) != 0) return EXIT_USAGE;
    status = check_timeline_memory(j, probe, err);
    if (status != 0) return status;
    int removed;
    if (output_prepare(page, &removed, why) != 0) return error_status(err, EXIT_DATA, "--timeline %s", why);
    LossHistory losses = {0};
    if (loss_history_read(&losses, log, err) != 0) {
        loss_history_free(&losses);
        return EXIT_DATA;
    }
    int rc = loss_history_check_probe(&losses, probe, why);
    if (rc != 0) {
        loss_history_free(&losses);
        if (rc < 0) return error_status(err, EXIT_DATA, "%s", why);
        return error_status(err, EXIT_DATA, "--timeline %s: %s is not the log of the run probe.bin probed: %s (a "
                            "log.csv of another run?); move it away to make the page without its loss curves",
                            o->timeline, log, why);
    }
    snprintf(title, sizeof(title), "chargpt: %s", o->timeline);
    TimelineSummary s;
    rc = timeline_write(page, probe, losses.points, losses.n, title, TIMELINE_MAX_RECORD_BYTES, o->force, &s, err);
    loss_history_free(&losses);
    if (rc != 0) return rc == ATOMIC_FILE_EXISTS ? EXIT_USAGE : EXIT_DATA;
    return say_what_the_page_holds(j, page, probe, &s, err);
}

// --timeline RUN_DIR --csv FILE: the heads' scores and importance at every probed step of the
// run's probe.bin (format/probe_csv.h); an existing FILE needs --force. Returns 0; EXIT_USAGE
// or EXIT_DATA with err.
static int timeline_csv(const Job *j, char err[ERR_LEN]) {
    const GenerateOptions *o = &j->o;
    char probe[4200], why[ERR_LEN];
    int status = timeline_probe_path(o, probe, sizeof(probe), err);
    if (status != 0) return status;
    if (refuse_existing("--csv", o->csv, o->force, err) != 0) return EXIT_USAGE;
    long rows;
    int torn;
    int rc = probe_csv_write(probe, o->csv, o->force, &rows, &torn, why);
    if (rc != 0) return error_status(err, rc == ATOMIC_FILE_EXISTS ? EXIT_USAGE : EXIT_DATA, "--timeline %s", why);
    printf("%s: %ld rows, a head each at every probed step of %s%s\n", o->csv, rows, probe,
           torn ? " (up to a torn or damaged record)" : "");
    return j->flush_stdout(err) != 0 ? EXIT_DATA : 0;
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

// Decodes o->max_new characters of every sample from the start text: the first sample streams
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
