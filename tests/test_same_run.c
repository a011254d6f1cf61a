// What the processes of a data-parallel run must share (training/run_state.h): every option
// that decides what a step computes or which collectives a run makes is a fact of its own, and
// what concerns one process alone is none; the one-process build's comparison agrees.
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../training/run_state.h"
#include "test.h"

static TrainOptions base_options(void) {
    TrainOptions o;
    memset(&o, 0, sizeof(o));
    strcpy(o.data, "corpus.txt");
    strcpy(o.out, "out");
    o.n_layer = 4, o.n_head = 4, o.n_embd = 128, o.head_size = 32, o.block_size = 64, o.batch_size = 12;
    o.qkv_bias = 1, o.dropout = 0.1f, o.steps = 2000, o.decay_steps = 2000, o.warmup = 100;
    o.lr = 1e-3f, o.min_lr = 1e-4f, o.weight_decay = 0.1f, o.grad_clip = 1.0f, o.val_fraction = 0.1f;
    o.beta1 = 0.9f, o.beta2 = 0.99f, o.eps = 1e-8f;
    o.eval_every = 250, o.eval_batches = 200, o.save_every = 500, o.log_every = 10, o.seed = 1337;
    o.grad_accum = 1, o.precision = PRECISION_FP32, o.mpi_timeout = 300;
    return o;
}

static uint32_t base_chars[] = {'\n', ' ', 'a', 'b', 'c'};

// The names of the facts in which b differs from a (same count), joined by '|'; "" if none.
static void differing(const SameRun *a, const SameRun *b, char *names, size_t size) {
    DistFact fa[SAME_RUN_MAX_FACTS], fb[SAME_RUN_MAX_FACTS];
    int na = same_run_facts(a, fa), nb = same_run_facts(b, fb);
    names[0] = '\0';
    if (!CHECK(na == nb, "%d facts against %d", na, nb)) return;
    for (int i = 0; i < na; i++) {
        CHECK(strcmp(fa[i].name, fb[i].name) == 0, "fact %d is %s and %s", i, fa[i].name, fb[i].name);
        if (strcmp(fa[i].value, fb[i].value) != 0)
            snprintf(names + strlen(names), size - strlen(names), "%s%s", names[0] ? "|" : "", fa[i].name);
    }
}

// Changes option k of a list; returns the fact that must then differ ("" for none), NULL past
// the list's end.
static const char *change_option(TrainOptions *o, int k) {
    switch (k) {
        case 0: o->n_layer = 2; return "--n-layer";
        case 1: o->n_head = 2; return "--n-head";
        case 2: o->n_embd = 64; return "--n-embd";
        case 3: o->head_size = 16; return "--head-size";
        case 4: o->block_size = 32; return "--block-size";
        case 5: o->qkv_bias = 0; return "qkv bias (--no-qkv-bias)";
        case 6: o->dropout = 0.2f; return "--dropout";
        case 7: o->val_fraction = 0.2f; return "--val-fraction";
        case 8: o->batch_size = 24; return "--batch-size";
        case 9: o->grad_accum = 2; return "--grad-accum";
        case 10: o->zero = 1; return "--zero";
        case 11: o->precision = PRECISION_BF16; return "--precision";
        case 12: o->seed = 7; return "--seed";
        case 13: o->steps = 30; return "--steps";
        case 14: o->lr = 2e-3f; return "--lr";
        case 15: o->lr = nextafterf(o->lr, 1.0f); return "--lr";  // one float apart
        case 16: o->min_lr = 0.0f; return "--min-lr";
        case 17: o->warmup = 0; return "--warmup";
        case 18: o->decay_steps = 100; return "--decay-steps";
        case 19: o->schedule_start = 20; return "learning-rate schedule's start";
        case 20: o->weight_decay = 0.0f; return "--weight-decay";
        case 21: o->grad_clip = 0.0f; return "--grad-clip";
        case 22: o->beta2 = 0.999f; return "AdamW's beta1, beta2, eps";
        case 23: o->eval_every = 10; return "--eval-every";
        case 24: o->eval_batches = 4; return "--eval-batches";
        case 25: o->save_every = 10; return "--save-every";
        case 26: o->final_val_chars = 100; return "--final-val-chars";
        // what concerns one process alone, or what the corpus's fingerprint or vocabulary covers: no fact
        case 27: strcpy(o->data, "/elsewhere/corpus.txt.gz"); return "";
        case 28: strcpy(o->out, "other"); return "";
        case 29: o->threads = 3; return "";
        case 30: o->max_memory = 1e9; return "";
        case 31: o->log_every = 1; return "";
        case 32: o->mpi_timeout = 5; return "";
        case 33: o->force = 1; return "";
        case 34: o->keep_cr = 1; return "";
        case 35: o->skip_unknown = 1; return "";
        case 36: strcpy(o->separator, "\\n\\n"); return "";
        case 37: o->encoding = ENCODING_LATIN1; return "";
        case 38: o->min_char_count = 10; return "";
        case 39: o->grow_vocab = 1; return "";
        default: return NULL;
    }
}

TEST(same_run_each_compared_option_is_its_own_fact) {
    TrainOptions a = base_options();
    Vocab vocab = {base_chars, 5, 0};
    SameRun run_a = {&a, "1000:0123abcd", &vocab, NULL, 0};
    DistFact facts[SAME_RUN_MAX_FACTS];
    int n = same_run_facts(&run_a, facts);
    CHECK(n > 0 && n <= SAME_RUN_MAX_FACTS && n <= 64, "%d facts (at most %d, and 64 for dist_check_same)", n,
          SAME_RUN_MAX_FACTS);
    CHECK(strcmp(facts[0].name, "corpus") == 0 && strcmp(facts[0].value, "1000 characters, CRC-32 0123abcd") == 0,
          "the first fact is %s = %s, want the corpus's fingerprint", facts[0].name, facts[0].value);

    char names[512];
    const char *want;
    for (int k = 0; (want = change_option(&(TrainOptions){0}, k)); k++) {
        TrainOptions b = base_options();
        change_option(&b, k);
        SameRun run_b = run_a;
        run_b.options = &b;
        differing(&run_a, &run_b, names, sizeof(names));
        CHECK(strcmp(names, want) == 0, "change %d: facts '%s' differ, want '%s'", k, names, want);
    }

    // the corpus and the vocabulary
    uint32_t other_chars[] = {'\n', ' ', 'a', 'b', 'd'};
    Vocab other = {other_chars, 5, 0};
    SameRun run_b = run_a;
    run_b.vocab = &other;
    differing(&run_a, &run_b, names, sizeof(names));
    CHECK(strcmp(names, "vocabulary") == 0, "another character: facts '%s' differ, want the vocabulary", names);
    Vocab with_unknown = {base_chars, 5, 1};  // the same characters, one of them standing for the rest
    run_b.vocab = &with_unknown;
    differing(&run_a, &run_b, names, sizeof(names));
    CHECK(strcmp(names, "vocabulary") == 0, "an unknown token: facts '%s' differ, want the vocabulary", names);
    run_b = run_a;
    run_b.corpus_fingerprint = "1000:0123abce";
    differing(&run_a, &run_b, names, sizeof(names));
    CHECK(strcmp(names, "corpus") == 0, "another text: facts '%s' differ, want the corpus", names);

    // one process agrees with itself
    char err[ERR_LEN] = "unchanged";
    CHECK(same_run_check(&run_a, err) == 0 && strcmp(err, "unchanged") == 0, "one process: %s", err);
}
