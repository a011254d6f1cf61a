// ./scripts/bench: how fast chargpt trains and generates, and how close the training step
// comes to the machine's floating-point peak. Dataset-free: batches are random tokens, which
// cost what text costs (the same shapes, the same operations). `make bench` runs it through
// scripts/bench.sh, which puts PyTorch's figures beside its own.
//
// Models (--config): lesson (2 layers, 4 heads, n_embd 64, block 64, batch 32: the size the
// lessons train), tiny (./train's default model: 4 layers, 4 heads, n_embd 128, block 64,
// batch 12) and small (6 layers, 6 heads, n_embd 384, block 256, batch 8). For each, the
// jobs (--jobs), each in a child process of its own (so peak RSS is per job):
//   peak:     the FMA peak of the kernels' instruction set (below), on one thread then on
//             every OpenMP thread; after the other jobs, which so meet the machine as ./train
//             does rather than warmed by seconds of every core's multiply-adds;
//   train:    the training step exactly as ./train takes it (data_parallel_step's one-process
//             path: forward with targets, backward, global gradient norm, clipping, AdamW, the
//             thread tuner picking the team), a few warm-up steps, then timed steps. ms/step
//             is the timed steps' wall time over their count, as ./train's progress line and
//             summary count it, so that the two agree on the same machine; the median and
//             fastest steps are printed too, and the core-to-core round trip before and
//             after them (core_round_trip_ns: where a VM's host put its processors);
//   generate: characters per second as ./generate makes them, with the key/value cache and
//             with --no-cache (the whole window recomputed for every character), on the
//             team the tuner picks, and on one thread (--threads 1), runs of the two in turn;
//   samples:  the same with --num-samples 1, 8 and 32;
//   products: each linear layer's products alone, on the shapes of the config's step (its
//             N = batch x block rows): the forward and the backward (input gradient, weight
//             and bias gradients; the head, tied to wte, has no bias) as kernels.h runs them,
//             in a workspace holding the weight, called over and over by one team of every
//             OpenMP thread, as inside the step (PRODUCT_SECONDS each); the median call's
//             GFLOP/s, which beside the step's own says how much of the step the products are
//             not (not in `make bench`'s tables).
// Both in fp32 or, with --precision bf16, with bf16 matrix products (kernels/kernels.h).
// With --paired: an fp32 and a bf16 model of each config in one process, their training steps
// taken in turn (fp32, bf16, fp32, ...), then their generated characters (with the cache), so
// that both precisions meet the same load on a shared machine and their ratio is not a
// comparison of two different minutes.
//
// Everything runs on the kernels' backend in use (kernels.h: CHARGPT_KERNELS's, else the
// fastest this CPU runs), named in each result. The FMA peak is that of the backend's own
// instruction set (for bf16 on vdpbf16ps, that instruction's), measured by a loop of
// independent multiply-adds held in registers, each thread timed by its own CPU time, so
// that it is the cores' limit even while other processes share them; a training result
// (timed by the wall clock) is a share of it.
//
// Output: one line per result, "kind key=value ...", read by scripts/bench.sh. Progress
// goes to stderr. Exit status (common/errors.h): 0 done, 1 a measurement failed, 2 bad usage,
// 3 non-finite loss.
//
// FLOPs of one training step, counting a multiply-add as 2, over N = B*T tokens (A = H*hs):
//   matmuls, forward:   2 * N * (L * (3A*C + A*C + 4C*C + 4C*C) + V*C)
//                       (c_attn, attn c_proj, mlp c_fc, mlp c_proj, and the head tied to wte)
//   attention, forward: L * 2 * 2 * B * H * (T*(T+1)/2) * hs
//                       (q.k and att@v over the causal triangle of T*(T+1)/2 pairs per head)
//   backward = 2 x forward (each matmul needs the gradient of its input and of its weight;
//   attention's backward has four triangle-sized products to the forward's two), so
//   step = 3 x forward. LayerNorm, GELU, softmax, cross-entropy and AdamW are O(N*C) or
//   O(params) and are left out, as is the embedding lookup.
// Independent estimate: 6 * params * N + L * 6 * C * T * N (all parameters, including wpe,
// biases and LayerNorm, times 6 per token; attention as PaLM's 12*L*C*T per token, halved
// for the causal mask). The two agree to within 6% (the estimate also counts wpe, biases and
// LayerNorm as 6 FLOPs per token each, and T where the formula has T+1; they weigh most in
// the narrowest model):
//   lesson: 1.3613 GFLOP/step by the formula above, 1.4321 by the estimate (+5.2%)
//   tiny:   3.8156 GFLOP/step by the formula above, 3.8828 by the estimate (+1.8%)
//   small:  138.04 GFLOP/step by the formula above, 139.60 by the estimate (+1.1%)
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <omp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__SSE2__)
#include <immintrin.h>
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif

#include "../common/clock.h"
#include "../common/errors.h"
#include "../common/platform.h"
#include "../common/program.h"
#include "../common/rng.h"
#include "../generation/decoder.h"
#include "../generation/sampler.h"
#include "../kernels/kernels.h"
#include "../kernels/parallel.h"
#include "../model/adamw.h"
#include "../model/gpt.h"
#include "../model/train_step.h"

// Training hyperparameters as ./train's defaults (a constant learning rate: the schedule
// does not change the work).
#define LEARNING_RATE 1e-3f
#define GRAD_CLIP 1.0f
#define PROMPT_LEN 8
#define MIN_TIMED_STEPS 3
#define PEAK_RUNS 5
#define PRODUCT_SECONDS 0.5
#define PRODUCT_MIN_CALLS 5
#define SEED 1337

typedef struct {
    const char *name;
    int n_layer, n_head, n_embd, block_size, batch_size, vocab_size;
} BenchConfig;

static const BenchConfig configs[] = {
    {"lesson", 2, 4, 64, 64, 32, 65},
    {"tiny", 4, 4, 128, 64, 12, 65},
    {"small", 6, 6, 384, 256, 8, 65},
};
#define NUM_CONFIGS ((int)(sizeof(configs) / sizeof(configs[0])))

// The jobs (the top comment), as bits of Options.jobs.
enum { JOB_PEAK = 1, JOB_TRAIN = 2, JOB_GENERATE = 4, JOB_SAMPLES = 8, JOB_PRODUCTS = 16 };
static const char *const job_names[] = {"peak", "train", "generate", "samples", "products"};
#define NUM_JOBS 5

typedef struct {
    int config_mask;      // bit i: configs[i]
    int jobs;             // JOB_* bits
    double seconds;       // timed training seconds to aim for per config
    long steps;           // timed training steps; 0: as many as `seconds` takes
    int warmup;           // untimed training steps first
    long gen_chars;       // characters per generation run
    double gen_seconds;   // a generation run stops early after this long
    int paired;           // fp32 and bf16 steps and characters in turn, instead of the jobs
    int long_gen;         // generation with the cache alone, past the block, instead of the jobs
    Precision precision;
    PositionEncoding position;  // of every model benchmarked
} Options;

static long peak_rss_kb(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return platform_max_rss_kib(ru.ru_maxrss);
}

// CPU seconds (user + system) this process has used, all threads together.
static double cpu_seconds(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + 1e-6 * (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

// ----------------------------------------------------------------------------
// the FMA peak of each instruction set a backend uses: `accumulators` independent chains of
// acc = acc * a + b, enough to cover the FMA latency on every FMA port, all held in
// registers. Each loop is compiled for its instruction set alone (a target attribute) and
// run only on a CPU that has it. Each runs iters rounds and returns the chains' sum, so none
// is dead; the chains converge to b / (1 - a) = 1, far from overflow and denormals.

#if defined(__x86_64__)
__attribute__((target("avx512f"))) static float fma_loop_avx512(long iters, float start) {
    const __m512 a = _mm512_set1_ps(0.999f), b = _mm512_set1_ps(0.001f);
    __m512 acc[16];
    for (int k = 0; k < 16; k++) acc[k] = _mm512_set1_ps(start + 0.01f * k);
    for (long i = 0; i < iters; i++) {
#pragma GCC unroll 16
        for (int k = 0; k < 16; k++) acc[k] = _mm512_fmadd_ps(acc[k], a, b);
    }
    float sum = 0.0f;
    for (int k = 0; k < 16; k++) sum += _mm512_reduce_add_ps(acc[k]);
    return sum;
}

__attribute__((target("avx2,fma"))) static float fma_loop_avx2(long iters, float start) {
    const __m256 a = _mm256_set1_ps(0.999f), b = _mm256_set1_ps(0.001f);
    __m256 acc[12];
    for (int k = 0; k < 12; k++) acc[k] = _mm256_set1_ps(start + 0.01f * k);
    for (long i = 0; i < iters; i++) {
#pragma GCC unroll 12
        for (int k = 0; k < 12; k++) acc[k] = _mm256_fmadd_ps(acc[k], a, b);
    }
    float lanes[8], sum = 0.0f;
    for (int k = 0; k < 12; k++) {
        _mm256_storeu_ps(lanes, acc[k]);
        for (int i = 0; i < 8; i++) sum += lanes[i];
    }
    return sum;
}

// The bf16 dot products' peak: vdpbf16ps adds two products into each of 16 lanes, 4 FLOPs
// a lane (where the FMA loop counts 2); each chain grows by 2 x 0.996 x 0.0039 a round, far
// from overflow.
__attribute__((target("avx512f,avx512bf16"))) static float dot_loop_avx512_bf16(long iters, float start) {
    const __m512bh a = (__m512bh)_mm512_set1_epi32(0x3F7F3F7F), b = (__m512bh)_mm512_set1_epi32(0x3B803B80);
    __m512 acc[16];
    for (int k = 0; k < 16; k++) acc[k] = _mm512_set1_ps(start + 0.01f * k);
    for (long i = 0; i < iters; i++) {
#pragma GCC unroll 16
        for (int k = 0; k < 16; k++) acc[k] = _mm512_dpbf16_ps(acc[k], a, b);
    }
    float sum = 0.0f;
    for (int k = 0; k < 16; k++) sum += _mm512_reduce_add_ps(acc[k]);
    return sum;
}

static int cpu_has_avx512(void) { return __builtin_cpu_supports("avx512f"); }
static int cpu_has_avx512_bf16(void) { return cpu_has_avx512() && __builtin_cpu_supports("avx512bf16"); }
static int cpu_has_avx2(void) { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }
#endif

#if defined(__aarch64__)
static float fma_loop_neon(long iters, float start) {
    const float32x4_t a = vdupq_n_f32(0.999f), b = vdupq_n_f32(0.001f);
    float32x4_t acc[16];
    for (int k = 0; k < 16; k++) acc[k] = vdupq_n_f32(start + 0.01f * k);
    for (long i = 0; i < iters; i++) {
#pragma GCC unroll 16
        for (int k = 0; k < 16; k++) acc[k] = vfmaq_f32(b, acc[k], a);
    }
    float sum = 0.0f;
    for (int k = 0; k < 16; k++) sum += vaddvq_f32(acc[k]);
    return sum;
}

static int cpu_has_neon(void) { return 1; }
#endif

// The portable peak: multiplies and adds (the portable backend's C has no fused ones), on the
// baseline's vectors where it has them (SSE2, AArch64's NEON: 4 lanes; the portable backend's
// loops are vectorised for them), else on scalars.
#if defined(__aarch64__)
#define PORTABLE_LANES 4
static float fma_loop_portable(long iters, float start) {
    const float32x4_t a = vdupq_n_f32(0.999f), b = vdupq_n_f32(0.001f);
    float32x4_t acc[12];
    for (int k = 0; k < 12; k++) acc[k] = vdupq_n_f32(start + 0.01f * k);
    for (long i = 0; i < iters; i++) {
#pragma GCC unroll 12
        for (int k = 0; k < 12; k++) acc[k] = vaddq_f32(vmulq_f32(acc[k], a), b);
    }
    float sum = 0.0f;
    for (int k = 0; k < 12; k++) sum += vaddvq_f32(acc[k]);
    return sum;
}
#elif defined(__SSE2__)
#define PORTABLE_LANES 4
static float fma_loop_portable(long iters, float start) {
    const __m128 a = _mm_set1_ps(0.999f), b = _mm_set1_ps(0.001f);
    __m128 acc[12];
    for (int k = 0; k < 12; k++) acc[k] = _mm_set1_ps(start + 0.01f * k);
    for (long i = 0; i < iters; i++) {
#pragma GCC unroll 12
        for (int k = 0; k < 12; k++) acc[k] = _mm_add_ps(_mm_mul_ps(acc[k], a), b);
    }
    float lanes[4], sum = 0.0f;
    for (int k = 0; k < 12; k++) {
        _mm_storeu_ps(lanes, acc[k]);
        for (int i = 0; i < 4; i++) sum += lanes[i];
    }
    return sum;
}
#else
#define PORTABLE_LANES 1
static float fma_loop_portable(long iters, float start) {
    const float a = 0.999f, b = 0.001f;
    float acc[12];
    for (int k = 0; k < 12; k++) acc[k] = start + 0.01f * k;
    for (long i = 0; i < iters; i++) {
#pragma GCC unroll 12
        for (int k = 0; k < 12; k++) acc[k] = acc[k] * a + b;
    }
    float sum = 0.0f;
    for (int k = 0; k < 12; k++) sum += acc[k];
    return sum;
}
#endif

static int cpu_has_baseline(void) { return 1; }

// The loops, named as the backends that use them (a backend's name starts with its loop's),
// and the bf16 dot products' (vdpbf16ps), which the avx512_bf16 kernels' bf16 products use.
typedef struct {
    const char *name;
    double flops_per_iter;  // a multiply and an add per lane of every accumulator
    float (*loop)(long iters, float start);
    int (*cpu_has)(void);
} FmaLoop;

static const FmaLoop fma_loops[] = {
#if defined(__x86_64__)
    {"vdpbf16ps", 4.0 * 16 * 16, dot_loop_avx512_bf16, cpu_has_avx512_bf16},
    {"avx512", 2.0 * 16 * 16, fma_loop_avx512, cpu_has_avx512},
    {"avx2", 2.0 * 12 * 8, fma_loop_avx2, cpu_has_avx2},
#elif defined(__aarch64__)
    {"neon", 2.0 * 16 * 4, fma_loop_neon, cpu_has_neon},
#endif
    {"portable", 2.0 * 12 * PORTABLE_LANES, fma_loop_portable, cpu_has_baseline},
};
#define NUM_FMA_LOOPS ((int)(sizeof(fma_loops) / sizeof(fma_loops[0])))

// The loop of a run's products: vdpbf16ps for bf16 on the avx512_bf16 kernels, else the FMA
// loop of the backend in use (bf16 without bf16 dot products runs on its fp32 tiles; bf16 on
// avx512_amx's tiles is measured against the FMA loop too, for no loop here runs AMX).
static int fma_loop_of_run(Precision precision) {
    const char *name = precision == PRECISION_BF16 && strcmp(kernels_name(), "avx512_bf16") == 0 ? "vdpbf16ps"
                                                                                                : kernels_name();
    for (int i = 0; i < NUM_FMA_LOOPS; i++)
        if (strncmp(name, fma_loops[i].name, strlen(fma_loops[i].name)) == 0) return i;
    return NUM_FMA_LOOPS - 1;
}

// Read before and written after every timed loop, so the compiler can neither hoist a loop
// out of the timing nor drop it.
static volatile float fma_start = 1.0f, fma_sink;

// The CPU time of the calling thread, in seconds.
static double thread_cpu_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

// GFLOP/s of loop f (iters rounds) on `threads` threads at once, each timed by its own CPU
// time: what the cores do while the loop has them, however often other processes take them
// (the measure of the hardware, where a training run's wall time measures the run). The
// shortest thread's CPU seconds go to *secs.
static double time_fma(const FmaLoop *f, int threads, long iters, double *secs) {
    double gflops = 0.0, shortest = INFINITY;
    float total = 0.0f;
#pragma omp parallel num_threads(threads) reduction(+ : total, gflops) reduction(min : shortest)
    {
        double t0 = thread_cpu_seconds();
        total += f->loop(iters, fma_start + omp_get_thread_num());
        double t = thread_cpu_seconds() - t0;
        gflops += iters * f->flops_per_iter / t / 1e9;
        shortest = t;
    }
    fma_sink = total;
    *secs = shortest;
    return gflops;
}

// GFLOP/s of loop f on `threads` threads at once: the best of PEAK_RUNS runs of at least
// 0.2 CPU seconds a thread.
static double fma_peak(const FmaLoop *f, int threads) {
    long iters = 1 << 16;
    double secs;
    for (time_fma(f, threads, iters, &secs); secs < 0.2; time_fma(f, threads, iters, &secs)) iters *= 2;
    double best = 0.0;
    for (int run = 0; run < PEAK_RUNS; run++) best = fmax(best, time_fma(f, threads, iters, &secs));
    return best;
}

// ----------------------------------------------------------------------------
// FLOP counts (see the formula at the top)

static double flops_per_step(const BenchConfig *bc) {
    double B = bc->batch_size, T = bc->block_size, L = bc->n_layer, C = bc->n_embd;
    double V = bc->vocab_size, H = bc->n_head, hs = C / H, A = H * hs, N = B * T;
    double matmul_params = L * (3 * A * C + A * C + 4 * C * C + 4 * C * C) + V * C;
    double forward = 2.0 * N * matmul_params + L * 2.0 * 2.0 * B * H * (T * (T + 1) / 2) * hs;
    return 3.0 * forward;
}

static double flops_estimate(const BenchConfig *bc, size_t num_parameters) {
    double N = (double)bc->batch_size * bc->block_size;
    return 6.0 * num_parameters * N + bc->n_layer * 6.0 * bc->n_embd * bc->block_size * N;
}

// ----------------------------------------------------------------------------
// the jobs, each run in a child process

static void build_model(GPT *model, const BenchConfig *bc, Precision precision, PositionEncoding position) {
    GPTConfig config = {bc->vocab_size, bc->block_size, bc->n_layer, bc->n_head,
                        bc->n_embd, bc->n_embd / bc->n_head, 1, 0.0f, position};
    char err[ERR_LEN];
    if (gpt_build(model, &config, 1, err) != 0) die(EXIT_DATA, "%s: %s", bc->name, err);
    gpt_init_weights(model, SEED);
    if (gpt_set_precision(model, precision, err) != 0) die(EXIT_DATA, "%s: %s", bc->name, err);
}

// "fp32", or "bf16:vdpbf16ps": the precision and path as one word, + for spaces
static const char *precision_word(Precision precision) {
    static char word[96];
    char text[96], *path = text;
    if (precision == PRECISION_FP32) return "fp32";
    precision_describe(precision, text, sizeof(text));  // "bf16 (path), kernels ..."
    path += strcspn(path, "(") + 1;
    path[strcspn(path, ")")] = '\0';
    snprintf(word, sizeof(word), "bf16:%s", path);
    for (char *c = word; *c; c++)
        if (*c == ' ') *c = '+';
    return word;
}

// Random tokens (B, T+1) as inputs (B, T) and their next tokens as targets (B, T).
static void random_batch(Rng *rng, int B, int T, int V, int *inputs, int *targets) {
    for (int b = 0; b < B; b++) {
        int prev = (int)rng_below(rng, (uint64_t)V);
        for (int t = 0; t < T; t++) {
            int next = (int)rng_below(rng, (uint64_t)V);
            inputs[b * T + t] = prev;
            targets[b * T + t] = next;
            prev = next;
        }
    }
}

// One optimizer step as ./train does it. Returns the loss; exits 3 if it is not finite.
static float bench_step(GPT *model, AdamW *opt, Rng *rng, int *inputs, int *targets, int B, int T) {
    random_batch(rng, B, T, model->config.vocab_size, inputs, targets);
    double norm = train_step(model, opt, inputs, targets, B, T, SEED, LEARNING_RATE, GRAD_CLIP);
    if (!isfinite(model->mean_loss) || !isfinite(norm))
        die(EXIT_NONFINITE, "training step: %s is not finite", isfinite(model->mean_loss) ? "the gradient norm" : "the loss");
    return model->mean_loss;
}

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

// The median of v[0, n), sorting v.
static double median_of(double *v, long n) {
    qsort(v, (size_t)n, sizeof(double), compare_doubles);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// The micro-batches ./train cuts this model's steps into (model/train_step.h), if any.
static int alloc_micro_batches(GPT *model, int B, char err[ERR_LEN]) {
    int sequences = train_step_micro_sequences(&model->config, model->precision, B);
    return sequences < B ? gpt_alloc_micro_batches(model, B, sequences, err) : 0;
}

// The time a cache line takes from OpenMP thread 0 to thread 1 and back, in ns (0 without a
// second thread): a counter the two advance in turn, ROUND_TRIPS times or until
// ROUND_TRIP_SECONDS have passed (beside a busy process the two may share a processor, and
// each turn then waits for a time slice). On a virtual machine it says where the host put the
// two virtual processors, which changes within minutes and which the step on two threads
// follows: every line of data one thread writes and the other reads makes this trip. On an
// AMD EPYC (Zen 5) it read 97-123 ns while they shared a cache and 413-836 ns while they did
// not, and tiny's step took 12.9-13.5 against 15.9-16.5 ms (docs/benchmarks.md).
#define ROUND_TRIPS 200000
#define ROUND_TRIP_SECONDS 0.05
static double core_round_trip_ns(void) {
    if (omp_get_max_threads() < 2) return 0.0;
    static _Alignas(64) _Atomic long turn;  // odd: thread 1's; even: thread 0's; -1: stop
    atomic_store(&turn, 0);
    long trips = 0;
    double secs = 0.0;
#pragma omp parallel num_threads(2)
    if (omp_get_num_threads() == 2) {  // a team of one has no partner to wait for
        if (omp_get_thread_num() == 0) {
            double t0 = now_seconds();
            for (; trips < ROUND_TRIPS && (trips % 8 || now_seconds() - t0 < ROUND_TRIP_SECONDS); trips++) {
                atomic_store_explicit(&turn, 2 * trips + 1, memory_order_release);
                while (atomic_load_explicit(&turn, memory_order_acquire) != 2 * trips + 2) {}
            }
            secs = now_seconds() - t0;
            atomic_store(&turn, -1);
        } else {
            for (long seen; (seen = atomic_load_explicit(&turn, memory_order_acquire)) != -1;)
                if (seen % 2 == 1) atomic_store_explicit(&turn, seen + 1, memory_order_release);
        }
    }
    return trips ? 1e9 * secs / trips : 0.0;
}

static void run_train(const BenchConfig *bc, const Options *o) {
    const int B = bc->batch_size, T = bc->block_size;
    GPT model;
    build_model(&model, bc, o->precision, o->position);
    char err[ERR_LEN];
    if (gpt_alloc_activations(&model, B, err) != 0 || alloc_micro_batches(&model, B, err) != 0)
        die(EXIT_DATA, "%s: %s", bc->name, err);
    AdamW opt;
    if (adamw_init(&opt, &model, 0.9f, 0.99f, 1e-8f, 0.1f, err) != 0) die(EXIT_DATA, "%s: %s", bc->name, err);
    int *inputs = malloc((size_t)B * T * sizeof(int)), *targets = malloc((size_t)B * T * sizeof(int));
    if (!inputs || !targets) die(EXIT_DATA, "out of memory");
    Rng rng;
    rng_seed(&rng, SEED);

    // warm-up: page in every buffer and start the thread pool
    float first_loss = bench_step(&model, &opt, &rng, inputs, targets, B, T);
    for (int i = 1; i < o->warmup; i++) bench_step(&model, &opt, &rng, inputs, targets, B, T);
    fprintf(stderr, "bench: %s: training\n", bc->name);

    // timed: --steps steps, or else at least MIN_TIMED_STEPS and --seconds
    long steps = 0, capacity = 64;
    double *step_secs = malloc((size_t)capacity * sizeof(double));
    if (!step_secs) die(EXIT_DATA, "out of memory");
    float loss = NAN;
    long thread_steps = 0;  // sum over the timed steps of the threads each ran on
    double trip_before = core_round_trip_ns();
    double start = now_seconds(), cpu_start = cpu_seconds(), total = 0.0;
    while (o->steps ? steps < o->steps : (steps < MIN_TIMED_STEPS || total < o->seconds)) {
        if (steps == capacity) {
            step_secs = realloc(step_secs, (size_t)(capacity *= 2) * sizeof(double));
            if (!step_secs) die(EXIT_DATA, "out of memory");
        }
        double t0 = now_seconds();
        loss = bench_step(&model, &opt, &rng, inputs, targets, B, T);
        step_secs[steps++] = now_seconds() - t0;
        thread_steps += train_step_threads(&model);
        total = now_seconds() - start;
    }
    double cpu = cpu_seconds() - cpu_start;
    long rss = peak_rss_kb();
    double trip_after = core_round_trip_ns();

    // ms/step as ./train counts it: the timed steps' wall time over their count (the
    // tok/s of its summary line); the median and the fastest step beside it
    double mean = total / steps;
    double median = median_of(step_secs, steps);  // sorts: step_secs[0] is the fastest step
    double flops = flops_per_step(bc);
    double gflops = flops / mean / 1e9;
    printf("train config=%s precision=%s threads=%d kernel=%s layers=%d heads=%d n_embd=%d block=%d batch=%d vocab=%d "
           "params=%zu warmup=%d steps=%ld ms_per_step=%.3f ms_median=%.3f ms_min=%.3f tok_per_s=%.1f "
           "gflop_per_step=%.4f gflop_per_step_estimate=%.4f gflops=%.2f ",
           bc->name, precision_word(o->precision), omp_get_max_threads(), kernels_name(), bc->n_layer, bc->n_head,
           bc->n_embd, T, B, bc->vocab_size, model.num_parameters, o->warmup, steps, 1000.0 * mean, 1000.0 * median,
           1000.0 * step_secs[0], B * T / mean, flops / 1e9, flops_estimate(bc, model.num_parameters) / 1e9, gflops);
    printf("peak_path=%s rss_kb=%ld cpu_pct=%.0f cpu_ms_per_step=%.3f threads_mean=%.2f first_loss=%.4f last_loss=%.4f "
           "round_trip_ns_before=%.0f round_trip_ns_after=%.0f\n",
           fma_loops[fma_loop_of_run(o->precision)].name, rss, 100.0 * cpu / (total * omp_get_max_threads()),
           1000.0 * cpu / steps, (double)thread_steps / steps, first_loss, loss, trip_before, trip_after);
    fflush(stdout);
    free(step_secs);
    free(inputs);
    free(targets);
    adamw_free(&opt);
    gpt_free(&model);
}

// --paired: an fp32 and a bf16 model, the same weights and batches, their steps in turn.
// Prints each one's median step and the median over pairs of fp32 time / bf16 time.
static void run_train_paired(const BenchConfig *bc, const Options *o) {
    const int B = bc->batch_size, T = bc->block_size;
    GPT models[2];
    AdamW opts[2];
    Rng rngs[2];
    char err[ERR_LEN];
    for (int p = 0; p < 2; p++) {
        build_model(&models[p], bc, p ? PRECISION_BF16 : PRECISION_FP32, o->position);
        if (gpt_alloc_activations(&models[p], B, err) != 0 || alloc_micro_batches(&models[p], B, err) != 0 ||
            adamw_init(&opts[p], &models[p], 0.9f, 0.99f, 1e-8f, 0.1f, err) != 0)
            die(EXIT_DATA, "%s: %s", bc->name, err);
        rng_seed(&rngs[p], SEED);
    }
    int *inputs = malloc((size_t)B * T * sizeof(int)), *targets = malloc((size_t)B * T * sizeof(int));
    long capacity = 64, pairs = 0;
    double *secs[2] = {malloc((size_t)capacity * sizeof(double)), malloc((size_t)capacity * sizeof(double))};
    double *ratios = malloc((size_t)capacity * sizeof(double));
    if (!inputs || !targets || !secs[0] || !secs[1] || !ratios) die(EXIT_DATA, "out of memory");
    for (int i = 0; i < o->warmup; i++)
        for (int p = 0; p < 2; p++) bench_step(&models[p], &opts[p], &rngs[p], inputs, targets, B, T);
    fprintf(stderr, "bench: %s: fp32 and bf16 training in turn\n", bc->name);
    double start = now_seconds();
    while (o->steps ? pairs < o->steps : (pairs < MIN_TIMED_STEPS || now_seconds() - start < o->seconds)) {
        if (pairs == capacity) {
            capacity *= 2;
            secs[0] = realloc(secs[0], (size_t)capacity * sizeof(double));
            secs[1] = realloc(secs[1], (size_t)capacity * sizeof(double));
            ratios = realloc(ratios, (size_t)capacity * sizeof(double));
            if (!secs[0] || !secs[1] || !ratios) die(EXIT_DATA, "out of memory");
        }
        for (int p = 0; p < 2; p++) {
            double t0 = now_seconds();
            bench_step(&models[p], &opts[p], &rngs[p], inputs, targets, B, T);
            secs[p][pairs] = now_seconds() - t0;
        }
        ratios[pairs] = secs[0][pairs] / secs[1][pairs];
        pairs++;
    }
    double fp32 = median_of(secs[0], pairs), bf16 = median_of(secs[1], pairs);
    printf("train_paired config=%s precision=%s threads=%d pairs=%ld fp32_ms_median=%.3f bf16_ms_median=%.3f "
           "fp32_tok_per_s=%.1f bf16_tok_per_s=%.1f ratio_of_medians=%.3f median_ratio=%.3f\n",
           bc->name, precision_word(PRECISION_BF16), omp_get_max_threads(), pairs, 1000.0 * fp32, 1000.0 * bf16,
           B * T / fp32, B * T / bf16, fp32 / bf16, median_of(ratios, pairs));
    fflush(stdout);
    free(secs[0]), free(secs[1]), free(ratios), free(inputs), free(targets);
    for (int p = 0; p < 2; p++) adamw_free(&opts[p]), gpt_free(&models[p]);
}

typedef struct {
    long chars;  // characters generated
    double secs;
} GenRun;

// Generates up to n characters of num_samples samples after the prompt as ./generate does by
// default (generation/decoder.h); use_cache 0 prefills the whole window for every character,
// as --no-cache does. Stops early, after the step that passes max_secs.
static GenRun generate_chars(GPT *model, const int *prompt, int prompt_len, long n, int use_cache, int num_samples,
                             double max_secs) {
    const DecoderConfig config = {num_samples, 1, use_cache, {0.8f, 0, 1.0f}, SEED};  // ./generate's defaults
    Decoder decoder;
    char err[ERR_LEN];
    if (decoder_init(&decoder, model, prompt, prompt_len, n, &config, err) != 0) die(EXIT_DATA, "%s", err);
    double t0 = now_seconds();
    long made = 0;
    while (made < n) {
        if (!decoder_step(&decoder, err)) die(EXIT_DATA, "%s", err);
        made++;
        if (now_seconds() - t0 > max_secs) break;
    }
    GenRun run = {made * num_samples, now_seconds() - t0};
    decoder_free(&decoder);
    return run;
}

// generate_chars run again and again until the runs add up to at least min_secs, so that
// a short run's rate is not that of a few milliseconds.
static GenRun generate_repeated(GPT *model, const int *prompt, long n, int use_cache, int num_samples, double max_secs,
                                double min_secs) {
    GenRun total = {0, 0.0};
    while (total.secs < min_secs) {
        GenRun r = generate_chars(model, prompt, PROMPT_LEN, n, use_cache, num_samples, max_secs);
        total.chars += r.chars;
        total.secs += r.secs;
    }
    return total;
}

// --num-samples N: characters per second over all samples, for N = 1, 8 and 32, within the
// block (every character a cached step, where decoding the samples together pays; repeated
// for at least a second) and for gen_chars characters at the default stride 1 (past the
// block, a prefill per sample and character).
static void run_samples(GPT *model, const BenchConfig *bc, const Options *o, const int *prompt) {
    static const int counts[] = {1, 8, 32};
    long in_block = bc->block_size - PROMPT_LEN;
    for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
        fprintf(stderr, "bench: %s: %d samples\n", bc->name, counts[i]);
        GenRun cached = generate_repeated(model, prompt, in_block, 1, counts[i], o->gen_seconds, 1.0);
        GenRun full = generate_chars(model, prompt, PROMPT_LEN, o->gen_chars, 1, counts[i], o->gen_seconds);
        printf("generate_samples config=%s samples=%d in_block_chars=%ld in_block_chars_per_s=%.1f chars=%ld "
               "chars_per_s=%.1f\n", bc->name, counts[i], cached.chars, cached.chars / cached.secs, full.chars,
               full.chars / full.secs);
        fflush(stdout);
    }
}

// The generation rows' prompt: PROMPT_LEN tokens drawn from the run's seed.
static void random_prompt(int prompt[PROMPT_LEN], int vocab_size) {
    Rng rng;
    rng_seed(&rng, SEED + 1);
    for (int i = 0; i < PROMPT_LEN; i++) prompt[i] = (int)rng_below(&rng, (uint64_t)vocab_size);
}

// --paired generation: --gen-chars characters with the cache from an fp32 and a bf16 model,
// one character of each in turn, until both are done or --gen-seconds have passed for both.
static void run_generate_paired(const BenchConfig *bc, const Options *o) {
    GPT models[2];
    Decoder decoders[2];
    int prompt[PROMPT_LEN];
    random_prompt(prompt, bc->vocab_size);
    const DecoderConfig config = {1, 1, 1, {0.8f, 0, 1.0f}, SEED};
    char err[ERR_LEN];
    for (int p = 0; p < 2; p++) {
        build_model(&models[p], bc, p ? PRECISION_BF16 : PRECISION_FP32, o->position);
        generate_chars(&models[p], prompt, PROMPT_LEN, 8, 1, 1, o->gen_seconds);  // warm-up
        if (decoder_init(&decoders[p], &models[p], prompt, PROMPT_LEN, o->gen_chars, &config, err) != 0)
            die(EXIT_DATA, "%s", err);
    }
    fprintf(stderr, "bench: %s: fp32 and bf16 generation in turn\n", bc->name);
    double secs[2] = {0.0, 0.0};
    long made = 0;
    while (made < o->gen_chars && secs[0] + secs[1] <= 2.0 * o->gen_seconds) {
        for (int p = 0; p < 2; p++) {
            double t0 = now_seconds();
            if (!decoder_step(&decoders[p], err)) die(EXIT_DATA, "%s", err);
            secs[p] += now_seconds() - t0;
        }
        made++;
    }
    printf("generate_paired config=%s precision=%s threads=%d chars=%ld fp32_cache_chars_per_s=%.1f "
           "bf16_cache_chars_per_s=%.1f ratio=%.3f\n",
           bc->name, precision_word(PRECISION_BF16), omp_get_max_threads(), made, made / secs[0], made / secs[1],
           secs[0] / secs[1]);
    fflush(stdout);
    for (int p = 0; p < 2; p++) decoder_free(&decoders[p]), gpt_free(&models[p]);
}

// generate_chars run on two models in turn, the first with every thread (the team its tuner
// picks, as ./generate by default) and the second with one (as --threads 1), until each has
// run for at least min_secs: taken in turn, the two rates see the same moments of a shared
// machine (run one after the other, they differed by more than what they compare). Each model
// keeps its own tuner, as each program would. runs[1] is the one thread's.
static void generate_in_turn(GPT models[2], const int *prompt, long n, int use_cache, double max_secs,
                             double min_secs, GenRun runs[2]) {
    int threads = omp_get_max_threads();
    runs[0] = runs[1] = (GenRun){0, 0.0};
    while (runs[0].secs < min_secs || runs[1].secs < min_secs)
        for (int one = 0; one < 2; one++) {
            omp_set_num_threads(one ? 1 : threads);
            GenRun r = generate_chars(&models[one], prompt, PROMPT_LEN, n, use_cache, 1, max_secs);
            runs[one].chars += r.chars;
            runs[one].secs += r.secs;
        }
    omp_set_num_threads(threads);
}

// Generation as ./generate runs it by default (the team the tuner picks) and as with
// --threads 1 in turn (generate_in_turn), with the cache and then without; then the
// --num-samples rows (JOB_SAMPLES).
static void run_generate(const BenchConfig *bc, const Options *o) {
    GPT models[2];  // the same weights: one for each thread count, each with its tuner
    int prompt[PROMPT_LEN];
    random_prompt(prompt, bc->vocab_size);
    fprintf(stderr, "bench: %s: generating %ld characters with and without the cache\n", bc->name, o->gen_chars);
    int threads = omp_get_max_threads();
    for (int one = 0; one < 2; one++) {
        build_model(&models[one], bc, o->precision, o->position);
        omp_set_num_threads(one ? 1 : threads);
        generate_chars(&models[one], prompt, PROMPT_LEN, 8, 1, 1, o->gen_seconds);  // warm-up
    }
    omp_set_num_threads(threads);
    GenRun runs[2][2];  // [no cache][one thread]
    for (int nocache = 0; nocache < 2; nocache++)
        generate_in_turn(models, prompt, o->gen_chars, !nocache, o->gen_seconds, 1.0, runs[nocache]);
    printf("generate config=%s precision=%s threads=%d prompt=%d block=%d", bc->name, precision_word(o->precision),
           threads, PROMPT_LEN, bc->block_size);
    static const char *const names[2][2] = {{"cache", "nocache"}, {"cache_1t", "nocache_1t"}};
    for (int one = 0; one < 2; one++)
        for (int nocache = 0; nocache < 2; nocache++) {
            const GenRun *r = &runs[nocache][one];
            printf(" %s_chars=%ld %s_chars_per_s=%.1f", names[one][nocache], r->chars, names[one][nocache],
                   r->chars / r->secs);
        }
    printf(" rss_kb=%ld\n", peak_rss_kb());
    fflush(stdout);
    if (o->jobs & JOB_SAMPLES) run_samples(&models[0], bc, o, prompt);
    gpt_free(&models[0]);
    gpt_free(&models[1]);
}

// --long-gen: --gen-chars characters with the cache after the prompt, mostly past the block,
// where a learned-position model prefills its whole window for every character and a RoPE
// model's cache rolls on (generation/inference.h).
static void run_generate_long(const BenchConfig *bc, const Options *o) {
    GPT model;
    build_model(&model, bc, o->precision, o->position);
    int prompt[PROMPT_LEN];
    random_prompt(prompt, bc->vocab_size);
    fprintf(stderr, "bench: %s, %s positions: generating %ld characters\n", bc->name, position_name(o->position),
            o->gen_chars);
    generate_chars(&model, prompt, PROMPT_LEN, 8, 1, 1, o->gen_seconds);  // warm-up
    GenRun run = generate_chars(&model, prompt, PROMPT_LEN, o->gen_chars, 1, 1, o->gen_seconds);
    printf("generate_long config=%s pos=%s precision=%s threads=%d prompt=%d block=%d chars=%ld chars_per_s=%.1f\n",
           bc->name, position_name(o->position), precision_word(o->precision), omp_get_max_threads(), PROMPT_LEN,
           bc->block_size, run.chars, run.chars / run.secs);
    fflush(stdout);
    gpt_free(&model);
}

// --jobs products: a linear layer's operands, on the step's shapes, in a workspace of its weight.
typedef struct {
    Kernels *k;
    float *inp, *weight, *bias, *out, *dout, *dinp, *dweight, *dbias;
    int N, C, OC;
} ProductRun;

// The median seconds of a call of the forward (backward 0) or backward (1) of p's layer, a
// team function called by one team until PRODUCT_SECONDS and PRODUCT_MIN_CALLS have passed,
// after two untimed calls; the team waits at a barrier before each call, which returns when
// every thread has done its share.
static double product_seconds(const ProductRun *p, int backward) {
    long calls = 0, capacity = 64;
    double *secs = malloc((size_t)capacity * sizeof(double)), total = 0.0;
    if (!secs) die(EXIT_DATA, "out of memory");
    int done = 0;  // thread 0's, read by all after the barrier that follows its writing
#pragma omp parallel
    for (int i = -2; !done; i++) {
        team_barrier();
        double t0 = now_seconds();
        if (backward)
            linear_backward(p->k, p->dinp, p->dweight, p->dbias, p->dout, p->inp, p->weight, p->N, p->C, p->OC);
        else
            linear_forward(p->k, p->out, p->inp, p->weight, p->bias, p->N, p->C, p->OC);
        if (omp_get_thread_num() == 0 && i >= 0) {
            if (calls == capacity && !(secs = realloc(secs, (size_t)(capacity *= 2) * sizeof(double))))
                die(EXIT_DATA, "out of memory");
            secs[calls] = now_seconds() - t0;
            total += secs[calls++];
            done = calls >= PRODUCT_MIN_CALLS && total >= PRODUCT_SECONDS;
        }
        team_barrier();
    }
    double median = median_of(secs, calls);
    free(secs);
    return median;
}

static void run_products(const BenchConfig *bc, const Options *o) {
    const int N = bc->batch_size * bc->block_size, C = bc->n_embd;
    const struct {
        const char *name;
        int C, OC, has_bias;  // the head is tied to wte and has none
    } layers[] = {{"c_attn", C, 3 * C, 1}, {"attn_proj", C, C, 1}, {"c_fc", C, 4 * C, 1}, {"mlp_proj", 4 * C, C, 1},
                  {"head", C, bc->vocab_size, 0}};
    Rng rng;
    rng_seed(&rng, SEED);
    fprintf(stderr, "bench: %s: the linear layers' products\n", bc->name);
    for (size_t l = 0; l < sizeof(layers) / sizeof(layers[0]); l++) {
        ProductRun p = {.N = N, .C = layers[l].C, .OC = layers[l].OC};
        size_t in = (size_t)N * p.C, w = (size_t)p.OC * p.C, out = (size_t)N * p.OC;
        size_t floats = 2 * (in + w + out + (size_t)p.OC);  // each operand and its gradient
        float *all = malloc(floats * sizeof(float));
        if (!all) die(EXIT_DATA, "out of memory");
        p.inp = all, p.dinp = p.inp + in, p.weight = p.dinp + in, p.dweight = p.weight + w;
        p.out = p.dweight + w, p.dout = p.out + out, p.bias = p.dout + out, p.dbias = p.bias + p.OC;
        for (size_t i = 0; i < floats; i++) all[i] = rng_uniform(&rng) - 0.5f;
        if (!layers[l].has_bias) p.bias = p.dbias = NULL;
        char err[ERR_LEN];
        LinearWeights weight = {p.weight, 1, p.OC, p.C};
        KernelsShape shape = {N, 0, 0, 0, 1, 0};
        if (!(p.k = kernels_new(o->precision, &weight, 1, &shape, err))) die(EXIT_DATA, "%s: %s", bc->name, err);
        double forward = product_seconds(&p, 0), backward = product_seconds(&p, 1);
        double flops = 2.0 * N * p.C * p.OC;  // the forward's; the backward's two products twice that
        printf("products config=%s precision=%s threads=%d kernel=%s layer=%s N=%d C=%d OC=%d forward_ms=%.4f "
               "backward_ms=%.4f forward_gflops=%.2f backward_gflops=%.2f\n",
               bc->name, precision_word(o->precision), omp_get_max_threads(), kernels_name(), layers[l].name, N, p.C,
               p.OC, 1000.0 * forward, 1000.0 * backward, flops / forward / 1e9, 2.0 * flops / backward / 1e9);
        fflush(stdout);
        kernels_free(p.k);
        free(all);
    }
}

// The peak of the run's loop (fma_loop_of_run), on one thread and on every OpenMP thread.
static void run_peak(const Options *o) {
    const FmaLoop *f = &fma_loops[fma_loop_of_run(o->precision)];
    fprintf(stderr, "bench: measuring the FMA peak (%s)\n", f->name);
    double one = fma_peak(f, 1), all = fma_peak(f, omp_get_max_threads());
    printf("peak path=%s threads=%d gflops_1t=%.2f gflops_all=%.2f\n", f->name, omp_get_max_threads(), one, all);
    fflush(stdout);
}

// ----------------------------------------------------------------------------
// children: GNU OpenMP's thread pool does not survive fork, so the parent itself never
// enters a parallel region; every job runs in a child of its own.

enum { CHILD_PEAK, CHILD_TRAIN, CHILD_TRAIN_PAIRED, CHILD_GENERATE, CHILD_GENERATE_PAIRED, CHILD_GENERATE_LONG,
       CHILD_PRODUCTS };

static int run_child(int child, const BenchConfig *bc, const Options *o) {
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) die(EXIT_DATA, "fork: %s", strerror(errno));
    if (pid == 0) {
        if (child == CHILD_PEAK) run_peak(o);
        else if (child == CHILD_TRAIN) run_train(bc, o);
        else if (child == CHILD_TRAIN_PAIRED) run_train_paired(bc, o);
        else if (child == CHILD_GENERATE_PAIRED) run_generate_paired(bc, o);
        else if (child == CHILD_GENERATE_LONG) run_generate_long(bc, o);
        else if (child == CHILD_PRODUCTS) run_products(bc, o);
        else run_generate(bc, o);
        exit(0);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) die(EXIT_DATA, "waitpid: %s", strerror(errno));
    }
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    fprintf(stderr, "bench: a child was killed by signal %d\n", WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    return EXIT_DATA;
}

static void usage(FILE *f) {
    fprintf(f,
            "usage: ./scripts/bench [options]\n"
            "Times chargpt's training step and generation on random tokens, and the FMA peak of the\n"
            "kernels' instruction set; one line of results per job (`make bench` prints them as tables).\n"
            "Threads: OMP_NUM_THREADS (default: all cores); kernels: CHARGPT_KERNELS (default: the\n"
            "fastest this CPU runs; --list-backends names them).\n\n"
            "  --config LIST      lesson, tiny, small, several with commas, or all (default all):\n"
            "                     lesson = ./train --n-layer 2 --n-embd 64 --batch-size 32,\n"
            "                     tiny = ./train's default model, small = ./train --n-layer 6\n"
            "                     --n-head 6 --n-embd 384 --block-size 256 --batch-size 8\n"
            "  --jobs LIST        peak, train, generate, samples, products, with commas (default\n"
            "                     peak,train,generate); samples (--num-samples 1, 8, 32) needs generate;\n"
            "                     products: each linear layer's forward and backward alone (GFLOP/s)\n"
            "  --seconds S        time training steps for at least S seconds, and at least %d\n"
            "                     steps, per config (default 4)\n"
            "  --steps N          exactly N timed training steps instead\n"
            "  --warmup N         untimed training steps first, at least 1 (default 2)\n"
            "  --gen-chars N      characters per generation run (default 500)\n"
            "  --gen-seconds S    end a generation run early after S seconds (default 20)\n"
            "  --precision P      fp32 or bf16: the matrix products' precision (default fp32)\n"
            "  --paired           fp32 and bf16 in turn in one process: training steps (--seconds\n"
            "                     and --steps then count pairs), then generated characters with the\n"
            "                     cache, as --jobs asks for train and generate (no peak, samples or\n"
            "                     products: a --jobs that names them is refused)\n"
            "  --pos P            learned or rope: the models' positions (default learned)\n"
            "  --long-gen         only --gen-chars characters with the cache, past the block\n"
            "                     (row generate_long), instead of the jobs (no --jobs, --paired)\n"
            "  --list-backends    print the kernels' backends this CPU runs, fastest first, and exit\n"
            "  -h, --help         show this help\n", MIN_TIMED_STEPS);
}

// The bits of a comma-separated list of names[0, n) (bit i for names[i]); what names
// nothing ends the program (exit 2).
static int parse_list(const char *flag, const char *list, const char *const *names, int n) {
    int mask = 0;
    const char *p = list;
    for (;;) {
        size_t len = strcspn(p, ",");
        int found = -1;
        for (int i = 0; i < n; i++)
            if (strlen(names[i]) == len && strncmp(p, names[i], len) == 0) found = i;
        if (found < 0) die(EXIT_USAGE, "%s: '%.*s' is not one of the names --help gives", flag, (int)len, p);
        mask |= 1 << found;
        if (p[len] == '\0') return mask;
        p += len + 1;
    }
}

static void parse_options(int argc, char **argv, Options *o) {
    enum { OPT_CONFIG = 256, OPT_JOBS, OPT_SECONDS, OPT_STEPS, OPT_WARMUP, OPT_GEN_CHARS, OPT_GEN_SECONDS,
           OPT_PRECISION, OPT_PAIRED, OPT_LIST_BACKENDS, OPT_POS, OPT_LONG_GEN };
    static const struct option long_options[] = {
        {"config", required_argument, 0, OPT_CONFIG},  {"jobs", required_argument, 0, OPT_JOBS},
        {"seconds", required_argument, 0, OPT_SECONDS}, {"steps", required_argument, 0, OPT_STEPS},
        {"warmup", required_argument, 0, OPT_WARMUP},   {"gen-chars", required_argument, 0, OPT_GEN_CHARS},
        {"gen-seconds", required_argument, 0, OPT_GEN_SECONDS}, {"precision", required_argument, 0, OPT_PRECISION},
        {"paired", no_argument, 0, OPT_PAIRED},         {"list-backends", no_argument, 0, OPT_LIST_BACKENDS},
        {"pos", required_argument, 0, OPT_POS},         {"long-gen", no_argument, 0, OPT_LONG_GEN},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    *o = (Options){(1 << NUM_CONFIGS) - 1, JOB_PEAK | JOB_TRAIN | JOB_GENERATE, 4.0, 0, 2, 500, 20.0, 0, 0,
                   PRECISION_FP32, POSITION_LEARNED};
    opterr = 0;
    int c;
    const char *jobs_given = NULL;  // --jobs's list
    while ((c = getopt_long(argc, argv, ":h", long_options, NULL)) != -1) {
        const char *flag = argv[optind - 1];
        switch (c) {
            case OPT_CONFIG: {
                const char *names[NUM_CONFIGS];
                for (int i = 0; i < NUM_CONFIGS; i++) names[i] = configs[i].name;
                o->config_mask = strcmp(optarg, "all") == 0 ? (1 << NUM_CONFIGS) - 1
                                                            : parse_list("--config", optarg, names, NUM_CONFIGS);
                break;
            }
            case OPT_JOBS: o->jobs = parse_list("--jobs", optarg, job_names, NUM_JOBS), jobs_given = optarg; break;
            case OPT_SECONDS: o->seconds = option_double("--seconds", optarg, 0.0, 3600.0, 1); break;
            case OPT_STEPS: o->steps = option_long("--steps", optarg, 1, 1000000); break;
            case OPT_WARMUP: o->warmup = (int)option_long("--warmup", optarg, 1, 1000); break;
            case OPT_GEN_CHARS: o->gen_chars = option_long("--gen-chars", optarg, 1, 10000000); break;
            case OPT_GEN_SECONDS: o->gen_seconds = option_double("--gen-seconds", optarg, 0.0, 3600.0, 1); break;
            case OPT_PAIRED: o->paired = 1; break;
            case OPT_LONG_GEN: o->long_gen = 1; break;
            case OPT_POS:
                if (position_parse(optarg, &o->position) != 0)
                    die(EXIT_USAGE, "--pos must be " POSITION_ENCODING_NAMES ", got '%s'", optarg);
                break;
            case OPT_LIST_BACKENDS: {
                const char *names[8];
                int count = kernels_available(names, 8);
                for (int i = 0; i < count; i++) printf("%s\n", names[i]);
                stdout_flush_or_die();
                exit(0);
            }
            case OPT_PRECISION:
                if (precision_parse(optarg, &o->precision) != 0)
                    die(EXIT_USAGE, "--precision must be fp32 or bf16, got '%s'", optarg);
                break;
            case 'h': usage(stdout); stdout_flush_or_die(); exit(0);
            case ':': die(EXIT_USAGE, "option '%s' needs a value (see --help)", flag); break;
            default: die(EXIT_USAGE, "unknown option '%s' (see --help)", flag);
        }
    }
    if (optind < argc) die(EXIT_USAGE, "unexpected argument '%s' (see --help)", argv[optind]);
    if ((o->jobs & JOB_SAMPLES) && !(o->jobs & JOB_GENERATE)) die(EXIT_USAGE, "--jobs: samples needs generate");
    // --paired and --long-gen run instead of the jobs: a job they do not run is not asked for
    if (o->paired && o->long_gen) die(EXIT_USAGE, "--paired and --long-gen each replace the jobs: give one of them");
    if (o->long_gen && jobs_given) die(EXIT_USAGE, "--long-gen runs instead of the jobs: give no --jobs with it");
    if (o->paired && jobs_given && (o->jobs & (JOB_PEAK | JOB_SAMPLES | JOB_PRODUCTS)))
        die(EXIT_USAGE,
            "--jobs %s with --paired: --paired times train and generate alone (no peak, samples or products)",
            jobs_given);
}

int main(int argc, char **argv) {
    platform_init(argc, argv);
    Options o;
    parse_options(argc, argv, &o);
    char err[ERR_LEN];
    if (kernels_init(err) != 0) die(EXIT_USAGE, "%s", err);
    int rc = 0;
    for (int i = 0; i < NUM_CONFIGS; i++) {
        if (!(o.config_mask & 1 << i)) continue;
        if (o.long_gen) {
            if ((rc = run_child(CHILD_GENERATE_LONG, &configs[i], &o)) != 0) return rc;
            continue;
        }
        int train = o.paired ? CHILD_TRAIN_PAIRED : CHILD_TRAIN, generate = o.paired ? CHILD_GENERATE_PAIRED
                                                                                      : CHILD_GENERATE;
        if ((o.jobs & JOB_TRAIN) && (rc = run_child(train, &configs[i], &o)) != 0) return rc;
        if ((o.jobs & JOB_GENERATE) && (rc = run_child(generate, &configs[i], &o)) != 0) return rc;
        if (!o.paired && (o.jobs & JOB_PRODUCTS) && (rc = run_child(CHILD_PRODUCTS, &configs[i], &o)) != 0)
            return rc;
    }
    if (!o.paired && !o.long_gen && (o.jobs & JOB_PEAK) && (rc = run_child(CHILD_PEAK, NULL, &o)) != 0) return rc;
    return 0;
}
