// What the processes of a data-parallel run must share, checked when they first meet (before
// any collective sized by the data and before anything is written): each one reads its own
// corpus and checkpoint and parses its own command line, and a difference would otherwise
// train a model no single run computes, or end in an MPI error or a hang. Compared, in this
// order (the first difference is the one described in full):
//   corpus       its fingerprint (length and CRC-32 of the text as cleaned): what is trained on
//   vocabulary   its size and the CRC-32 of its code points: the size of the embedding, so of
//                every collective of the parameters
//   checkpoint   --resume's step and CRC-32, --init-from's CRC-32: the weights, moments and
//                sampler state every process starts from
//   options      those that decide the parameters' shape (--n-layer, --n-head, --n-embd,
//                --head-size, --block-size, --no-qkv-bias), what a step computes (--dropout,
//                --seed, which draws every process's batches and dropout masks, --val-fraction,
//                --batch-size, --grad-accum, --precision), how every process updates its copy
//                or shard of the weights (--lr, --min-lr, --warmup, --decay-steps, the
//                schedule's start, --weight-decay, --grad-clip, AdamW's betas and eps), and
//                which collectives a run makes and when (--zero, --steps, --eval-every,
//                --eval-batches, --save-every, --final-val-chars).
// Not compared: what concerns one process or rank 0 alone (--data's paths, --out, --threads,
// --max-memory, --log-every, --mpi-timeout, --force) and what the corpus's fingerprint or the
// vocabulary already covers (the whole set of --data's texts with their --separator, read in
// their --encoding with --keep-cr; --skip-unknown drops the same characters from the same
// text; --min-char-count and --grow-vocab make the vocabulary, unknown token included).
#ifndef CHARGPT_SAME_RUN_H
#define CHARGPT_SAME_RUN_H

#include "../data/vocab.h"
#include "../dist/dist.h"
#include "../format/checkpoint.h"
#include "run_state.h"

#define SAME_RUN_MAX_FACTS 40

// This process's run: its options, its corpus's fingerprint, its vocabulary, and the
// checkpoint it starts from (o->resume's at step `step`, or o->init_from's; NULL for neither).
typedef struct {
    const TrainOptions *options;
    const char *corpus_fingerprint;
    const Vocab *vocab;
    const Checkpoint *checkpoint;
    long step;
} SameRun;

// Fills facts with what the processes must share, in the order above; returns their count.
int same_run_facts(const SameRun *run, DistFact facts[SAME_RUN_MAX_FACTS]);
// Compares this process's facts with every other's (dist_check_same). Returns 0, or -1 on
// every process with the same message naming the ranks and what differs. Collective.
int same_run_check(const SameRun *run, char err[ERR_LEN]);

#endif
