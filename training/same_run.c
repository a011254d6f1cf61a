#include "same_run.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <zlib.h>

// Appends the fact `name` with its value from a printf format.
__attribute__((format(printf, 4, 5)))
static void add(DistFact *facts, int *n, const char *name, const char *fmt, ...) {
    facts[*n].name = name;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(facts[*n].value, DIST_FACT_LEN, fmt, ap);
    va_end(ap);
    (*n)++;
}

// The shortest decimal text that reads back as f exactly (9 significant digits always do).
static const char *float_text(float f, char buf[32]) {
    for (int digits = 6; digits < 9; digits++) {
        snprintf(buf, 32, "%.*g", digits, f);
        if (strtof(buf, NULL) == f) return buf;
    }
    snprintf(buf, 32, "%.9g", f);
    return buf;
}

// CRC-32 of the vocabulary's code points, each as 4 bytes little-endian.
static uint32_t vocab_crc(const Vocab *v) {
    uLong crc = crc32(0L, Z_NULL, 0);
    for (int i = 0; i < v->size; i++) {
        unsigned char bytes[4] = {v->chars[i] & 255, v->chars[i] >> 8 & 255, v->chars[i] >> 16 & 255,
                                  v->chars[i] >> 24};
        crc = crc32(crc, bytes, 4);
    }
    return (uint32_t)crc;
}

int same_run_facts(const SameRun *run, DistFact facts[SAME_RUN_MAX_FACTS]) {
    const TrainOptions *o = run->options;
    int n = 0;
    char text[3][32];
    char corpus[64];
    corpus_fingerprint_describe(run->corpus_fingerprint, corpus, sizeof(corpus));
    add(facts, &n, "corpus", "%s", corpus);
    add(facts, &n, "vocabulary", "%d characters, CRC-32 %08x%s", run->vocab->size, vocab_crc(run->vocab),
        run->vocab->unknown ? ", an unknown token" : "");
    const char *crc = run->checkpoint ? checkpoint_meta(run->checkpoint, "crc32") : NULL;
    if (!crc) crc = "unknown";
    if (o->resume[0] && run->checkpoint) add(facts, &n, "checkpoint (--resume)", "step %ld, CRC-32 %s", run->step, crc);
    else add(facts, &n, "checkpoint (--resume)", "none");
    if (o->init_from[0] && run->checkpoint) add(facts, &n, "checkpoint (--init-from)", "CRC-32 %s", crc);
    else add(facts, &n, "checkpoint (--init-from)", "none");
    add(facts, &n, "--n-layer", "%d", o->n_layer);
    add(facts, &n, "--n-head", "%d", o->n_head);
    add(facts, &n, "--n-embd", "%d", o->n_embd);
    add(facts, &n, "--head-size", "%d", o->head_size);
    add(facts, &n, "--block-size", "%d", o->block_size);
    add(facts, &n, "qkv bias (--no-qkv-bias)", "%s", o->qkv_bias ? "on" : "off");
    add(facts, &n, "--pos", "%s", position_name(o->position));
    add(facts, &n, "--dropout", "%s", float_text(o->dropout, text[0]));
    add(facts, &n, "--val-fraction", "%s", float_text(o->val_fraction, text[0]));
    add(facts, &n, "--batch-size", "%d", o->batch_size);
    add(facts, &n, "--grad-accum", "%d", o->grad_accum);
    add(facts, &n, "--zero", "%d", o->zero);
    add(facts, &n, "--precision", "%s", precision_name(o->precision));
    add(facts, &n, "--seed", "%llu", (unsigned long long)o->seed);
    add(facts, &n, "--steps", "%ld", o->steps);
    add(facts, &n, "--lr", "%s", float_text(o->lr, text[0]));
    add(facts, &n, "--min-lr", "%s", float_text(o->min_lr, text[0]));
    add(facts, &n, "--warmup", "%ld", o->warmup);
    add(facts, &n, "--decay-steps", "%ld", o->decay_steps);
    add(facts, &n, "learning-rate schedule's start", "step %ld", o->schedule_start);
    add(facts, &n, "--weight-decay", "%s", float_text(o->weight_decay, text[0]));
    add(facts, &n, "--grad-clip", "%s", float_text(o->grad_clip, text[0]));
    add(facts, &n, "AdamW's beta1, beta2, eps", "%s, %s, %s", float_text(o->beta1, text[0]),
        float_text(o->beta2, text[1]), float_text(o->eps, text[2]));
    add(facts, &n, "--eval-every", "%ld", o->eval_every);
    add(facts, &n, "--eval-batches", "%ld", o->eval_batches);
    add(facts, &n, "--save-every", "%ld", o->save_every);
    add(facts, &n, "--final-val-chars", "%ld", o->final_val_chars);
    return n;
}

int same_run_check(const SameRun *run, char err[ERR_LEN]) {
    DistFact facts[SAME_RUN_MAX_FACTS];
    int n = same_run_facts(run, facts);
    return dist_check_same(facts, n, err);
}
