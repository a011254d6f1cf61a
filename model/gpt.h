// The GPT: configuration, parameter and activation layouts, forward and backward.
//
// Shapes use: B batch, T block size (max sequence), t the sequence length of the current
// call (t <= T), C n_embd, L n_layer, H n_head, hs head_size, A = H*hs attention width,
// V vocab_size, N = B*t rows.
#ifndef CHARGPT_GPT_H
#define CHARGPT_GPT_H

#include <stddef.h>
#include <stdint.h>

#include "../common/errors.h"
#include "../kernels/kernels.h"
#include "../kernels/parallel.h"
#include "layers.h"

// How the model knows where a character is: a learned position table (wpe, nanoGPT's), or
// rotary position embeddings of the queries and keys (RoPE, layers.h), no table.
typedef enum { POSITION_LEARNED = 0, POSITION_ROPE = 1 } PositionEncoding;
#define POSITION_ENCODING_NAMES "learned or rope"
// "learned" or "rope"; position_parse returns 0, or -1 for any other text.
const char *position_name(PositionEncoding position);
int position_parse(const char *text, PositionEncoding *position);

typedef struct {
    int vocab_size;  // V
    int block_size;  // T: longest sequence, rows of wpe, positions in a rolling cache
    int n_layer;     // L
    int n_head;      // H
    int n_embd;      // C
    int head_size;   // hs; A = H*hs may differ from C
    int qkv_bias;    // 1: c_attn has a bias
    float dropout;   // probability of zeroing, in [0, 1)
    PositionEncoding position;  // RoPE needs an even head_size
} GPTConfig;

// Checks a config for sizes that make sense; on failure writes a message naming the field.
int gpt_config_validate(const GPTConfig *c, char err[ERR_LEN]);

// The tensors of a block: one layer's (gpt_layer_params), or every layer's stacked, (L, ...),
// in ParameterTensors. qkvb is NULL without qkv_bias.
typedef struct {
    float *ln1w, *ln1b, *qkvw, *qkvb, *attprojw, *attprojb, *ln2w, *ln2b, *fcw, *fcb, *fcprojw, *fcprojb;
} BlockParams;

// The parameters, all in one allocation in this order: the token embedding wte (also the
// output head), the position embedding wpe (NULL with RoPE), the blocks' tensors, the final LayerNorm's. The
// parameter table (gpt.c) holds each tensor's nanoGPT name, shape, weight decay and
// initialisation, in the same order.
typedef struct {
    float *wte, *wpe;
    BlockParams blocks;
    float *lnfw, *lnfb;
} ParameterTensors;
#define NUM_PARAMETER_TENSORS 16

// Activations kept for the backward pass, sized for (B, T) once; a call with t < T uses the
// leading B*t rows (and a (t, t) attention matrix per head). Their shapes, and which are
// stacked over the layers (L, ...), are gpt.c's activation table, from which their sizes,
// their place in one allocation and a layer's view (gpt_layer_activations) all come.
typedef struct {
    float *encoded;   // token + position embedding: the residual stream entering block 0
    float *ln1;       // ln_1's output, and each row's mean and 1/std
    float *ln1_mean;
    float *ln1_rstd;
    float *qkv;       // c_attn's output: each row's A queries, A keys, A values
    float *atty;      // attention's output before c_proj: each head's hs side by side
    float *att;       // softmax weights (before dropout), each head's (t, t), 0 above the diagonal
    float *residual2; // x + dropout(attention's c_proj)
    float *ln2;       // ln_2's output, and each row's mean and 1/std
    float *ln2_mean;
    float *ln2_rstd;
    float *fch;       // c_fc's output, before GELU; in a model with gradients, GELU's slope
                      // there once GELU has read it (gelu_forward_slope), for the backward
    float *gelu;      // GELU(fch): c_proj's input, which its backward reads
    float *residual3; // residual2 + dropout(the MLP's c_proj): the stream entering the next block
    float *lnf;       // the final LayerNorm's output, and each row's mean and 1/std
    float *lnf_mean;
    float *lnf_rstd;
    float *logits;    // the head's output: each row's unnormalised log-probabilities
    float *probs;     // softmax of logits
    float *losses;    // -log p(target) of each row
} ActivationTensors;
#define NUM_ACTIVATION_TENSORS 20

// Per-call scratch shared by all layers (not kept across layers): forward temporaries and
// the gradients of activations in backward. Their shapes are gpt.c's scratch table.
typedef struct {
    float *branch;   // c_proj output before dropout / residual
    float *dres;     // gradient of the residual stream
    float *dbranch;  // gradient of a residual branch after dropout backward
    float *dln;      // gradient of a LayerNorm output
    float *dqkv;
    float *datty;
    float *dfch;     // gradient of GELU output, then of its input
    float *dlogits;
} ScratchTensors;
#define NUM_SCRATCH_TENSORS 8

// What a forward pass is for, given with each call (NULL: an evaluation of a whole batch).
typedef struct {
    // 1: a training pass, with the config's dropout; masks are a pure function of
    // (dropout_seed, layer, site, element), so the forward and its backward agree.
    int training;
    uint64_t dropout_seed;
    // The forward's B sequences as rows [batch_offset, batch_offset + B) of a larger batch of
    // batch_rows sequences (a micro-batch of gradient accumulation, a rank's share of a
    // data-parallel batch); batch_rows 0: the forward is the whole batch. Dropout masks and
    // the loss's gradient are then those of the whole batch: masks index elements as if its
    // tensors were one, and backward differentiates the mean over all batch_rows * t tokens.
    int batch_offset;
    int batch_rows;
    // Cached generation (generation/inference.h): NULL, or the keys and values of every
    // layer, sequence and position (gpt_kv_cache_rows). The pass's B sequences are the cache's
    // [first_sequence, first_sequence + B) of kv_sequences, its t tokens at the positions
    // [pos0, pos0 + t): attention reads the cached keys and values of the positions before
    // pos0, after the pass's own are added. (Without a cache pos0 is 0.)
    // A RoPE model's cache rolls: a pass of one token at pos0 >= T stores its key and value in
    // row pos0 % T, over the oldest, and attends to all T rows: the last T positions.
    float *kv_cache;
    int kv_sequences, first_sequence, pos0;
} ForwardPass;

// Hooks: what every forward of a model (model->hooks) does besides computing, for what
// measures the model (analysis/): an edit replaces rows of an activation as the forward makes
// it, either a head's output (its hs-wide slice of atty, before c_proj) or the residual
// stream entering a block. At each chosen position i of each of the pass's B sequences (row n
// = b*t + i of the pass's N rows) the row becomes rows + n*ld, or zeros when rows is NULL:
//   knock-out        a head's output zeroed            rows NULL
//   patching         another run's rows put in         rows its (N, ...) rows, ld their stride
//   mean-ablation    one row at every position         rows that row, ld 0
//   residual patch   the stream entering block l        the same, C floats a row
// The forward keeps the edited rows (the activations hold what the next layer read), and the
// backward takes them as constants: no gradient flows back through an edited row (a
// knocked-out head's weights get none from its output), so it stays the forward's derivative.
// What a forward computed is read back ("record") through gpt_layer_activations and the
// accessors after it. Edits apply in their order; their layers and heads must be the model's.
typedef struct {
    int layer;   // a head's block, 0..L-1; for the residual stream the block it enters, 0..L
                 // (L: the stream the final LayerNorm reads)
    int head;    // 0..H-1; unused for the residual stream
    const float *rows;               // NULL: zeros; else the replacing rows (hs or C floats each)
    long ld;                         // floats from one row of rows to the next; 0: one row for all
    const unsigned char *positions;  // NULL: every position; else t flags, 1 where the row is edited
} ActivationEdit;
typedef struct {
    const ActivationEdit *heads;     // edits of heads' outputs
    int n_heads;
    const ActivationEdit *residual;  // edits of the residual stream
    int n_residual;
} ForwardHooks;

typedef struct GPT {
    GPTConfig config;
    ParameterTensors params;
    float *params_memory;
    int borrowed;            // 1: params_memory is another model's (gpt_view), never freed here
    size_t param_sizes[NUM_PARAMETER_TENSORS];
    size_t num_parameters;
    ParameterTensors grads;  // same layout as params
    float *grads_memory;
    // activations, allocated for batch B and block size T by gpt_alloc_activations
    int batch_size;          // B the activations were sized for
    ActivationTensors acts;
    float *acts_memory;
    size_t num_activations;
    ScratchTensors scratch;
    float *scratch_memory;
    int *inputs;             // (B, T) tokens of the last forward
    int *targets;            // (B, T) targets of the last forward, when given
    int cur_B, cur_t;        // shape of the last forward
    float mean_loss;         // mean cross-entropy of the last forward with targets, else -1
    double loss_sum;         // the sum of its token losses (mean_loss = loss_sum / (B*t))
    ForwardPass pass;        // what the last forward was for; its backward follows it
    // NULL, or the hooks every forward and backward applies (ForwardHooks), not owned. Set
    // between passes, not between a forward and its backward. NULL costs nothing.
    const ForwardHooks *hooks;
    // the team sizes of forwards called from serial code (evaluation, generation's prefill)
    // and of train_step's steps, chosen from their times (parallel.h); the latest step's
    ThreadTuner forward_tuner, step_tuner;
    int step_threads;
    // NULL, or the micro-batches train_step cuts its steps into (gpt_alloc_micro_batches)
    struct MicroBatches *micro;
    // the precision of the products, and the kernels' workspace for it (kernels.h): made
    // with the activations, for their rows; with pack_weights 1 it keeps the weights packed
    // in fp32 too (a micro-batch view's, whose weights stay the same over a step's
    // micro-batches: train_step packs them once a step)
    Precision precision;
    int pack_weights;
    Kernels *kernels;
    // RoPE's cos and sin (rope_angles) of positions [0, T), (T, hs); then room for one
    // position past the block, (hs), a rolling cache's step. Made with the activations;
    // NULL for learned positions.
    float *rope;
} GPT;

// A training step cut into micro-batches that the threads run each alone (model/train_step.h):
// a view of the model for each thread (gpt_view), with activations for one micro-batch, and
// each micro-batch's gradients and loss, which the step then adds up in micro-batch order.
typedef struct MicroBatches {
    int count;          // micro-batches in a step
    int sequences;      // sequences in each
    int threads;        // views, one for each thread that runs micro-batches
    GPT *views;         // (threads)
    float *gradients;   // (count, num_parameters): micro-batch m's from m * num_parameters
    double *loss_sums;  // (count) each micro-batch's sum of its token losses
    int next;           // during a step: the next micro-batch a thread takes
} MicroBatches;

// Allocates parameters (zeroed) for a config, and their gradients when with_gradients is 1
// (training; generation needs none: grads_memory stays NULL). Returns 0 or -1 with err.
int gpt_build(GPT *model, const GPTConfig *config, int with_gradients, char err[ERR_LEN]);
// Allocates activations and scratch for up to B sequences of block_size tokens, and the
// kernels' workspace for them in the model's precision.
int gpt_alloc_activations(GPT *model, int B, char err[ERR_LEN]);
void gpt_free(GPT *model);
// n floats, zeroed, aligned to 64 bytes (the widest vector the kernels load); NULL when the
// memory is not there. platform_aligned_free frees them.
float *gpt_alloc_floats(size_t n);
// Makes view a model on model's parameters (the same memory, read only; never freed by
// gpt_free(view)), without gradients and in fp32: forward passes beside a training run (its
// probe and samples) with activations of its own (gpt_alloc_activations) that leave the
// training's untouched. It reads the parameters as they are at each call.
void gpt_view(GPT *view, const GPT *model);
// Points a view's gradients (its grads, the layout of model's) at memory (num_parameters
// floats), which stays the caller's: a view's gpt_free never frees it.
void gpt_view_gradients(GPT *view, float *memory);
// Cuts model's training steps of B sequences into B / sequences micro-batches
// (train_step.h): a view with activations for `sequences` on each of up to
// omp_get_max_threads() threads, and room for each micro-batch's gradients, freed by
// gpt_free(model). Returns 0 or -1 with err.
int gpt_alloc_micro_batches(GPT *model, int B, int sequences, char err[ERR_LEN]);

// Sets the precision of the model's products (fp32 when built). A model with activations gets
// a new workspace for it (kernels.h). Returns 0 or -1 with err.
int gpt_set_precision(GPT *model, Precision precision, char err[ERR_LEN]);
// The parameters changed (an optimizer step): the kernels refresh what they keep of them
// (their rounded, packed copies in a lower precision). A team function (parallel.h).
void gpt_params_changed(GPT *model);

// The memory a run needs, in bytes, computed from a valid config before anything is
// allocated. Doubles, because the products of an absurd config overflow 64-bit integers.
typedef struct {
    double parameters;   // the weights
    double gradients;    // training: one per parameter
    double optimizer;    // training: AdamW's two moments and weight-decay mask
    double activations;  // kept for backward, for B sequences of block_size tokens
    double scratch;      // per-call temporaries, inputs and targets
    double generation;   // generation: the key/value cache and one position's buffers per sample
    double weight_copies;  // the kernels' copies of the weights (rounded, packed)
    double probe;        // training: the probe and samples of each evaluation (training/probe.h)
    double text;         // the corpus, scored text or prompt the program holds (its caller counts it)
} GPTMemoryPlan;
// What a plan is for (the values 0 and 1 are the earlier "training" flag's):
typedef enum {
    GPT_PLAN_GENERATION = 0,  // parameters; activations and scratch for gpt_generation_batch(B)
                              // sequences; the key/value cache and the logits of B samples
                              // (gpt_generation_floats)
    GPT_PLAN_TRAINING = 1,    // parameters, gradients, optimizer, activations and scratch for batch B
    GPT_PLAN_FORWARD = 2,     // parameters, activations and scratch for batch B (scoring a text)
} GPTPlanKind;
void gpt_memory_plan(const GPTConfig *config, int B, GPTPlanKind kind, GPTMemoryPlan *plan);
// Adds to a plan from gpt_memory_plan (the same config, B and kind) what the kernels'
// workspace needs in this precision on omp_get_max_threads() threads: the weights' copies,
// and to activations and scratch the layers' rounded inputs, packed operands and each
// thread's room for attention's heads.
void gpt_memory_plan_precision(GPTMemoryPlan *plan, const GPTConfig *config, int B, GPTPlanKind kind,
                               Precision precision);
// Adds to a training plan for B sequences (gpt_memory_plan and gpt_memory_plan_precision,
// fp32) what gpt_alloc_micro_batches(B, sequences) allocates: each micro-batch's gradients,
// and each thread's activations and scratch for one micro-batch.
void gpt_memory_plan_micro_batches(GPTMemoryPlan *plan, const GPTConfig *config, int B, int sequences);
double gpt_memory_total(const GPTMemoryPlan *plan);
// "40.5 MiB (parameters 832 KiB, gradients 832 KiB, ...)", naming the parts that are not 0.
void gpt_memory_describe(const GPTMemoryPlan *plan, char *text, size_t n);

// Cached generation of S samples (generation/inference.h): the keys and values of every
// layer, sample and position (for each layer l, sample s and position j < T, A keys then A
// values), then the latest logits of every sample (S, V); the floats of both, and of the
// first. Doubles, as in GPTMemoryPlan.
double gpt_generation_floats(const GPTConfig *config, int samples);
double gpt_kv_cache_floats(const GPTConfig *config, int samples);
// Layer l's keys and values of sequence s (and, seq floats on, of the sequences after it) in
// such a cache of S sequences, for attention (layers.h).
KVRows gpt_kv_cache_rows(const GPTConfig *config, float *cache, int sequences, int l, int s);
// The batch of sequences whose activations the model needs to generate S samples: a step
// runs one position of every sample, S rows, and a sequence holds T.
int gpt_generation_batch(const GPTConfig *config, int samples);

// Initialises parameters from a seed: linear weights and embeddings N(0, 0.02), the two
// residual projections N(0, 0.02/sqrt(2L)), biases 0, LayerNorm weight 1 and bias 0.
void gpt_init_weights(GPT *model, uint64_t seed);

// Forward over tokens (B, t), pos0 + t <= block_size, for what pass says (NULL: evaluation,
// no dropout, the whole batch). With targets, computes the losses and mean_loss; without
// (NULL), leaves logits and probs only.
// gpt_forward and gpt_backward are team functions (parallel.h): called inside a parallel
// region by every thread of its team they share the work; from serial code they start a
// team of their own.
void gpt_forward(GPT *model, const int *inputs, const int *targets, int B, int t, const ForwardPass *pass);
// The final LayerNorm and the head (the token embedding, tied) on n rows x (n, C) of a residual
// stream: what the forward does after the last block. ln (n, C) gets ln_f's output, mean and
// rstd (n) each row's mean and 1/std, logits (n, V) the head's. A team function; the logit lens
// (analysis/logit_lens.h) reads the stream entering any block through it.
void gpt_unembed(const GPT *model, const float *x, int n, float *ln, float *mean, float *rstd, float *logits);
// Backward of the mean loss of the last forward (which must have had targets), or of the
// whole batch's mean loss when the forward was part of one (batch_rows): ADDS into every
// gradient, so that the gradients of a batch's parts sum to the batch's.
void gpt_backward(GPT *model);
// Sets every gradient to 0, as a backward that is not part of a larger batch needs first.
// A team function (from serial code it runs on the calling thread).
void gpt_zero_grad(GPT *model);

// What the last forward kept, read through these (the hooks' "record"). Layer l's view of the
// activations: each tensor stacked over the layers at its slice for layer l (the layers' slices
// are (B, T) apart, a call with t < T using the leading B*t rows of its slice), the others
// whole; valid until the activations are allocated again.
ActivationTensors gpt_layer_activations(const GPT *model, int layer);
// Attention weights of one layer from the last forward: (B, H, t, t), row i holding the
// softmax weights over keys 0..i (before dropout) and 0 above the diagonal.
const float *gpt_attention_weights(const GPT *model, int layer);
// The queries, keys and values of one layer from the last forward: (B, t, 3A), each row the
// position's A queries, then A keys, then A values, head h's hs of each at h * hs.
const float *gpt_qkv(const GPT *model, int layer);
// Each head's output of one layer from the last forward, sum_j W[i][j] v_j before c_proj:
// (B, t, A), head h's at h * hs.
const float *gpt_attention_output(const GPT *model, int layer);
// The residual stream of the last forward entering block `layer`, (B, t, C): layer 0 the
// embeddings, layer l the output of block l - 1, layer L (n_layer) what the final LayerNorm
// reads.
const float *gpt_residual_stream(const GPT *model, int layer);

// Parameter tensors by index, in storage order, with nanoGPT's names.
// Returns how many tensors the config has (qkv bias absent when qkv_bias is 0).
int gpt_num_tensors(const GPTConfig *config);
typedef struct {
    char name[64];
    int ndim;
    int shape[2];
    size_t offset;   // into params_memory (and grads_memory, optimizer state)
    size_t size;     // number of floats
    int decay;       // 1: matrices and embeddings get weight decay
} TensorInfo;
void gpt_tensor_info(const GPTConfig *config, int index, TensorInfo *info);

// Layer l's view of parameters (or gradients) p: qkvb NULL without qkv_bias.
BlockParams gpt_layer_params(const ParameterTensors *p, const GPTConfig *config, int l);

// The weights of the linear layers (out = in @ weight^T) in parameters p (NULL: shapes only),
// by kind: `count` matrices (rows, cols), one layer's after the other; the output head is
// wte. Returns how many kinds (at most KERNELS_MAX_GROUPS).
int gpt_linear_weights(const GPTConfig *config, const ParameterTensors *p, LinearWeights weights[KERNELS_MAX_GROUPS]);

#endif
