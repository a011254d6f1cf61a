#include "probe.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/finite.h"
#include "../data/corpus.h"
#include "../data/utf8.h"
#include "head_scores.h"
#include "update_ratio.h"

// ----------------------------------------------------------------------------
// what is probed

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
    int rc = corpus_load(s->probe_path, s->keep_cr, PROBE_FILE_MAX_CHARS, &text, err);
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

// Where each of the passage's t positions' word starts, and its last space (head_scores.h), into
// word_start and last_space (t each). Returns 0, or -1 when memory runs out.
static int passage_words(const ProbeHeader *h, int *word_start, int *last_space) {
    uint32_t *chars = malloc((size_t)h->probe_len * sizeof(uint32_t));
    if (!chars) return -1;
    for (int i = 0; i < h->probe_len; i++) chars[i] = h->vocab[h->passage[i]];
    head_word_starts(chars, h->probe_len, word_start, last_space);
    free(chars);
    return 0;
}

// The reach of each pattern on the text the probe scores it on (probe_file.h): the passage, or
// the repeated sequence for induction and same character. Returns 0, or -1 with err.
static int set_reach(ProbeHeader *h, char err[ERR_LEN]) {
    int t = h->probe_len, *word_start = malloc((size_t)t * sizeof(int)), *last_space = malloc((size_t)t * sizeof(int));
    if (!word_start || !last_space || passage_words(h, word_start, last_space) != 0) {
        free(word_start), free(last_space);
        snprintf(err, ERR_LEN, "out of memory for the probe's passage");
        return -1;
    }
    HeadText passage = {h->passage, word_start, last_space, t}, repeated = {h->repeated, NULL, NULL, h->repeat_len};
    for (int p = 0; p < HEAD_PATTERNS; p++) {
        int on_repeated = p == HEAD_INDUCTION || p == HEAD_SAME_CHARACTER;
        h->reach[p] = on_repeated && h->repeat_len == 0 ? 0.0f
                      : (float)head_pattern_reach((HeadPattern)p, on_repeated ? &repeated : &passage);
    }
    free(word_start), free(last_space);
    return 0;
}

int probe_header_make(ProbeHeader *h, const ProbeSetup *s, const GPTConfig *c, const Vocab *vocab,
                      const Dataset *ds, char err[ERR_LEN]) {
    memset(h, 0, sizeof(*h));
    h->n_layer = c->n_layer, h->n_head = c->n_head, h->vocab_size = c->vocab_size, h->block_size = c->block_size;
    h->sample_chars = s->sample_chars;
    h->sample_seed = s->seed;
    h->temperature = s->temperature;
    h->version = 2;
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
    if (rc == 0) rc = set_reach(h, err);
    if (rc != 0) probe_header_free(h);
    return rc;
}

// ----------------------------------------------------------------------------
// measuring

int probe_init(Probe *p, GPT *model, const ProbeHeader *header, char err[ERR_LEN]) {
    memset(p, 0, sizeof(*p));
    p->header = header;
    gpt_view(&p->view, model);
    int t = header->probe_len;
    p->next = malloc((size_t)t * sizeof(int));
    p->word_start = malloc((size_t)t * sizeof(int));
    p->last_space = malloc((size_t)t * sizeof(int));
    int words = p->word_start && p->last_space && passage_words(header, p->word_start, p->last_space) == 0;
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
    GPTMemoryPlan sample;  // the sample's key/value cache and decoder (training/sample.h)
    gpt_memory_plan(c, 1, GPT_PLAN_GENERATION, &sample);
    double decoder = ((double)h->prompt_len + h->sample_chars + 1) * sizeof(int) + 2.0 * c->vocab_size * sizeof(float);
    // the passage's next tokens, word starts and last spaces, and its characters for a while
    double texts = 4.0 * h->probe_len * sizeof(int);
    // the record being made, the probe file's encoded copy, and the timeline page's reader
    // and encoder (viewer/timeline.h) of one record at a time
    double records = 4.0 * ((double)probe_record_bytes(h) + 64);
    return view.activations + view.scratch + sample.generation + decoder + texts + logit_lens_bytes(c, h->probe_len) +
           records;
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
    rec->flags |= PROBE_HAS_PROBE;
    return 0;
}
