#include "checkpoint.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "float_text.h"

#define CRC_KEY "crc32"
#define NUM_CONFIG_KEYS 9
#define POSITION_KEY "position_encoding"  // absent in checkpoints older than RoPE: learned

// One metadata entry whose value lives in a fixed buffer.
typedef struct {
    char key[64];
    char value[64];
} MetaText;

static void config_to_meta(const GPTConfig *c, MetaText out[NUM_CONFIG_KEYS]) {
    snprintf(out[0].key, 64, "vocab_size"), snprintf(out[0].value, 64, "%d", c->vocab_size);
    snprintf(out[1].key, 64, "block_size"), snprintf(out[1].value, 64, "%d", c->block_size);
    snprintf(out[2].key, 64, "n_layer"), snprintf(out[2].value, 64, "%d", c->n_layer);
    snprintf(out[3].key, 64, "n_head"), snprintf(out[3].value, 64, "%d", c->n_head);
    snprintf(out[4].key, 64, "n_embd"), snprintf(out[4].value, 64, "%d", c->n_embd);
    snprintf(out[5].key, 64, "head_size"), snprintf(out[5].value, 64, "%d", c->head_size);
    snprintf(out[6].key, 64, "qkv_bias"), snprintf(out[6].value, 64, "%d", c->qkv_bias);
    snprintf(out[7].key, 64, "dropout"), float_text(c->dropout, out[7].value, 64);
    snprintf(out[8].key, 64, POSITION_KEY), snprintf(out[8].value, 64, "%s", position_name(c->position));
}

// "[10,32,...]"; returns a malloc'ed string
static char *vocab_to_json(const uint32_t *vocab, int n) {
    char *s = malloc((size_t)n * 12 + 3);
    if (!s) return NULL;
    char *p = s;
    *p++ = '[';
    for (int i = 0; i < n; i++) p += sprintf(p, i ? ",%" PRIu32 : "%" PRIu32, vocab[i]);
    *p++ = ']';
    *p = '\0';
    return s;
}

#define UNKNOWN_KEY "vocab_unknown"

int checkpoint_save(const char *path, const GPT *model, const Vocab *vocab, const AdamW *opt, const StMeta *extra,
                    int num_extra, char err[ERR_LEN]) {
    const GPTConfig *c = &model->config;
    if (opt && (opt->first != 0 || opt->n != model->num_parameters)) {
        snprintf(err, ERR_LEN, "%s: the optimizer holds %zu of the %zu parameters' moments", path, opt->n,
                 model->num_parameters);
        return -1;
    }
    int count = gpt_num_tensors(c);
    int num_tensors = count * (opt ? 3 : 1);
    StWriteTensor *tensors = calloc((size_t)num_tensors, sizeof(StWriteTensor));
    char (*names)[ST_MAX_NAME + 1] = calloc((size_t)num_tensors, ST_MAX_NAME + 1);
    int num_meta = 4 + NUM_CONFIG_KEYS + num_extra;
    StMeta *meta = calloc((size_t)num_meta, sizeof(StMeta));
    char *vocab_json = vocab_to_json(vocab->chars, c->vocab_size);
    int rc = -1;
    if (!tensors || !names || !meta || !vocab_json) {
        snprintf(err, ERR_LEN, "%s: out of memory", path);
        goto done;
    }
    // parameters, then the optimizer's moments under prefixed names
    const char *prefixes[3] = {"", "optimizer.m.", "optimizer.v."};
    const float *bases[3] = {model->params_memory, opt ? opt->m : NULL, opt ? opt->v : NULL};
    for (int group = 0; group < (opt ? 3 : 1); group++) {
        for (int i = 0; i < count; i++) {
            TensorInfo info;
            gpt_tensor_info(c, i, &info);
            int k = group * count + i;
            snprintf(names[k], ST_MAX_NAME + 1, "%s%s", prefixes[group], info.name);
            tensors[k].name = names[k];
            tensors[k].dtype = ST_F32;
            tensors[k].ndim = info.ndim;
            tensors[k].shape[0] = info.shape[0];
            tensors[k].shape[1] = info.shape[1];
            tensors[k].data = bases[group] + info.offset;
        }
    }
    MetaText config_meta[NUM_CONFIG_KEYS];
    config_to_meta(c, config_meta);
    char opt_step[32];
    snprintf(opt_step, sizeof(opt_step), "%ld", opt ? opt->step : 0L);
    int m = 0;
    meta[m++] = (StMeta){"format", CHECKPOINT_FORMAT};
    meta[m++] = (StMeta){"vocab", vocab_json};
    char unknown[16];
    snprintf(unknown, sizeof(unknown), "%u", (unsigned)VOCAB_UNKNOWN_CHAR);
    if (vocab->unknown) meta[m++] = (StMeta){UNKNOWN_KEY, unknown};
    meta[m++] = (StMeta){"optimizer.step", opt_step};
    for (int i = 0; i < NUM_CONFIG_KEYS; i++) meta[m++] = (StMeta){config_meta[i].key, config_meta[i].value};
    for (int i = 0; i < num_extra; i++) meta[m++] = extra[i];
    rc = safetensors_write(path, tensors, num_tensors, meta, m, CRC_KEY, err);
done:
    free(tensors);
    free(names);
    free(meta);
    free(vocab_json);
    return rc;
}

// Parses a whole decimal integer in [min, max]; returns 0 or -1.
static int parse_int(const char *s, long min, long max, long *out) {
    if (!s || !*s) return -1;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < min || v > max) return -1;
    *out = v;
    return 0;
}

static int parse_vocab(const char *s, uint32_t *vocab, int n) {
    const char *p = s;
    if (*p++ != '[') return -1;
    for (int i = 0; i < n; i++) {
        if (i > 0 && *p++ != ',') return -1;
        char *end;
        errno = 0;
        unsigned long v = strtoul(p, &end, 10);
        if (end == p || errno || v > 0x10FFFF || !vocab_char_allowed((uint32_t)v)) return -1;
        if (i > 0 && v <= vocab[i - 1]) return -1;
        vocab[i] = (uint32_t)v;
        p = end;
    }
    return strcmp(p, "]") == 0 ? 0 : -1;
}

// Checks the stored CRC-32 as the checkpoint's format version defines it.
static int check_crc(const Checkpoint *ck, int v1, char err[ERR_LEN]) {
    const char *stored = safetensors_meta(&ck->file, CRC_KEY);
    if (!stored) {
        snprintf(err, ERR_LEN, "%s: checkpoint has no crc32 in its metadata", ck->path);
        return -1;
    }
    uint32_t crc;
    if (v1) {
        crc = safetensors_data_crc(&ck->file);
    } else if (safetensors_file_crc(&ck->file, CRC_KEY, &crc) != 0) {
        snprintf(err, ERR_LEN, "%s: checkpoint is corrupt: its crc32 '%.16s' is not 8 lowercase hex digits", ck->path,
                 stored);
        return -1;
    }
    char actual[16];
    snprintf(actual, sizeof(actual), "%08" PRIx32, crc);
    if (strcmp(stored, actual) != 0) {
        snprintf(err, ERR_LEN, "%s: checkpoint is corrupt: CRC-32 of its %s is %s, the header says %.16s", ck->path,
                 v1 ? "data" : "header and data", actual, stored);
        return -1;
    }
    return 0;
}

static int parse_config(Checkpoint *ck, char err[ERR_LEN]) {
    static const char *keys[] = {"vocab_size", "block_size", "n_layer", "n_head", "n_embd", "head_size", "qkv_bias"};
    int *fields[] = {&ck->config.vocab_size, &ck->config.block_size, &ck->config.n_layer, &ck->config.n_head,
                     &ck->config.n_embd, &ck->config.head_size, &ck->config.qkv_bias};
    // each a whole number an int holds, whose limits gpt_config_validate then says
    for (int i = 0; i < 7; i++) {
        const char *text = safetensors_meta(&ck->file, keys[i]);
        if (!text) {
            snprintf(err, ERR_LEN, "%s: checkpoint has no '%s' in its metadata", ck->path, keys[i]);
            return -1;
        }
        char *end;
        errno = 0;
        long long v = strtoll(text, &end, 10);
        if (end == text || *end) {
            snprintf(err, ERR_LEN, "%s: checkpoint metadata '%s' is '%.40s', not a whole number", ck->path, keys[i],
                     text);
            return -1;
        }
        if (errno == ERANGE || v < INT_MIN || v > INT_MAX) {
            snprintf(err, ERR_LEN, "%s: checkpoint config is invalid: %s is %.40s, far past any model's", ck->path,
                     keys[i], text);
            return -1;
        }
        *fields[i] = (int)v;
    }
    const char *dropout = safetensors_meta(&ck->file, "dropout");
    char *end = NULL;
    ck->config.dropout = dropout ? strtof(dropout, &end) : -1.0f;
    if (!dropout || end == dropout || *end) {
        snprintf(err, ERR_LEN, "%s: checkpoint metadata 'dropout' is missing or not a number", ck->path);
        return -1;
    }
    const char *position = safetensors_meta(&ck->file, POSITION_KEY);
    if (position && position_parse(position, &ck->config.position) != 0) {
        snprintf(err, ERR_LEN, "%s: checkpoint metadata '" POSITION_KEY "' is '%.40s', not %s", ck->path, position,
                 POSITION_ENCODING_NAMES);
        return -1;
    }
    char why[ERR_LEN];
    if (gpt_config_validate(&ck->config, why) != 0) {
        snprintf(err, ERR_LEN, "%s: checkpoint config is invalid: %s", ck->path, why);
        return -1;
    }
    return 0;
}

// Checks the tensor `name` against info: present, F32, the shape the config gives, finite
// values (and, for second moments, none below 0).
static int check_tensor(const Checkpoint *ck, const char *name, const TensorInfo *info, int second_moment,
                        char err[ERR_LEN]) {
    const StTensor *t = safetensors_find(&ck->file, name);
    if (!t) {
        snprintf(err, ERR_LEN, "%s: checkpoint has no tensor %s (its config has %d layers, n_embd %d, vocabulary %d)",
                 ck->path, name, ck->config.n_layer, ck->config.n_embd, ck->config.vocab_size);
        return -1;
    }
    int same = t->dtype == ST_F32 && t->ndim == info->ndim;
    for (int d = 0; same && d < info->ndim; d++) same = t->shape[d] == info->shape[d];
    if (!same) {
        if (info->ndim == 2)
            snprintf(err, ERR_LEN, "%s: checkpoint tensor %s is not F32 of shape [%d, %d] as its config says",
                     ck->path, name, info->shape[0], info->shape[1]);
        else
            snprintf(err, ERR_LEN, "%s: checkpoint tensor %s is not F32 of shape [%d] as its config says",
                     ck->path, name, info->shape[0]);
        return -1;
    }
    const float *x = safetensors_tensor_data(&ck->file, t);
    for (size_t i = 0; i < info->size; i++) {
        if (!isfinite(x[i]) || (second_moment && x[i] < 0.0f)) {
            snprintf(err, ERR_LEN, "%s: checkpoint tensor %s holds %g at element %zu (%s)", ck->path, name, x[i], i,
                     isfinite(x[i]) ? "a second moment cannot be negative" : "weights must be finite");
            return -1;
        }
    }
    return 0;
}

// The optimizer tensor names of a parameter: optimizer.m.<name> and optimizer.v.<name>.
static void moment_names(const TensorInfo *info, char m[ST_MAX_NAME + 1], char v[ST_MAX_NAME + 1]) {
    snprintf(m, ST_MAX_NAME + 1, "optimizer.m.%s", info->name);
    snprintf(v, ST_MAX_NAME + 1, "optimizer.v.%s", info->name);
}

// Refuses a tensor the file holds beyond its config's model (and the moments): one the model
// would not read, such as a learned position table in a checkpoint that says rope. Every
// expected tensor is there and names are unique, so there is one exactly when the file holds
// more tensors than expected.
static int check_no_other_tensor(const Checkpoint *ck, int expected, char err[ERR_LEN]) {
    if (ck->file.num_tensors == expected) return 0;
    unsigned char *seen = calloc((size_t)ck->file.num_tensors, 1);
    if (!seen) {
        snprintf(err, ERR_LEN, "%s: out of memory for the checkpoint's %d tensors", ck->path, ck->file.num_tensors);
        return -1;
    }
    for (int i = 0; i < gpt_num_tensors(&ck->config); i++) {
        TensorInfo info;
        char m[ST_MAX_NAME + 1], v[ST_MAX_NAME + 1];
        gpt_tensor_info(&ck->config, i, &info);
        moment_names(&info, m, v);
        const char *names[3] = {info.name, m, v};
        for (int k = 0; k < (ck->has_optimizer ? 3 : 1); k++)
            seen[safetensors_find(&ck->file, names[k]) - ck->file.tensors] = 1;
    }
    int other = 0;
    while (seen[other]) other++;
    free(seen);
    snprintf(err, ERR_LEN, "%s: checkpoint tensor %s is none of its model's (%d layers, position_encoding %s%s): a "
             "checkpoint holds its model's parameters%s and nothing else", ck->path, ck->file.tensors[other].name,
             ck->config.n_layer, position_name(ck->config.position),
             ck->config.position == POSITION_ROPE ? ", which has no position table" : "",
             ck->has_optimizer ? " and their optimizer moments" : "");
    return -1;
}

// Checks every parameter tensor, and every optimizer moment when the first is there, and that
// the file holds no other tensor.
static int check_tensors(Checkpoint *ck, char err[ERR_LEN]) {
    int count = gpt_num_tensors(&ck->config);
    char m[ST_MAX_NAME + 1], v[ST_MAX_NAME + 1];
    TensorInfo info;
    gpt_tensor_info(&ck->config, 0, &info);
    moment_names(&info, m, v);
    ck->has_optimizer = safetensors_find(&ck->file, m) != NULL;
    for (int i = 0; i < count; i++) {
        gpt_tensor_info(&ck->config, i, &info);
        if (check_tensor(ck, info.name, &info, 0, err) != 0) return -1;
        if (!ck->has_optimizer) continue;
        moment_names(&info, m, v);
        if (check_tensor(ck, m, &info, 0, err) != 0 || check_tensor(ck, v, &info, 1, err) != 0) return -1;
    }
    if (check_no_other_tensor(ck, count * (ck->has_optimizer ? 3 : 1), err) != 0) return -1;
    if (ck->has_optimizer &&
        parse_int(safetensors_meta(&ck->file, "optimizer.step"), 0, LONG_AT_MOST(1LL << 40), &ck->optimizer_step) != 0) {
        snprintf(err, ERR_LEN, "%s: checkpoint metadata 'optimizer.step' is missing or not a whole number in [0, 2^40]",
                 ck->path);
        return -1;
    }
    return 0;
}

// vocab_unknown, when present: U+FFFD, which the vocabulary must hold.
static int parse_unknown(Checkpoint *ck, char err[ERR_LEN]) {
    const char *unknown = safetensors_meta(&ck->file, UNKNOWN_KEY);
    if (!unknown) return 0;
    long cp;
    int found = 0;
    for (int i = 0; i < ck->config.vocab_size; i++) found |= ck->vocab[i] == VOCAB_UNKNOWN_CHAR;
    if (parse_int(unknown, 0, 0x10FFFF, &cp) != 0 || cp != VOCAB_UNKNOWN_CHAR || !found) {
        snprintf(err, ERR_LEN, "%s: checkpoint metadata '" UNKNOWN_KEY "' is '%.16s': it can only be %u (U+FFFD), "
                 "and the vocabulary must hold it", ck->path, unknown, (unsigned)VOCAB_UNKNOWN_CHAR);
        return -1;
    }
    ck->vocab_unknown = 1;
    return 0;
}

// Checks everything in ck->file (see checkpoint_open) and reads the config and vocabulary.
static int check_checkpoint(Checkpoint *ck, char err[ERR_LEN]) {
    const char *format = safetensors_meta(&ck->file, "format");
    if (!format) {
        snprintf(err, ERR_LEN, "%s: not a chargpt checkpoint (no format in its metadata)", ck->path);
        return -1;
    }
    int v1 = strcmp(format, CHECKPOINT_FORMAT_V1) == 0;
    if (!v1 && strcmp(format, CHECKPOINT_FORMAT) != 0) {
        snprintf(err, ERR_LEN, "%s: checkpoint format '%.64s' is not supported (this chargpt reads '%s' and '%s')",
                 ck->path, format, CHECKPOINT_FORMAT, CHECKPOINT_FORMAT_V1);
        return -1;
    }
    if (check_crc(ck, v1, err) != 0 || parse_config(ck, err) != 0 || check_tensors(ck, err) != 0) return -1;
    // the vocabulary's size is now known to fit the file (wte holds vocab_size rows)
    ck->vocab = malloc((size_t)ck->config.vocab_size * sizeof(uint32_t));
    const char *vocab = safetensors_meta(&ck->file, "vocab");
    if (!ck->vocab || !vocab || parse_vocab(vocab, ck->vocab, ck->config.vocab_size) != 0) {
        snprintf(err, ERR_LEN, "%s: checkpoint vocabulary is missing or invalid (want %d increasing code points of "
                 "text: none past U+10FFFF, no surrogate, no U+0000)", ck->path, ck->config.vocab_size);
        return -1;
    }
    return parse_unknown(ck, err);
}

int checkpoint_open(const char *path, Checkpoint *ck, char err[ERR_LEN]) {
    return checkpoint_open_within(path, 0.0, ck, err);
}

int checkpoint_open_within(const char *path, double max_bytes, Checkpoint *ck, char err[ERR_LEN]) {
    memset(ck, 0, sizeof(*ck));
    snprintf(ck->path, sizeof(ck->path), "%s", path);
    int rc = safetensors_read_within(path, max_bytes, &ck->file, err);
    if (rc != 0) return rc;
    if (check_checkpoint(ck, err) != 0) {
        checkpoint_close(ck);
        return -1;
    }
    return 0;
}

int checkpoint_parse(const void *bytes, size_t len, const char *name, Checkpoint *ck, char err[ERR_LEN]) {
    memset(ck, 0, sizeof(*ck));
    snprintf(ck->path, sizeof(ck->path), "%s", name);
    if (safetensors_parse(bytes, len, name, &ck->file, err) != 0) return -1;
    if (check_checkpoint(ck, err) != 0) {
        checkpoint_close(ck);
        return -1;
    }
    return 0;
}

// Copies the checked tensor `name` into dst.
static void copy_tensor(const Checkpoint *ck, const char *name, float *dst) {
    const StTensor *t = safetensors_find(&ck->file, name);
    memcpy(dst, safetensors_tensor_data(&ck->file, t), t->nbytes);
}

// Copies the part of the checked tensor `name`, of parameters info->offset onwards, that
// falls in parameters [first, first + n) into dst, which holds those n.
static void copy_tensor_range(const Checkpoint *ck, const char *name, const TensorInfo *info, size_t first,
                              size_t n, float *dst) {
    size_t begin = info->offset > first ? info->offset : first;
    size_t end = info->offset + info->size < first + n ? info->offset + info->size : first + n;
    if (begin >= end) return;
    const float *src = safetensors_tensor_data(&ck->file, safetensors_find(&ck->file, name));
    memcpy(dst + (begin - first), src + (begin - info->offset), (end - begin) * sizeof(float));
}

int checkpoint_load_model(const Checkpoint *ck, GPT *model, int with_gradients, char err[ERR_LEN]) {
    if (gpt_build(model, &ck->config, with_gradients, err) != 0) return -1;
    int count = gpt_num_tensors(&ck->config);
    for (int i = 0; i < count; i++) {
        TensorInfo info;
        gpt_tensor_info(&ck->config, i, &info);
        copy_tensor(ck, info.name, model->params_memory + info.offset);
    }
    return 0;
}

int checkpoint_vocab(const Checkpoint *ck, Vocab *vocab, char err[ERR_LEN]) {
    char why[ERR_LEN];
    if (vocab_from_chars(vocab, ck->vocab, ck->config.vocab_size, why) != 0 ||
        (ck->vocab_unknown && vocab_set_unknown(vocab, why) != 0)) {
        vocab_free(vocab);
        snprintf(err, ERR_LEN, "%s: %s", ck->path, why);
        return -1;
    }
    return 0;
}

int checkpoint_load_model_grown(const Checkpoint *ck, const Vocab *grown, uint64_t seed, GPT *model, int with_gradients,
                                char err[ERR_LEN]) {
    GPTConfig config = ck->config;
    config.vocab_size = grown->size;
    if (gpt_build(model, &config, with_gradients, err) != 0) return -1;
    gpt_init_weights(model, seed);
    int count = gpt_num_tensors(&ck->config);
    for (int i = 0; i < count; i++) {
        TensorInfo from, to;
        gpt_tensor_info(&ck->config, i, &from);
        gpt_tensor_info(&config, i, &to);
        const float *src = safetensors_tensor_data(&ck->file, safetensors_find(&ck->file, from.name));
        if (strcmp(from.name, "transformer.wte.weight") != 0) {
            memcpy(model->params_memory + to.offset, src, from.size * sizeof(float));
            continue;
        }
        size_t C = (size_t)config.n_embd;
        for (int row = 0; row < ck->config.vocab_size; row++) {
            int at = vocab_index(grown, ck->vocab[row]);
            if (at < 0) {
                snprintf(err, ERR_LEN, "%s: the grown vocabulary lacks the checkpoint's character U+%04X", ck->path,
                         (unsigned)ck->vocab[row]);
                gpt_free(model);
                return -1;
            }
            memcpy(model->params_memory + to.offset + (size_t)at * C, src + (size_t)row * C, C * sizeof(float));
        }
    }
    return 0;
}

int checkpoint_load_optimizer(const Checkpoint *ck, AdamW *opt, char err[ERR_LEN]) {
    if (!ck->has_optimizer) {
        snprintf(err, ERR_LEN, "%s: checkpoint has no optimizer state (no optimizer.m.* tensors)", ck->path);
        return -1;
    }
    int count = gpt_num_tensors(&ck->config);
    for (int i = 0; i < count; i++) {
        TensorInfo info;
        char m[ST_MAX_NAME + 1], v[ST_MAX_NAME + 1];
        gpt_tensor_info(&ck->config, i, &info);
        moment_names(&info, m, v);
        copy_tensor_range(ck, m, &info, opt->first, opt->n, opt->m);
        copy_tensor_range(ck, v, &info, opt->first, opt->n, opt->v);
    }
    opt->step = ck->optimizer_step;
    return 0;
}

const char *checkpoint_meta(const Checkpoint *ck, const char *key) { return safetensors_meta(&ck->file, key); }

void checkpoint_close(Checkpoint *ck) {
    safetensors_free(&ck->file);
    free(ck->vocab);
    memset(ck, 0, sizeof(*ck));
}
