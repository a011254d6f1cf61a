// Tests of generation: the key/value cache against the full forward pass as the window moves
// past block_size (generation/inference.h), the sampler's filters and draws (generation/sampler.h), and
// the ./generate program run on a small checkpoint built here: determinism, cache on and
// off, seeds, the recorded attention in every format, and its errors and exit statuses.
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/rng.h"
#include "../common/utf8.h"
#include "../format/checkpoint.h"
#include "../generation/inference.h"
#include "../generation/sampler.h"
#include "../model/gpt.h"
#include "reference.h"
#include "test.h"

#define TMP_DIR "tests/tmp"
#define GENERATE test_program("generate")
#define CKPT TMP_DIR "/gen_model.safetensors"
#define OUT_PATH TMP_DIR "/gen_stdout.txt"
#define ERR_PATH TMP_DIR "/gen_stderr.txt"
#define CACHE_TOL 1e-5      // abs error of cached logits vs the full forward
#define SLIDING_TOL 1e-4    // abs error of a rolling cache's float logits vs the double reference
#define ATTENTION_TOL 1e-6  // recorded attention vs the training forward pass

// The test checkpoint's vocabulary, in increasing code point order (the last one is é).
static const char VOCAB_TEXT[] = "\n !\",.abcdefghijklmnopqrstuvwxyz\xc3\xa9";

// The test checkpoint's model: head_size 10 != n_embd / n_head = 8, a qkv bias, and dropout
// in the config, which generation must not apply.
static const GPTConfig PROGRAM_CONFIG = {
    .vocab_size = 33, .block_size = 16, .n_layer = 2, .n_head = 3, .n_embd = 24, .head_size = 10,
    .qkv_bias = 1, .dropout = 0.1f,
};

// ---------------------------------------------------------------------------------------
// helpers

static int decode(const char *text, size_t len, uint32_t *chars) {
    size_t bad;
    return (int)utf8_decode((const unsigned char *)text, len, chars, &bad);
}

// vocab: room for sizeof(VOCAB_TEXT) code points; returns how many.
static int test_vocab(uint32_t *vocab) { return decode(VOCAB_TEXT, strlen(VOCAB_TEXT), vocab); }

// Token id of cp in the test vocabulary, or -1.
static int token_of(uint32_t cp) {
    uint32_t vocab[sizeof(VOCAB_TEXT)];
    int V = test_vocab(vocab);
    for (int i = 0; i < V; i++)
        if (vocab[i] == cp) return i;
    return -1;
}

// Builds a model whose output is far from uniform and not a copy of its input: the initial
// weights plus noise on every parameter (so biases and LayerNorm parameters are not 0 and 1),
// then wte scaled up (it is also the output head, so the logits spread over a few units), the
// blocks' matrices scaled up more (so attention and MLP, not only the tied embedding, decide
// the next character) and wpe scaled up (so the position matters: greedy text does not
// settle on one repeated character).
static int build_test_model(GPT *model, const GPTConfig *config, uint64_t seed) {
    char err[ERR_LEN];
    if (!CHECK(gpt_build(model, config, 0, err) == 0, "gpt_build: %s", err)) return -1;
    gpt_init_weights(model, seed);
    Rng rng;
    rng_seed(&rng, seed ^ 0x5EEDull);
    for (size_t i = 0; i < model->num_parameters; i++)
        model->params_memory[i] += 0.05f * (2.0f * rng_uniform(&rng) - 1.0f);
    ParameterTensors *p = &model->params;
    const struct { float *tensor; size_t size; float scale; } scalings[] = {
        {p->wte, model->param_sizes[0], 3.0f},     {p->wpe, model->param_sizes[1], 20.0f},
        {p->blocks.qkvw, model->param_sizes[4], 5.0f},    {p->blocks.attprojw, model->param_sizes[6], 5.0f},
        {p->blocks.fcw, model->param_sizes[10], 5.0f},    {p->blocks.fcprojw, model->param_sizes[12], 5.0f},
    };
    for (size_t s = 0; s < sizeof(scalings) / sizeof(scalings[0]); s++)
        for (size_t i = 0; i < scalings[s].size; i++) scalings[s].tensor[i] *= scalings[s].scale;
    return 0;
}

// Saves the test checkpoint once per run (and checks ./generate is built); NULL on failure.
static const char *test_checkpoint(void) {
    static int state = 0;  // 0 not tried, 1 ready, -1 failed
    if (state == 0) {
        test_program("generate");  // where processes cannot be started (WebAssembly) the test ends here, untried
        state = -1;
        test_make_dir(TMP_DIR);
        if (!CHECK(test_file_exists(GENERATE), "%s is not built: run make first", GENERATE)) return NULL;
        uint32_t vocab[sizeof(VOCAB_TEXT)];
        if (!CHECK(test_vocab(vocab) == PROGRAM_CONFIG.vocab_size, "test vocabulary size")) return NULL;
        GPT model;
        if (build_test_model(&model, &PROGRAM_CONFIG, 42) != 0) return NULL;
        char err[ERR_LEN];
        int rc = checkpoint_save(CKPT, &model, &(Vocab){(uint32_t *)vocab, model.config.vocab_size, 0},
                                 NULL, NULL, 0, err);
        gpt_free(&model);
        if (!CHECK(rc == 0, "checkpoint_save: %s", err)) return NULL;
        state = 1;
    }
    CHECK(state == 1, "the test checkpoint could not be made (see the first failure)");
    return state == 1 ? CKPT : NULL;
}

// Runs argv (argv[0] the program, NULL-terminated) with stdin from in_path (NULL: the null
// device) and stdout and stderr into files. Returns the exit status, -1 if it did not exit
// (a failed check when it did not start).
static int run_program(const char *const *argv, const char *in_path, const char *out_path,
                       const char *err_path) {
    TestChild c;
    TestEnd end = {-1, 0, 0};
    TestSpawn how = {.in_path = in_path, .out_path = err_path, .stdout_path = out_path};
    if (CHECK(test_child_start(&c, argv, &how) == 0, "cannot start %s: %s", argv[0], strerror(errno)))
        test_child_wait(&c, 1e9, &end);
    return end.status;
}

typedef struct {
    int status;
    char *out;  // stdout, NUL-terminated
    size_t out_len;
    char *err;  // stderr, NUL-terminated
} Run;

// Runs ./generate with args (NULL-terminated, without argv[0]) and stdin from in_path.
static Run run_generate(const char *in_path, const char *const *args) {
    const char *argv[32] = {GENERATE};
    int n = 1;
    while (args[n - 1] && n < 31) argv[n] = args[n - 1], n++;
    argv[n] = NULL;
    Run r;
    r.status = run_program(argv, in_path, OUT_PATH, ERR_PATH);
    size_t err_len;
    r.out = test_read_file(OUT_PATH, &r.out_len);
    r.err = test_read_file(ERR_PATH, &err_len);
    if (!r.out) r.out = strdup(""), r.out_len = 0;
    if (!r.err) r.err = strdup("");
    return r;
}
#define ARGS(...) ((const char *[]){__VA_ARGS__, NULL})

static void run_free(Run *r) {
    free(r->out);
    free(r->err);
}

// ---------------------------------------------------------------------------------------
// key/value cache

// Drives the cache as generation does, for num_samples samples of one prompt: the prompt's
// window [start, len) of at most T tokens prefilled once for all, then one step per token of
// every sample; when the window would exceed T it drops `stride` tokens (start += stride) and
// every sample's window is prefilled again. At every position each sample's cached logits
// are compared with a full forward over its window on an identical model. Returns the worst
// abs error; *prefills counts the prefills.
static double cache_vs_full_forward(const GPTConfig *config, int prompt_len, int steps, int stride, int num_samples,
                                    uint64_t seed, int *prefills) {
    const int T = config->block_size, V = config->vocab_size, N = num_samples;
    GPT model, ref;
    char err[ERR_LEN];
    if (build_test_model(&model, config, seed) != 0) return INFINITY;
    if (build_test_model(&ref, config, seed) != 0) return INFINITY;
    KVCache cache;
    if (!CHECK(kvcache_init(&cache, &model, N, err) == 0, "kvcache_init: %s", err)) return INFINITY;
    if (!CHECK(gpt_alloc_activations(&ref, 1, err) == 0, "gpt_alloc_activations: %s", err)) return INFINITY;
    long capacity = prompt_len + steps + 1;
    int *text = malloc((size_t)N * capacity * sizeof(int)), *next = malloc((size_t)N * sizeof(int));
    float *probs = malloc((size_t)V * sizeof(float));
    int *order = malloc((size_t)V * sizeof(int));
    Rng rng;
    rng_seed(&rng, seed + 1);
    for (int i = 0; i < prompt_len; i++) text[i] = (int)rng_below(&rng, (uint64_t)V);
    for (int s = 1; s < N; s++) memcpy(text + s * capacity, text, (size_t)prompt_len * sizeof(int));
    SamplerConfig sampler = {1.0f, 0, 1.0f};
    long len = prompt_len, start = len > T ? len - T : 0;
    const float *logits = kvcache_prefill(&cache, text + start, 0, (int)(len - start));
    *prefills = 1;
    double worst = 0.0;
    for (int n = 0; n < steps; n++) {
        int t = (int)(len - start);
        for (int s = 0; s < N; s++) {
            gpt_forward(&ref, text + s * capacity + start, NULL, 1, t, NULL);
            const float *got = logits + (size_t)s * V, *want = ref.acts.logits + (size_t)(t - 1) * V;
            for (int v = 0; v < V; v++) {
                double d = fabs((double)got[v] - (double)want[v]);
                if (d > worst || d != d) worst = d != d ? INFINITY : d;
            }
            next[s] = sample_token(got, V, &sampler, &rng, probs, order);
            text[s * capacity + len] = next[s];
        }
        len++;
        if (len - start > T) {
            start += stride;
            logits = kvcache_prefill(&cache, text + start, capacity, (int)(len - start));
            (*prefills)++;
        } else {
            logits = kvcache_step(&cache, next);
        }
    }
    free(text), free(next), free(probs), free(order);
    kvcache_free(&cache);
    gpt_free(&model);
    gpt_free(&ref);
    return worst;
}

TEST(generate_kvcache_matches_full_forward) {
    // qkv bias on, head_size 10 != 24/3; bias off, head_size 6 != 16/4, odd block size
    const GPTConfig configs[2] = {
        {.vocab_size = 33, .block_size = 16, .n_layer = 2, .n_head = 3, .n_embd = 24, .head_size = 10,
         .qkv_bias = 1, .dropout = 0.1f},
        {.vocab_size = 29, .block_size = 13, .n_layer = 3, .n_head = 4, .n_embd = 16, .head_size = 6,
         .qkv_bias = 0, .dropout = 0.0f},
    };
    for (int c = 0; c < 2; c++) {
        const int T = configs[c].block_size, steps = 3 * T + 7;
        // a short prompt, and one longer than the block (the window starts at len - T); one
        // sample and three; the window moving on by half a block and by one character
        const struct { int prompt_len, samples, stride; } cases[3] = {{3, 1, T / 2}, {T + 5, 3, T / 2}, {3, 3, 1}};
        for (int k = 0; k < 3; k++) {
            int prefills = 0;
            double err = cache_vs_full_forward(&configs[c], cases[k].prompt_len, steps, cases[k].stride,
                                               cases[k].samples, 100 + c, &prefills);
            printf("    qkv_bias=%d T=%d prompt %2d, %d sample%s, stride %d: %d prefills, worst abs logit error %.2e\n",
                   configs[c].qkv_bias, T, cases[k].prompt_len, cases[k].samples, cases[k].samples == 1 ? "" : "s",
                   cases[k].stride, prefills, err);
            CHECK(err <= CACHE_TOL, "config %d case %d: cached logits differ from the full forward by %.3e", c, k, err);
            CHECK(prefills >= 4, "config %d case %d: the window moved only %d times", c, k, prefills - 1);
        }
    }
}

// One RoPE sample of prompt_len <= T random tokens and `steps` more drawn from its rolling
// cache: at every position past the block its logits are compared with a full forward of the
// last T tokens (into *vs_recompute) and with the double reference over the whole text where
// each layer's attention sees the last T positions (into *vs_sliding); worst abs errors.
static void rolling_vs_references(const GPTConfig *config, int prompt_len, int steps, uint64_t seed,
                                  double *vs_recompute, double *vs_sliding) {
    const int T = config->block_size, V = config->vocab_size, n = prompt_len + steps;
    GPT model, ref;
    char err[ERR_LEN];
    KVCache cache;
    *vs_recompute = *vs_sliding = INFINITY;
    if (build_test_model(&model, config, seed) != 0 || build_test_model(&ref, config, seed) != 0) return;
    if (!CHECK(kvcache_init(&cache, &model, 1, err) == 0 && gpt_alloc_activations(&ref, 1, err) == 0, "%s", err))
        return;
    int *text = malloc((size_t)n * sizeof(int)), order[64];
    float *logits = malloc((size_t)n * V * sizeof(float)), probs[64];  // row p: the logits after token p
    double *sliding = malloc((size_t)n * V * sizeof(double)), *params = malloc(model.num_parameters * sizeof(double));
    Rng rng;
    rng_seed(&rng, seed + 1);
    for (int i = 0; i < prompt_len; i++) text[i] = (int)rng_below(&rng, (uint64_t)V);
    SamplerConfig sampler = {1.0f, 0, 1.0f};
    const float *out = kvcache_prefill(&cache, text, 0, prompt_len);
    for (int p = prompt_len - 1; p < n - 1; p++) {
        memcpy(logits + (size_t)p * V, out, (size_t)V * sizeof(float));
        text[p + 1] = sample_token(out, V, &sampler, &rng, probs, order);
        out = kvcache_step(&cache, text + p + 1);
    }
    memcpy(logits + (size_t)(n - 1) * V, out, (size_t)V * sizeof(float));
    ref_to_double(params, model.params_memory, model.num_parameters);
    ref_gpt_sliding_logits(&model, params, text, n, T, sliding);
    *vs_recompute = *vs_sliding = 0.0;
    for (int p = T; p < n; p++) {
        gpt_forward(&ref, text + p + 1 - T, NULL, 1, T, NULL);
        for (int v = 0; v < V; v++) {
            double got = logits[(size_t)p * V + v];
            *vs_recompute = fmax(*vs_recompute, fabs(got - ref.acts.logits[(size_t)(T - 1) * V + v]));
            *vs_sliding = fmax(*vs_sliding, fabs(got - sliding[(size_t)p * V + v]));
            if (got != got) *vs_recompute = *vs_sliding = INFINITY;
        }
    }
    free(text), free(logits), free(sliding), free(params);
    kvcache_free(&cache);
    gpt_free(&model);
    gpt_free(&ref);
}

TEST(generate_rolling_cache_matches_references) {
    // RoPE: past the block the cache rolls on, one step per character. Attention then sees the
    // last T positions in every layer, which is what the double reference computes when its
    // attention is limited to them; with one layer that is exactly a full forward over the
    // last T characters, at every step. With more layers a cached key of a deeper layer holds
    // what its position saw of the text before the window, so the logits differ from a full
    // recompute's by more than float rounding (printed: the figure of the window's change).
    const GPTConfig configs[3] = {
        {.vocab_size = 33, .block_size = 16, .n_layer = 1, .n_head = 3, .n_embd = 24, .head_size = 10,
         .qkv_bias = 1, .dropout = 0.1f, .position = POSITION_ROPE},
        {.vocab_size = 29, .block_size = 13, .n_layer = 1, .n_head = 4, .n_embd = 16, .head_size = 6,
         .qkv_bias = 0, .dropout = 0.0f, .position = POSITION_ROPE},
        {.vocab_size = 29, .block_size = 13, .n_layer = 3, .n_head = 4, .n_embd = 16, .head_size = 6,
         .qkv_bias = 0, .dropout = 0.0f, .position = POSITION_ROPE},
    };
    const int prompts[2] = {1, 9};
    for (int c = 0; c < 3; c++) {
        for (int k = 0; k < 2; k++) {
            const int T = configs[c].block_size, steps = 6 * T;
            double vs_recompute, vs_sliding;
            rolling_vs_references(&configs[c], prompts[k], steps, 300 + c, &vs_recompute, &vs_sliding);
            printf("    rope L=%d T=%d prompt %d, %d steps past the block: worst abs logit error vs the sliding "
                   "reference %.2e, vs a full recompute of the last T %.2e\n", configs[c].n_layer, T, prompts[k],
                   prompts[k] + steps - T, vs_sliding, vs_recompute);
            CHECK(vs_sliding <= SLIDING_TOL, "config %d prompt %d: rolling logits differ from the reference by %.3e", c,
                  prompts[k], vs_sliding);
            if (configs[c].n_layer == 1)
                CHECK(vs_recompute <= CACHE_TOL, "config %d prompt %d: one layer's rolling logits differ from the full "
                      "recompute by %.3e", c, prompts[k], vs_recompute);
        }
    }
}

// ---------------------------------------------------------------------------------------
// sampler

static const float FIVE[5] = {0.05f, 0.4f, 0.1f, 0.3f, 0.15f};

// Filters a copy of probs and checks it against want (abs tolerance 1e-6).
static void check_filter(const float *probs, int V, int top_k, float top_p, const float *want, const char *what) {
    float got[8];
    int order[8];
    memcpy(got, probs, (size_t)V * sizeof(float));
    sampler_filter(got, order, V, top_k, top_p);
    for (int v = 0; v < V; v++)
        CHECK(fabsf(got[v] - want[v]) <= 1e-6f, "%s: probs[%d] = %.7f, want %.7f", what, v, got[v], want[v]);
}

TEST(generate_sampler_filter) {
    const float top_p_07[5] = {0, 0.4f / 0.7f, 0, 0.3f / 0.7f, 0};
    const float top_p_071[5] = {0, 0.4f / 0.85f, 0, 0.3f / 0.85f, 0.15f / 0.85f};
    const float top_1[5] = {0, 1, 0, 0, 0};
    const float top_k3_p09[5] = {0, 0.4f / 0.85f, 0, 0.3f / 0.85f, 0.15f / 0.85f};
    check_filter(FIVE, 5, 0, 0.7f, top_p_07, "top_p 0.7");
    CHECK(fabsf(0.4f / 0.7f - 0.5714286f) < 1e-6f, "renormalised 0.4");
    check_filter(FIVE, 5, 0, 0.71f, top_p_071, "top_p 0.71");
    check_filter(FIVE, 5, 0, 1.0f, FIVE, "top_p 1");
    check_filter(FIVE, 5, 5, 1.0f, FIVE, "top_k V");
    check_filter(FIVE, 5, 2, 1.0f, top_p_07, "top_k 2");
    check_filter(FIVE, 5, 2, 0.5f, top_1, "top_k 2 + top_p 0.5");
    check_filter(FIVE, 5, 1, 1.0f, top_1, "top_k 1");
    check_filter(FIVE, 5, 0, 0.01f, top_1, "top_p 0.01");
    // top_p applies to the renormalised top_k: 0.9 of {0.4,0.3,0.15} needs all three
    check_filter(FIVE, 5, 3, 0.9f, top_k3_p09, "top_k 3 + top_p 0.9");
    // a mass exactly reaching top_p stops there (the smallest set whose mass reaches p)
    const float exact[3] = {0.25f, 0.5f, 0.25f};
    const float exact_p05[3] = {0, 1, 0};
    const float exact_p075[3] = {1.0f / 3, 2.0f / 3, 0};
    check_filter(exact, 3, 0, 0.5f, exact_p05, "exact top_p 0.5");
    check_filter(exact, 3, 0, 0.75f, exact_p075, "exact top_p 0.75");
    // ties keep the lower index
    const float ties[4] = {0.2f, 0.3f, 0.2f, 0.3f};
    const float tie_k1[4] = {0, 1, 0, 0};
    const float tie_k3[4] = {0.2f / 0.8f, 0.3f / 0.8f, 0, 0.3f / 0.8f};
    const float tie_p05[4] = {0, 0.5f, 0, 0.5f};
    check_filter(ties, 4, 1, 1.0f, tie_k1, "ties top_k 1");
    check_filter(ties, 4, 3, 1.0f, tie_k3, "ties top_k 3");
    check_filter(ties, 4, 0, 0.55f, tie_p05, "ties top_p 0.55");
    check_filter(ties, 4, 0, 0.7f, tie_k3, "ties top_p 0.7");
}

TEST(generate_sample_token_greedy_and_frequencies) {
    enum { V = 5, DRAWS = 20000 };
    float logits[V], probs[V];
    int order[V];
    for (int v = 0; v < V; v++) logits[v] = logf(FIVE[v]);
    Rng rng;
    rng_seed(&rng, 2024);
    // temperature 0 is argmax whatever the filters; ties go to the lower index
    SamplerConfig greedy = {0.0f, 3, 0.5f};
    CHECK(sample_token(logits, V, &greedy, &rng, probs, order) == 1, "temperature 0 is not argmax");
    const float tied[V] = {1.0f, 3.0f, -2.0f, 3.0f, 0.5f};
    CHECK(sample_token(tied, V, &greedy, &rng, probs, order) == 1, "argmax tie is not the lower index");
    CHECK(sample_argmax(tied, V) == 1, "sample_argmax tie is not the lower index");
    // temperature 1: the distribution itself; temperature 0.5: p^2 renormalised; top_p 0.7:
    // {0.4, 0.3} renormalised and nothing else; top_k 1 at temperature 1: always the argmax
    double sq = 0.0;
    for (int v = 0; v < V; v++) sq += (double)FIVE[v] * FIVE[v];
    struct { SamplerConfig config; double want[V]; } cases[4] = {
        {{1.0f, 0, 1.0f}, {0.05, 0.4, 0.1, 0.3, 0.15}},
        {{0.5f, 0, 1.0f}, {0.0025 / sq, 0.16 / sq, 0.01 / sq, 0.09 / sq, 0.0225 / sq}},
        {{1.0f, 0, 0.7f}, {0, 0.4 / 0.7, 0, 0.3 / 0.7, 0}},
        {{1.0f, 1, 1.0f}, {0, 1, 0, 0, 0}},
    };
    for (int c = 0; c < 4; c++) {
        int counts[V] = {0};
        for (int i = 0; i < DRAWS; i++) {
            int v = sample_token(logits, V, &cases[c].config, &rng, probs, order);
            if (!CHECK(v >= 0 && v < V, "sample_token returned %d", v)) return;
            counts[v]++;
        }
        double worst = 0.0;
        for (int v = 0; v < V; v++) {
            double freq = (double)counts[v] / DRAWS;
            if (fabs(freq - cases[c].want[v]) > worst) worst = fabs(freq - cases[c].want[v]);
            CHECK(fabs(freq - cases[c].want[v]) <= 0.01, "case %d: token %d drawn %.4f of the time, want %.4f", c, v,
                  freq, cases[c].want[v]);
            if (cases[c].want[v] == 0.0) CHECK(counts[v] == 0, "case %d: filtered token %d drawn %d times", c, v, counts[v]);
        }
        printf("    case %d (t=%.1f k=%d p=%.1f): worst frequency error %.4f over %d draws\n", c,
               cases[c].config.temperature, cases[c].config.top_k, cases[c].config.top_p, worst, DRAWS);
    }
}

// ---------------------------------------------------------------------------------------
// ./generate: determinism, cache, seeds

TEST(generate_greedy_deterministic) {
    if (!test_checkpoint()) return;
    const char *prompt = "the cat ";
    Run a = run_generate(NULL, ARGS(CKPT, prompt, "-t", "0", "-n", "60"));
    Run b = run_generate(NULL, ARGS(CKPT, prompt, "-t", "0", "-n", "60"));
    CHECK(a.status == 0 && b.status == 0, "exit statuses %d %d: %s", a.status, b.status, a.err);
    CHECK(strncmp(a.out, prompt, strlen(prompt)) == 0, "output does not start with the prompt: '%s'", a.out);
    CHECK(a.out_len == b.out_len && memcmp(a.out, b.out, a.out_len) == 0, "greedy runs differ:\n%s\n%s", a.out, b.out);
    CHECK(strstr(a.err, "chars/s") != NULL, "no chars/s line on stderr: '%s'", a.err);
    uint32_t chars[256];
    CHECK(a.out_len > 0 && decode(a.out, a.out_len, chars) == (int)strlen(prompt) + 60 + 1,
          "want the prompt, 60 characters and a newline, got '%s'", a.out);
    CHECK(a.out_len > 0 && a.out[a.out_len - 1] == '\n', "output does not end with a newline");
    run_free(&a), run_free(&b);
}

TEST(generate_no_cache_matches_cache) {
    if (!test_checkpoint()) return;
    const int T = PROGRAM_CONFIG.block_size;
    char n[16];
    snprintf(n, sizeof(n), "%d", 3 * T + 5);
    const char *prompt = "a";
    // greedy, and sampled with a seed (the same draws see the same logits)
    const char *temps[2] = {"0", "0.9"};
    for (int i = 0; i < 2; i++) {
        Run cached = run_generate(NULL, ARGS(CKPT, prompt, "-t", temps[i], "-s", "11", "-n", n));
        Run full = run_generate(NULL, ARGS(CKPT, prompt, "-t", temps[i], "-s", "11", "-n", n, "--no-cache"));
        CHECK(cached.status == 0 && full.status == 0, "exit statuses %d %d: %s", cached.status, full.status, full.err);
        uint32_t chars[256];
        int count = decode(cached.out, cached.out_len, chars);
        CHECK(count > 2 * T, "only %d characters", count);
        CHECK(cached.out_len == full.out_len && memcmp(cached.out, full.out, cached.out_len) == 0,
              "-t %s: cached and --no-cache outputs differ:\n%s\n%s", temps[i], cached.out, full.out);
        CHECK(strstr(full.err, "without the cache") != NULL, "--no-cache not reported: '%s'", full.err);
        run_free(&cached), run_free(&full);
    }
}

TEST(generate_seeds_and_top_k1) {
    if (!test_checkpoint()) return;
    const char *prompt = "once ";
    Run a = run_generate(NULL, ARGS(CKPT, prompt, "-s", "7", "-n", "200"));
    Run b = run_generate(NULL, ARGS(CKPT, prompt, "-s", "7", "-n", "200"));
    Run c = run_generate(NULL, ARGS(CKPT, prompt, "-s", "8", "-n", "200"));
    CHECK(a.status == 0 && b.status == 0 && c.status == 0, "exit statuses %d %d %d", a.status, b.status, c.status);
    CHECK(a.out_len == b.out_len && memcmp(a.out, b.out, a.out_len) == 0, "same seed, different text");
    CHECK(a.out_len != c.out_len || memcmp(a.out, c.out, a.out_len) != 0, "seeds 7 and 8 gave the same text");
    // sampled text from this model is varied: many distinct characters
    uint32_t chars[1024];
    int count = decode(a.out, a.out_len, chars), distinct = 0;
    for (int i = 0; i < count; i++) {
        int seen = 0;
        for (int j = 0; j < i; j++) seen |= chars[j] == chars[i];
        distinct += !seen;
    }
    CHECK(distinct >= 10, "only %d distinct characters: the test model is degenerate", distinct);
    Run k1 = run_generate(NULL, ARGS(CKPT, prompt, "-k", "1", "-s", "7", "-n", "200"));
    Run greedy = run_generate(NULL, ARGS(CKPT, prompt, "-t", "0", "-n", "200"));
    CHECK(k1.status == 0 && greedy.status == 0, "exit statuses %d %d", k1.status, greedy.status);
    CHECK(k1.out_len == greedy.out_len && memcmp(k1.out, greedy.out, k1.out_len) == 0,
          "-k 1 differs from greedy:\n%s\n%s", k1.out, greedy.out);
    CHECK(a.out_len != greedy.out_len || memcmp(a.out, greedy.out, a.out_len) != 0, "sampling gave the greedy text");
    run_free(&a), run_free(&b), run_free(&c), run_free(&k1), run_free(&greedy);
}

// ---------------------------------------------------------------------------------------
// ./generate: the window past block_size, --stride, --num-samples

static int load_test_model(GPT *model);

// The greedy text (UTF-8, with the prompt and the final newline, as ./generate -t 0 prints
// it) of the test model after prompt, each character the argmax of a full forward over the
// window the README documents: the last T characters while they fit; once the window would
// hold T + 1 characters it drops its first `stride`. Returns the bytes written to out.
static size_t reference_greedy(GPT *model, const char *prompt, int n, int stride, char *out) {
    const int T = model->config.block_size, V = model->config.vocab_size;
    uint32_t vocab[sizeof(VOCAB_TEXT)], chars[512];
    test_vocab(vocab);
    int text[512];
    int len = decode(prompt, strlen(prompt), chars);
    for (int i = 0; i < len; i++) text[i] = token_of(chars[i]);
    int start = len > T ? len - T : 0;
    for (int k = 0; k < n; k++) {
        gpt_forward(model, text + start, NULL, 1, len - start, NULL);
        const float *logits = model->acts.logits + (size_t)(len - start - 1) * V;
        int best = 0;
        for (int v = 1; v < V; v++)
            if (logits[v] > logits[best]) best = v;
        text[len++] = best;
        if (len - start > T) start += stride;
    }
    size_t bytes = 0;
    for (int i = 0; i < len; i++) bytes += (size_t)utf8_encode(vocab[text[i]], out + bytes);
    out[bytes++] = '\n';
    out[bytes] = '\0';
    return bytes;
}

TEST(generate_greedy_past_block_equals_last_window_recompute) {
    if (!test_checkpoint()) return;
    GPT model;
    if (load_test_model(&model) != 0) return;
    const int T = PROGRAM_CONFIG.block_size, n = 4 * T + 5;
    char want[2048], count[16];
    snprintf(count, sizeof(count), "%d", n);
    // a short prompt, and one longer than the block
    const char *prompts[2] = {"the ", "a long prompt, longer than the block, is read from its end"};
    for (int p = 0; p < 2; p++) {
        size_t want_len = reference_greedy(&model, prompts[p], n, 1, want);
        Run cached = run_generate(NULL, ARGS(CKPT, prompts[p], "-t", "0", "-n", count));
        Run full = run_generate(NULL, ARGS(CKPT, prompts[p], "-t", "0", "-n", count, "--no-cache"));
        CHECK(cached.status == 0 && full.status == 0, "exit statuses %d %d: %s", cached.status, full.status, cached.err);
        CHECK(cached.out_len == want_len && memcmp(cached.out, want, want_len) == 0,
              "prompt %d: greedy text differs from the last-%d-characters recompute:\n%s\n%s", p, T, cached.out, want);
        CHECK(full.out_len == want_len && memcmp(full.out, want, want_len) == 0,
              "prompt %d: --no-cache greedy text differs from the recompute:\n%s\n%s", p, full.out, want);
        run_free(&cached), run_free(&full);
    }
    gpt_free(&model);
}

TEST(generate_stride_windows) {
    if (!test_checkpoint()) return;
    GPT model;
    if (load_test_model(&model) != 0) return;
    const int T = PROGRAM_CONFIG.block_size, n = 4 * T + 3;
    char count[16];
    snprintf(count, sizeof(count), "%d", n);
    static char want[2048], exact[2048];
    size_t exact_len = reference_greedy(&model, "the ", n, 1, exact);
    const int strides[5] = {2, 5, T / 2, T - 1, T};
    int differs = 0;
    for (int i = 0; i < 5; i++) {
        char stride[16];
        snprintf(stride, sizeof(stride), "%d", strides[i]);
        size_t want_len = reference_greedy(&model, "the ", n, strides[i], want);
        Run cached = run_generate(NULL, ARGS(CKPT, "the ", "-t", "0", "-n", count, "--stride", stride));
        Run full = run_generate(NULL, ARGS(CKPT, "the ", "-t", "0", "-n", count, "--stride", stride, "--no-cache"));
        CHECK(cached.status == 0 && full.status == 0, "exit statuses %d %d: %s", cached.status, full.status, cached.err);
        CHECK(cached.out_len == want_len && memcmp(cached.out, want, want_len) == 0,
              "--stride %s: greedy text differs from the documented window:\n%s\n%s", stride, cached.out, want);
        CHECK(full.out_len == want_len && memcmp(full.out, want, want_len) == 0,
              "--stride %s --no-cache: greedy text differs from the documented window:\n%s\n%s", stride, full.out, want);
        differs += want_len != exact_len || memcmp(want, exact, want_len) != 0;
        run_free(&cached), run_free(&full);
    }
    // the model reads its window's positions: strides that see less context write other text
    CHECK(differs >= 4, "only %d of 5 strides changed the greedy text: the test cannot tell the windows apart", differs);
    gpt_free(&model);
}

// Checks that ./generate with extra (NULL-terminated) options and --num-samples 4 prints the
// four texts single runs with seeds 7..10 print, separated by a line naming each sample.
static void check_num_samples(const char *const *extra, const char *what) {
    const int N = 4, T = PROGRAM_CONFIG.block_size;
    char count[16];
    snprintf(count, sizeof(count), "%d", 3 * T + 3);
    const char *args[24] = {CKPT, "once ", "-n", count, "-s", "7", "--num-samples", "4"};
    int a = 8;
    for (int i = 0; extra[i]; i++) args[a++] = extra[i];
    args[a] = NULL;
    Run together = run_generate(NULL, args);
    if (!CHECK(together.status == 0, "%s: exit status %d: %s", what, together.status, together.err)) return;
    static char want[8192];
    size_t want_len = 0;
    char *texts[4];
    for (int s = 0; s < N; s++) {
        char seed[16];
        snprintf(seed, sizeof(seed), "%d", 7 + s);
        args[5] = seed;
        args[7] = "1";
        Run single = run_generate(NULL, args);
        CHECK(single.status == 0, "%s: seed %s: exit status %d: %s", what, seed, single.status, single.err);
        if (s > 0) want_len += (size_t)sprintf(want + want_len, "--- sample %d of %d (seed %d) ---\n", s + 1, N, 7 + s);
        memcpy(want + want_len, single.out, single.out_len);
        want_len += single.out_len;
        texts[s] = single.out;
        free(single.err);
    }
    want[want_len] = '\0';
    CHECK(together.out_len == want_len && memcmp(together.out, want, want_len) == 0,
          "%s: --num-samples 4 differs from the four single runs:\n%s\nwant:\n%s", what, together.out, want);
    int same = 0;
    for (int s = 1; s < N; s++) same += strcmp(texts[s], texts[0]) == 0;
    CHECK(same == 0, "%s: %d samples repeat the first", what, same);
    CHECK(strstr(together.err, "in all samples") != NULL, "%s: stderr: '%s'", what, together.err);
    for (int s = 0; s < N; s++) free(texts[s]);
    run_free(&together);
}

TEST(generate_num_samples_match_single_runs) {
    if (!test_checkpoint()) return;
    char half[16];
    snprintf(half, sizeof(half), "%d", PROGRAM_CONFIG.block_size / 2);
    check_num_samples(ARGS("-t", "0.9"), "-t 0.9");
    check_num_samples(ARGS("-t", "1.2", "-k", "8", "--stride", half), "-k 8 --stride T/2");
    check_num_samples(ARGS("-p", "0.9", "--no-cache"), "-p 0.9 --no-cache");
}

TEST(generate_num_samples_memory_plan) {
    if (!test_checkpoint()) return;
    // the plan counts what the cache of N samples and the model's activations allocate
    GPT model;
    char err[ERR_LEN];
    if (build_test_model(&model, &PROGRAM_CONFIG, 3) != 0) return;
    KVCache cache;
    if (CHECK(kvcache_init(&cache, &model, 7, err) == 0, "kvcache_init: %s", err)) {
        GPTMemoryPlan plan;
        gpt_memory_plan(&PROGRAM_CONFIG, 7, GPT_PLAN_GENERATION, &plan);
        CHECK(plan.generation == cache.floats * 4.0, "plan: generation buffers %.0f bytes, the cache has %zu floats",
              plan.generation, cache.floats);
        CHECK(plan.activations == model.num_activations * 4.0, "plan: activations %.0f bytes, allocated %zu floats",
              plan.activations, model.num_activations);
        kvcache_free(&cache);
    }
    gpt_free(&model);
    Run r = run_generate(NULL, ARGS(CKPT, "ab", "-n", "5", "--num-samples", "1000", "--max-memory", "1"));
    CHECK(r.status == 2 && strstr(r.err, "generating 1000 samples of 5 characters") && strstr(r.err, "--max-memory"),
          "--num-samples 1000 --max-memory 1: status %d, '%s'", r.status, r.err);
    CHECK(r.out_len == 0, "wrote '%s' before refusing", r.out);
    run_free(&r);
    r = run_generate(NULL, ARGS(CKPT, "ab", "-n", "5", "--num-samples", "3", "--max-memory", "1"));
    CHECK(r.status == 0, "--num-samples 3 --max-memory 1: status %d, '%s'", r.status, r.err);
    run_free(&r);
}

// ---------------------------------------------------------------------------------------
// recorded attention

// The attention JSON read back: token strings as code points, sizes, every weight, and the
// predictions at each position.
typedef struct {
    uint32_t chars[256];
    int t;
    int n_layer, n_head;
    float *att;      // (L, H, t, t) in file order
    size_t n_att;    // numbers read
    int dims[4];     // length of the arrays at each nesting depth (-1: lengths differ)
    float surprisal[256];  // bits, NaN for null
    int n_surprisal;
    uint32_t top_char[256][5];
    float top_prob[256][5];
    int n_predictions;     // positions read
    int top_k;             // predictions per position (-1: the counts differ)
    int lens_rows;  // the logit lens's rows: its "rows" array's length (0: no logit_lens)
} AttentionJson;

static const char *skip_ws(const char *p) {
    while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r') p++;
    return p;
}

static int hex4(const char *p, uint32_t *v) {
    *v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0) return -1;
        *v = *v * 16 + (uint32_t)d;
    }
    return 0;
}

// Reads a JSON string at p into UTF-8 bytes (out holds cap); returns the end or NULL.
static const char *parse_string(const char *p, char *out, size_t cap, size_t *len) {
    if (*p++ != '"') return NULL;
    *len = 0;
    while (*p != '"') {
        if (!*p || *len + 4 >= cap) return NULL;
        if (*p != '\\') {
            out[(*len)++] = *p++;
            continue;
        }
        p++;
        char c = *p++;
        const char *simple = "\"\\/bfnrt", *value = "\"\\/\b\f\n\r\t";
        const char *s = c ? strchr(simple, c) : NULL;
        if (s) {
            out[(*len)++] = value[s - simple];
        } else if (c == 'u') {
            uint32_t cp, low;
            if (hex4(p, &cp) != 0) return NULL;
            p += 4;
            if (cp >= 0xD800 && cp < 0xDC00) {
                if (p[0] != '\\' || p[1] != 'u' || hex4(p + 2, &low) != 0) return NULL;
                cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
                p += 6;
            }
            *len += (size_t)utf8_encode(cp, out + *len);
        } else {
            return NULL;
        }
    }
    return p + 1;
}

// Reads nested arrays of numbers at p (depth d), appending the numbers to j->att and
// recording each depth's array length. Returns the end or NULL.
static const char *parse_weights(const char *p, int d, AttentionJson *j, size_t cap) {
    if (d > 3 || *p != '[') return NULL;
    p = skip_ws(p + 1);
    int count = 0;
    while (*p != ']') {
        if (count > 0) {
            if (*p != ',') return NULL;
            p = skip_ws(p + 1);
        }
        if (d < 3) {
            p = parse_weights(p, d + 1, j, cap);
            if (!p) return NULL;
        } else {
            char *end;
            float w = strtof(p, &end);
            if (end == p || j->n_att == cap) return NULL;
            j->att[j->n_att++] = w;
            p = end;
        }
        p = skip_ws(p);
        count++;
    }
    if (j->dims[d] == 0) j->dims[d] = count;
    else if (j->dims[d] != count) j->dims[d] = -1;
    return p + 1;
}

// Reads "surprisal": numbers or null into j. Returns the end or NULL.
static const char *parse_surprisal(const char *p, AttentionJson *j) {
    if (*p++ != '[') return NULL;
    for (p = skip_ws(p); *p != ']'; p = skip_ws(p)) {
        if (j->n_surprisal > 0 && *p++ != ',') return NULL;
        p = skip_ws(p);
        if (j->n_surprisal == 256) return NULL;
        if (strncmp(p, "null", 4) == 0) {
            j->surprisal[j->n_surprisal++] = NAN;
            p += 4;
            continue;
        }
        char *end;
        float s = strtof(p, &end);
        if (end == p) return NULL;
        j->surprisal[j->n_surprisal++] = s;
        p = end;
    }
    return p + 1;
}

// Reads "predictions": [t][k] of [character, probability] into j. Returns the end or NULL.
static const char *parse_predictions(const char *p, AttentionJson *j) {
    if (*p++ != '[') return NULL;
    for (p = skip_ws(p); *p != ']'; p = skip_ws(p)) {
        if (j->n_predictions > 0 && *p++ != ',') return NULL;
        p = skip_ws(p);
        if (j->n_predictions == 256 || *p++ != '[') return NULL;
        int i = j->n_predictions++, k = 0;
        for (p = skip_ws(p); *p != ']'; p = skip_ws(p)) {
            if (k > 0 && *p++ != ',') return NULL;
            p = skip_ws(p);
            if (k == 5 || *p++ != '[') return NULL;
            char bytes[16];
            size_t len;
            uint32_t cps[16];
            p = parse_string(skip_ws(p), bytes, sizeof(bytes), &len);
            if (!p || decode(bytes, len, cps) != 1) return NULL;
            p = skip_ws(p);
            if (*p++ != ',') return NULL;
            char *end;
            float prob = strtof(p, &end);
            if (end == p) return NULL;
            p = skip_ws(end);
            if (*p++ != ']') return NULL;
            j->top_char[i][k] = cps[0];
            j->top_prob[i][k++] = prob;
        }
        p++;
        j->top_k = i == 0 || j->top_k == k ? k : -1;
    }
    return p + 1;
}

// Skips one JSON value (strings with their escapes, containers to their matching end); returns
// the end or NULL. count, when not NULL, gets the number of elements of an array value.
static const char *skip_value(const char *p, int *count) {
    int depth = 0, elements = 0;
    do {
        p = skip_ws(p);
        if (*p == '"') {
            for (p++; *p && *p != '"'; p++)
                if (*p == '\\' && p[1]) p++;
            if (*p++ != '"') return NULL;
        } else if (*p == '[' || *p == '{') {
            depth++, p++;
            if (depth == 1 && *skip_ws(p) != ']') elements = 1;
        } else if (*p == ']' || *p == '}') {
            depth--, p++;
        } else if (*p == ',') {
            elements += depth == 1, p++;
        } else if (*p == ':' || (*p && strchr("-0123456789.eE+nultrfas", *p))) {
            p++;
        } else {
            return NULL;
        }
    } while (depth > 0);
    if (count) *count = elements;
    return p;
}

// "logit_lens": {"rows": [...], ...}: the number of rows, the rest skipped.
static const char *parse_lens(const char *p, AttentionJson *j) {
    const char *rows = strstr(p, "\"rows\":");
    if (*p != '{' || !rows) return NULL;
    if (!skip_value(skip_ws(rows + 7), &j->lens_rows)) return NULL;
    return skip_value(p, NULL);
}

// 1 for the keys of the attention math's vectors and the heads' labels, which
// tests/test_attention_math.c checks: skipped here.
static int is_skipped_key(const char *key) {
    char delimited[72];
    snprintf(delimited, sizeof(delimited), ",%s,", key);
    return strstr(",head_size,query,key,value,head_output,heads,logit_attribution,patching,", delimited) != NULL;
}

// Parses the whole document; returns 0 or -1 (j->att must be freed either way).
static int parse_attention_json(const char *text, AttentionJson *j) {
    memset(j, 0, sizeof(*j));
    j->n_layer = j->n_head = -1;
    size_t cap = strlen(text) / 2 + 1;  // a number takes at least "0," in the file
    j->att = malloc(cap * sizeof(float));
    char key[64], bytes[16];
    size_t len;
    const char *p = skip_ws(text);
    if (*p++ != '{') return -1;
    for (int first = 1;; first = 0) {
        p = skip_ws(p);
        if (*p == '}') return 0;
        if (!first && *p++ != ',') return -1;
        p = parse_string(skip_ws(p), key, sizeof(key), &len);
        if (!p) return -1;
        key[len] = '\0';
        p = skip_ws(p);
        if (*p++ != ':') return -1;
        p = skip_ws(p);
        if (strcmp(key, "tokens") == 0) {
            if (*p++ != '[') return -1;
            for (p = skip_ws(p); *p != ']'; p = skip_ws(p)) {
                if (j->t > 0 && *p++ != ',') return -1;
                p = parse_string(skip_ws(p), bytes, sizeof(bytes), &len);
                uint32_t cps[16];
                if (!p || j->t == 256 || decode(bytes, len, cps) != 1) return -1;
                j->chars[j->t++] = cps[0];
            }
            p++;
        } else if (strcmp(key, "attention") == 0) {
            p = parse_weights(p, 0, j, cap);
            if (!p) return -1;
        } else if (strcmp(key, "surprisal") == 0) {
            p = parse_surprisal(p, j);
            if (!p) return -1;
        } else if (strcmp(key, "predictions") == 0) {
            p = parse_predictions(p, j);
            if (!p) return -1;
        } else if (strcmp(key, "logit_lens") == 0) {
            p = parse_lens(p, j);
            if (!p) return -1;
        } else if (is_skipped_key(key)) {
            if (*p == '[' || *p == '{') {
                p = skip_value(p, NULL);
            } else {  // head_size
                char *end;
                strtol(p, &end, 10);
                p = end;
            }
            if (!p) return -1;
        } else if (strcmp(key, "n_layer") == 0 || strcmp(key, "n_head") == 0) {
            char *end;
            long v = strtol(p, &end, 10);
            if (end == p) return -1;
            *(strcmp(key, "n_layer") == 0 ? &j->n_layer : &j->n_head) = (int)v;
            p = end;
        } else {
            return -1;
        }
    }
}

// Loads the test checkpoint into a model with activations for batch 1.
static int load_test_model(GPT *model) {
    Checkpoint ck;
    char err[ERR_LEN];
    if (!CHECK(checkpoint_open(CKPT, &ck, err) == 0, "checkpoint_open: %s", err)) return -1;
    int rc = checkpoint_load_model(&ck, model, 0, err);
    checkpoint_close(&ck);
    if (!CHECK(rc == 0, "checkpoint_load_model: %s", err)) return -1;
    if (!CHECK(gpt_alloc_activations(model, 1, err) == 0, "gpt_alloc_activations: %s", err)) {
        gpt_free(model);
        return -1;
    }
    return 0;
}

// Checks the recorded attention of j against its structure (rows sum to 1, causal) and
// the training forward pass over its characters. Returns the worst abs difference.
static double check_attention(const AttentionJson *j, GPT *model) {
    const GPTConfig *c = &model->config;
    const int L = c->n_layer, H = c->n_head, t = j->t;
    CHECK(j->n_layer == L && j->n_head == H, "n_layer %d n_head %d, want %d %d", j->n_layer, j->n_head, L, H);
    CHECK(j->dims[0] == L && j->dims[1] == H && j->dims[2] == t && j->dims[3] == t,
          "attention arrays are [%d][%d][%d][%d], want [%d][%d][%d][%d]", j->dims[0], j->dims[1], j->dims[2],
          j->dims[3], L, H, t, t);
    if (!CHECK(j->n_att == (size_t)L * H * t * t, "%zu weights, want %d", j->n_att, L * H * t * t)) return INFINITY;
    int tokens[256];
    for (int i = 0; i < t; i++) {
        tokens[i] = token_of(j->chars[i]);
        if (!CHECK(tokens[i] >= 0, "recorded character U+%04X is not in the vocabulary", j->chars[i])) return INFINITY;
    }
    gpt_forward(model, tokens, NULL, 1, t, NULL);
    size_t lower = 0;
    double worst = 0.0, worst_sum = 0.0;
    int above = 0;
    for (int l = 0; l < L; l++) {
        const float *want = gpt_attention_weights(model, l);
        for (int h = 0; h < H; h++) {
            const float *got = j->att + ((size_t)l * H + h) * t * t;
            const float *ref = want + (size_t)h * t * t;
            CHECK(fabsf(got[0] - 1.0f) <= 1e-6f, "layer %d head %d: the first character attends to itself %.7f", l, h,
                  got[0]);
            for (int q = 0; q < t; q++) {
                double sum = 0.0;
                for (int k = 0; k < t; k++) {
                    float w = got[(size_t)q * t + k];
                    if (k > q) {
                        above += w != 0.0f;
                        continue;
                    }
                    lower++;
                    sum += w;
                    double d = fabs((double)w - (double)ref[(size_t)q * t + k]);
                    if (d > worst || d != d) worst = d != d ? INFINITY : d;
                }
                if (fabs(sum - 1.0) > worst_sum) worst_sum = fabs(sum - 1.0);
            }
        }
    }
    CHECK(lower == (size_t)L * H * t * (t + 1) / 2, "%zu lower-triangle weights", lower);
    CHECK(above == 0, "%d weights above the diagonal are not 0", above);
    CHECK(worst_sum <= 1e-5, "a row sums to 1 %+.2e", worst_sum);
    CHECK(worst <= ATTENTION_TOL, "recorded weights differ from the training forward by %.3e", worst);
    return worst;
}

// Checks the recorded predictions of j against the probabilities of the forward pass that
// check_attention ran over its characters: at each position the surprisal of the next
// character in bits (null at the last) and the 5 most likely characters, most likely first.
static void check_predictions(const AttentionJson *j, const GPT *model) {
    const int V = model->config.vocab_size, t = j->t;
    if (!CHECK(j->n_surprisal == t && j->n_predictions == t && j->top_k == 5,
               "%d surprisals and %d positions of %d predictions, want %d and %d of 5", j->n_surprisal,
               j->n_predictions, j->top_k, t, t))
        return;
    double worst_bits = 0.0, worst_prob = 0.0;
    int misranked = 0;
    for (int i = 0; i < t; i++) {
        const float *probs = model->acts.probs + (size_t)i * V;
        if (i + 1 < t) worst_bits = fmax(worst_bits, fabs(j->surprisal[i] + log2(probs[token_of(j->chars[i + 1])])));
        else CHECK(isnan(j->surprisal[i]), "the last surprisal is %g, not null", j->surprisal[i]);
        for (int r = 0; r < 5; r++) {
            int v = token_of(j->top_char[i][r]);
            if (!CHECK(v >= 0, "predicted U+%04X is not in the vocabulary", j->top_char[i][r])) return;
            worst_prob = fmax(worst_prob, fabs(j->top_prob[i][r] - probs[v]));
            // rank r: at most r characters are clearly more likely
            int above = 0;
            for (int u = 0; u < V; u++) above += probs[u] > probs[v] + 1e-6f;
            misranked += above > r;
        }
    }
    CHECK(worst_bits <= 1e-5, "surprisal differs from -log2 of the forward pass's probability by %.2e bits", worst_bits);
    CHECK(worst_prob <= 1e-6, "predicted probabilities differ from the forward pass's by %.2e", worst_prob);
    CHECK(misranked == 0, "%d predictions out of rank", misranked);
}

// Splits CSV text into records (quotes respected) and checks the data rows: layer, head,
// query, key <= query in order, weights equal to att (L, H, t, t). Returns the data rows.
static long check_attention_csv(const char *text, const float *att, int L, int H, int t) {
    long rows = 0;
    int fields = 0, quoted = 0, l = 0, h = 0, q = 0, k = -1, bad = 0;
    const char *field = text;
    long expected_index = 0;
    for (const char *p = text; *p; p++) {
        if (*p == '"') quoted = !quoted;
        if (quoted || (*p != ',' && *p != '\n')) continue;
        // a field ends at p
        if (rows > 0) {
            if (fields == 0) l = atoi(field);
            if (fields == 1) h = atoi(field);
            if (fields == 2) q = atoi(field);
            if (fields == 3) k = atoi(field);
            if (fields == 6) {
                // the expected (l, h, q, k) of this row in layer, head, query, key order
                long r = expected_index, per_head = (long)t * (t + 1) / 2;
                int el = (int)(r / (per_head * H)), eh = (int)(r / per_head % H), eq = 0;
                long within = r % per_head;
                while (within > eq) within -= ++eq;
                if (l != el || h != eh || q != eq || k != (int)within) bad++;
                else if (fabsf(strtof(field, NULL) - att[(((size_t)l * H + h) * t + q) * t + k]) > 1e-6f) bad++;
                expected_index++;
            }
        }
        fields++;
        field = p + 1;
        if (*p == '\n') {
            if (rows > 0 && fields != 7) bad++;
            rows++;
            fields = 0;
        }
    }
    const char *header = "layer,head,query_pos,key_pos,query_char,key_char,weight\n";
    CHECK(strncmp(text, header, strlen(header)) == 0, "CSV header");
    CHECK(bad == 0, "%d CSV rows out of order, with the wrong field count or weight", bad);
    CHECK(expected_index == rows - 1, "%ld weights in %ld data rows", expected_index, rows - 1);
    return rows - 1;
}

TEST(generate_attention_outputs) {
    if (!test_checkpoint()) return;
    GPT model;
    if (load_test_model(&model) != 0) return;
    const GPTConfig *c = &model.config;
    const int L = c->n_layer, H = c->n_head;
    // a prompt with characters the JSON and CSV writers must escape or quote
    const char *prompt = "say \"hi\", now.";
    const char *json_path = TMP_DIR "/gen_att.json", *csv_path = TMP_DIR "/gen_att.csv";
    const char *png_path = TMP_DIR "/gen_att.png";
    remove(json_path), remove(csv_path), remove(png_path);
    Run r = run_generate(NULL, ARGS(CKPT, "-n", "0", "--attention", json_path, prompt));
    CHECK(r.status == 0, "exit status %d: %s", r.status, r.err);
    CHECK(strlen(r.out) == strlen(prompt) + 1 && strncmp(r.out, prompt, strlen(prompt)) == 0,
          "-n 0 should print the prompt and a newline, got '%s'", r.out);
    run_free(&r);
    size_t len;
    char *json = test_read_file(json_path, &len);
    AttentionJson j;
    j.att = NULL;
    if (CHECK(json != NULL, "%s not written", json_path) && CHECK(parse_attention_json(json, &j) == 0, "cannot parse %s", json_path)) {
        uint32_t want[64];
        int t = decode(prompt, strlen(prompt), want);
        CHECK(j.t == t && memcmp(j.chars, want, (size_t)t * sizeof(uint32_t)) == 0, "recorded %d characters, not the prompt", j.t);
        double worst = check_attention(&j, &model);
        check_predictions(&j, &model);
        CHECK(j.lens_rows == L + 1, "a logit lens of %d rows, want %d", j.lens_rows, L + 1);
        printf("    %d layers x %d heads over %d characters: worst abs diff from gpt_forward %.2e\n", L, H, j.t, worst);

        r = run_generate(NULL, ARGS(CKPT, "-n", "0", "--attention", csv_path, prompt));
        CHECK(r.status == 0, "csv: exit status %d: %s", r.status, r.err);
        run_free(&r);
        char *csv = test_read_file(csv_path, &len);
        if (CHECK(csv != NULL, "%s not written", csv_path)) {
            long rows = check_attention_csv(csv, j.att, L, H, j.t);
            CHECK(rows == (long)L * H * j.t * (j.t + 1) / 2, "%ld CSV rows, want %d", rows, L * H * j.t * (j.t + 1) / 2);
        }
        free(csv);
    }
    free(j.att);
    free(json);

    r = run_generate(NULL, ARGS(CKPT, "-n", "0", "--attention", png_path, prompt));
    CHECK(r.status == 0, "png: exit status %d: %s", r.status, r.err);
    run_free(&r);
    char *png = test_read_file(png_path, &len);
    CHECK(png && len > 8 && memcmp(png, "\x89PNG\r\n\x1a\n", 8) == 0, "%s is not a PNG", png_path);
    free(png);
    gpt_free(&model);
}

// Starts ./generate with args (NULL-terminated), stdin from a pipe whose writing end goes to
// *to_stdin, stdout to the null device and stderr to err_path. Returns 0, or -1.
static int start_generate(TestChild *c, const char *const *args, int *to_stdin, const char *err_path) {
    const char *argv[32] = {GENERATE};
    int n = 1;
    while (args[n - 1] && n < 31) argv[n] = args[n - 1], n++;
    argv[n] = NULL;
    TestSpawn how = {.stdin_pipe = to_stdin, .out_path = err_path, .stdout_path = test_null_device()};
    return test_child_start(c, argv, &how);
}

static int exit_status_of(TestChild *c) {
    TestEnd end;
    test_child_wait(c, 1e9, &end);
    return end.status;
}

// An output is published only while it is absent (issue 29, L4): six processes racing to write
// one --attention file without --force, exactly one writes it and the others exit 2 naming it;
// a file that appears while a run works (here while it waits for its prompt) is kept. Before,
// the check came before the work and the rename replaced whatever was there: four of six
// said they had written the file, and the one made meanwhile was lost.
TEST(generate_racing_outputs_one_wins) {
    if (!test_checkpoint()) return;
    const char *json = TMP_DIR "/gen_race.json";
    remove(json);
    TestChild racers[6];
    int pipes[6];
    for (int i = 0; i < 6; i++) {
        char err_path[64];
        snprintf(err_path, sizeof(err_path), TMP_DIR "/gen_race_err%d.txt", i);
        if (!CHECK(start_generate(&racers[i], ARGS(CKPT, "-n", "0", "-f", "-", "--attention", json, "--threads", "1"),
                                  &pipes[i], err_path) == 0, "cannot start ./generate"))
            return;
    }
    usleep(200000);  // each has checked that the file is absent and waits for its prompt
    for (int i = 0; i < 6; i++) {
        CHECK(write(pipes[i], "the king", 8) == 8, "cannot write the prompt");
        close(pipes[i]);
    }
    int won = 0;
    for (int i = 0; i < 6; i++) {
        int status = exit_status_of(&racers[i]);
        char err_path[64];
        snprintf(err_path, sizeof(err_path), TMP_DIR "/gen_race_err%d.txt", i);
        size_t len;
        char *err = test_read_file(err_path, &len);
        won += status == 0;
        CHECK(status == 0 || (status == 2 && err && strstr(err, json) && strstr(err, "exists")),
              "racer %d: exit status %d: %s", i, status, err ? err : "");
        free(err);
    }
    CHECK(won == 1, "%d of 6 racing runs wrote %s, want 1", won, json);
    // a file made while the run works is kept
    const char *kept = TMP_DIR "/gen_race_kept.json";
    remove(kept);
    int to_stdin;
    TestChild c;
    if (!CHECK(start_generate(&c, ARGS(CKPT, "-n", "0", "-f", "-", "--attention", kept), &to_stdin,
                              TMP_DIR "/gen_race_err0.txt") == 0, "cannot start ./generate"))
        return;
    usleep(200000);
    test_write_file(kept, "mine", 4);
    CHECK(write(to_stdin, "the", 3) == 3, "cannot write the prompt");
    close(to_stdin);
    int status = exit_status_of(&c);
    size_t len;
    char *text = test_read_file(kept, &len);
    CHECK(status == 2 && text && len == 4 && memcmp(text, "mine", 4) == 0,
          "a file made meanwhile: exit status %d, the file holds %zu bytes", status, len);
    free(text);
}

TEST(generate_attention_last_block) {
    if (!test_checkpoint()) return;
    GPT model;
    if (load_test_model(&model) != 0) return;
    const int T = model.config.block_size;
    const char *prompt = "the quick brown fox jumps over the lazy dog, again and again.";
    const char *json_path = TMP_DIR "/gen_att_long.json";
    remove(json_path);
    Run r = run_generate(NULL, ARGS(CKPT, "-n", "20", "-s", "5", "--attention", json_path, prompt));
    CHECK(r.status == 0, "exit status %d: %s", r.status, r.err);
    uint32_t text[256];
    int n = r.out_len > 0 ? decode(r.out, r.out_len - 1, text) : 0;  // without the final newline
    CHECK(n == (int)strlen(prompt) + 20, "output has %d characters, want the prompt and 20", n);
    size_t len;
    char *json = test_read_file(json_path, &len);
    AttentionJson j;
    j.att = NULL;
    if (CHECK(json != NULL, "%s not written", json_path) && CHECK(parse_attention_json(json, &j) == 0, "cannot parse %s", json_path)) {
        CHECK(j.t == T && n >= T && memcmp(j.chars, text + n - T, (size_t)T * sizeof(uint32_t)) == 0,
              "recorded %d characters, not the last %d of the text", j.t, T);
        check_attention(&j, &model);
        check_predictions(&j, &model);
    }
    free(j.att);
    free(json);
    run_free(&r);
    gpt_free(&model);
}

// ---------------------------------------------------------------------------------------
// ./generate: prompts and errors

TEST(generate_unknown_prompt_character) {
    if (!test_checkpoint()) return;
    const char *prompt = "a\xc3\xa9\xe2\x82\xac b";  // "aé€ b": € is not in the vocabulary
    Run r = run_generate(NULL, ARGS(CKPT, prompt, "-n", "5"));
    CHECK(r.status == 2, "exit status %d, want 2", r.status);
    CHECK(strstr(r.err, "\xe2\x82\xac") && strstr(r.err, "U+20AC") && strstr(r.err, "position 2"),
          "the message should name the character, its code and position: '%s'", r.err);
    CHECK(r.out_len == 0, "wrote '%s' before failing", r.out);
    run_free(&r);
    r = run_generate(NULL, ARGS(CKPT, prompt, "-n", "5", "--skip-unknown"));
    CHECK(r.status == 0, "--skip-unknown: exit status %d: %s", r.status, r.err);
    CHECK(strstr(r.err, "warning") && strstr(r.err, "U+20AC"), "no warning on stderr: '%s'", r.err);
    CHECK(strncmp(r.out, "a\xc3\xa9 b", 5) == 0, "the output should start with the prompt without the €: '%s'", r.out);
    run_free(&r);
}

TEST(generate_invalid_utf8_prompt_file) {
    if (!test_checkpoint()) return;
    const char *path = TMP_DIR "/gen_bad_prompt.txt";
    CHECK(test_write_file(path, "ab\xff cd", 6) == 0, "cannot write %s", path);
    // bad data, exit 1, from a file or from stdin
    Run r = run_generate(NULL, ARGS(CKPT, "-f", path, "-n", "5"));
    CHECK(r.status == 1, "exit status %d, want 1", r.status);
    CHECK(strstr(r.err, "prompt file " TMP_DIR "/gen_bad_prompt.txt is not valid UTF-8 (byte offset 2)") != NULL,
          "message does not name the file and say UTF-8: '%s'", r.err);
    run_free(&r);
    r = run_generate(path, ARGS(CKPT, "-f", "-", "-n", "5"));
    CHECK(r.status == 1 && strstr(r.err, "prompt file stdin is not valid UTF-8"), "-f -: exit status %d: '%s'",
          r.status, r.err);
    run_free(&r);
}

TEST(generate_bad_checkpoints) {
    if (!test_checkpoint()) return;
    const char *missing = TMP_DIR "/gen_no_such.safetensors";
    const char *truncated = TMP_DIR "/gen_truncated.safetensors", *garbage = TMP_DIR "/gen_garbage.safetensors";
    remove(missing);
    size_t len;
    char *bytes = test_read_file(CKPT, &len);
    if (!CHECK(bytes != NULL && len > 100, "cannot read %s", CKPT)) return;
    CHECK(test_write_file(truncated, bytes, len / 2) == 0, "cannot write %s", truncated);
    Rng rng;
    rng_seed(&rng, 9);
    for (size_t i = 0; i < len; i++) bytes[i] = (char)rng_below(&rng, 256);
    CHECK(test_write_file(garbage, bytes, len) == 0, "cannot write %s", garbage);
    free(bytes);
    const char *paths[3] = {missing, truncated, garbage};
    for (int i = 0; i < 3; i++) {
        Run r = run_generate(NULL, ARGS(paths[i], "-n", "5"));
        CHECK(r.status == 1, "%s: exit status %d, want 1", paths[i], r.status);
        CHECK(strstr(r.err, paths[i]) != NULL, "the message does not name the file: '%s'", r.err);
        run_free(&r);
    }
}

TEST(generate_usage_errors) {
    if (!test_checkpoint()) return;
    const char *txt = TMP_DIR "/gen_att.txt";
    remove(txt);
    const char *score_text = TMP_DIR "/gen_score_text.txt";
    CHECK(test_write_file(score_text, "the cat", 7) == 0, "cannot write %s", score_text);
    const char *const *cases[] = {
        ARGS(CKPT, "--stride", "0", "ab"),
        ARGS(CKPT, "--stride", "17", "ab"),  // block size 16
        ARGS(CKPT, "--stride", "x", "ab"),
        ARGS(CKPT, "--num-samples", "0", "ab"),
        ARGS(CKPT, "--num-samples", "2", "--attention", TMP_DIR "/gen_two.json", "ab"),
        ARGS(CKPT, "--surprisal", TMP_DIR "/gen_surprisal.csv", "ab"),
        ARGS(CKPT, "--score", score_text, "ab"),
        ARGS(CKPT, "--score", score_text, "-n", "5"),
        ARGS(CKPT, "--score", score_text, "--num-samples", "2"),
        ARGS(CKPT, "--score", score_text, "--stride", "17"),
        ARGS(CKPT, "--bogus"),
        ARGS(CKPT, "-x"),
        ARGS(CKPT, "--top-p", "0"),
        ARGS(CKPT, "--top-p", "1.5"),
        ARGS(CKPT, "-n", "-1"),
        ARGS(CKPT, "-t", "abc"),
        ARGS(CKPT, "-n"),
        ARGS(CKPT, "--attention", txt, "-n", "3", "ab"),
        ARGS("-n", "3"),
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        Run r = run_generate(NULL, cases[i]);
        CHECK(r.status == 2, "case %zu (%s): exit status %d, want 2", i, cases[i][1] ? cases[i][1] : "", r.status);
        CHECK(strncmp(r.err, "generate: ", 10) == 0 || strstr(r.err, "\ngenerate: "), "case %zu: no message: '%s'", i, r.err);
        run_free(&r);
    }
    CHECK(!test_file_exists(txt), "%s was written", txt);
    CHECK(!test_file_exists(TMP_DIR "/gen_two.json") && !test_file_exists(TMP_DIR "/gen_surprisal.csv"), "a refused run wrote a file");
    Run r = run_generate(NULL, ARGS(CKPT, "--stride", "17", "ab"));
    CHECK(strstr(r.err, "--stride 17") && strstr(r.err, "block size 16"), "--stride 17: '%s'", r.err);
    run_free(&r);
    r = run_generate(NULL, ARGS(CKPT, "--surprisal", TMP_DIR "/gen_surprisal.csv", "ab"));
    CHECK(strstr(r.err, "--score"), "--surprisal without --score: '%s'", r.err);
    run_free(&r);
}

// --ablate: --score's loss with heads knocked out is the mean loss of the model's forward with
// those heads knocked out (the forward itself is checked against the reference in test_model),
// not the whole model's; a head the model lacks, or an item that is not LAYER.HEAD, is refused.
TEST(generate_ablate) {
    if (!test_checkpoint()) return;
    const char *text = "the cat sat.", *path = TMP_DIR "/gen_ablate.txt";  // within the block of 16
    CHECK(test_write_file(path, text, strlen(text)) == 0, "cannot write %s", path);
    int n = (int)strlen(text), tokens[32];
    for (int i = 0; i < n; i++) tokens[i] = token_of((unsigned char)text[i]);
    GPT model;
    char err[ERR_LEN];
    if (build_test_model(&model, &PROGRAM_CONFIG, 42) != 0) return;
    if (!CHECK(gpt_alloc_activations(&model, 1, err) == 0, "%s", err)) return;
    static const char *const lists[] = {NULL, "1.2", "0.0,1.1,0.0"};
    static const ActivationEdit heads[3][2] = {  // the heads zeroed (layer, head)
        {{0}}, {{.layer = 1, .head = 2}}, {{.layer = 0, .head = 0}, {.layer = 1, .head = 1}}};
    const ForwardHooks hooks[3] = {{.heads = NULL}, {.heads = heads[1], .n_heads = 1}, {.heads = heads[2], .n_heads = 2}};
    double whole = 0.0;
    for (int k = 0; k < 3; k++) {
        Run r = lists[k] ? run_generate(NULL, ARGS(CKPT, "--score", path, "--ablate", lists[k]))
                         : run_generate(NULL, ARGS(CKPT, "--score", path));
        const char *at = strstr(r.out, "): ");
        double nats = at ? atof(at + 3) : NAN;
        model.hooks = lists[k] ? &hooks[k] : NULL;
        gpt_forward(&model, tokens, tokens + 1, 1, n - 1, NULL);
        CHECK(r.status == 0 && fabs(nats - model.mean_loss) < 1e-5, "--ablate %s: --score says %.6f nats, the "
              "forward %.6f (status %d: %s)", lists[k] ? lists[k] : "none", nats, model.mean_loss, r.status, r.err);
        if (k == 0) whole = nats;
        else CHECK(fabs(nats - whole) > 1e-3, "--ablate %s changed nothing: %.6f nats", lists[k], nats);
        run_free(&r);
    }
    gpt_free(&model);
    static const char *const bad[][2] = {{"2.0", "2.0"}, {"0.3", "0.3"}, {"1", "'1'"}, {"1.2,", "''"},
                                         {"a.b", "'a.b'"}, {"1.-1", "'1.-1'"}, {"1.2x", "'1.2x'"}};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        Run r = run_generate(NULL, ARGS(CKPT, "--ablate", bad[i][0], "-n", "3", "ab"));
        CHECK(r.status == 2 && strstr(r.err, "--ablate") && strstr(r.err, bad[i][1]),
              "--ablate %s: status %d, message '%s'", bad[i][0], r.status, r.err);
        run_free(&r);
    }
}

TEST(generate_prompt_from_stdin_and_empty_prompt) {
    if (!test_checkpoint()) return;
    const char *prompt = "the cat";
    const char *path = TMP_DIR "/gen_stdin.txt";
    CHECK(test_write_file(path, prompt, strlen(prompt)) == 0, "cannot write %s", path);
    Run from_stdin = run_generate(path, ARGS(CKPT, "-f", "-", "-t", "0", "-n", "30"));
    Run from_arg = run_generate(NULL, ARGS(CKPT, prompt, "-t", "0", "-n", "30"));
    CHECK(from_stdin.status == 0, "-f -: exit status %d: %s", from_stdin.status, from_stdin.err);
    CHECK(strncmp(from_stdin.out, prompt, strlen(prompt)) == 0, "-f - did not read the prompt: '%s'", from_stdin.out);
    CHECK(strcmp(from_stdin.out, from_arg.out) == 0, "stdin and argument prompts differ:\n%s\n%s", from_stdin.out,
          from_arg.out);
    run_free(&from_stdin), run_free(&from_arg);

    // an empty prompt starts from a newline that is not printed
    Run empty = run_generate(NULL, ARGS(CKPT, "", "-t", "0", "-n", "30"));
    Run newline = run_generate(NULL, ARGS(CKPT, "\n", "-t", "0", "-n", "30"));
    CHECK(empty.status == 0 && newline.status == 0, "exit statuses %d %d: %s", empty.status, newline.status, empty.err);
    CHECK(newline.out[0] == '\n' && strcmp(empty.out, newline.out + 1) == 0,
          "the empty prompt's output should be the text generated after a newline:\n'%s'\n'%s'", empty.out, newline.out);
    uint32_t chars[128];
    CHECK(decode(empty.out, empty.out_len, chars) == 31, "want 30 characters and a newline: '%s'", empty.out);
    CHECK(strstr(empty.err, "chars/s") != NULL, "no chars/s line on stderr: '%s'", empty.err);
    run_free(&empty), run_free(&newline);
    // -n 0 with no prompt: nothing to do, nothing printed
    Run nothing = run_generate(NULL, ARGS(CKPT, "-n", "0"));
    CHECK(nothing.status == 0 && nothing.out_len == 0, "-n 0 without a prompt: status %d output '%s'", nothing.status,
          nothing.out);
    run_free(&nothing);
}

// A prompt that starts with '-' is read as the prompt after "--"; before it, it is an
// unknown option (exit 2), whose message says to use "--", never the help with exit 0.
TEST(generate_prompt_starting_with_dash) {
    if (!test_checkpoint()) return;
    Run before = run_generate(NULL, ARGS(CKPT, "-hi"));
    CHECK(before.status == 2, "CKPT -hi: exit status %d, want 2: %s", before.status, before.err);
    CHECK(strstr(before.err, "unknown option '-hi'") && strstr(before.err, "-- '-hi'"),
          "CKPT -hi: the message does not suggest --: '%s'", before.err);
    CHECK(!strstr(before.out, "usage:"), "CKPT -hi printed the help");
    run_free(&before);
    Run other = run_generate(NULL, ARGS(CKPT, "-ROMEO"));
    CHECK(other.status == 2 && strstr(other.err, "goes after '--'"), "CKPT -ROMEO: status %d: '%s'", other.status,
          other.err);
    run_free(&other);
    // after "--": the prompt; '-' is not in the test vocabulary, so it is that error (exit 2)...
    Run after = run_generate(NULL, ARGS(CKPT, "-t", "0", "-n", "5", "--", "-hi"));
    CHECK(after.status == 2 && strstr(after.err, "'-'") && !strstr(after.err, "option"),
          "CKPT -n 5 -- -hi: status %d: '%s'", after.status, after.err);
    run_free(&after);
    // ... and with --skip-unknown the text is that of the prompt "hi"
    Run skipped = run_generate(NULL, ARGS(CKPT, "-t", "0", "-n", "5", "--skip-unknown", "--", "-hi"));
    Run plain = run_generate(NULL, ARGS(CKPT, "-t", "0", "-n", "5", "hi"));
    CHECK(skipped.status == 0 && plain.status == 0, "statuses %d %d: %s", skipped.status, plain.status, skipped.err);
    CHECK(strcmp(skipped.out, plain.out) == 0 && strncmp(plain.out, "hi", 2) == 0,
          "-- -hi with --skip-unknown printed '%s', the prompt hi '%s'", skipped.out, plain.out);
    CHECK(strstr(skipped.err, "dropped 1 character"), "the dropped '-' is not reported: '%s'", skipped.err);
    run_free(&skipped), run_free(&plain);
    Run help = run_generate(NULL, ARGS(CKPT, "-h"));
    CHECK(help.status == 0 && strstr(help.out, "-- PROMPT"), "-h: status %d, help lacks '-- PROMPT': '%s'",
          help.status, help.out);
    run_free(&help);
}

// --attention given several times writes every file from one run, and a file whose
// directory does not exist is refused before the model runs (no file written at all).
TEST(generate_several_attention_files) {
    if (!test_checkpoint()) return;
    const char *html = TMP_DIR "/gen_multi.html", *json = TMP_DIR "/gen_multi.json";
    remove(html), remove(json);
    Run r = run_generate(NULL, ARGS(CKPT, "-n", "0", "--attention", html, "--attention", json, "the cat"));
    CHECK(r.status == 0, "two --attention files: status %d: %s", r.status, r.err);
    CHECK(test_file_exists(html) && test_file_exists(json), "not every --attention file was written: %s", r.err);
    run_free(&r);
    size_t len;
    char *text = test_read_file(json, &len);
    CHECK(text && strstr(text, "\"attention\""), "%s holds no attention", json);
    free(text);
    remove(html), remove(json);
    r = run_generate(NULL, ARGS(CKPT, "-n", "3", "--attention", html, "--attention", TMP_DIR "/no_such_dir/a.png",
                                "the cat"));
    CHECK(r.status == 1 && strstr(r.err, "no_such_dir"), "a missing directory: status %d: '%s'", r.status, r.err);
    CHECK(r.out_len == 0, "the model ran before the directories were checked: '%s'", r.out);
    CHECK(!test_file_exists(html), "%s was written though another --attention file cannot be", html);
    run_free(&r);
}

// An --attention or --surprisal file that is there already is refused without --force (exit 2,
// naming the file and --force, the file as it was and the model never run), and replaced with it.
TEST(generate_existing_outputs_need_force) {
    if (!test_checkpoint()) return;
    const char *html = TMP_DIR "/gen_existing.html", *csv = TMP_DIR "/gen_existing.csv";
    const char *text = TMP_DIR "/gen_existing.txt";
    test_write_file(text, "the cat", 7);
    test_write_file(html, "mine", 4);
    test_write_file(csv, "mine", 4);
    Run r = run_generate(NULL, ARGS(CKPT, "-n", "3", "--attention", html, "the cat"));
    CHECK(r.status == 2 && strstr(r.err, "--attention " TMP_DIR "/gen_existing.html exists: give --force"),
          "an existing --attention file: status %d: '%s'", r.status, r.err);
    CHECK(r.out_len == 0, "the model ran before the existing file was refused: '%s'", r.out);
    run_free(&r);
    r = run_generate(NULL, ARGS(CKPT, "--score", text, "--surprisal", csv));
    CHECK(r.status == 2 && strstr(r.err, "--surprisal " TMP_DIR "/gen_existing.csv exists: give --force"),
          "an existing --surprisal file: status %d: '%s'", r.status, r.err);
    run_free(&r);
    size_t len;
    char *kept = test_read_file(html, &len);
    CHECK(kept && len == 4 && memcmp(kept, "mine", 4) == 0, "the refused run changed %s", html);
    free(kept);
    r = run_generate(NULL, ARGS(CKPT, "-n", "0", "--attention", html, "--force", "the cat"));
    CHECK(r.status == 0, "--attention with --force: status %d: %s", r.status, r.err);
    run_free(&r);
    kept = test_read_file(html, &len);
    CHECK(kept && strstr(kept, "<html"), "--force did not replace %s", html);
    free(kept);
    r = run_generate(NULL, ARGS(CKPT, "--score", text, "--surprisal", csv, "--force"));
    CHECK(r.status == 0, "--surprisal with --force: status %d: %s", r.status, r.err);
    run_free(&r);
    kept = test_read_file(csv, &len);
    CHECK(kept && len > 4 && memcmp(kept, "mine", 4) != 0, "--force did not replace %s", csv);
    free(kept);
    remove(html), remove(csv), remove(text);
}
