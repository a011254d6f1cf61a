#include "probe_file.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "../common/input_file.h"
#include "../common/platform.h"
#include "atomic_file.h"

#define MAGIC_LEN 8
#define FRAME_BYTES 8  // a frame's length and CRC around its payload
#define SIZES_V1 9     // the header's sizes: nine in version 1, twelve from version 2 on
#define SIZES_V2 12
// the header's fixed part: its sizes, a u64, two f32, the reach (from version 2), the run id and the
// source
#define HEADER_FIXED(v1) ((v1) ? SIZES_V1 * 4 + 8 + 2 * 4 + PROBE_RUN_ID_LEN + PROBE_SOURCE_LEN \
                             : SIZES_V2 * 4 + 8 + (2 + PROBE_PATTERNS) * 4 + PROBE_RUN_ID_LEN + PROBE_SOURCE_LEN)

// 1 when h is laid out as version 1, else 0 (versions 2 to 4: the same header).
static int is_v1(const ProbeHeader *h) { return h->version == 1; }

// ----------------------------------------------------------------------------
// little-endian fields

static void put_u32(uint8_t **p, uint32_t v) {
    for (int i = 0; i < 4; i++) *(*p)++ = (uint8_t)(v >> (8 * i));
}
static void put_u64(uint8_t **p, uint64_t v) {
    for (int i = 0; i < 8; i++) *(*p)++ = (uint8_t)(v >> (8 * i));
}
static void put_f32(uint8_t **p, float f) {
    uint32_t v;
    memcpy(&v, &f, 4);
    put_u32(p, v);
}
static void put_bytes(uint8_t **p, const void *bytes, size_t n) {
    memcpy(*p, bytes, n);
    *p += n;
}
static uint32_t get_u32(const uint8_t **p) {
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) v |= (uint32_t)(*p)[i] << (8 * i);
    *p += 4;
    return v;
}
static uint64_t get_u64(const uint8_t **p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)(*p)[i] << (8 * i);
    *p += 8;
    return v;
}
static float get_f32(const uint8_t **p) {
    uint32_t v = get_u32(p);
    float f;
    memcpy(&f, &v, 4);
    return f;
}
static void get_bytes(const uint8_t **p, void *bytes, size_t n) {
    memcpy(bytes, *p, n);
    *p += n;
}

static void put_f32s(uint8_t **p, const float *a, size_t n) {
    for (size_t i = 0; i < n; i++) put_f32(p, a[i]);
}
static void put_i32s(uint8_t **p, const int32_t *a, size_t n) {
    for (size_t i = 0; i < n; i++) put_u32(p, (uint32_t)a[i]);
}
static void get_f32s(const uint8_t **p, float *a, size_t n) {
    for (size_t i = 0; i < n; i++) a[i] = get_f32(p);
}
static void get_i32s(const uint8_t **p, int32_t *a, size_t n) {
    for (size_t i = 0; i < n; i++) a[i] = (int32_t)get_u32(p);
}

// ----------------------------------------------------------------------------
// sizes

static size_t triangle(size_t n) { return n * (n + 1) / 2; }

// The sizes of a header's variable parts, and of the whole header payload.
static size_t header_bytes(const ProbeHeader *h) {
    return HEADER_FIXED(is_v1(h)) +
           4 * ((size_t)h->vocab_size + h->probe_len + 1 + h->repeat_len + h->prompt_len) +
           (size_t)h->groups * PROBE_GROUP_NAME;
}

// The head scores a record holds per head: three in version 1, seven in version 2, and the
// importance in version 3.
static size_t scores_per_head(const ProbeHeader *h) { return is_v1(h) ? 3 : h->version == 2 ? 7 : 8; }

// The floats of a record's attribution: (t, parts) from version 4, none before.
static size_t attribution_floats(const ProbeHeader *h) {
    return h->version >= 4 ? (size_t)h->probe_len * PROBE_ATTRIBUTION_PARTS(h) : 0;
}

// The floats of a record's vectors of `positions` positions: (L, positions, 3A).
static size_t vector_floats(const ProbeHeader *h, int positions) {
    return (size_t)h->n_layer * positions * 3 * h->n_head * h->head_size;
}

size_t probe_light_bytes(const ProbeHeader *h) {
    size_t heads = (size_t)h->n_layer * h->n_head;
    return 4 + 8 + 5 * 4 + 4 * (size_t)h->groups + 4 * (size_t)h->sample_chars + scores_per_head(h) * 4 * heads;
}

size_t probe_record_bytes(const ProbeHeader *h) {
    size_t heads = (size_t)h->n_layer * h->n_head, t = h->probe_len;
    size_t cells = ((size_t)h->n_layer + 1) * t;
    return probe_light_bytes(h) + 4 * t + t * PROBE_TOP * 8 + cells * (PROBE_LENS_TOP * 8 + 8) +
           heads * (triangle(t) + triangle((size_t)h->repeat_len)) +
           4 * (vector_floats(h, h->vector_len) + vector_floats(h, h->vector_repeat_len) + attribution_floats(h));
}

// ----------------------------------------------------------------------------
// header

int probe_header_alloc(ProbeHeader *h, char err[ERR_LEN]) {
    h->vocab = malloc(((size_t)h->vocab_size + 1) * 4);
    h->passage = malloc(((size_t)h->probe_len + 1) * 4);
    h->repeated = malloc(((size_t)h->repeat_len + 1) * 4);
    h->prompt = malloc(((size_t)h->prompt_len + 1) * 4);
    h->group_names = calloc((size_t)h->groups + 1, PROBE_GROUP_NAME);
    if (!h->vocab || !h->passage || !h->repeated || !h->prompt || !h->group_names) {
        snprintf(err, ERR_LEN, "out of memory for the probe file's header");
        probe_header_free(h);
        return -1;
    }
    return 0;
}

void probe_header_free(ProbeHeader *h) {
    free(h->vocab);
    free(h->passage);
    free(h->repeated);
    free(h->prompt);
    free(h->group_names);
    h->vocab = NULL;
    h->passage = h->repeated = h->prompt = NULL;
    h->group_names = NULL;
}

static void encode_header(const ProbeHeader *h, uint8_t *p) {
    const uint32_t sizes[SIZES_V2] = {h->n_layer, h->n_head, h->vocab_size, h->block_size, h->groups,
                                      h->probe_len, h->repeat_len, h->prompt_len, h->sample_chars,
                                      h->head_size, h->vector_len, h->vector_repeat_len};
    for (int i = 0; i < (is_v1(h) ? SIZES_V1 : SIZES_V2); i++) put_u32(&p, sizes[i]);
    put_u64(&p, h->sample_seed);
    put_f32(&p, h->temperature);
    put_f32(&p, h->grad_clip);
    if (!is_v1(h)) put_f32s(&p, h->reach, PROBE_PATTERNS);
    char id[PROBE_RUN_ID_LEN] = {0}, source[PROBE_SOURCE_LEN] = {0};
    memcpy(id, h->run_id, strnlen(h->run_id, PROBE_RUN_ID_LEN - 1));
    memcpy(source, h->source, strnlen(h->source, PROBE_SOURCE_LEN - 1));
    put_bytes(&p, id, sizeof(id));
    put_bytes(&p, source, sizeof(source));
    for (int v = 0; v < h->vocab_size; v++) put_u32(&p, h->vocab[v]);
    put_i32s(&p, h->passage, (size_t)h->probe_len + 1);
    put_i32s(&p, h->repeated, (size_t)h->repeat_len);
    put_i32s(&p, h->prompt, (size_t)h->prompt_len);
    put_bytes(&p, h->group_names, (size_t)h->groups * PROBE_GROUP_NAME);
}

// 1 when every token of a (n) is a token id of a vocabulary of V.
static int tokens_in_range(const int32_t *a, size_t n, int V) {
    for (size_t i = 0; i < n; i++)
        if (a[i] < 0 || a[i] >= V) return 0;
    return 1;
}

// The header's sizes from its fixed part (h->version set), checked against the limits; 0, or -1
// with err.
static int decode_sizes(ProbeHeader *h, const uint8_t *p, const char *name, char err[ERR_LEN]) {
    uint32_t s[SIZES_V2] = {0};
    int count = is_v1(h) ? SIZES_V1 : SIZES_V2;
    for (int i = 0; i < count; i++) s[i] = get_u32(&p);
    const struct { const char *what; uint32_t value, min, max; } limits[] = {
        {"n_layer", s[0], 1, PROBE_MAX_LAYERS},      {"n_head", s[1], 1, PROBE_MAX_HEADS},
        {"vocab_size", s[2], 1, PROBE_MAX_VOCAB},    {"block_size", s[3], 1, PROBE_MAX_BLOCK},
        {"groups", s[4], 0, PROBE_MAX_GROUPS},       {"probe_len", s[5], 1, s[3]},
        {"repeat_len", s[6], 0, s[3]},               {"prompt_len", s[7], 0, s[3]},
        {"sample_chars", s[8], 0, PROBE_MAX_SAMPLE}, {"head_size", s[9], 0, PROBE_MAX_HEAD_SIZE},
        {"vector_len", s[10], 0, s[5]},              {"vector_repeat_len", s[11], 0, s[6]},
    };
    for (size_t i = 0; i < sizeof(limits) / sizeof(limits[0]); i++)
        if (limits[i].value < limits[i].min || limits[i].value > limits[i].max) {
            snprintf(err, ERR_LEN, "%s: a damaged probe file: its header's %s is %u (it must be in %u..%u)", name,
                     limits[i].what, limits[i].value, limits[i].min, limits[i].max);
            return -1;
        }
    if (s[6] % 2 != 0) {
        snprintf(err, ERR_LEN, "%s: a damaged probe file: its repeated sequence has an odd length %u", name, s[6]);
        return -1;
    }
    h->n_layer = (int)s[0], h->n_head = (int)s[1], h->vocab_size = (int)s[2], h->block_size = (int)s[3];
    h->groups = (int)s[4], h->probe_len = (int)s[5], h->repeat_len = (int)s[6], h->prompt_len = (int)s[7];
    h->sample_chars = (int)s[8], h->head_size = (int)s[9], h->vector_len = (int)s[10];
    h->vector_repeat_len = (int)s[11];
    // the parts whose size_t products may overflow (a 32-bit size_t: WebAssembly's) first, in
    // doubles: the attention, the lens, the vectors and the attribution
    double t = h->probe_len, r = h->repeat_len, heads = (double)h->n_layer * h->n_head;
    double attention = heads * (t * (t + 1) / 2 + r * (r + 1) / 2);
    double lens = (h->n_layer + 1.0) * t * (PROBE_LENS_TOP * 8 + 8);
    double vectors = 4.0 * h->n_layer * ((double)h->vector_len + h->vector_repeat_len) * 3 * h->n_head * h->head_size;
    double attribution = 4.0 * t * (2.0 + heads + h->n_layer);
    if (attention + lens + vectors + attribution > PROBE_MAX_RECORD ||
        (double)probe_record_bytes(h) > PROBE_MAX_RECORD) {
        snprintf(err, ERR_LEN, "%s: a damaged probe file: its header makes records of %zu bytes, more than %u", name,
                 probe_record_bytes(h), PROBE_MAX_RECORD);
        return -1;
    }
    return 0;
}

// Decodes a header payload of n bytes of a file of the given version; 0, or -1 with err (h's
// arrays freed).
static int decode_header(ProbeHeader *h, int version, const uint8_t *p, size_t n, const char *name,
                         char err[ERR_LEN]) {
    memset(h, 0, sizeof(*h));
    h->version = version;
    size_t fixed = HEADER_FIXED(is_v1(h));
    if (n < fixed || decode_sizes(h, p, name, err) != 0) {
        if (n < fixed) snprintf(err, ERR_LEN, "%s: a damaged probe file: its header is cut short", name);
        return -1;
    }
    if (header_bytes(h) != n) {
        snprintf(err, ERR_LEN, "%s: a damaged probe file: its header holds %zu bytes, its sizes say %zu", name, n,
                 header_bytes(h));
        return -1;
    }
    if (probe_header_alloc(h, err) != 0) return -1;
    p += (is_v1(h) ? SIZES_V1 : SIZES_V2) * 4;
    h->sample_seed = get_u64(&p);
    h->temperature = get_f32(&p);
    h->grad_clip = get_f32(&p);
    int reached = 1;
    if (!is_v1(h)) get_f32s(&p, h->reach, PROBE_PATTERNS);
    for (int k = 0; k < PROBE_PATTERNS; k++) reached &= h->reach[k] >= 0.0f && h->reach[k] <= 1.0f;
    get_bytes(&p, h->run_id, PROBE_RUN_ID_LEN);
    get_bytes(&p, h->source, PROBE_SOURCE_LEN);
    for (int v = 0; v < h->vocab_size; v++) h->vocab[v] = get_u32(&p);
    get_i32s(&p, h->passage, (size_t)h->probe_len + 1);
    get_i32s(&p, h->repeated, (size_t)h->repeat_len);
    get_i32s(&p, h->prompt, (size_t)h->prompt_len);
    get_bytes(&p, h->group_names, (size_t)h->groups * PROBE_GROUP_NAME);
    int named = memchr(h->run_id, 0, PROBE_RUN_ID_LEN) && memchr(h->source, 0, PROBE_SOURCE_LEN);
    for (int g = 0; g < h->groups; g++) named &= memchr(h->group_names[g], 0, PROBE_GROUP_NAME) != NULL;
    int chars = 1;
    for (int v = 0; v < h->vocab_size; v++) chars &= h->vocab[v] <= 0x10FFFF;
    int tokens = tokens_in_range(h->passage, (size_t)h->probe_len + 1, h->vocab_size) &&
                 tokens_in_range(h->repeated, (size_t)h->repeat_len, h->vocab_size) &&
                 tokens_in_range(h->prompt, (size_t)h->prompt_len, h->vocab_size);
    if (!named || !chars || !tokens || !reached || !isfinite(h->temperature) || !isfinite(h->grad_clip)) {
        snprintf(err, ERR_LEN, "%s: a damaged probe file: its header holds %s", name,
                 !named ? "a name without its end" : !chars ? "a character past U+10FFFF"
                 : !tokens ? "a token outside the vocabulary" : !reached ? "a pattern's reach outside 0..1"
                 : "a number that is not finite");
        probe_header_free(h);
        return -1;
    }
    return 0;
}

// ----------------------------------------------------------------------------
// records

int probe_record_alloc(ProbeRecord *r, const ProbeHeader *h, char err[ERR_LEN]) {
    memset(r, 0, sizeof(*r));
    size_t heads = (size_t)h->n_layer * h->n_head, t = h->probe_len, cells = ((size_t)h->n_layer + 1) * t;
    // every array 4-byte aligned: the floats and ints first, the bytes last
    size_t words = (size_t)h->groups + h->sample_chars + 8 * heads + t + 2 * t * PROBE_TOP +
                   cells * (2 * PROBE_LENS_TOP + 2) + vector_floats(h, h->vector_len) +
                   vector_floats(h, h->vector_repeat_len) + t * PROBE_ATTRIBUTION_PARTS(h);
    size_t bytes = heads * (triangle(t) + triangle((size_t)h->repeat_len));
    uint8_t *m = malloc(words * 4 + bytes + 1);
    if (!m) {
        snprintf(err, ERR_LEN, "out of memory for a probe record of %zu bytes", words * 4 + bytes);
        return -1;
    }
    r->memory = m;
    float *f = (float *)m;
    r->update_ratio = f, f += h->groups;
    r->sample = (int32_t *)f, f += h->sample_chars;
    r->previous_token = f, f += heads;
    r->induction = f, f += heads;
    r->entropy = f, f += heads;
    r->first_character = f, f += heads;
    r->same_character = f, f += heads;
    r->word_start = f, f += heads;
    r->last_space = f, f += heads;
    r->importance = f, f += heads;
    r->surprisal = f, f += t;
    r->top = (int32_t *)f, f += t * PROBE_TOP;
    r->top_prob = f, f += t * PROBE_TOP;
    r->lens_top = (int32_t *)f, f += cells * PROBE_LENS_TOP;
    r->lens_prob = f, f += cells * PROBE_LENS_TOP;
    r->lens_next_prob = f, f += cells;
    r->lens_next_rank = (int32_t *)f, f += cells;
    r->vectors_passage = f, f += vector_floats(h, h->vector_len);
    r->vectors_repeated = f, f += vector_floats(h, h->vector_repeat_len);
    r->attribution = f, f += t * PROBE_ATTRIBUTION_PARTS(h);
    r->att_passage = (uint8_t *)f;
    r->att_repeated = r->att_passage + heads * triangle(t);
    return 0;
}

void probe_record_free(ProbeRecord *r) {
    free(r->memory);
    memset(r, 0, sizeof(*r));
}

uint8_t probe_quantize(float w) {
    if (!(w > 0.0f)) return 0;  // also NaN
    if (w >= 1.0f) return 255;
    return (uint8_t)lrintf(255.0f * sqrtf(w));
}

float probe_dequantize(uint8_t q) {
    float s = q / 255.0f;
    return s * s;
}

// Encodes r into p; returns the payload's length.
static size_t encode_record(const ProbeHeader *h, const ProbeRecord *r, uint8_t *p) {
    uint8_t *start = p;
    size_t heads = (size_t)h->n_layer * h->n_head, t = h->probe_len, cells = ((size_t)h->n_layer + 1) * t;
    put_u32(&p, r->flags);
    put_u64(&p, (uint64_t)r->step);
    const float numbers[5] = {r->train_loss, r->val_loss, r->lr, r->grad_norm, r->clipped};
    put_f32s(&p, numbers, 5);
    put_f32s(&p, r->update_ratio, (size_t)h->groups);
    put_i32s(&p, r->sample, (size_t)h->sample_chars);
    put_f32s(&p, r->previous_token, heads);
    put_f32s(&p, r->induction, heads);
    put_f32s(&p, r->entropy, heads);
    if (!is_v1(h)) {
        put_f32s(&p, r->first_character, heads);
        put_f32s(&p, r->same_character, heads);
        put_f32s(&p, r->word_start, heads);
        put_f32s(&p, r->last_space, heads);
    }
    if (h->version >= 3) put_f32s(&p, r->importance, heads);
    if (!(r->flags & PROBE_HAS_PROBE)) return (size_t)(p - start);
    put_f32s(&p, r->surprisal, t);
    for (size_t i = 0; i < t; i++) {
        put_i32s(&p, r->top + i * PROBE_TOP, PROBE_TOP);
        put_f32s(&p, r->top_prob + i * PROBE_TOP, PROBE_TOP);
    }
    for (size_t c = 0; c < cells; c++) {
        put_i32s(&p, r->lens_top + c * PROBE_LENS_TOP, PROBE_LENS_TOP);
        put_f32s(&p, r->lens_prob + c * PROBE_LENS_TOP, PROBE_LENS_TOP);
        put_f32(&p, r->lens_next_prob[c]);
        put_u32(&p, (uint32_t)r->lens_next_rank[c]);
    }
    put_bytes(&p, r->att_passage, heads * triangle(t));
    put_bytes(&p, r->att_repeated, heads * triangle((size_t)h->repeat_len));
    put_f32s(&p, r->vectors_passage, vector_floats(h, h->vector_len));
    put_f32s(&p, r->vectors_repeated, vector_floats(h, h->vector_repeat_len));
    put_f32s(&p, r->attribution, attribution_floats(h));
    return (size_t)(p - start);
}

// 1 when every id of a (n) is -1 (none) or a token of a vocabulary of V.
static int ids_in_range(const int32_t *a, size_t n, int V) {
    for (size_t i = 0; i < n; i++)
        if (a[i] < -1 || a[i] >= V) return 0;
    return 1;
}

// Decodes a payload of n bytes, which must be a light or whole record for h; 0, or -1 when it
// is not one (damage).
static int decode_record(const ProbeHeader *h, const uint8_t *p, size_t n, ProbeRecord *r) {
    size_t heads = (size_t)h->n_layer * h->n_head, t = h->probe_len, cells = ((size_t)h->n_layer + 1) * t;
    if (n != probe_light_bytes(h) && n != probe_record_bytes(h)) return -1;
    r->flags = get_u32(&p);
    int whole = n == probe_record_bytes(h);
    if ((r->flags & ~(uint32_t)(PROBE_HAS_SAMPLE | PROBE_HAS_PROBE)) || whole != !!(r->flags & PROBE_HAS_PROBE))
        return -1;
    r->step = (int64_t)get_u64(&p);
    float numbers[5];
    get_f32s(&p, numbers, 5);
    r->train_loss = numbers[0], r->val_loss = numbers[1], r->lr = numbers[2], r->grad_norm = numbers[3];
    r->clipped = numbers[4];
    get_f32s(&p, r->update_ratio, (size_t)h->groups);
    get_i32s(&p, r->sample, (size_t)h->sample_chars);
    get_f32s(&p, r->previous_token, heads);
    get_f32s(&p, r->induction, heads);
    get_f32s(&p, r->entropy, heads);
    float *v2_scores[4] = {r->first_character, r->same_character, r->word_start, r->last_space};
    for (int k = 0; k < 4; k++) {
        if (!is_v1(h)) get_f32s(&p, v2_scores[k], heads);
        else for (size_t i = 0; i < heads; i++) v2_scores[k][i] = NAN;
    }
    if (h->version >= 3) get_f32s(&p, r->importance, heads);
    else for (size_t i = 0; i < heads; i++) r->importance[i] = NAN;
    if (r->step < 0 || ((r->flags & PROBE_HAS_SAMPLE) && !tokens_in_range(r->sample, h->sample_chars, h->vocab_size)))
        return -1;
    if (!whole) return 0;
    get_f32s(&p, r->surprisal, t);
    for (size_t i = 0; i < t; i++) {
        get_i32s(&p, r->top + i * PROBE_TOP, PROBE_TOP);
        get_f32s(&p, r->top_prob + i * PROBE_TOP, PROBE_TOP);
    }
    int ranks = 1;
    for (size_t c = 0; c < cells; c++) {
        get_i32s(&p, r->lens_top + c * PROBE_LENS_TOP, PROBE_LENS_TOP);
        get_f32s(&p, r->lens_prob + c * PROBE_LENS_TOP, PROBE_LENS_TOP);
        r->lens_next_prob[c] = get_f32(&p);
        r->lens_next_rank[c] = (int32_t)get_u32(&p);
        ranks &= r->lens_next_rank[c] >= 0 && r->lens_next_rank[c] <= h->vocab_size;
    }
    get_bytes(&p, r->att_passage, heads * triangle(t));
    get_bytes(&p, r->att_repeated, heads * triangle((size_t)h->repeat_len));
    get_f32s(&p, r->vectors_passage, vector_floats(h, h->vector_len));
    get_f32s(&p, r->vectors_repeated, vector_floats(h, h->vector_repeat_len));
    get_f32s(&p, r->attribution, attribution_floats(h));
    if (h->version < 4)
        for (size_t i = 0; i < t * PROBE_ATTRIBUTION_PARTS(h); i++) r->attribution[i] = NAN;
    return ranks && ids_in_range(r->top, t * PROBE_TOP, h->vocab_size) &&
                   ids_in_range(r->lens_top, cells * PROBE_LENS_TOP, h->vocab_size) ? 0 : -1;
}

// ----------------------------------------------------------------------------
// reading

// Reads n bytes; 1 when they were all there, 0 when the file ended first, -1 on an error.
static int read_exactly(FILE *fp, void *bytes, size_t n) {
    size_t got = fread(bytes, 1, n, fp);
    if (got == n) return 1;
    return ferror(fp) ? -1 : 0;
}

static int read_failed(const char *name, char err[ERR_LEN]) {
    snprintf(err, ERR_LEN, "cannot read %s: %s", name, strerror(errno ? errno : EIO));
    return -1;
}

int probe_reader_open(ProbeReader *r, FILE *fp, const char *name, char err[ERR_LEN]) {
    memset(r, 0, sizeof(*r));
    r->fp = fp;
    r->last_step = -1;
    snprintf(r->name, sizeof(r->name), "%s", name);
    PlatformFileInfo info;
    uint64_t size = 0;
    if (fseeko(fp, 0, SEEK_END) == 0) size = (uint64_t)ftello(fp);
    else if (platform_fd_info(fileno(fp), &info) == 0) size = info.size;
    rewind(fp);
    r->size = size;
    uint8_t head[MAGIC_LEN + 4];
    int got = read_exactly(fp, head, sizeof(head));
    if (got < 0) return read_failed(name, err);
    int version = got == 0 ? 0 : memcmp(head, PROBE_FILE_MAGIC, MAGIC_LEN) == 0 ? 4
                : memcmp(head, PROBE_FILE_MAGIC_V3, MAGIC_LEN) == 0 ? 3
                : memcmp(head, PROBE_FILE_MAGIC_V2, MAGIC_LEN) == 0 ? 2
                : memcmp(head, PROBE_FILE_MAGIC_V1, MAGIC_LEN) == 0 ? 1 : 0;
    if (version == 0) {
        snprintf(err, ERR_LEN, "%s is not a chargpt probe file (it does not start with %s, %s, %s or %s)", name,
                 PROBE_FILE_MAGIC, PROBE_FILE_MAGIC_V3, PROBE_FILE_MAGIC_V2, PROBE_FILE_MAGIC_V1);
        return -1;
    }
    const uint8_t *p = head + MAGIC_LEN;
    uint32_t len = get_u32(&p);
    if ((uint64_t)len + MAGIC_LEN + FRAME_BYTES > size) {
        snprintf(err, ERR_LEN, "%s: a damaged probe file: its header claims %u bytes, more than the file holds",
                 name, len);
        return -1;
    }
    uint8_t *payload = malloc((size_t)len + 4);
    if (!payload) {
        snprintf(err, ERR_LEN, "out of memory for the header of %s", name);
        return -1;
    }
    got = read_exactly(fp, payload, (size_t)len + 4);
    const uint8_t *crc_at = payload + len;
    int rc = 0;
    if (got < 0) rc = read_failed(name, err);
    else if (got == 0 || get_u32(&crc_at) != (uint32_t)crc32(0L, payload, len)) {
        snprintf(err, ERR_LEN, "%s: a damaged probe file: its header fails its CRC-32", name);
        rc = -1;
    } else {
        rc = decode_header(&r->header, version, payload, len, name, err);
    }
    free(payload);
    if (rc != 0) return -1;
    r->payload = malloc(probe_record_bytes(&r->header) + 4);
    if (!r->payload) {
        snprintf(err, ERR_LEN, "out of memory for a record of %s", name);
        probe_header_free(&r->header);
        return -1;
    }
    r->offset = MAGIC_LEN + FRAME_BYTES + (uint64_t)len;
    return 0;
}

// Marks the rest of the file, from the reader's offset, as a torn tail (damage NULL) or as
// what follows a damaged record; returns 0.
static int stop_reading(ProbeReader *r, const char *damage) {
    r->damage = damage;
    if (fseeko(r->fp, 0, SEEK_END) == 0) {
        off_t end = ftello(r->fp);
        r->torn_bytes = end > (off_t)r->offset ? (uint64_t)end - r->offset : 0;
    }
    return 0;
}

int probe_reader_next(ProbeReader *r, ProbeRecord *rec, char err[ERR_LEN]) {
    if (r->torn_bytes) return 0;
    uint8_t len_bytes[4];
    int got = read_exactly(r->fp, len_bytes, 4);
    if (got < 0) return read_failed(r->name, err);
    if (got == 0) {  // the end, or a few bytes of a length
        return stop_reading(r, NULL);
    }
    const uint8_t *p = len_bytes;
    uint32_t len = get_u32(&p);
    if (len != probe_light_bytes(&r->header) && len != probe_record_bytes(&r->header))
        return stop_reading(r, "has a length that fits no record of the file's header");
    if (r->offset + FRAME_BYTES + len > r->size) return stop_reading(r, NULL);  // the file ends inside it
    got = read_exactly(r->fp, r->payload, (size_t)len + 4);
    if (got < 0) return read_failed(r->name, err);
    const uint8_t *crc_at = r->payload + len;
    if (got == 0) return stop_reading(r, NULL);
    if (get_u32(&crc_at) != (uint32_t)crc32(0L, r->payload, len)) return stop_reading(r, "fails its CRC-32");
    if (decode_record(&r->header, r->payload, len, rec) != 0)
        return stop_reading(r, "holds values its header's sizes do not allow");
    if (rec->step <= r->last_step) return stop_reading(r, "is of a step not after the record before it");
    r->payload_len = len;
    r->last_step = rec->step;
    r->offset += (uint64_t)len + FRAME_BYTES;
    r->records++;
    return 1;
}

void probe_reader_close(ProbeReader *r) {
    probe_header_free(&r->header);
    free(r->payload);
    r->payload = NULL;
}

// ----------------------------------------------------------------------------
// writing

static int open_for_append(ProbeFile *pf, const char *path, ProbeHeader *header, uint64_t end, char err[ERR_LEN]) {
    snprintf(pf->path, sizeof(pf->path), "%s", path);
    pf->header = header;
    pf->end = end;
    pf->buffer = malloc(probe_record_bytes(header) + FRAME_BYTES);
    pf->fd = no_follow_open(path, PLATFORM_WRITE);
    if (!pf->buffer || pf->fd < 0) {
        snprintf(err, ERR_LEN, "cannot open %s for appending: %s", path, pf->buffer ? strerror(errno) : "out of memory");
        probe_file_close(pf);
        return -1;
    }
    return 0;
}

int probe_file_create(ProbeFile *pf, const char *path, ProbeHeader *header, char err[ERR_LEN]) {
    memset(pf, 0, sizeof(*pf));
    pf->fd = -1;
    pf->last_step = -1;
    size_t len = header_bytes(header);
    uint8_t *bytes = malloc(MAGIC_LEN + FRAME_BYTES + len);
    if (!bytes) {
        snprintf(err, ERR_LEN, "out of memory for the header of %s", path);
        return -1;
    }
    uint8_t *p = bytes;
    static const char *magics[] = {PROBE_FILE_MAGIC_V1, PROBE_FILE_MAGIC_V2, PROBE_FILE_MAGIC_V3, PROBE_FILE_MAGIC};
    put_bytes(&p, magics[header->version - 1], MAGIC_LEN);
    put_u32(&p, (uint32_t)len);
    encode_header(header, p);
    p += len;
    put_u32(&p, (uint32_t)crc32(0L, p - len, (uInt)len));
    AtomicFile f;
    int rc = atomic_file_open(&f, path, err);
    if (rc == 0) {
        fwrite(bytes, 1, (size_t)(p - bytes), f.fp);
        rc = atomic_file_commit(&f, err);
    }
    free(bytes);
    if (rc != 0) return -1;
    return open_for_append(pf, path, header, MAGIC_LEN + FRAME_BYTES + len, err);
}

// Cuts the file to pf->end and makes that durable; 0, or -1 with err.
static int cut_to_end(ProbeFile *pf, char err[ERR_LEN]) {
    if (ftruncate(pf->fd, (off_t)pf->end) != 0 || platform_file_sync(pf->fd) != 0) {
        snprintf(err, ERR_LEN, "cannot cut %s to its whole records: %s", pf->path, strerror(errno));
        return -1;
    }
    return 0;
}

int probe_file_set_aside(const char *path, const char *suffix, char *aside, size_t size, char err[ERR_LEN]) {
    for (int n = 1; n <= 100; n++) {
        if (n == 1) snprintf(aside, size, "%s.%s", path, suffix);
        else snprintf(aside, size, "%s.%s.%d", path, suffix, n);
        if (platform_rename_new(path, aside) == 0) return 0;
        if (errno != EEXIST) break;
    }
    snprintf(err, ERR_LEN, "cannot move %s aside to %s: %s", path, aside, strerror(errno));
    return -1;
}

// The damaged file fp (at path) moved aside, and its first `keep` bytes (its header and the
// whole records kept) copied into a new file at path. Returns 0, or -1 with err.
static int set_aside_and_copy(FILE *fp, const char *path, uint64_t keep, ProbeResume *resume, char err[ERR_LEN]) {
    if (probe_file_set_aside(path, "damaged", resume->aside, sizeof(resume->aside), err) != 0) return -1;
    AtomicFile f;
    if (atomic_file_open(&f, path, err) != 0) return -1;
    rewind(fp);
    char buf[1 << 16];
    for (uint64_t left = keep; left > 0;) {
        size_t n = left < sizeof(buf) ? (size_t)left : sizeof(buf);
        if (fread(buf, 1, n, fp) != n || fwrite(buf, 1, n, f.fp) != n) {
            snprintf(err, ERR_LEN, "cannot copy the whole records of %s into a new %s: %s", resume->aside, path,
                     strerror(errno ? errno : EIO));
            atomic_file_abort(&f);
            return -1;
        }
        left -= n;
    }
    return atomic_file_commit(&f, err);
}

int probe_file_resume(ProbeFile *pf, const char *path, long step, ProbeHeader *header, ProbeResume *resume,
                      char err[ERR_LEN]) {
    memset(pf, 0, sizeof(*pf));
    memset(resume, 0, sizeof(*resume));
    pf->fd = -1;
    pf->last_step = -1;
    int missing;
    FILE *fp = input_file_fopen(path, PLATFORM_NO_FOLLOW, &missing, err);
    if (!fp) return missing ? 1 : -1;
    ProbeReader r;
    if (probe_reader_open(&r, fp, path, err) != 0) {
        fclose(fp);
        return -1;
    }
    ProbeRecord rec;
    int rc = probe_record_alloc(&rec, &r.header, err), got = 0;
    uint64_t keep = r.offset;
    while (rc == 0 && (got = probe_reader_next(&r, &rec, err)) == 1) {
        if (rec.step <= step) {
            keep = r.offset;
            pf->last_step = rec.step;
            resume->kept++;
            continue;
        }
        if (resume->dropped++ == 0) resume->first_dropped = rec.step;
        resume->last_dropped = rec.step;
    }
    if (got < 0) rc = -1;
    if (r.damage) {
        resume->damage = r.damage;
        resume->damaged_record = r.records + 1;
        resume->damaged_at = r.offset;
        if (rc == 0) rc = set_aside_and_copy(fp, path, keep, resume, err);
    } else {
        resume->torn_bytes = r.torn_bytes;
    }
    probe_record_free(&rec);
    free(r.payload);
    fclose(fp);
    *header = r.header;
    if (rc == 0) rc = open_for_append(pf, path, header, keep, err);
    if (rc == 0) rc = cut_to_end(pf, err);
    if (rc != 0) {
        probe_file_close(pf);
        probe_header_free(header);
        return -1;
    }
    return 0;
}

int probe_file_append(ProbeFile *pf, const ProbeRecord *r, char err[ERR_LEN]) {
    if (r->step <= pf->last_step) {
        snprintf(err, ERR_LEN, "%s: a record of step %lld after one of step %lld", pf->path, (long long)r->step,
                 (long long)pf->last_step);
        return -1;
    }
    uint8_t *p = pf->buffer + 4;
    size_t len = encode_record(pf->header, r, p);
    p = pf->buffer;
    put_u32(&p, (uint32_t)len);
    p += len;
    put_u32(&p, (uint32_t)crc32(0L, pf->buffer + 4, (uInt)len));
    size_t total = len + FRAME_BYTES, done = 0;
    while (done < total) {
        long n = platform_write_at(pf->fd, pf->buffer + done, total - done, pf->end + done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        done += (size_t)n;
    }
    if (done < total || platform_file_sync(pf->fd) != 0) {
        snprintf(err, ERR_LEN, "cannot write %s: %s", pf->path, strerror(errno ? errno : EIO));
        char ignored[ERR_LEN];
        cut_to_end(pf, ignored);  // what the failed write left is not a record
        return -1;
    }
    pf->end += total;
    pf->last_step = r->step;
    return 0;
}

void probe_file_close(ProbeFile *pf) {
    if (pf->fd >= 0) close(pf->fd);
    free(pf->buffer);
    pf->fd = -1;
    pf->buffer = NULL;
}
