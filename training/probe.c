#include "probe.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../analysis/head_importance.h"
#include "../analysis/probe_baselines.h"
#include "../common/clock.h"
#include "../common/finite.h"
#include "../common/input_file.h"
#include "../common/platform.h"
#include "../common/utf8.h"
#include "../data/corpus.h"
#include "../dist/dist.h"
#include "../format/atomic_file.h"
#include "../generation/decoder.h"
#include "../viewer/timeline.h"
#include "update_ratios.h"

// ----------------------------------------------------------------------------
// the probe: what is probed

// Code points to tokens; -2 with err naming the first character vocab lacks.
static int encode_chars(const Vocab *vocab, const uint32_t *chars, int n, int32_t *tokens, const char *what,
                        char err[ERR_LEN]) {
    for (int i = 0; i < n; i++) {
        int id = vocab_index(vocab, chars[i]);
        if (id < 0) {
            char shown[8] = "";
            if (chars[i] >= 0x20 && chars[i] != 0x7F) shown[utf8_encode(chars[i], shown)] = '\0';
            snprintf(err, ERR_LEN, "%s: character %d, '%s' (U+%04X), is not in the model's vocabulary", what, i,
                     shown, (unsigned)chars[i]);
            return -2;
        }
        tokens[i] = id;
    }
    return 0;
}

// The passage from --probe FILE: its first t + 1 characters, t = min(block_size, length - 1).
static int passage_from_file(ProbeHeader *h, const ProbeSetup *s, const Vocab *vocab, int block_size,
                             uint32_t **chars, char err[ERR_LEN]) {
    Corpus text;
    TextOptions read_as = {.keep_cr = s->keep_cr, .encoding = s->encoding, .noun = "--probe passage"};
    int rc = corpus_load_as(s->probe_path, &read_as, PROBE_FILE_MAX_CHARS, &text, err);
    if (rc == -2) snprintf(err, ERR_LEN, "--probe %s: more than %d characters", s->probe_path, PROBE_FILE_MAX_CHARS);
    if (rc != 0) return -1;
    if (text.len < 2) {
        snprintf(err, ERR_LEN, "--probe %s: %zu character%s: the probe needs at least 2", s->probe_path, text.len,
                 text.len == 1 ? "" : "s");
        corpus_free(&text);
        return -1;
    }
    h->probe_len = text.len - 1 < (size_t)block_size ? (int)text.len - 1 : block_size;
    *chars = text.text;  // the caller encodes and frees it
    snprintf(h->source, sizeof(h->source), "%.200s%s", s->probe_path,
             text.len - 1 > (size_t)block_size ? " (its first block_size + 1 characters)" : "");
    return 0;
}

// Where the default passage starts: after the first newline of the split (the start of its
// first whole line; blank lines skipped), when the passage still fits after it.
static size_t passage_start(const int *split, size_t len, int newline, int need) {
    size_t i = 0;
    while (newline >= 0 && i < len && split[i] != newline) i++;
    while (newline >= 0 && i < len && split[i] == newline) i++;
    return i + (size_t)need <= len ? i : 0;
}

// The default prompt: the passage's first line with its newline, at most PROBE_PROMPT_MAX
// characters and half the block.
static int default_prompt_len(const ProbeHeader *h, int newline) {
    int most = h->block_size / 2 < PROBE_PROMPT_MAX ? h->block_size / 2 : PROBE_PROMPT_MAX, n = 0;
    if (most > h->probe_len + 1) most = h->probe_len + 1;
    while (n < most && h->passage[n] != newline) n++;
    return n < most ? n + 1 : most;
}

_Static_assert(PROBE_PATTERNS == HEAD_PATTERNS, "the probe file holds a score of every head pattern");

int probe_header_make(ProbeHeader *h, const ProbeSetup *s, const GPTConfig *c, const Vocab *vocab,
                      const Dataset *ds, char err[ERR_LEN]) {
    memset(h, 0, sizeof(*h));
    h->n_layer = c->n_layer, h->n_head = c->n_head, h->vocab_size = c->vocab_size, h->block_size = c->block_size;
    h->sample_chars = s->sample_chars;
    h->sample_seed = s->seed;
    h->temperature = s->temperature;
    h->version = 3;
    h->head_size = c->head_size;
    h->repeat_len = 2 * head_repeat_run(c->block_size);
    char groups[PROBE_MAX_GROUPS][PROBE_GROUP_NAME];
    h->groups = update_groups(c, groups);
    int newline = vocab_index(vocab, '\n');
    uint32_t *file_chars = NULL;
    const int *split = ds->val_len > 0 ? ds->val : ds->train;
    size_t split_len = ds->val_len > 0 ? ds->val_len : ds->train_len, start = 0;
    if (s->probe_path) {
        if (passage_from_file(h, s, vocab, c->block_size, &file_chars, err) != 0) return -1;
    } else {
        h->probe_len = split_len - 1 < (size_t)c->block_size ? (int)split_len - 1 : c->block_size;
        start = passage_start(split, split_len, newline, h->probe_len + 1);
        snprintf(h->source, sizeof(h->source), "the %s split, characters %zu to %zu", ds->val_len > 0 ?
                 "validation" : "training", start, start + h->probe_len);
    }
    // the prompt's characters: --sample-prompt's, or the passage's first line (known after it)
    uint32_t *prompt_chars = NULL;
    size_t prompt_n = 0;
    if (s->sample_prompt) {
        size_t bytes = strlen(s->sample_prompt), bad;
        prompt_chars = malloc((bytes + 1) * sizeof(uint32_t));
        long decoded = prompt_chars ? utf8_decode((const unsigned char *)s->sample_prompt, bytes, prompt_chars, &bad) : -1;
        prompt_n = decoded > 0 ? (size_t)decoded : 0;
        if (decoded < 0) {
            snprintf(err, ERR_LEN, "--sample-prompt is not valid UTF-8");
            free(prompt_chars);
            free(file_chars);
            return -2;
        }
        if (prompt_n > (size_t)c->block_size) {
            snprintf(err, ERR_LEN, "--sample-prompt holds %zu characters, more than the block of %d", prompt_n,
                     c->block_size);
            free(prompt_chars);
            free(file_chars);
            return -2;
        }
        h->prompt_len = (int)prompt_n;
    } else {
        h->prompt_len = PROBE_PROMPT_MAX;  // room; set below
    }
    // the positions whose vectors fit in half of PROBE_VECTOR_BYTES each
    double per_position = 4.0 * c->n_layer * 3 * c->n_head * c->head_size;
    int vector_positions = (int)fmin(c->block_size, PROBE_VECTOR_BYTES / 2 / per_position);
    h->vector_len = h->probe_len < vector_positions ? h->probe_len : vector_positions;
    h->vector_repeat_len = h->repeat_len < vector_positions ? h->repeat_len : vector_positions;
    int rc = probe_header_alloc(h, err) == 0 ? 0 : -1;
    if (rc == 0 && file_chars)
        rc = encode_chars(vocab, file_chars, h->probe_len + 1, h->passage, "--probe", err);
    else if (rc == 0)
        for (int i = 0; i <= h->probe_len; i++) h->passage[i] = split[start + (size_t)i];
    if (rc == 0 && prompt_chars) rc = encode_chars(vocab, prompt_chars, h->prompt_len, h->prompt, "--sample-prompt", err);
    if (rc == 0 && !s->sample_prompt) {
        h->prompt_len = default_prompt_len(h, newline);
        memcpy(h->prompt, h->passage, (size_t)h->prompt_len * sizeof(int32_t));
    }
    free(prompt_chars);
    free(file_chars);
    if (rc == 0) {
        memcpy(h->group_names, groups, (size_t)h->groups * PROBE_GROUP_NAME);
        for (int v = 0; v < vocab->size; v++) h->vocab[v] = vocab->chars[v];
        int n = h->repeat_len / 2;
        int *repeated = malloc(((size_t)h->repeat_len + 1) * sizeof(int));
        if (!repeated) rc = -1, snprintf(err, ERR_LEN, "out of memory for the probe's repeated sequence");
        else {
            head_repeated_sequence(repeated, n, c->vocab_size, s->seed);
            for (int i = 0; i < h->repeat_len; i++) h->repeated[i] = repeated[i];
            free(repeated);
        }
    }
    if (rc != 0) probe_header_free(h);
    return rc;
}

// ----------------------------------------------------------------------------
// the probe: measuring

int probe_init(Probe *p, GPT *model, const ProbeHeader *header, char err[ERR_LEN]) {
    memset(p, 0, sizeof(*p));
    p->header = header;
    gpt_view(&p->view, model);
    int t = header->probe_len;
    p->next = malloc((size_t)t * sizeof(int));
    p->word_start = malloc((size_t)t * sizeof(int));
    p->last_space = malloc((size_t)t * sizeof(int));
    int words = p->word_start && p->last_space && probe_passage_words(header, p->word_start, p->last_space) == 0;
    if (!p->next || !words || gpt_alloc_activations(&p->view, 1, err) != 0 ||
        logit_lens_init(&p->lens, &model->config, t, err) != 0) {
        if (!p->next || !words) snprintf(err, ERR_LEN, "out of memory for the probe");
        probe_free(p);
        return -1;
    }
    for (int i = 0; i < t; i++) p->next[i] = header->passage[i + 1];
    return 0;
}

void probe_free(Probe *p) {
    gpt_free(&p->view);
    logit_lens_free(&p->lens);
    free(p->next);
    free(p->word_start);
    free(p->last_space);
    memset(p, 0, sizeof(*p));
}

double probe_memory(const GPTConfig *c, const ProbeHeader *h) {
    GPTMemoryPlan view;
    gpt_memory_plan(c, 1, GPT_PLAN_FORWARD, &view);
    gpt_memory_plan_precision(&view, c, 1, GPT_PLAN_FORWARD, PRECISION_FP32);
    GPTMemoryPlan sample;  // the sample's key/value cache and decoder (the sample, below)
    gpt_memory_plan(c, 1, GPT_PLAN_GENERATION, &sample);
    double decoder = ((double)h->prompt_len + h->sample_chars + 1) * sizeof(int) + 2.0 * c->vocab_size * sizeof(float);
    // the passage's next tokens, word starts and last spaces, and its characters for a while
    double texts = 4.0 * h->probe_len * sizeof(int);
    // the record being made, the probe file's encoded copy, and the timeline page's reader
    // and encoder (viewer/timeline.h) of one record at a time
    double records = 4.0 * ((double)probe_record_bytes(h) + 64);
    return head_importance_memory(0) + view.activations + view.scratch + sample.generation + decoder + texts +
           logit_lens_bytes(c, h->probe_len) + records;
}

// One head's lower triangle (t, t), quantized, into out (t(t+1)/2).
static void quantize_head(const float *att, int t, uint8_t *out) {
    for (int i = 0; i < t; i++)
        for (int j = 0; j <= i; j++) *out++ = probe_quantize(att[(size_t)i * t + j]);
}

// The first n positions' queries, keys and values of every layer (L, n, 3A) into out, from the
// last forward.
static void copy_vectors(const GPT *m, int n, float *out) {
    size_t row = 3 * (size_t)m->config.n_head * m->config.head_size;
    for (int l = 0; l < m->config.n_layer; l++)
        memcpy(out + (size_t)l * n * row, gpt_qkv(m, l), (size_t)n * row * sizeof(float));
}

// The passage: attention, the scores of the patterns it shows (previous token, first character,
// word start, last space) and entropies, surprisal and predictions, lens, vectors.
static int measure_passage(Probe *p, ProbeRecord *rec, char err[ERR_LEN]) {
    const ProbeHeader *h = p->header;
    const int t = h->probe_len, H = h->n_head, V = h->vocab_size;
    GPT *m = &p->view;
    gpt_forward(m, h->passage, NULL, 1, t, NULL);
    long bad = first_nonfinite(m->acts.logits, (size_t)t * V);
    if (bad >= 0) {
        snprintf(err, ERR_LEN, "the probe: the model's logits at position %ld of the passage are not finite",
                 bad / V);
        return -1;
    }
    size_t triangle = (size_t)t * (t + 1) / 2;
    HeadText text = {h->passage, p->word_start, p->last_space, t};
    for (int l = 0; l < h->n_layer; l++) {
        const float *att = gpt_attention_weights(m, l);  // (1, H, t, t)
        for (int k = 0; k < H; k++) {
            const float *head = att + (size_t)k * t * t;
            int index = l * H + k;
            rec->previous_token[index] = (float)head_score(HEAD_PREVIOUS_TOKEN, head, &text);
            rec->first_character[index] = (float)head_score(HEAD_FIRST_CHARACTER, head, &text);
            rec->word_start[index] = (float)head_score(HEAD_WORD_START, head, &text);
            rec->last_space[index] = (float)head_score(HEAD_LAST_SPACE, head, &text);
            rec->entropy[index] = (float)head_attention_entropy(head, t);
            quantize_head(head, t, rec->att_passage + (size_t)index * triangle);
        }
    }
    copy_vectors(m, h->vector_len, rec->vectors_passage);
    for (int i = 0; i < t; i++) {
        float next_prob;
        int32_t rank;
        double log_p = logits_top(m->acts.logits + (size_t)i * V, V, PROBE_TOP, p->next[i], rec->top + i * PROBE_TOP,
                                  rec->top_prob + i * PROBE_TOP, &next_prob, &rank);
        rec->surprisal[i] = (float)(-log_p / M_LN2);
    }
    logit_lens_compute(&p->lens, m, p->next);
    for (size_t c = 0; c < (size_t)p->lens.rows * t; c++) {
        const LensCell *cell = &p->lens.cells[c];
        memcpy(rec->lens_top + c * PROBE_LENS_TOP, cell->top, sizeof(cell->top));
        memcpy(rec->lens_prob + c * PROBE_LENS_TOP, cell->top_prob, sizeof(cell->top_prob));
        rec->lens_next_prob[c] = cell->next_prob;
        rec->lens_next_rank[c] = cell->next_rank;
    }
    return 0;
}

// The repeated sequence: attention, induction and same-character scores (NaN without one),
// vectors.
static void measure_repeated(Probe *p, ProbeRecord *rec) {
    const ProbeHeader *h = p->header;
    const int r = h->repeat_len, H = h->n_head;
    if (r == 0) {
        for (int i = 0; i < h->n_layer * H; i++) rec->induction[i] = rec->same_character[i] = NAN;
        return;
    }
    gpt_forward(&p->view, h->repeated, NULL, 1, r, NULL);
    size_t triangle = (size_t)r * (r + 1) / 2;
    HeadText text = {h->repeated, NULL, NULL, r};
    for (int l = 0; l < h->n_layer; l++) {
        const float *att = gpt_attention_weights(&p->view, l);
        for (int k = 0; k < H; k++) {
            const float *head = att + (size_t)k * r * r;
            rec->induction[l * H + k] = (float)head_score(HEAD_INDUCTION, head, &text);
            rec->same_character[l * H + k] = (float)head_score(HEAD_SAME_CHARACTER, head, &text);
            quantize_head(head, r, rec->att_repeated + (size_t)(l * H + k) * triangle);
        }
    }
    copy_vectors(&p->view, h->vector_repeat_len, rec->vectors_repeated);
}

int probe_measure(Probe *p, ProbeRecord *rec, char err[ERR_LEN]) {
    if (measure_passage(p, rec, err) != 0) return -1;
    measure_repeated(p, rec);
    // last: L*H forwards of the passage, each with one head knocked out
    if (head_importance(&p->view, p->header->passage, p->header->probe_len, rec->importance, err) != 0) return -1;
    rec->flags |= PROBE_HAS_PROBE;
    return 0;
}

// ----------------------------------------------------------------------------
// the sample

int sample_write(GPT *view, const ProbeHeader *h, int newline, int32_t *sample, char err[ERR_LEN]) {
    int start = newline >= 0 ? newline : 0;
    long prompt_len = h->prompt_len > 0 ? h->prompt_len : 1;
    int *prompt = malloc((size_t)prompt_len * sizeof(int));
    if (!prompt) {
        snprintf(err, ERR_LEN, "out of memory for the sample's prompt");
        return -1;
    }
    for (long i = 0; i < prompt_len; i++) prompt[i] = h->prompt_len > 0 ? h->prompt[i] : start;
    DecoderConfig config = {1, 1, 1, {h->temperature, 0, 1.0f}, h->sample_seed};
    Decoder d;
    int rc = decoder_init(&d, view, prompt, prompt_len, h->sample_chars, &config, err);
    free(prompt);
    for (int n = 0; rc == 0 && n < h->sample_chars; n++) {
        const int *next = decoder_step(&d, err);
        if (!next) rc = -1;
        else sample[n] = next[0];
    }
    decoder_free(&d);  // decoder_init clears it first, so this is safe after its failure too
    return rc;
}

// ----------------------------------------------------------------------------
// the run's probe file and timeline page

// What the probe file at path is to a run: none there, the run's own (its train.run_id, and
// the model's sizes), another run's, or damaged (not a probe file, or a header that does not
// read whole or fit the model: moved aside by run_probe_open).
enum { PROBE_FILE_NONE, PROBE_FILE_OWN, PROBE_FILE_OTHER, PROBE_FILE_DAMAGED };

// Classifies the probe file at path (never through a symbolic link, nor waiting on a FIFO:
// common/input_file.h) for a run of run_id and model c; the run's own header goes into h.
// *records: the file holds more than a header. Returns the class, with why it is not the
// run's own in why; -1 with err when it cannot be read or is not a regular file.
static int classify_probe_file(const char *path, const char *run_id, const GPTConfig *c, ProbeHeader *h,
                               int *records, char why[ERR_LEN]) {
    *records = 0;
    int missing;
    FILE *fp = input_file_fopen(path, PLATFORM_NO_FOLLOW, &missing, why);
    if (!fp) return missing ? PROBE_FILE_NONE : -1;
    ProbeReader r;
    int read = probe_reader_open(&r, fp, path, why) == 0;
    fclose(fp);
    if (!read) return PROBE_FILE_DAMAGED;
    const ProbeHeader *got = &r.header;
    *records = r.size > r.offset;
    int fits = got->n_layer == c->n_layer && got->n_head == c->n_head && got->vocab_size == c->vocab_size &&
               got->block_size == c->block_size && (got->version == 1 || got->head_size == c->head_size);
    int kind = strcmp(got->run_id, run_id) != 0 ? PROBE_FILE_OTHER : fits ? PROBE_FILE_OWN : PROBE_FILE_DAMAGED;
    if (kind == PROBE_FILE_OTHER) snprintf(why, ERR_LEN, "train.run_id %s", got->run_id[0] ? got->run_id : "none");
    if (kind == PROBE_FILE_DAMAGED)
        snprintf(why, ERR_LEN, "%s: a damaged probe file: its header is of another model (%d layers x %d heads, "
                 "vocabulary %d, block %d)", path, got->n_layer, got->n_head, got->vocab_size, got->block_size);
    free(r.payload);
    if (kind == PROBE_FILE_OWN) *h = r.header;
    else probe_header_free(&r.header);
    return kind;
}

// Decides whether the run continues the probe file of its --out (rp->continued), starts a new
// one (a resumed run moves a damaged one aside first, or one whose run it cannot tell, when
// its checkpoint has no train.run_id: rp->set_aside), or is refused: another run's timeline
// with records, or before a new run any other file called probe.bin, is replaced only with
// --force. Returns 0, -1 (bad data) or -2 (bad usage) with err.
static int decide_probe_file(RunProbe *rp, const TrainOptions *o, const GPTConfig *c, int run_unknown,
                             char err[ERR_LEN]) {
    char why[ERR_LEN];
    int records, kind = classify_probe_file(rp->path, o->run_id, c, &rp->header, &records, why);
    if (kind < 0) {
        snprintf(err, ERR_LEN, "%s", why);
        return -1;
    }
    rp->continued = rp->resuming && kind == PROBE_FILE_OWN;
    if (kind == PROBE_FILE_OWN && !rp->resuming) probe_header_free(&rp->header);
    int replaced = kind != PROBE_FILE_NONE && !rp->continued && (records || kind == PROBE_FILE_DAMAGED);
    if (replaced && !o->force && kind == PROBE_FILE_OTHER && rp->resuming && run_unknown) {
        snprintf(rp->damage, sizeof(rp->damage), "%s: the timeline of train.run_id %s, and the resumed checkpoint has "
                 "no train.run_id to tell whether it is its run's", rp->path, why + strlen("train.run_id "));
        rp->set_aside = "unknown";
        return 0;
    }
    if (replaced && !o->force && kind == PROBE_FILE_OTHER) {
        snprintf(err, ERR_LEN, "%s is the timeline of another run (%s%s%s): give --force to replace it, or another "
                 "--out", rp->path, why, rp->resuming ? ", not " : "", rp->resuming ? o->run_id : "");
        return -2;
    }
    if (replaced && !o->force && !rp->resuming) {
        snprintf(err, ERR_LEN, "%s is no timeline a new run can replace (%s): give --force to replace it, or another "
                 "--out", rp->path, why);
        return -2;
    }
    if (rp->resuming && kind == PROBE_FILE_DAMAGED && !o->force) {
        snprintf(rp->damage, sizeof(rp->damage), "%s", why);
        rp->set_aside = "damaged";
    }
    return 0;
}

int run_probe_prepare(RunProbe *rp, const TrainOptions *o, const GPTConfig *c, const Vocab *vocab,
                      const Dataset *ds, const char *resumed_run_id, char err[ERR_LEN]) {
    memset(rp, 0, sizeof(*rp));
    rp->file.fd = -1;
    if (probe_schedule_make(&rp->schedule, o->no_probe ? "none" : o->probe_steps, o->eval_every, o->steps, err) != 0)
        return -2;
    rp->active = !o->no_probe && dist_rank() == 0;
    if (!rp->active) return 0;
    snprintf(rp->path, sizeof(rp->path), "%s/%s", o->out, PROBE_FILE);
    snprintf(rp->page_path, sizeof(rp->page_path), "%s/%s", o->out, TIMELINE_FILE);
    rp->newline = vocab_index(vocab, '\n');
    rp->sample_every = o->sample_every;
    rp->resuming = resumed_run_id != NULL;
    int rc = decide_probe_file(rp, o, c, resumed_run_id && !resumed_run_id[0], err);
    if (rc != 0 || rp->continued) {
        rp->active = rc == 0;
        return rc;
    }
    ProbeSetup setup = {o->probe[0] ? o->probe : NULL, o->sample_prompt, o->sample_chars, o->seed,
                        SAMPLE_TEMPERATURE, o->keep_cr, o->encoding};
    rc = probe_header_make(&rp->header, &setup, c, vocab, ds, err);
    if (rc != 0) {
        rp->active = 0;
        return rc;
    }
    snprintf(rp->header.run_id, sizeof(rp->header.run_id), "%s", o->run_id);
    rp->header.grad_clip = o->grad_clip;
    return 0;
}

double run_probe_memory(const RunProbe *rp, const GPTConfig *c) {
    return rp->active ? probe_memory(c, &rp->header) : 0.0;
}

// The probes a run from `step` to last_step makes, and the bytes they (and the samples between
// them, at most one a --sample-every step) add to the probe file.
static long planned_probes(const RunProbe *rp, long step, long last_step, long eval_every, int from_start,
                           double *bytes) {
    long probes = from_start + events_left(step, last_step, eval_every) +
                  probe_schedule_left(&rp->schedule, step, last_step, eval_every);
    long samples = rp->sample_every && rp->header.sample_chars ? events_left(step, last_step, rp->sample_every) : 0;
    *bytes = (double)probes * (probe_record_bytes(&rp->header) + 8) +
             (double)samples * (probe_light_bytes(&rp->header) + 8);
    return probes;
}

void run_probe_plan(const RunProbe *rp, long step, long last_step, long eval_every, int from_start, char *text,
                    size_t size) {
    text[0] = '\0';
    if (!rp->active) return;
    double bytes;
    long probes = planned_probes(rp, step, last_step, eval_every, from_start, &bytes);
    if (probes == 0) return;  // none to come
    char when[600], size_text[32];
    probe_schedule_describe(&rp->schedule, from_start, step, eval_every, when, sizeof(when));
    format_bytes(bytes, size_text, sizeof(size_text));
    snprintf(text, size, "timeline: probes %s%s and the last: %ld probe%s, %s of probe.bin%s",
             isdigit((unsigned char)when[0]) ? "at steps " : "", when, probes, probes == 1 ? "" : "s", size_text,
             rp->sample_every ? " (and the samples between them)" : "");
}

int run_probe_check_disk(const RunProbe *rp, long step, long last_step, long eval_every, int from_start,
                         double free_bytes, const char *dir, char err[ERR_LEN]) {
    if (!rp->active) return 0;
    double bytes;
    long probes = planned_probes(rp, step, last_step, eval_every, from_start, &bytes);
    if (bytes <= free_bytes) return 0;
    char need[32], have[32];
    format_bytes(bytes, need, sizeof(need));
    format_bytes(free_bytes, have, sizeof(have));
    snprintf(err, ERR_LEN, "the timeline's %ld probes would add %s to %s/%s, more than the %s free on the disk that "
             "holds it: probe less often (a larger --eval-every; --probe-steps none), or give --no-probe", probes,
             need, dir, PROBE_FILE, have);
    return -2;
}

// The lines of message saying what run_probe_open found in the file it continues.
static void describe_resume(const RunProbe *rp, const ProbeResume *resume, char *message, size_t size) {
    size_t used = 0;
    if (resume->damage)
        used += (size_t)snprintf(message, size, "%s: record %ld (at byte %llu) %s: moved the file to %s; %s keeps the "
                                 "%ld records before it", rp->path, resume->damaged_record,
                                 (unsigned long long)resume->damaged_at, resume->damage, resume->aside, rp->path,
                                 resume->kept);
    if (resume->dropped && used < size)
        used += (size_t)snprintf(message + used, size - used, "%s%s: dropped the records of steps %lld to %lld, "
                                 "written after the checkpoint was saved", used ? "\n" : "", rp->path,
                                 (long long)resume->first_dropped, (long long)resume->last_dropped);
    if (resume->torn_bytes && used < size)
        snprintf(message + used, size - used, "%s%s: cut %llu bytes of a record that a stopped run left unfinished",
                 used ? "\n" : "", rp->path, (unsigned long long)resume->torn_bytes);
}

int run_probe_open(RunProbe *rp, GPT *model, long step, char *message, size_t size, char err[ERR_LEN]) {
    message[0] = '\0';
    if (!rp->active) return 0;
    int rc;
    if (rp->continued) {
        ProbeHeader read;  // the file's header once more, now that it is the file's own
        ProbeResume resume;
        rc = probe_file_resume(&rp->file, rp->path, step, &read, &resume, err);
        if (rc == 0) {
            probe_header_free(&rp->header);
            rp->header = read;
            rp->file.header = &rp->header;
            describe_resume(rp, &resume, message, size);
        }
    } else {
        char aside[1100];
        rc = rp->set_aside ? probe_file_set_aside(rp->path, rp->set_aside, aside, sizeof(aside), err) : 0;
        // the reach, quadratic in the block, once the memory plan has been checked
        float chance[HEAD_PATTERNS];
        if (rc == 0) rc = probe_baselines(&rp->header, rp->header.reach, chance, err);
        if (rc == 0) rc = probe_file_create(&rp->file, rp->path, &rp->header, err);
        if (rc == 0 && rp->set_aside)
            snprintf(message, size, "%s: moved to %s; the timeline starts anew at step %ld", rp->damage, aside, step);
        else if (rc == 0 && rp->resuming)
            snprintf(message, size, "%s: the timeline starts at step %ld (the directory held no probe file of this "
                     "run)", rp->path, step);
    }
    if (rc == 0) rc = probe_init(&rp->probe, model, &rp->header, err);
    if (rc == 0) rc = probe_record_alloc(&rp->record, &rp->header, err);
    if (rc != 0) rp->active = 0;
    return rc;
}

// Whether the step gets a sample: at a probe, or every sample_every steps.
static int wants_sample(const RunProbe *rp, const RunProbeStep *s) {
    if (rp->header.sample_chars == 0) return 0;
    return s->probed || (rp->sample_every > 0 && s->step % rp->sample_every == 0);
}

int run_probe_step(RunProbe *rp, const RunProbeStep *s, char err[ERR_LEN]) {
    if (!rp->active || rp->failed || (!s->probed && !wants_sample(rp, s))) return 0;
    double t0 = now_seconds();
    ProbeRecord *rec = &rp->record;
    const ProbeHeader *h = &rp->header;
    rec->flags = 0;
    rec->step = s->step;
    rec->train_loss = s->train_loss, rec->val_loss = s->val_loss, rec->lr = s->lr;
    rec->grad_norm = s->grad_norm, rec->clipped = s->clipped;
    for (int g = 0; g < h->groups; g++) rec->update_ratio[g] = s->update_ratio ? s->update_ratio[g] : NAN;
    int heads = h->n_layer * h->n_head, rc = 0;
    for (int i = 0; i < heads; i++)
        rec->previous_token[i] = rec->induction[i] = rec->entropy[i] = rec->first_character[i] =
            rec->same_character[i] = rec->word_start[i] = rec->last_space[i] = rec->importance[i] = NAN;
    if (s->probed) rc = probe_measure(&rp->probe, rec, err);
    double t1 = now_seconds();
    if (rc == 0 && wants_sample(rp, s)) {
        rc = sample_write(&rp->probe.view, h, rp->newline, rec->sample, err);
        rec->flags |= rc == 0 ? PROBE_HAS_SAMPLE : 0;
        rp->samples += rc == 0;
    }
    rp->probe_s += t1 - t0;
    rp->sample_s += now_seconds() - t1;
    if (!(rec->flags & PROBE_HAS_SAMPLE)) memset(rec->sample, 0, (size_t)h->sample_chars * sizeof(int32_t));
    if (rc == 0) rc = probe_file_append(&rp->file, rec, err);
    rp->sampled = rc == 0 && (rec->flags & PROBE_HAS_SAMPLE);
    rp->probes += rc == 0 && s->probed;
    rp->failed = rc != 0;
    rp->seconds += now_seconds() - t0;
    return rc;
}

void run_probe_print_sample(RunProbe *rp, FILE *fp) {
    if (!rp->sampled) return;
    rp->sampled = 0;
    const ProbeHeader *h = &rp->header;
    fprintf(fp, "sample at step %lld (seed %llu):\n  ", (long long)rp->record.step,
            (unsigned long long)h->sample_seed);
    char bytes[4];
    for (int i = 0; i < h->prompt_len + h->sample_chars; i++) {
        int id = i < h->prompt_len ? h->prompt[i] : rp->record.sample[i - h->prompt_len];
        uint32_t cp = h->vocab[id];
        fwrite(bytes, 1, (size_t)utf8_encode(cp, bytes), fp);
        if (cp == '\n') fputs("  ", fp);
    }
    fputc('\n', fp);
}

int run_probe_page(RunProbe *rp, const LossHistory *losses, const char *title, char err[ERR_LEN]) {
    if (!rp->active) return 0;
    double t0 = now_seconds();
    TimelineSummary summary;
    int rc = timeline_write(rp->page_path, rp->path, losses->points, losses->n, title, TIMELINE_MAX_RECORD_BYTES, 1, &summary,
                            err);
    rp->seconds += now_seconds() - t0;
    return rc;
}

void run_probe_describe_cost(const RunProbe *rp, char *text, size_t size) {
    double files = rp->seconds - rp->probe_s - rp->sample_s;
    snprintf(text, size, "the probe %.0f ms, the sample %.0f ms and the files %.0f ms a probe",
             1000.0 * rp->probe_s / (rp->probes ? rp->probes : 1), 1000.0 * rp->sample_s / (rp->samples ? rp->samples : 1),
             1000.0 * files / (rp->probes ? rp->probes : 1));
}

void run_probe_free(RunProbe *rp) {
    probe_file_close(&rp->file);
    probe_free(&rp->probe);
    probe_record_free(&rp->record);
    probe_header_free(&rp->header);
}
