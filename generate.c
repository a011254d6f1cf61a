// ./generate: samples text from a checkpoint written by ./train, streaming it to stdout, and
// optionally records the attention weights of every layer and head for a viewer.
// Exit status: 0 done, 1 bad checkpoint or I/O, 2 bad usage or prompt.
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "data/utf8.h"
#include "data/vocab.h"
#include "format/checkpoint.h"
#include "model/gpt.h"
#include "generation/inference.h"
#include "generation/sampler.h"
#include "viewer/attention_export.h"

#define EXIT_DATA 1
#define EXIT_USAGE 2

typedef struct {
    const char *checkpoint;
    const char *prompt;       // from the command line, or NULL
    const char *prompt_file;  // "-" for stdin, or NULL
    const char *attention;    // output path, or NULL
    long max_new;
    SamplerConfig sampler;
    uint64_t seed;
    int threads;
    int use_cache;
    int skip_unknown;
} Options;

static const Options default_options = {
    .max_new = 500, .sampler = {0.8f, 0, 1.0f}, .seed = 1337, .threads = 0, .use_cache = 1,
};

static void usage(FILE *f) {
    const Options *d = &default_options;
    fprintf(f,
            "usage: %s CKPT [PROMPT] [options]\n"
            "Streams text sampled from a checkpoint written by ./train.\n\n"
            "  -n, --max-new N        characters to generate; 0 only reads the prompt (default %ld)\n"
            "  -t, --temperature F    sampling temperature; 0 = greedy argmax (default %g)\n"
            "  -k, --top-k N          sample among the N most likely; 0 = off (default %d)\n"
            "  -p, --top-p F          nucleus sampling: smallest set with mass F; 1 = off (default %g)\n"
            "  -s, --seed N           random seed; same seed and options give the same text (default %" PRIu64 ")\n"
            "  -f, --prompt-file FILE read the prompt from FILE ('-' for stdin)\n"
            "      --skip-unknown     drop prompt characters the model never saw (default: error)\n"
            "      --no-cache         recompute the whole window for every character (for checking)\n"
            "      --attention FILE   record the attention weights of every layer and head over the\n"
            "                         processed text (its last block_size characters): .json, .csv,\n"
            "                         .png or .html (an interactive viewer)\n"
            "      --threads N        OpenMP threads; 0 = all cores (default %d)\n"
            "  -h, --help             show this help\n"
            "An empty prompt starts from a newline (if the vocabulary has one). Once the text fills\n"
            "block_size characters, the window moves on by half a block and is prefilled again.\n",
            program_invocation_name, d->max_new, d->sampler.temperature, d->sampler.top_k, d->sampler.top_p, d->seed, d->threads);
}

static void die(int status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fflush(stdout);
    fprintf(stderr, "%s: ", program_invocation_short_name);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(status);
}

static double parse_number(const char *flag, const char *s, double min, double max) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v)) die(EXIT_USAGE, "%s expects a number, got '%s' (see --help)", flag, s);
    if (v < min || v > max) die(EXIT_USAGE, "%s must be in [%g, %g], got %s", flag, min, max, s);
    return v;
}

static long parse_whole(const char *flag, const char *s, long min, long max) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end) die(EXIT_USAGE, "%s expects a whole number, got '%s' (see --help)", flag, s);
    if (v < min || v > max) die(EXIT_USAGE, "%s must be between %ld and %ld, got %ld", flag, min, max, v);
    return v;
}

enum { OPT_NO_CACHE = 256, OPT_ATTENTION, OPT_THREADS, OPT_SKIP_UNKNOWN };

static void parse_options(int argc, char **argv, Options *o) {
    static const struct option long_options[] = {
        {"max-new", required_argument, 0, 'n'},     {"temperature", required_argument, 0, 't'},
        {"top-k", required_argument, 0, 'k'},       {"top-p", required_argument, 0, 'p'},
        {"seed", required_argument, 0, 's'},        {"prompt-file", required_argument, 0, 'f'},
        {"no-cache", no_argument, 0, OPT_NO_CACHE}, {"attention", required_argument, 0, OPT_ATTENTION},
        {"threads", required_argument, 0, OPT_THREADS}, {"skip-unknown", no_argument, 0, OPT_SKIP_UNKNOWN},
        {"help", no_argument, 0, 'h'},              {0, 0, 0, 0},
    };
    *o = default_options;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":n:t:k:p:s:f:h", long_options, NULL)) != -1) {
        const char *flag = argv[optind - 1];
        switch (c) {
            case 'n': o->max_new = parse_whole("--max-new", optarg, 0, 1L << 40); break;
            case 't': o->sampler.temperature = (float)parse_number("--temperature", optarg, 0.0, 100.0); break;
            case 'k': o->sampler.top_k = (int)parse_whole("--top-k", optarg, 0, 1 << 30); break;
            case 'p': {
                double p = parse_number("--top-p", optarg, 0.0, 1.0);
                if (p <= 0.0) die(EXIT_USAGE, "--top-p must be above 0, got %s", optarg);
                o->sampler.top_p = (float)p;
                break;
            }
            case 's': o->seed = (uint64_t)parse_whole("--seed", optarg, 0, LONG_MAX); break;
            case 'f': o->prompt_file = optarg; break;
            case OPT_NO_CACHE: o->use_cache = 0; break;
            case OPT_ATTENTION: o->attention = optarg; break;
            case OPT_THREADS: o->threads = (int)parse_whole("--threads", optarg, 0, 4096); break;
            case OPT_SKIP_UNKNOWN: o->skip_unknown = 1; break;
            case 'h': usage(stdout); exit(0);
            case ':': die(EXIT_USAGE, "option '%s' needs a value (see --help)", flag); break;
            default:
                if (optopt) die(EXIT_USAGE, "unknown option '-%c' (see --help)", optopt);
                die(EXIT_USAGE, "unknown option '%s' (see --help)", flag);
        }
    }
    if (optind >= argc)
        die(EXIT_USAGE, "no checkpoint given (usage: %s CKPT [PROMPT]; see --help)", program_invocation_name);
    o->checkpoint = argv[optind++];
    if (optind < argc) o->prompt = argv[optind++];
    if (optind < argc) die(EXIT_USAGE, "unexpected argument '%s' (quote a prompt with spaces)", argv[optind]);
    if (o->prompt && o->prompt_file) die(EXIT_USAGE, "give a prompt or --prompt-file, not both");
    char err[ERR_LEN];
    if (o->attention && attention_check_path(o->attention, err) != 0) die(EXIT_USAGE, "%s", err);
}

// Reads the whole prompt file (or stdin) into a NUL-terminated buffer; *len its size.
static char *read_prompt_file(const char *path, size_t *len) {
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f) die(EXIT_DATA, "cannot open prompt file %s: %s", path, strerror(errno));
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (n + 1 == cap) buf = realloc(buf, cap *= 2);
    }
    if (!buf) die(EXIT_DATA, "out of memory reading %s", path);
    if (ferror(f)) die(EXIT_DATA, "cannot read prompt file %s: %s", path, strerror(errno));
    if (f != stdin) fclose(f);
    buf[n] = '\0';
    *len = n;
    return buf;
}

static void write_char(FILE *f, uint32_t cp) {
    char bytes[4];
    fwrite(bytes, 1, (size_t)utf8_encode(cp, bytes), f);
}

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

// Runs the last window of text through the training forward pass and writes the attention
// weights of every layer and head, (L, H, t, t), and what the model predicted at each
// position, in the format the file's extension names.
static void record_attention(GPT *model, const Vocab *vocab, const int *text, long len, const char *path) {
    const GPTConfig *c = &model->config;
    int t = len < c->block_size ? (int)len : c->block_size;
    const int *window = text + len - t;
    model->training = 0;
    gpt_forward(model, window, NULL, 1, t);
    size_t per_layer = (size_t)c->n_head * t * t;
    float *att = malloc((size_t)c->n_layer * per_layer * sizeof(float));
    uint32_t *chars = malloc((size_t)t * sizeof(uint32_t));
    AttentionPrediction *pred = malloc((size_t)t * sizeof(AttentionPrediction));
    if (!att || !chars || !pred) die(EXIT_DATA, "out of memory for the attention weights");
    for (int l = 0; l < c->n_layer; l++)
        memcpy(att + l * per_layer, gpt_attention_weights(model, l), per_layer * sizeof(float));
    for (int i = 0; i < t; i++) chars[i] = vocab->chars[window[i]];
    attention_predictions(model->acts.logits, window, t, c->vocab_size, vocab->chars, pred);
    char err[ERR_LEN];
    int rc = attention_export(path, chars, t, c->n_layer, c->n_head, att, pred, err);
    if (rc == -2) die(EXIT_USAGE, "%s", err);
    if (rc != 0) die(EXIT_DATA, "%s", err);
    fprintf(stderr, "attention of %d layers x %d heads over %d characters written to %s\n", c->n_layer,
            c->n_head, t, path);
    free(att);
    free(chars);
    free(pred);
}

int main(int argc, char **argv) {
    Options o;
    parse_options(argc, argv, &o);
    if (o.threads > 0) omp_set_num_threads(o.threads);
    char err[ERR_LEN];

    Checkpoint ck;
    if (checkpoint_open(o.checkpoint, &ck, err) != 0) die(EXIT_DATA, "%s", err);
    GPT model;
    if (checkpoint_load_model(&ck, &model, err) != 0) die(EXIT_DATA, "%s", err);
    Vocab vocab;
    if (vocab_from_chars(&vocab, ck.vocab, ck.config.vocab_size, err) != 0) die(EXIT_DATA, "%s: %s", o.checkpoint, err);
    checkpoint_close(&ck);
    const GPTConfig *c = &model.config;
    const int T = c->block_size, V = c->vocab_size;

    // prompt: UTF-8 -> code points -> tokens
    size_t prompt_bytes = 0;
    char *prompt = o.prompt_file ? read_prompt_file(o.prompt_file, &prompt_bytes) : strdup(o.prompt ? o.prompt : "");
    if (!o.prompt_file) prompt_bytes = strlen(prompt);
    uint32_t *prompt_chars = malloc((prompt_bytes + 1) * sizeof(uint32_t));
    size_t bad_offset;
    long prompt_len = utf8_decode((const unsigned char *)prompt, prompt_bytes, prompt_chars, &bad_offset);
    if (prompt_len < 0) die(EXIT_USAGE, "the prompt is not valid UTF-8 (byte offset %zu)", bad_offset);
    long capacity = prompt_len + o.max_new + 1;
    int *text = malloc((size_t)capacity * sizeof(int));
    uint32_t *kept_chars = malloc((size_t)(prompt_len + 1) * sizeof(uint32_t));
    if (!text || !kept_chars) die(EXIT_DATA, "out of memory");
    long len = 0;
    for (long i = 0; i < prompt_len; i++) {
        int id = vocab_index(&vocab, prompt_chars[i]);
        if (id < 0) {
            uint32_t cp = prompt_chars[i];
            char shown[5] = {0};
            if (cp >= 0x20 && cp != 0x7F) utf8_encode(cp, shown);
            if (!o.skip_unknown)
                die(EXIT_USAGE, "prompt character '%s' (U+%04" PRIX32 ") at position %ld is not in the checkpoint's "
                    "vocabulary (use --skip-unknown to drop such characters)", shown, cp, i);
            fprintf(stderr, "%s: warning: dropping prompt character '%s' (U+%04" PRIX32 ") at position %ld: "
                    "not in the vocabulary\n", program_invocation_short_name, shown, cp, i);
            continue;
        }
        kept_chars[len] = prompt_chars[i];
        text[len++] = id;
    }
    if (len == 0) {
        if (o.max_new == 0 && !o.attention) return 0;
        int newline = vocab_index(&vocab, '\n');
        text[len++] = newline >= 0 ? newline : 0;
    } else {
        for (long i = 0; i < len; i++) write_char(stdout, kept_chars[i]);
        fflush(stdout);
    }

    // the window [start, len) of at most T tokens is what the model sees
    KVCache cache;
    if (kvcache_init(&cache, &model, err) != 0) die(EXIT_DATA, "%s", err);
    float *probs = malloc((size_t)V * sizeof(float));
    int *order = malloc((size_t)V * sizeof(int));
    if (!probs || !order) die(EXIT_DATA, "out of memory");
    Rng rng;
    rng_seed(&rng, o.seed);
    double t0 = now_seconds();
    long start = len > T ? len - T : 0;
    const float *logits = NULL;
    for (long n = 0; n < o.max_new; n++) {
        if (!logits) {
            logits = kvcache_prefill(&cache, text + start, (int)(len - start));
        }
        int next = sample_token(logits, V, &o.sampler, &rng, probs, order);
        text[len++] = next;
        write_char(stdout, vocab.chars[next]);
        fflush(stdout);
        if (n + 1 == o.max_new) break;
        if (len - start > T) {
            // the window is full: move it on by half a block and prefill again
            start = len - (T + 1) / 2;
            logits = kvcache_prefill(&cache, text + start, (int)(len - start));
        } else if (o.use_cache) {
            logits = kvcache_step(&cache, next);
        } else {
            logits = kvcache_prefill(&cache, text + start, (int)(len - start));
        }
    }
    double secs = now_seconds() - t0;
    if (prompt_len > 0 || o.max_new > 0) printf("\n");
    if (o.max_new > 0) {
        fprintf(stderr, "generated %ld characters in %.3f s (%.0f chars/s%s)\n", o.max_new, secs,
                secs > 0 ? o.max_new / secs : 0.0, o.use_cache ? "" : ", without the cache");
    }
    if (o.attention) record_attention(&model, &vocab, text, len, o.attention);
    kvcache_free(&cache);
    gpt_free(&model);
    vocab_free(&vocab);
    free(text);
    free(kept_chars);
    free(prompt_chars);
    free(prompt);
    free(probs);
    free(order);
    return 0;
}
