#include "run_state.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "../common/clock.h"
#include "../common/platform.h"
#include "../common/rng.h"
#include "../dist/dist.h"
#include "../format/checkpoint.h"
#include "../format/float_text.h"
#include "../format/json.h"
#include "../format/safetensors.h"
#include "run.h"

// ----------------------------------------------------------------------------
// the run's identity

void run_id_new(char id[RUN_ID_LEN]) {
    uint64_t x = 0;
    if (platform_random_bytes(&x, sizeof(x)) != 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        x = hash_mix64((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec) ^
            hash_mix64((uint64_t)platform_process_id());
    }
    snprintf(id, RUN_ID_LEN, "%016" PRIx64, x);
}

int run_id_valid(const char *text) {
    size_t n = strspn(text, "0123456789abcdef");
    return n == RUN_ID_LEN - 1 && text[n] == '\0';
}

// The metadata one run's checkpoints may hold with other values (run_state.h): compared
// apart (the identity and the corpus), where the run stands, or what a resume may change.
static const char *const may_differ[] = {
    "train.run_id", "train.corpus_fingerprint",           // compared first
    "crc32", "optimizer.step",                             // the file's checksum; where the run stands, as state.*
    "format",                                              // chargpt-1 before a newer chargpt resumed it
    "train.steps", "train.eval_every", "train.save_every", "train.precision",  // --resume may change them,
    "train.data", "train.separator", "train.encoding",     // and the text's paths: the fingerprint's,
    "train.schedule_start",                                // and start a new schedule:
};
// the schedule's, compared when both checkpoints run it from the same train.schedule_start.
static const char *const schedule_keys[] = {"train.warmup", "train.decay_steps"};
// What an entry a checkpoint lacks is read as: keys newer than the first checkpoints.
static const struct {
    const char *key, *value;
} absent_means[] = {
    {"position_encoding", "learned"}, {"train.schedule_start", "0"}, {"train.keep_cr", "0"},
    {"train.skip_unknown", "0"},      {"train.min_char_count", "0"}, {"train.grow_vocab", "0"},
};

static int listed(const char *key, const char *const *keys, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (strcmp(key, keys[i]) == 0) return 1;
    return 0;
}

// The value of key in a checkpoint's metadata, or what its absence is read as (NULL: none).
static const char *identity_value(const RunIdentity *id, const char *key) {
    const char *value = safetensors_meta(&id->header, key);
    for (size_t i = 0; !value && i < sizeof(absent_means) / sizeof(absent_means[0]); i++)
        if (strcmp(key, absent_means[i].key) == 0) value = absent_means[i].value;
    return value;
}

// Fills id from the checkpoint's metadata.
static int identity_from_meta(RunIdentity *id, const char *path, char err[ERR_LEN]) {
    const SafeTensors *st = &id->header;
    const char *step = safetensors_meta(st, "state.step"), *run_id = safetensors_meta(st, "train.run_id");
    char *end;
    errno = 0;
    id->step = step ? strtol(step, &end, 10) : -1;
    if (!step || end == step || *end || errno || id->step < 0) {
        snprintf(err, ERR_LEN, "%s: not a checkpoint of ./train (its metadata has no step)", path);
        return -1;
    }
    if (run_id && !run_id_valid(run_id)) {
        snprintf(err, ERR_LEN, "%s: checkpoint metadata 'train.run_id' is '%.40s', not 16 hex digits", path, run_id);
        return -1;
    }
    snprintf(id->run_id, sizeof(id->run_id), "%s", run_id ? run_id : "");
    const char *fingerprint = safetensors_meta(st, "train.corpus_fingerprint");
    snprintf(id->fingerprint, sizeof(id->fingerprint), "%s", fingerprint ? fingerprint : "");
    return 0;
}

int run_identity_read(const char *path, RunIdentity *id, char err[ERR_LEN]) {
    memset(id, 0, sizeof(*id));
    if (safetensors_read_header(path, &id->header, err) != 0) return -1;
    if (identity_from_meta(id, path, err) == 0) return 0;
    run_identity_free(id);
    return -1;
}

void run_identity_free(RunIdentity *id) { safetensors_free(&id->header); }

// 1 when the metadata entry `key` tells b's run from a's, with why.
static int tells_apart(const RunIdentity *a, const RunIdentity *b, const char *key, int same_start, char *why,
                       size_t size) {
    if (strncmp(key, "state.", 6) == 0 || listed(key, may_differ, sizeof(may_differ) / sizeof(may_differ[0])) ||
        (!same_start && listed(key, schedule_keys, sizeof(schedule_keys) / sizeof(schedule_keys[0]))))
        return 0;
    const char *mine = identity_value(a, key), *theirs = identity_value(b, key);
    if (mine && theirs && strcmp(mine, theirs) == 0) return 0;
    char have[320] = "none", want[320] = "none";
    if (theirs) snprintf(have, sizeof(have), "'%.300s'", theirs);
    if (mine) snprintf(want, sizeof(want), "'%.300s'", mine);
    snprintf(why, size, "has %s %s, not %s (without train.run_id, a run is told by the options that shape its "
             "steps)", key, have, want);
    return 1;
}

int run_identity_compare(const RunIdentity *a, const RunIdentity *b, char *why, size_t size) {
    int both_ids = a->run_id[0] && b->run_id[0];
    if (both_ids && strcmp(a->run_id, b->run_id) != 0) {
        snprintf(why, size, "has train.run_id %s, not %s", b->run_id, a->run_id);
        return 1;
    }
    if (a->fingerprint[0] && b->fingerprint[0] && strcmp(a->fingerprint, b->fingerprint) != 0) {
        char have[64], want[64];
        corpus_fingerprint_describe(b->fingerprint, have, sizeof(have));
        corpus_fingerprint_describe(a->fingerprint, want, sizeof(want));
        snprintf(why, size, "was trained on another corpus (%s, not %s)", have, want);
        return 1;
    }
    if (both_ids) return 0;
    // every entry of either, in a's order then b's
    int same_start = strcmp(identity_value(a, "train.schedule_start"), identity_value(b, "train.schedule_start")) == 0;
    for (int i = 0; i < a->header.num_meta; i++)
        if (tells_apart(a, b, a->header.meta[i].key, same_start, why, size)) return 1;
    for (int i = 0; i < b->header.num_meta; i++)
        if (!safetensors_meta(&a->header, b->header.meta[i].key) &&
            tells_apart(a, b, b->header.meta[i].key, same_start, why, size))
            return 1;
    return 0;
}

// ----------------------------------------------------------------------------
// the run's options and state

typedef enum { FIELD_INT, FIELD_LONG, FIELD_LLONG, FIELD_FLOAT, FIELD_DOUBLE, FIELD_U64 } FieldType;

// How a field may be: its limits are [min, max], or [min, max) with OPEN_MAX; NaN is
// refused unless NAN_OK.
// OPTIONAL: a key newer than the first checkpoints, 0 when absent.
enum { OPEN_MAX = 1, NAN_OK = 2, OPTIONAL = 4 };

typedef struct {
    const char *key;
    FieldType type;
    int in_state;   // 0: a TrainOptions field, 1: a TrainState field
    size_t offset;  // of the field in its struct
    double min, max;
    int flags;
} Field;

#define OPTION(key, type, name, min, max, flags) {key, type, 0, offsetof(TrainOptions, name), min, max, flags}
#define STATE(key, type, name, min, max, flags) {key, type, 1, offsetof(TrainState, name), min, max, flags}

static const Field fields[] = {
    OPTION("train.val_fraction", FIELD_FLOAT, val_fraction, 0, 1, OPEN_MAX),
    OPTION("train.batch_size", FIELD_INT, batch_size, 1, TRAIN_MAX_BATCH_SIZE, 0),
    OPTION("train.steps", FIELD_LONG, steps, 0, TRAIN_MAX_STEPS, 0),
    OPTION("train.decay_steps", FIELD_LONG, decay_steps, 1, TRAIN_MAX_STEPS, 0),
    OPTION("train.warmup", FIELD_LONG, warmup, 0, TRAIN_MAX_STEPS, 0),
    OPTION("train.lr", FIELD_FLOAT, lr, 0, TRAIN_MAX_LR, 0),
    OPTION("train.min_lr", FIELD_FLOAT, min_lr, 0, TRAIN_MAX_LR, 0),
    OPTION("train.weight_decay", FIELD_FLOAT, weight_decay, 0, TRAIN_MAX_LR, 0),
    OPTION("train.grad_clip", FIELD_FLOAT, grad_clip, 0, TRAIN_MAX_GRAD_CLIP, 0),
    OPTION("train.beta1", FIELD_FLOAT, beta1, 0, 1, OPEN_MAX),
    OPTION("train.beta2", FIELD_FLOAT, beta2, 0, 1, OPEN_MAX),
    OPTION("train.eps", FIELD_FLOAT, eps, 1e-30, 1, 0),
    OPTION("train.eval_every", FIELD_LONG, eval_every, 1, TRAIN_MAX_STEPS, 0),
    OPTION("train.eval_batches", FIELD_LONG, eval_batches, 1, TRAIN_MAX_EVAL_BATCHES, 0),
    OPTION("train.save_every", FIELD_LONG, save_every, 1, TRAIN_MAX_STEPS, 0),
    OPTION("train.log_every", FIELD_LONG, log_every, 1, TRAIN_MAX_STEPS, 0),
    OPTION("train.seed", FIELD_U64, seed, 0, 0, 0),
    OPTION("train.keep_cr", FIELD_INT, keep_cr, 0, 1, OPTIONAL),
    OPTION("train.skip_unknown", FIELD_INT, skip_unknown, 0, 1, OPTIONAL),
    OPTION("train.schedule_start", FIELD_LONG, schedule_start, 0, TRAIN_MAX_STEPS, OPTIONAL),
    OPTION("train.min_char_count", FIELD_LONG, min_char_count, 1, TRAIN_MAX_MIN_CHAR_COUNT, OPTIONAL),
    OPTION("train.grow_vocab", FIELD_INT, grow_vocab, 0, 1, OPTIONAL),
    STATE("state.step", FIELD_LONG, step, 0, TRAIN_MAX_STEPS, 0),
    STATE("state.rng", FIELD_U64, rng.state, 0, 0, 0),
    STATE("state.best_val_loss", FIELD_DOUBLE, best_val_loss, 0, INFINITY, 0),
    STATE("state.last_val_loss", FIELD_DOUBLE, last_val_loss, 0, INFINITY, OPEN_MAX | NAN_OK),
    STATE("state.tokens_seen", FIELD_LLONG, tokens_seen, 0, 1e18, 0),
    STATE("state.elapsed_s", FIELD_DOUBLE, elapsed_s, 0, 1e12, 0),
};
#define NUM_FIELDS (int)(sizeof(fields) / sizeof(fields[0]))

static void *field_address(const Field *f, void *options, void *state) {
    return (char *)(f->in_state ? state : options) + f->offset;
}

static void meta_add(RunMeta *m, const char *key, const char *value) {
    snprintf(m->keys[m->count], sizeof(m->keys[0]), "%s", key);
    snprintf(m->values[m->count], sizeof(m->values[0]), "%s", value);
    m->entries[m->count] = (StMeta){m->keys[m->count], m->values[m->count]};
    m->count++;
}

void run_meta_write(RunMeta *m, const TrainOptions *o, const TrainState *s) {
    _Static_assert(NUM_FIELDS + 8 <= RUN_META_MAX, "RunMeta holds every field");
    m->count = 0;
    meta_add(m, "train.data", o->data);
    if (o->task[0]) meta_add(m, "train.task", o->task);
    meta_add(m, "train.separator", o->separator);
    meta_add(m, "train.encoding", encoding_name(o->encoding));
    meta_add(m, "train.precision", precision_name(o->precision));
    if (o->corpus_fingerprint[0]) meta_add(m, "train.corpus_fingerprint", o->corpus_fingerprint);
    if (o->init_from[0]) meta_add(m, "train.init_from", o->init_from);
    if (o->run_id[0]) meta_add(m, "train.run_id", o->run_id);
    for (int i = 0; i < NUM_FIELDS; i++) {
        const Field *f = &fields[i];
        const void *p = field_address(f, (void *)o, (void *)s);
        char value[64];
        switch (f->type) {
            case FIELD_INT: snprintf(value, sizeof(value), "%d", *(const int *)p); break;
            case FIELD_LONG: snprintf(value, sizeof(value), "%ld", *(const long *)p); break;
            case FIELD_LLONG: snprintf(value, sizeof(value), "%lld", *(const long long *)p); break;
            case FIELD_FLOAT: float_text(*(const float *)p, value, sizeof(value)); break;
            case FIELD_DOUBLE: double_text(*(const double *)p, value, sizeof(value)); break;
            case FIELD_U64: snprintf(value, sizeof(value), "%" PRIu64, *(const uint64_t *)p); break;
        }
        meta_add(m, f->key, value);
    }
}

int run_meta_check_paths(const TrainOptions *o, char err[ERR_LEN]) {
    const char *const options[2][2] = {{"--data", o->data}, {"--init-from", o->init_from}};
    for (int i = 0; i < 2; i++) {
        if (json_utf8_valid(options[i][1], strlen(options[i][1]))) continue;
        snprintf(err, ERR_LEN, "%s %s: the path is not valid UTF-8, which a checkpoint's metadata cannot hold: rename "
                 "the file, or give a link to it whose name is UTF-8", options[i][0], options[i][1]);
        return -1;
    }
    return 0;
}

static int outside(const Checkpoint *ck, const Field *f, const char *text, char err[ERR_LEN]) {
    snprintf(err, ERR_LEN, "%s: checkpoint metadata '%s' is %.40s, outside [%.10g, %.10g%c", ck->path, f->key, text,
             f->min, f->max, f->flags & OPEN_MAX ? ')' : ']');
    return -1;
}

static int not_a_number(const Checkpoint *ck, const Field *f, const char *text, const char *kind, char err[ERR_LEN]) {
    snprintf(err, ERR_LEN, "%s: checkpoint metadata '%s' is '%.40s', not %s", ck->path, f->key, text, kind);
    return -1;
}

// Reads one field from the checkpoint's metadata into its struct, checking its range.
static int read_field(const Checkpoint *ck, const Field *f, TrainOptions *o, TrainState *s, char err[ERR_LEN]) {
    const char *text = checkpoint_meta(ck, f->key);
    void *p = field_address(f, o, s);
    if (!text && (f->flags & OPTIONAL)) {
        if (f->type == FIELD_INT) *(int *)p = 0;
        else if (f->type == FIELD_LONG) *(long *)p = 0;
        else *(long long *)p = 0;
        return 0;
    }
    if (!text) {
        snprintf(err, ERR_LEN, "%s: checkpoint has no '%s' in its metadata (not written by ./train?)", ck->path,
                 f->key);
        return -1;
    }
    char *end;
    errno = 0;
    if (f->type == FIELD_U64) {
        uint64_t v = strtoull(text, &end, 10);
        if (text[0] < '0' || text[0] > '9' || *end || errno)
            return not_a_number(ck, f, text, "a whole number in [0, 2^64)", err);
        *(uint64_t *)p = v;
    } else if (f->type == FIELD_INT || f->type == FIELD_LONG || f->type == FIELD_LLONG) {
        long long v = strtoll(text, &end, 10);
        if (end == text || *end || errno) return not_a_number(ck, f, text, "a whole number", err);
        if (v < f->min || v > f->max) return outside(ck, f, text, err);
        if (f->type == FIELD_INT) *(int *)p = (int)v;
        else if (f->type == FIELD_LONG) *(long *)p = (long)v;
        else *(long long *)p = v;
    } else {
        double v = strtod(text, &end);
        if (end == text || *end) return not_a_number(ck, f, text, "a number", err);
        int in_range = isnan(v) ? (f->flags & NAN_OK) != 0
                                : v >= f->min && (f->flags & OPEN_MAX ? v < f->max : v <= f->max);
        if (!in_range) return outside(ck, f, text, err);
        if (f->type == FIELD_FLOAT) *(float *)p = (float)v;
        else *(double *)p = v;
    }
    return 0;
}

int run_meta_read(const Checkpoint *ck, TrainOptions *o, TrainState *s, char err[ERR_LEN]) {
    const char *task = checkpoint_meta(ck, "train.task");
    if (task && task_find(task) < 0) {
        snprintf(err, ERR_LEN, "%s: checkpoint metadata 'train.task' is '%.40s', not one of %s", ck->path, task,
                 TASK_NAMES);
        return -1;
    }
    snprintf(o->task, sizeof(o->task), "%s", task ? task : "");
    const char *data = checkpoint_meta(ck, "train.data");
    if (!data || (!data[0] && !task) || strlen(data) >= sizeof(o->data)) {
        snprintf(err, ERR_LEN, "%s: checkpoint metadata 'train.data' is missing, empty or too long", ck->path);
        return -1;
    }
    strcpy(o->data, data);
    // a single file has no separator: older checkpoints, which read one, take the default
    const char *separator = checkpoint_meta(ck, "train.separator");
    if (separator && strlen(separator) >= sizeof(o->separator)) {
        snprintf(err, ERR_LEN, "%s: checkpoint metadata 'train.separator' is too long", ck->path);
        return -1;
    }
    snprintf(o->separator, sizeof(o->separator), "%s", separator ? separator : "\\n");
    const char *encoding = checkpoint_meta(ck, "train.encoding");
    o->encoding = ENCODING_UTF8;
    if (encoding && encoding_parse(encoding, &o->encoding) != 0) {
        snprintf(err, ERR_LEN, "%s: checkpoint metadata 'train.encoding' is '%.40s', not utf-8, latin-1 or cp1252",
                 ck->path, encoding);
        return -1;
    }
    const char *fingerprint = checkpoint_meta(ck, "train.corpus_fingerprint");
    snprintf(o->corpus_fingerprint, sizeof(o->corpus_fingerprint), "%s", fingerprint ? fingerprint : "");
    const char *init_from = checkpoint_meta(ck, "train.init_from");
    snprintf(o->init_from, sizeof(o->init_from), "%s", init_from ? init_from : "");
    const char *run_id = checkpoint_meta(ck, "train.run_id");
    if (run_id && !run_id_valid(run_id)) {
        snprintf(err, ERR_LEN, "%s: checkpoint metadata 'train.run_id' is '%.40s', not 16 hex digits", ck->path,
                 run_id);
        return -1;
    }
    snprintf(o->run_id, sizeof(o->run_id), "%s", run_id ? run_id : "");
    // checkpoints from before --precision existed were trained in fp32
    const char *precision = checkpoint_meta(ck, "train.precision");
    o->precision = PRECISION_FP32;
    if (precision && precision_parse(precision, &o->precision) != 0) {
        snprintf(err, ERR_LEN, "%s: checkpoint metadata 'train.precision' is '%.40s', not fp32 or bf16", ck->path,
                 precision);
        return -1;
    }
    for (int i = 0; i < NUM_FIELDS; i++)
        if (read_field(ck, &fields[i], o, s, err) != 0) return -1;
    if (o->min_lr > o->lr) {
        snprintf(err, ERR_LEN, "%s: checkpoint metadata 'train.min_lr' (%g) is larger than 'train.lr' (%g)",
                 ck->path, o->min_lr, o->lr);
        return -1;
    }
    if (o->schedule_start > s->step) {
        snprintf(err, ERR_LEN, "%s: checkpoint metadata 'train.schedule_start' (%ld) is past 'state.step' (%ld)",
                 ck->path, o->schedule_start, s->step);
        return -1;
    }
    if (s->step > o->steps) {
        snprintf(err, ERR_LEN, "%s: checkpoint metadata 'state.step' (%ld) is past 'train.steps' (%ld)", ck->path,
                 s->step, o->steps);
        return -1;
    }
    const GPTConfig *c = &ck->config;
    o->n_layer = c->n_layer;
    o->n_head = c->n_head;
    o->n_embd = c->n_embd;
    o->head_size = c->head_size;
    o->block_size = c->block_size;
    o->qkv_bias = c->qkv_bias;
    o->position = c->position;
    o->dropout = c->dropout;
    return 0;
}

// ----------------------------------------------------------------------------
// saving the run

int run_checkpoint_save(const char *const paths[2], DataParallel *dp, GPT *model, const AdamW *opt,
                        const Vocab *vocab, const TrainOptions *o, const TrainState *s, char err[ERR_LEN]) {
    static RunMeta meta;  // 44 KB of text: not on the stack
    AdamW copy;
    const AdamW *full;
    if (data_parallel_gather_optimizer(dp, model, opt, &copy, &full, err) != 0) return EXIT_USAGE;
    run_meta_write(&meta, o, s);
    int status = 0;
    for (int i = 0; i < 2 && dist_rank() == 0 && status == 0; i++)
        if (paths[i] && checkpoint_save(paths[i], model, vocab, full, meta.entries, meta.count, err) != 0)
            status = EXIT_DATA;
    data_parallel_release_optimizer(dp);
    return status;
}

// ----------------------------------------------------------------------------
// the same run on every process

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

// f as the shortest decimal text that reads back as f exactly (format/float_text.h), in buf.
static const char *float_fact(float f, char buf[32]) {
    float_text(f, buf, 32);
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
    add(facts, &n, "--dropout", "%s", float_fact(o->dropout, text[0]));
    add(facts, &n, "--val-fraction", "%s", float_fact(o->val_fraction, text[0]));
    add(facts, &n, "--batch-size", "%d", o->batch_size);
    add(facts, &n, "--grad-accum", "%d", o->grad_accum);
    add(facts, &n, "--zero", "%d", o->zero);
    add(facts, &n, "--precision", "%s", precision_name(o->precision));
    add(facts, &n, "--seed", "%llu", (unsigned long long)o->seed);
    add(facts, &n, "--steps", "%ld", o->steps);
    add(facts, &n, "--lr", "%s", float_fact(o->lr, text[0]));
    add(facts, &n, "--min-lr", "%s", float_fact(o->min_lr, text[0]));
    add(facts, &n, "--warmup", "%ld", o->warmup);
    add(facts, &n, "--decay-steps", "%ld", o->decay_steps);
    add(facts, &n, "learning-rate schedule's start", "step %ld", o->schedule_start);
    add(facts, &n, "--weight-decay", "%s", float_fact(o->weight_decay, text[0]));
    add(facts, &n, "--grad-clip", "%s", float_fact(o->grad_clip, text[0]));
    add(facts, &n, "AdamW's beta1, beta2, eps", "%s, %s, %s", float_fact(o->beta1, text[0]),
        float_fact(o->beta2, text[1]), float_fact(o->eps, text[2]));
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

// ----------------------------------------------------------------------------
// the run's checks and saves

int check_same_run(Run *r, char err[ERR_LEN]) {
    SameRun same = {&r->o, r->fingerprint, &r->vocab, r->resuming || r->initializing ? &r->ck : NULL, r->state.step};
    return same_run_check(&same, err) != 0 ? EXIT_DATA : 0;
}

int save_checkpoints(Run *r, const char *best, const char *ckpt, char err[ERR_LEN]) {
    const char *paths[2] = {best, ckpt};
    if (!best && !ckpt) return 0;
    double start = now_seconds();
    int status = run_checkpoint_save(paths, &r->dp, &r->model, &r->opt, &r->vocab, &r->o, &r->state, err);
    if (status != 0) return status;
    progress_report_saved(&r->report, now_seconds() - start);
    return 0;
}
