#include "run_state.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../format/float_text.h"
#include "../format/json.h"

typedef enum { FIELD_INT, FIELD_LONG, FIELD_FLOAT, FIELD_DOUBLE, FIELD_U64 } FieldType;

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
    OPTION("train.min_char_count", FIELD_LONG, min_char_count, 1, 1e15, OPTIONAL),
    OPTION("train.grow_vocab", FIELD_INT, grow_vocab, 0, 1, OPTIONAL),
    STATE("state.step", FIELD_LONG, step, 0, TRAIN_MAX_STEPS, 0),
    STATE("state.rng", FIELD_U64, rng.state, 0, 0, 0),
    STATE("state.best_val_loss", FIELD_DOUBLE, best_val_loss, 0, INFINITY, 0),
    STATE("state.last_val_loss", FIELD_DOUBLE, last_val_loss, 0, INFINITY, OPEN_MAX | NAN_OK),
    STATE("state.tokens_seen", FIELD_LONG, tokens_seen, 0, 1e18, 0),
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
    _Static_assert(NUM_FIELDS + 7 <= RUN_META_MAX, "RunMeta holds every field");
    m->count = 0;
    meta_add(m, "train.data", o->data);
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
        else *(long *)p = 0;
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
    } else if (f->type == FIELD_INT || f->type == FIELD_LONG) {
        long long v = strtoll(text, &end, 10);
        if (end == text || *end || errno) return not_a_number(ck, f, text, "a whole number", err);
        if (v < f->min || v > f->max) return outside(ck, f, text, err);
        if (f->type == FIELD_INT) *(int *)p = (int)v;
        else *(long *)p = (long)v;
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
    const char *data = checkpoint_meta(ck, "train.data");
    if (!data || !data[0] || strlen(data) >= sizeof(o->data)) {
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
    o->dropout = c->dropout;
    return 0;
}
