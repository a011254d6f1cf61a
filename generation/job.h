// A job of ./generate: what main (generate.c) opens, reads and loads for it, and the stages
// its jobs go through, each in the file of its job. A stage returns 0 or the exit status the
// program ends with (common/errors.h), with a message in err, as a training run's stages do
// (training/run.h); it prints what the job says: its text and results on standard output,
// notes and the files it wrote on standard error. This header holds the job and the list of
// its stages; each stage's file includes what else it uses. --timeline, which rebuilds a
// training run's page, has its stages in training/timeline_rebuild.h.
#ifndef CHARGPT_JOB_H
#define CHARGPT_JOB_H

#include <stddef.h>

#include "../analysis/patching.h"
#include "../common/errors.h"
#include "../data/vocab.h"
#include "../format/checkpoint.h"
#include "../model/gpt.h"
#include "decoder.h"
#include "export.h"
#include "options.h"
#include "prompt.h"
#include "task_score.h"

// What main sets up and runs the job on; generate.c frees what it holds whichever way the
// program ends.
typedef struct {
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

// ----------------------------------------------------------------------------
// every job: the kernels, the checkpoint, the memory, the model

// generation/job.c: the threads and the kernels (kernels/kernels.h), and what bf16 costs on
// them when asked for (a note on stderr). Returns 0, or EXIT_USAGE with err.
int start_kernels(const GenerateOptions *o, char err[ERR_LEN]);
// generation/job.c: the checkpoint, checked whole before anything sized by its config is
// allocated, its vocabulary, and --ablate's and --ablate-mean's heads (knock_out_heads).
// Returns 0; EXIT_USAGE or EXIT_DATA with err.
int open_checkpoint(Job *j, char err[ERR_LEN]);
// generation/job.c: a plan that needs more memory than the limit: EXIT_USAGE with err; `what`
// says what for.
int check_job_memory(const Job *j, const GPTMemoryPlan *plan, const GPTConfig *c, const char *what,
                     char err[ERR_LEN]);
// generation/job.c: the model, in the precision asked for, with --ablate's heads knocked out
// and --ablate-mean's replaced by their means (read_reference, take_head_means); the
// checkpoint is closed once it and the reference text are read. Returns 0; EXIT_USAGE or
// EXIT_DATA with err.
int load_model(Job *j, char err[ERR_LEN]);
// generation/ablation.c: --ablate and --ablate-mean: the model's hooks knock out each head
// --ablate names (each once, however often it is named); --ablate-mean's heads are flagged,
// their edits added once their means are taken (take_head_means). Returns 0; EXIT_USAGE with
// err for a head named by both, or for an item of either list that is not one of the
// checkpoint's heads; EXIT_DATA with err when memory runs out.
int knock_out_heads(Job *j, char err[ERR_LEN]);
// generation/ablation.c: the reference text of the heads' means (generation/reference_text.h),
// read while the checkpoint is open, within what the memory limit leaves beside the model: for
// --ablate-mean (which fails when there is none: its status with err) and for the pages'
// importance by the mean (which are left without it, a note saying why).
int read_reference(Job *j, char err[ERR_LEN]);
// generation/ablation.c: each head's mean over the reference text (analysis/head_means.h), on
// at most MEANS_MAX_WINDOWS windows of it, and --ablate-mean's edits added to the model's
// hooks. Returns 0, or EXIT_DATA with err.
int take_head_means(Job *j, char err[ERR_LEN]);

// ----------------------------------------------------------------------------
// sampling, the default job

// generation/sampling.c: the prompt (the command line's, or --prompt-file's): UTF-8 -> tokens,
// its size in bytes in *bytes. Returns 0; EXIT_USAGE (a character the model does not know) or
// EXIT_DATA with err.
int read_prompt(Job *j, size_t *bytes, char err[ERR_LEN]);
// generation/sampling.c: what generating takes within the memory limit: the model without
// gradients, its activations for a step of every sample, the key/value cache and logits of
// every sample, their texts (text_len characters each), the prompt (prompt_bytes: its bytes
// and tokens) and, with --attention, what attention_record keeps. Returns 0, or EXIT_USAGE
// with err.
int check_generation_memory(const Job *j, long text_len, double prompt_bytes, char err[ERR_LEN]);
// generation/sampling.c: the decoder (generation/decoder.h) set up for every sample from the
// start text (start_len tokens), and the prompt printed. Returns 0; EXIT_USAGE or EXIT_DATA
// with err.
int start_samples(Job *j, const int *start, long start_len, char err[ERR_LEN]);
// generation/sampling.c: decodes o->max_new characters of every sample, the first streaming
// to stdout as it is made; show(context, done, total) after each character. Returns 0, or
// EXIT_DATA with err.
int decode_samples(Job *j, void (*show)(void *context, long done, long total), void *context,
                   char err[ERR_LEN]);
// generation/sampling.c: after the first sample, each of the others, with its prompt. Returns
// 0, or EXIT_DATA with err.
int print_other_samples(const Job *j, long start_len, char err[ERR_LEN]);
// generation/sampling.c: "generated 500 characters in 0.412 s (1214 chars/s, precision fp32)"
// on stderr.
void report_speed(const GenerateOptions *o, double secs);
// generation/attention_record.c: --attention: the weights of every layer and head over the
// text's last window, written to each file (attention_record), a line on stderr for each.
// With --patch, the patching beside the clean text (patching NULL otherwise); the heads'
// importance by the mean when their means were taken. Returns 0; EXIT_USAGE or EXIT_DATA
// with err.
int record_attention(Job *j, const int *text, long len, const Patching *patching, char err[ERR_LEN]);
// generation/logits_record.c: --logits: the logits over the text's last window
// (logits_record), and a line on stderr. Returns 0; EXIT_USAGE or EXIT_DATA with err.
int record_logits(Job *j, const int *text, long len, char err[ERR_LEN]);

// ----------------------------------------------------------------------------
// --score FILE

// generation/score.c: the text read, within what the memory limit leaves beside the model's
// scoring, into j->prompt as tokens (at least 2). Returns 0; EXIT_USAGE or EXIT_DATA with err.
int read_text_to_score(Job *j, char err[ERR_LEN]);
// generation/score.c: the text scored with the model (score_tokens), its progress on stderr
// (generation/score_progress.h), --surprisal's CSV written, and the mean loss printed.
// Returns 0; EXIT_USAGE or EXIT_DATA with err.
int score_read_text(Job *j, char err[ERR_LEN]);

// ----------------------------------------------------------------------------
// --score-task

// generation/task_score.c: the checkpoint's run trained on a task, whose vocabulary is the
// model's, and the scoring's memory within the limit; st->task set. Returns 0; EXIT_USAGE or
// EXIT_DATA with err.
int check_scored_task(const Job *j, ScoredTask *st, char err[ERR_LEN]);
// generation/task_score.c: the split's rows scored with the model (task_score), as the run's
// evaluations read them, and printed. Returns 0, or EXIT_DATA with err.
int score_task_rows(Job *j, const ScoredTask *st, char err[ERR_LEN]);

// ----------------------------------------------------------------------------
// --export FILE

// generation/export.c: every file's format carries the checkpoint's model, and the parameters
// fit in memory beside the checkpoint and the largest file's own lists; *plan what writing
// them needs from the checkpoint. Returns 0; EXIT_USAGE or EXIT_DATA with err.
int plan_exports(const Job *j, ExportPlan *plan, char err[ERR_LEN]);
// generation/export.c: the model written to each file (export_model), a line on stdout for
// each, and the checkpoint's size beside theirs. Returns 0; EXIT_USAGE or EXIT_DATA with err.
int write_exports(const Job *j, const ExportPlan *plan, char err[ERR_LEN]);

// ----------------------------------------------------------------------------
// --circuits FILE

// generation/circuits_report.c: what computing the weights' circuits takes, within the memory
// limit. Returns 0, or EXIT_USAGE with err.
int check_circuits_memory(const Job *j, char err[ERR_LEN]);
// generation/circuits_report.c: the weights' circuits written and summed up
// (circuits_report), and a line on stderr. Returns 0; EXIT_USAGE or EXIT_DATA with err.
int write_circuits(const Job *j, char err[ERR_LEN]);

// ----------------------------------------------------------------------------
// --patch CLEAN CORRUPTED

// generation/patch_report.c: both texts as tokens (the clean one in j->prompt, the corrupted
// one in j->corrupted), of the same length within the block, and the memory patching them
// takes (with --attention, recording the clean one too) within the limit. Returns 0;
// EXIT_USAGE or EXIT_DATA with err.
int read_patch_texts(Job *j, char err[ERR_LEN]);
// generation/patch_report.c: the patching's runs of the two texts: each head's output, then
// the residual stream at each position, taken from the clean run.
long patching_runs(const Job *j);
// generation/patch_report.c: the model's activations for one text, and the corrupted text run
// with each of the clean run's activations in turn (analysis/patching.h); show(context, done,
// total) as they go. Returns 0; EXIT_USAGE (the two texts' answers are the same) or EXIT_DATA
// with err.
int patch_texts(Job *j, Patching *patching, PatchingProgress show, void *context, char err[ERR_LEN]);
// generation/patch_report.c: the patching's table (patch_report_print) on stdout. Returns 0,
// or EXIT_DATA with err.
int print_patching(const Job *j, const Patching *patching, char err[ERR_LEN]);

#endif
