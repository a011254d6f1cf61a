// Tests of the probe file (format/probe_file.h) and the timeline page made from it
// (viewer/timeline.h): records read back as written, a torn tail cut at every byte, damage
// found, a resumed file cut at its step, and the page's data, its bounds and its thinning.
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../analysis/probe_baselines.h"
#include "../format/json.h"
#include "../format/probe_file.h"
#include "../viewer/timeline.h"
#include "test.h"

#define TMP "tests/tmp/probe_file"

static void make_tmp(void) {
    test_make_dir("tests/tmp");
    test_make_dir(TMP);
}

// A header of the given sizes with deterministic contents (version 3: heads of 3, the vectors
// of the passage's first half and of the whole repeated run).
static int make_header(ProbeHeader *h, int L, int H, int V, int T, int S) {
    memset(h, 0, sizeof(*h));
    h->version = 3;
    h->n_layer = L, h->n_head = H, h->vocab_size = V, h->block_size = T, h->groups = 3;
    h->probe_len = T, h->repeat_len = T / 2 * 2, h->prompt_len = 4, h->sample_chars = S;
    h->head_size = 3, h->vector_len = T / 2, h->vector_repeat_len = h->repeat_len;
    for (int p = 0; p < PROBE_PATTERNS; p++) h->reach[p] = 1.0f - 0.125f * p;
    h->sample_seed = 1337, h->temperature = 0.8f, h->grad_clip = 1.0f;
    snprintf(h->run_id, sizeof(h->run_id), "0123456789abcdef");
    snprintf(h->source, sizeof(h->source), "a test's <passage> & \"quotes\"");
    char err[ERR_LEN];
    if (!CHECK(probe_header_alloc(h, err) == 0, "%s", err)) return -1;
    for (int v = 0; v < V; v++) h->vocab[v] = v == 1 ? '\n' : v == 2 ? '<' : v == 3 ? 0x1F31E : 'a' + v;
    for (int i = 0; i <= T; i++) h->passage[i] = (i * 5) % V;
    for (int i = 0; i < h->repeat_len; i++) h->repeated[i] = (i % (T / 2) * 3) % V;
    for (int i = 0; i < h->prompt_len; i++) h->prompt[i] = i % V;
    snprintf(h->group_names[0], PROBE_GROUP_NAME, "transformer.wte.weight");
    snprintf(h->group_names[1], PROBE_GROUP_NAME, "attn.c_attn.weight");
    snprintf(h->group_names[2], PROBE_GROUP_NAME, "ln_1.bias");
    return 0;
}

// Fills a record for step (whole: with the probe) from a seed.
static void fill_record(ProbeRecord *r, const ProbeHeader *h, long step, int whole) {
    size_t heads = (size_t)h->n_layer * h->n_head, t = h->probe_len, cells = ((size_t)h->n_layer + 1) * t;
    r->flags = PROBE_HAS_SAMPLE | (whole ? PROBE_HAS_PROBE : 0);
    r->step = step;
    r->train_loss = 4.0f - step * 1e-3f, r->val_loss = step == 0 ? NAN : 4.1f, r->lr = 1e-3f;
    r->grad_norm = 0.5f, r->clipped = step % 2;
    for (int g = 0; g < h->groups; g++) r->update_ratio[g] = 1e-3f * (g + 1);
    for (int i = 0; i < h->sample_chars; i++) r->sample[i] = (int32_t)((step + i) % h->vocab_size);
    for (size_t i = 0; i < heads; i++) {
        r->previous_token[i] = 0.1f * i, r->induction[i] = 0.01f * i, r->entropy[i] = 2;
        r->first_character[i] = 0.02f * i, r->same_character[i] = 0.03f * i, r->word_start[i] = 0.04f * i;
        r->last_space[i] = 0.05f * i, r->importance[i] = 0.25f - 0.1f * i;
    }
    for (size_t i = 0; i < t; i++) {
        r->surprisal[i] = 1.5f + i;
        for (int k = 0; k < PROBE_TOP; k++) {
            r->top[i * PROBE_TOP + k] = k < h->vocab_size ? k : -1;
            r->top_prob[i * PROBE_TOP + k] = 0.5f / (k + 1);
        }
    }
    for (size_t c = 0; c < cells; c++) {
        for (int k = 0; k < PROBE_LENS_TOP; k++) {
            r->lens_top[c * PROBE_LENS_TOP + k] = (int32_t)((c + k) % h->vocab_size);
            r->lens_prob[c * PROBE_LENS_TOP + k] = 0.3f;
        }
        r->lens_next_prob[c] = 0.25f, r->lens_next_rank[c] = 2;
    }
    size_t bytes = heads * (t * (t + 1) / 2 + (size_t)h->repeat_len * (h->repeat_len + 1) / 2);
    for (size_t i = 0; i < bytes; i++) r->att_passage[i] = (uint8_t)(i * 7 + step);
    size_t row = 3 * (size_t)h->n_head * h->head_size;
    for (size_t i = 0; i < (size_t)h->n_layer * h->vector_len * row; i++) r->vectors_passage[i] = 0.5f - 0.01f * i;
    for (size_t i = 0; i < (size_t)h->n_layer * h->vector_repeat_len * row; i++)
        r->vectors_repeated[i] = (float)step + 0.25f * i;
}

// 1 when the light parts of a and b agree, and their heavy parts when both have one.
static int same_record(const ProbeRecord *a, const ProbeRecord *b, const ProbeHeader *h) {
    size_t heads = (size_t)h->n_layer * h->n_head, t = h->probe_len, cells = ((size_t)h->n_layer + 1) * t;
    int same = a->flags == b->flags && a->step == b->step && a->train_loss == b->train_loss &&
               (a->val_loss == b->val_loss || (isnan(a->val_loss) && isnan(b->val_loss))) &&
               a->clipped == b->clipped && !memcmp(a->update_ratio, b->update_ratio, (size_t)h->groups * 4) &&
               !memcmp(a->sample, b->sample, (size_t)h->sample_chars * 4) &&
               !memcmp(a->entropy, b->entropy, heads * 4) && !memcmp(a->induction, b->induction, heads * 4) &&
               !memcmp(a->first_character, b->first_character, heads * 4) &&
               !memcmp(a->same_character, b->same_character, heads * 4) && !memcmp(a->word_start, b->word_start, heads * 4) &&
               !memcmp(a->last_space, b->last_space, heads * 4) && !memcmp(a->importance, b->importance, heads * 4);
    if (!(a->flags & PROBE_HAS_PROBE)) return same;
    size_t row = 3 * (size_t)h->n_head * h->head_size;
    size_t bytes = heads * (t * (t + 1) / 2 + (size_t)h->repeat_len * (h->repeat_len + 1) / 2);
    return same && !memcmp(a->surprisal, b->surprisal, t * 4) && !memcmp(a->top, b->top, t * PROBE_TOP * 4) &&
           !memcmp(a->lens_top, b->lens_top, cells * PROBE_LENS_TOP * 4) &&
           !memcmp(a->lens_next_rank, b->lens_next_rank, cells * 4) && !memcmp(a->att_passage, b->att_passage, bytes) &&
           !memcmp(a->vectors_passage, b->vectors_passage, (size_t)h->n_layer * h->vector_len * row * 4) &&
           !memcmp(a->vectors_repeated, b->vectors_repeated, (size_t)h->n_layer * h->vector_repeat_len * row * 4);
}

// Writes a probe file of `count` records (steps 0, 10, ...; every third light) at path.
static int write_file(const char *path, ProbeHeader *h, int count) {
    ProbeFile pf;
    ProbeRecord r;
    char err[ERR_LEN];
    if (!CHECK(probe_file_create(&pf, path, h, err) == 0 && probe_record_alloc(&r, h, err) == 0, "%s", err)) return -1;
    int rc = 0;
    for (int i = 0; i < count && rc == 0; i++) {
        fill_record(&r, h, 10L * i, i % 3 != 2);
        rc = probe_file_append(&pf, &r, err);
        CHECK(rc == 0, "%s", err);
    }
    probe_record_free(&r);
    probe_file_close(&pf);
    return rc;
}

// Reads every record of path, checking each against fill_record's; returns how many, and
// the torn bytes, or -1.
static long read_back(const char *path, const ProbeHeader *h, uint64_t *torn) {
    *torn = 0;
    FILE *fp = fopen(path, "rb");
    ProbeReader r;
    char err[ERR_LEN];
    if (!CHECK(fp && probe_reader_open(&r, fp, path, err) == 0, "%s: %s", path, fp ? err : strerror(errno))) {
        if (fp) fclose(fp);
        return -1;
    }
    ProbeRecord got, want;
    probe_record_alloc(&got, h, err);
    probe_record_alloc(&want, h, err);
    long n = 0;
    int rc;
    while ((rc = probe_reader_next(&r, &got, err)) == 1) {
        fill_record(&want, h, 10L * n, n % 3 != 2);
        CHECK(same_record(&got, &want, h), "%s: record %ld (step %lld) differs from what was written", path, n,
              (long long)got.step);
        n++;
    }
    CHECK(rc == 0, "%s", err);
    CHECK(r.header.probe_len == h->probe_len && !strcmp(r.header.run_id, h->run_id) &&
              !strcmp(r.header.source, h->source) && !memcmp(r.header.vocab, h->vocab, (size_t)h->vocab_size * 4) &&
              !memcmp(r.header.repeated, h->repeated, (size_t)h->repeat_len * 4) &&
              !strcmp(r.header.group_names[1], h->group_names[1]) && r.header.sample_seed == h->sample_seed &&
              !memcmp(r.header.reach, h->reach, sizeof(h->reach)) && r.header.head_size == h->head_size &&
              r.header.vector_len == h->vector_len && r.header.vector_repeat_len == h->vector_repeat_len,
          "%s: the header read back differs", path);
    *torn = r.torn_bytes;
    probe_record_free(&got);
    probe_record_free(&want);
    probe_reader_close(&r);
    fclose(fp);
    return n;
}

static long file_size(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

TEST(probe_file_quantized_weights) {
    CHECK(probe_quantize(0.0f) == 0 && probe_quantize(1.0f) == 255 && probe_quantize(NAN) == 0 &&
              probe_quantize(2.0f) == 255 && probe_quantize(-1.0f) == 0,
          "ends: %u %u %u", probe_quantize(0.0f), probe_quantize(1.0f), probe_quantize(NAN));
    CHECK(probe_quantize(1e-4f) == 3, "1e-4 stored as %u, want round(255 * 0.01) = 3", probe_quantize(1e-4f));
    for (int q = 0; q < 256; q++)
        CHECK(probe_quantize(probe_dequantize((uint8_t)q)) == q, "%d does not read back", q);
    for (float w = 0.0f; w <= 1.0f; w += 1.0f / 512) {
        float back = probe_dequantize(probe_quantize(w));
        CHECK(fabsf(sqrtf(back) - sqrtf(w)) <= 0.5f / 255 + 1e-6f, "%g read back as %g", w, back);
    }
}

TEST(probe_file_round_trip_and_sizes) {
    make_tmp();
    ProbeHeader h;
    if (make_header(&h, 2, 3, 7, 8, 5) != 0) return;
    const char *path = TMP "/round.bin";
    if (write_file(path, &h, 7) != 0) return;
    uint64_t torn = 0;
    CHECK(read_back(path, &h, &torn) == 7 && torn == 0, "7 records and no torn tail (torn %llu)",
          (unsigned long long)torn);
    // sizes: the light part, and the whole record as the layout in probe_file.h adds it up
    size_t heads = 6, t = 8, light = 4 + 8 + 20 + 4 * 3 + 4 * 5 + 8 * 4 * heads;
    size_t vectors = 4 * 2 * (4 + 8) * 3 * 3 * 3;  // f32 (L, m + n, 3 H hs)
    size_t whole = light + 4 * t + t * PROBE_TOP * 8 + 3 * t * (PROBE_LENS_TOP * 8 + 8) + heads * (36 + 36) + vectors;
    CHECK(probe_light_bytes(&h) == light && probe_record_bytes(&h) == whole, "sizes %zu and %zu, want %zu and %zu",
          probe_light_bytes(&h), probe_record_bytes(&h), light, whole);
    size_t header = 8 + 8 + 12 * 4 + 8 + 8 + 6 * 4 + 17 + 256 + 4 * (7 + 9 + 8 + 4) + 3 * PROBE_GROUP_NAME;
    CHECK(file_size(path) == (long)(header + 5 * (whole + 8) + 2 * (light + 8)), "the file has %ld bytes, want %zu",
          file_size(path), header + 5 * (whole + 8) + 2 * (light + 8));
    // a record that does not come after the last one is refused
    ProbeFile pf;
    ProbeResume resume;
    ProbeHeader read;
    ProbeRecord r;
    char err[ERR_LEN];
    if (!CHECK(probe_file_resume(&pf, path, 1000, &read, &resume, err) == 0, "%s", err)) return;
    CHECK(resume.kept == 7 && resume.dropped == 0 && resume.torn_bytes == 0, "resume kept %ld dropped %ld",
          resume.kept, resume.dropped);
    probe_record_alloc(&r, &read, err);
    fill_record(&r, &read, 60, 1);
    CHECK(probe_file_append(&pf, &r, err) == -1 && strstr(err, "step 60 after one of step 60"), "a repeated step: %s",
          err);
    probe_record_free(&r);
    probe_file_close(&pf);
    probe_header_free(&read);
    // version 2, as a run of an earlier chargpt left it: no importance (read as NaN), every
    // record 4 bytes a head shorter
    h.version = 2;
    path = TMP "/round_v2.bin";
    if (write_file(path, &h, 7) == 0) {
        FILE *fp = fopen(path, "rb");
        ProbeReader reader;
        int got = fp && probe_reader_open(&reader, fp, path, err) == 0 && probe_record_alloc(&r, &reader.header, err) == 0
                  && probe_reader_next(&reader, &r, err) == 1;
        CHECK(got && reader.header.version == 2 && isnan(r.importance[0]) && r.last_space[1] == 0.05f &&
                  probe_light_bytes(&reader.header) == light - 4 * heads, "a version 2 file reads back wrong: %s", err);
        if (got) probe_record_free(&r), probe_reader_close(&reader);
        if (fp) fclose(fp);
    }
    probe_header_free(&h);
}

TEST(probe_file_torn_tail_at_every_byte) {
    make_tmp();
    ProbeHeader h;
    if (make_header(&h, 1, 2, 5, 4, 3) != 0) return;
    const char *path = TMP "/torn.bin", *cut = TMP "/torn_cut.bin";
    if (write_file(path, &h, 3) != 0) return;  // records 0 and 10 whole, 20 light
    size_t len;
    char *bytes = test_read_file(path, &len);
    size_t last = probe_light_bytes(&h) + 8, end_of_two = len - last;
    int bad = 0;
    for (size_t n = end_of_two; n < len && !bad; n++) {  // every length that cuts the last record
        FILE *fp = fopen(cut, "wb");
        fwrite(bytes, 1, n, fp);
        fclose(fp);
        uint64_t torn;
        long got = read_back(cut, &h, &torn);
        bad = !CHECK(got == 2 && torn == n - end_of_two, "cut at %zu bytes: %ld records, %llu torn bytes (want 2, %zu)",
                     n, got, (unsigned long long)torn, n - end_of_two);
        // a resumed run cuts the tail and appends after the two whole records
        ProbeFile pf;
        ProbeHeader read;
        ProbeResume resume;
        char err[ERR_LEN];
        if (!bad && CHECK(probe_file_resume(&pf, cut, 15, &read, &resume, err) == 0, "%s", err)) {
            bad = !CHECK(resume.kept == 2 && resume.torn_bytes == n - end_of_two && file_size(cut) == (long)end_of_two,
                         "resume after a cut at %zu: kept %ld, cut %llu, size %ld", n, resume.kept,
                         (unsigned long long)resume.torn_bytes, file_size(cut));
            ProbeRecord r;
            probe_record_alloc(&r, &read, err);
            fill_record(&r, &read, 20, 0);
            CHECK(probe_file_append(&pf, &r, err) == 0, "%s", err);
            probe_record_free(&r);
            probe_file_close(&pf);
            probe_header_free(&read);
            bad |= !CHECK(read_back(cut, &h, &torn) == 3 && torn == 0, "after the resume's record: not 3 whole records");
        }
    }
    free(bytes);
    probe_header_free(&h);
}

TEST(probe_file_resume_cuts_records_after_its_step) {
    make_tmp();
    ProbeHeader h, read;
    if (make_header(&h, 1, 1, 4, 4, 2) != 0) return;
    const char *path = TMP "/resume.bin";
    if (write_file(path, &h, 6) != 0) return;  // steps 0 .. 50
    ProbeFile pf;
    ProbeResume resume;
    char err[ERR_LEN];
    if (!CHECK(probe_file_resume(&pf, path, 25, &read, &resume, err) == 0, "%s", err)) return;
    CHECK(resume.kept == 3 && resume.dropped == 3 && resume.first_dropped == 30 && resume.last_dropped == 50,
          "resume at 25: kept %ld, dropped %ld (%lld to %lld)", resume.kept, resume.dropped,
          (long long)resume.first_dropped, (long long)resume.last_dropped);
    ProbeRecord r;
    probe_record_alloc(&r, &read, err);
    for (long step = 30; step <= 50; step += 10) {  // the resumed run makes those steps again
        fill_record(&r, &read, step, step % 30 != 20);
        CHECK(probe_file_append(&pf, &r, err) == 0, "%s", err);
    }
    probe_record_free(&r);
    probe_file_close(&pf);
    probe_header_free(&read);
    uint64_t torn;
    CHECK(read_back(path, &h, &torn) == 6, "after resuming: not steps 0 to 50 once each");
    CHECK(probe_file_resume(&pf, TMP "/missing.bin", 0, &read, &resume, err) == 1, "a missing file is not 1");
    probe_header_free(&h);
}

// Writes bytes with byte `at` changed to path; returns the reader's verdict on it: -1 when
// the header is refused (err), else the number of records read.
static long damaged(const char *path, const char *bytes, size_t len, size_t at, const ProbeHeader *h,
                    char err[ERR_LEN]) {
    char *copy = malloc(len);
    memcpy(copy, bytes, len);
    copy[at] ^= 0x40;
    FILE *fp = fopen(path, "wb");
    fwrite(copy, 1, len, fp);
    fclose(fp);
    free(copy);
    fp = fopen(path, "rb");
    ProbeReader r;
    long n = -1;
    if (probe_reader_open(&r, fp, path, err) == 0) {
        ProbeRecord rec;
        probe_record_alloc(&rec, &r.header, err);
        n = 0;
        while (probe_reader_next(&r, &rec, err) == 1) n++;
        probe_record_free(&rec);
        probe_reader_close(&r);
    }
    fclose(fp);
    return n;
}

TEST(probe_file_damage_found) {
    make_tmp();
    ProbeHeader h;
    if (make_header(&h, 1, 2, 6, 6, 2) != 0) return;
    const char *path = TMP "/good.bin", *bad = TMP "/bad.bin";
    if (write_file(path, &h, 4) != 0) return;
    size_t len;
    char *bytes = test_read_file(path, &len);
    char err[ERR_LEN];
    CHECK(damaged(bad, bytes, len, 0, &h, err) == -1 && strstr(err, "is not a chargpt probe file"), "magic: %s", err);
    CHECK(damaged(bad, bytes, len, 30, &h, err) == -1 && strstr(err, "fails its CRC-32"), "header byte: %s", err);
    size_t header_end = len - 3 * (probe_record_bytes(&h) + 8) - (probe_light_bytes(&h) + 8);
    // a damaged record ends the records read at the one before it
    CHECK(damaged(bad, bytes, len, header_end + 8 + probe_record_bytes(&h) + 20, &h, err) == 1,
          "a damaged second record: not 1 record read");
    CHECK(damaged(bad, bytes, len, len - 2, &h, err) == 3, "a damaged last CRC: not 3 records read");
    // a header claiming more than the file holds, or sizes past the limits, is refused before
    // anything is allocated for it
    char *copy = malloc(len);
    memcpy(copy, bytes, len);
    copy[8] = (char)0xff, copy[9] = (char)0xff, copy[10] = (char)0xff;
    FILE *fp = fopen(bad, "wb");
    fwrite(copy, 1, len, fp);
    fclose(fp);
    fp = fopen(bad, "rb");
    ProbeReader r;
    CHECK(probe_reader_open(&r, fp, bad, err) == -1 && strstr(err, "more than the file holds"), "length: %s", err);
    fclose(fp);
    free(copy);
    free(bytes);
    probe_header_free(&h);
}

// A damaged record is never cut as a torn tail (issue 29, M3): the resume moves the file
// aside, byte for byte, and starts probe.bin again from its header and the whole records
// before the damage; a torn tail is still cut. Before, the damaged record and every record
// after it were cut as "a record that a stopped run left unfinished".
TEST(probe_file_resume_sets_a_damaged_file_aside) {
    make_tmp();
    ProbeHeader h, read;
    if (make_header(&h, 1, 2, 6, 6, 2) != 0) return;
    const char *path = TMP "/aside.bin", *aside = TMP "/aside.bin.damaged";
    remove(aside);
    if (write_file(path, &h, 5) != 0) return;  // steps 0 to 40
    size_t len;
    char *bytes = test_read_file(path, &len);
    size_t whole = probe_record_bytes(&h) + 8, light = probe_light_bytes(&h) + 8;
    size_t header_end = len - 4 * whole - light, third = header_end + 2 * whole;  // whole, whole, light, whole, whole
    bytes[third + 30] ^= 0x40;
    test_write_file(path, bytes, len);
    ProbeFile pf;
    ProbeResume resume;
    char err[ERR_LEN];
    if (!CHECK(probe_file_resume(&pf, path, 100, &read, &resume, err) == 0, "%s", err)) return;
    probe_file_close(&pf);
    probe_header_free(&read);
    CHECK(resume.damage && strstr(resume.damage, "CRC-32") && resume.damaged_record == 3 &&
              resume.damaged_at == third && resume.kept == 2 && resume.torn_bytes == 0 && !strcmp(resume.aside, aside),
          "damage %s in record %ld at %llu, kept %ld, cut %llu, aside %s", resume.damage ? resume.damage : "none",
          resume.damaged_record, (unsigned long long)resume.damaged_at, resume.kept,
          (unsigned long long)resume.torn_bytes, resume.aside);
    size_t aside_len, kept_len;
    char *moved = test_read_file(aside, &aside_len), *kept = test_read_file(path, &kept_len);
    CHECK(moved && aside_len == len && !memcmp(moved, bytes, len), "the file set aside is not the damaged one");
    CHECK(kept && kept_len == third && !memcmp(kept, bytes, third), "probe.bin is not the header and 2 records");
    free(moved);
    free(kept);
    // a whole last record that fails its CRC is damage too, not a torn tail
    bytes[third + 30] ^= 0x40;
    bytes[len - 2] ^= 0x40;
    test_write_file(path, bytes, len);
    if (CHECK(probe_file_resume(&pf, path, 100, &read, &resume, err) == 0, "%s", err)) {
        probe_file_close(&pf);
        probe_header_free(&read);
        CHECK(resume.damaged_record == 5 && resume.kept == 4 && !strcmp(resume.aside, TMP "/aside.bin.damaged.2"),
              "a damaged last record: record %ld, kept %ld, aside %s", resume.damaged_record, resume.kept, resume.aside);
    }
    remove(TMP "/aside.bin.damaged.2");
    free(bytes);
    probe_header_free(&h);
}

// The page's JSON data, parsed.
static int page_data(const char *path, JsonDoc *doc, char **text) {
    size_t len;
    *text = test_read_file(path, &len);
    if (!CHECK(*text != NULL, "%s was not written", path)) return -1;
    const char *open = "<script type=\"application/json\" id=\"timeline-data\">";
    char *start = strstr(*text, open), *end = start ? strstr(start, "</script>") : NULL;
    if (!CHECK(end != NULL, "%s holds no data", path)) return -1;
    start += strlen(open);
    char err[ERR_LEN];
    return CHECK(json_parse(start, (size_t)(end - start), 1 << 22, doc, err) == 0, "%s: %s", path, err) ? 0 : -1;
}

TEST(probe_file_timeline_page) {
    make_tmp();
    ProbeHeader h;
    if (make_header(&h, 2, 2, 6, 8, 4) != 0) return;
    const char *path = TMP "/page.bin", *page = TMP "/page.html";
    if (write_file(path, &h, 7) != 0) return;  // 5 whole records, 2 light
    // a torn tail is left out and said
    FILE *fp = fopen(path, "ab");
    fwrite("\x10\x00\x00", 1, 3, fp);
    fclose(fp);
    LossPoint points[3] = {{10, 4.0, NAN, 1e-3, 0.5, 0, NAN}, {20, 3.5, 3.6, 1e-3, 0.4, 2, NAN},
                           {30, 3.0, NAN, 1e-3, NAN, NAN, NAN}};
    TimelineSummary s;
    char err[ERR_LEN], *text;
    if (!CHECK(timeline_write(page, path, points, 3, "run <one>", TIMELINE_MAX_RECORD_BYTES, 1, &s, err) == 0, "%s", err))
        return;
    CHECK(s.records == 7 && s.whole == 5 && s.kept == 7 && s.kept_whole == 5 && s.torn_bytes == 3,
          "summary: %ld records, %ld whole, kept %ld and %ld whole, %llu torn", s.records, s.whole, s.kept,
          s.kept_whole, (unsigned long long)s.torn_bytes);
    JsonDoc doc;
    if (page_data(page, &doc, &text) != 0) return;
    const JsonNode *root = doc.nodes, *records = json_object_get(&doc, root, "records");
    const JsonNode *losses = json_object_get(&doc, root, "losses"), *vocab = json_object_get(&doc, root, "vocab");
    const JsonNode *title = json_object_get(&doc, root, "title");
    CHECK(records && records->count == 7, "the page holds %u records", records ? records->count : 0);
    CHECK(losses && losses->count == 3, "the page holds %u loss rows", losses ? losses->count : 0);
    CHECK(vocab && vocab->count == 6 && !strcmp(json_string(&doc, json_first(vocab) + 3), "\xF0\x9F\x8C\x9E"),
          "the vocabulary in the page");
    CHECK(title && !strcmp(json_string(&doc, title), "run <one>"), "the title in the data");
    CHECK(strstr(text, "<title>run &lt;one&gt;: 5 steps, 2 layers \xC3\x97 2 heads, 8 characters</title>") != NULL,
          "the page's title");
    CHECK(!strstr(strstr(text, "timeline-data"), "<one>") && !strstr(strstr(text, "timeline-data"), "<passage>"),
          "a < left unescaped in the data could end its <script>");
    CHECK(strstr(text, "@DATA@") == NULL && strstr(text, "@TITLE@") == NULL, "a mark left in the page");
    // each record is its payload, whole or light, as base64
    const JsonNode *first = json_first(records);
    size_t b64 = strlen(json_string(&doc, first));
    CHECK(b64 == 4 * ((probe_record_bytes(&h) + 2) / 3), "a whole record of %zu base64 characters, want %zu", b64,
          4 * ((probe_record_bytes(&h) + 2) / 3));
    json_free(&doc);
    free(text);
    probe_header_free(&h);
}

// Writes the page of a 30-record file (20 whole, 10 light) of header h within budget and
// checks what it kept: the counts wanted, the records' bytes within the budget, the first and
// last records among them.
static void check_thinning(ProbeHeader *h, const char *name, double budget_in_lights, double extra_wholes,
                           long want_kept, long want_whole) {
    char path[256], page[256];
    snprintf(path, sizeof(path), TMP "/%s.bin", name);
    snprintf(page, sizeof(page), TMP "/%s.html", name);
    if (write_file(path, h, 30) != 0) return;
    double light = 4.0 * ((probe_light_bytes(h) + 2) / 3) + 3, whole = 4.0 * ((probe_record_bytes(h) + 2) / 3) + 3;
    double budget = budget_in_lights * light + extra_wholes * (whole - light);
    TimelineSummary s;
    char err[ERR_LEN], *text;
    if (!CHECK(timeline_write(page, path, NULL, 0, "thin", budget, 1, &s, err) == 0, "%s", err)) return;
    CHECK(s.kept == want_kept && s.kept_whole == want_whole, "%s, budget %.0f: kept %ld records (%ld whole), want %ld "
          "(%ld)", name, budget, s.kept, s.kept_whole, want_kept, want_whole);
    JsonDoc doc;
    if (page_data(page, &doc, &text) != 0) return;
    const JsonNode *records = json_object_get(&doc, doc.nodes, "records");
    size_t total = 0, wholes = 0;
    const JsonNode *r = json_first(records);
    for (uint32_t i = 0; i < records->count; i++, r = json_next(r)) {
        size_t n = strlen(json_string(&doc, r)) + 3;
        total += n;
        wholes += n == (size_t)whole;
    }
    CHECK(records->count == (uint32_t)s.kept && wholes == (size_t)s.kept_whole && total <= budget,
          "%s: %u records, %zu whole, %zu bytes in a budget of %.0f", name, records->count, wholes, total, budget);
    // the first record (step 0) and the last (step 290) are kept
    const JsonNode *last = json_first(records);
    for (uint32_t i = 1; i < records->count; i++) last = json_next(last);
    CHECK(!strncmp(json_string(&doc, json_first(records)), "AwAAAAAAAAAAAAAA", 16) &&
              !strncmp(json_string(&doc, last), "AQAAACIBAAAAAAAA", 16),
          "%s: the first and last records kept are not steps 0 and 290", name);
    json_free(&doc);
    free(text);
}

TEST(probe_file_timeline_page_thinned_to_its_budget) {
    make_tmp();
    ProbeHeader h;
    if (make_header(&h, 2, 2, 6, 16, 4) != 0) return;
    check_thinning(&h, "all", 30, 20, 30, 20);      // every record as it is: it all fits
    check_thinning(&h, "wholes", 30, 5.5, 30, 5);   // every record light, 5 whole
    probe_header_free(&h);
    // long samples: the light parts alone take more than half the budget, so 10 records are
    // kept, evenly spaced (0, 3, 6, 10, 13, 16, 19, 23, 26, 29), and of them the 7 whole ones
    if (make_header(&h, 2, 2, 6, 16, 1000) != 0) return;
    h.vector_len = h.vector_repeat_len = 0;  // whole records no more than 10/7 of a light one
    double light = 4.0 * ((probe_light_bytes(&h) + 2) / 3) + 3;
    check_thinning(&h, "records", 20 + 2 / light, 0, 10, 7);
    probe_header_free(&h);
}

// Makes a record's vectors pseudo-random and the attention over the positions whose vectors it
// keeps their softmax(q k^T / sqrt(hs)), quantized, so that the page's attention math agrees with
// its weights as a real probe's does.
static void consistent_attention(ProbeRecord *r, const ProbeHeader *h, unsigned seed) {
    const int H = h->n_head, hs = h->head_size, A = H * hs;
    const struct { int n, m; float *vectors; uint8_t *att; } texts[2] = {
        {h->probe_len, h->vector_len, r->vectors_passage, r->att_passage},
        {h->repeat_len, h->vector_repeat_len, r->vectors_repeated, r->att_repeated}};
    for (int x = 0; x < 2; x++) {
        const int n = texts[x].n, m = texts[x].m;
        float *vec = texts[x].vectors;
        fill_uniform(vec, (size_t)h->n_layer * m * 3 * A, seed + (unsigned)x);
        for (size_t k = 0; k < (size_t)h->n_layer * m * 3 * A; k++) vec[k] *= 3.0f;
        for (int l = 0; l < h->n_layer; l++)
            for (int k = 0; k < H; k++) {
                uint8_t *tri = texts[x].att + ((size_t)l * H + k) * n * (n + 1) / 2;
                for (int i = 0; i < m; i++) {
                    double score[64], max = -INFINITY, sum = 0.0;
                    const float *q = vec + ((size_t)l * m + i) * 3 * A + k * hs;
                    for (int j = 0; j <= i; j++) {
                        const float *key = vec + ((size_t)l * m + j) * 3 * A + A + k * hs;
                        double dot = 0.0;
                        for (int d = 0; d < hs; d++) dot += (double)q[d] * key[d];
                        score[j] = dot / sqrt(hs);
                        max = fmax(max, score[j]);
                    }
                    for (int j = 0; j <= i; j++) sum += score[j] = exp(score[j] - max);
                    for (int j = 0; j <= i; j++) tri[(size_t)i * (i + 1) / 2 + j] = probe_quantize((float)(score[j] / sum));
                }
            }
    }
}

// Writes tests/tmp/timeline_sample.html, a page of made-up records (4 layers x 4 heads, a
// block of 64, nine steps of which three are samples only, the attention of the positions
// whose vectors they keep consistent with them), for scripts/check_timeline.sh.
TEST(probe_file_timeline_sample_page) {
    make_tmp();
    ProbeHeader h;
    if (make_header(&h, 4, 4, 40, 64, 120) != 0) return;
    const char *path = TMP "/sample.bin";
    ProbeFile pf;
    ProbeRecord r;
    char err[ERR_LEN];
    if (!CHECK(probe_file_create(&pf, path, &h, err) == 0 && probe_record_alloc(&r, &h, err) == 0, "%s", err)) return;
    for (int i = 0; i < 9; i++) {
        fill_record(&r, &h, 10L * i, i % 3 != 2);
        consistent_attention(&r, &h, 100u + (unsigned)i);
        CHECK(probe_file_append(&pf, &r, err) == 0, "%s", err);
    }
    probe_record_free(&r);
    probe_file_close(&pf);
    LossPoint points[40];
    for (int i = 0; i < 40; i++)
        points[i] = (LossPoint){2 * (i + 1), 4.2 - 2.0 * i / 40, (i + 1) % 5 ? NAN : 4.3 - 2.0 * i / 40, 1e-3,
                                2.0 - i / 30.0, i < 10 ? 2 : 0, NAN};
    TimelineSummary s;
    CHECK(timeline_write("tests/tmp/timeline_sample.html", path, points, 40, "chargpt: a made-up run",
                         TIMELINE_MAX_RECORD_BYTES, 1, &s, err) == 0, "%s", err);
    CHECK(s.kept_whole == 6 && s.kept == 9, "the sample page holds %ld steps of %ld records", s.kept_whole, s.kept);
    probe_header_free(&h);
}

// A probe file of the first layout (tests/fixtures/probe_v1.bin, written by ./train before
// version 2: 1 layer x 2 heads, a block of 8, records at steps 0, 2 and 4) still reads: its
// records with the scores version 1 has, the others NaN and no vectors; its timeline page is
// written; and a resumed run appends to it in its own layout.
TEST(probe_file_version_1_still_reads) {
    make_tmp();
    const char *copy = TMP "/v1.bin";
    size_t len;
    char *bytes = test_read_file("tests/fixtures/probe_v1.bin", &len);
    if (!CHECK(bytes && len == 4477 && !memcmp(bytes, "CGPTPRB1", 8), "the fixture is not the version 1 file")) {
        free(bytes);
        return;
    }
    test_write_file(copy, bytes, len);
    free(bytes);
    FILE *fp = fopen(copy, "rb");
    ProbeReader r;
    ProbeRecord rec;
    char err[ERR_LEN];
    if (!CHECK(fp && probe_reader_open(&r, fp, copy, err) == 0, "%s", err)) return;
    const ProbeHeader *h = &r.header;
    CHECK(h->version == 1 && h->n_layer == 1 && h->n_head == 2 && h->block_size == 8 && h->probe_len == 8 &&
              h->head_size == 0 && h->vector_len == 0 && h->vector_repeat_len == 0,
          "header: version %d, %d x %d, block %d, t %d, hs %d, vectors %d %d", h->version, h->n_layer, h->n_head,
          h->block_size, h->probe_len, h->head_size, h->vector_len, h->vector_repeat_len);
    probe_record_alloc(&rec, h, err);
    long n = 0;
    int old_scores = 1, new_scores = 1;
    while (probe_reader_next(&r, &rec, err) == 1) {
        CHECK(rec.step == 2 * n && (rec.flags & PROBE_HAS_PROBE), "record %ld: step %lld, flags %u", n,
              (long long)rec.step, rec.flags);
        for (int i = 0; i < 2; i++) {
            old_scores &= rec.previous_token[i] >= 0 && rec.previous_token[i] <= 1 && rec.induction[i] >= 0 &&
                          rec.entropy[i] > 0;
            new_scores &= isnan(rec.first_character[i]) && isnan(rec.same_character[i]) && isnan(rec.word_start[i]);
        }
        n++;
    }
    CHECK(n == 3 && r.torn_bytes == 0 && !r.damage, "%ld records, %llu torn bytes", n, (unsigned long long)r.torn_bytes);
    CHECK(old_scores && new_scores, "the version 1 scores read back wrong, or the later ones are not NaN");
    probe_record_free(&rec);
    probe_reader_close(&r);
    fclose(fp);
    TimelineSummary s;
    CHECK(timeline_write(TMP "/v1.html", copy, NULL, 0, "version 1", TIMELINE_MAX_RECORD_BYTES, 1, &s, err) == 0 &&
              s.kept_whole == 3, "the page of a version 1 file: %s", err);
    // a resumed run goes on in version 1: its record as long as the others
    ProbeFile pf;
    ProbeHeader read;
    ProbeResume resume;
    if (!CHECK(probe_file_resume(&pf, copy, 4, &read, &resume, err) == 0 && read.version == 1, "%s", err)) return;
    probe_record_alloc(&rec, &read, err);
    fill_record(&rec, &read, 6, 1);
    CHECK(probe_file_append(&pf, &rec, err) == 0, "%s", err);
    probe_file_close(&pf);
    probe_record_free(&rec);
    CHECK(file_size(copy) == (long)(len + probe_record_bytes(&read) + 8), "%s: %ld bytes after a version 1 record",
          copy, file_size(copy));
    probe_header_free(&read);
    fp = fopen(copy, "rb");
    if (!CHECK(fp && probe_reader_open(&r, fp, copy, err) == 0, "%s", err)) return;
    probe_record_alloc(&rec, &r.header, err);
    n = 0;
    while (probe_reader_next(&r, &rec, err) == 1) n++;
    CHECK(n == 4 && r.header.version == 1 && rec.step == 6, "after the resume: %ld records, version %d", n,
          r.header.version);
    probe_record_free(&rec);
    probe_reader_close(&r);
    fclose(fp);
}

// The page's labels (head_scores.h's head_label on each record's scores, the header's reach and
// each pattern's chance on the probe's texts, analysis/probe_baselines.h)
// and its clipping figures (every row's clipped steps, by twentieths of the run, and the mean
// train loss of its last two quarters).
TEST(probe_file_timeline_labels_and_clipping) {
    make_tmp();
    ProbeHeader h;
    if (make_header(&h, 1, 3, 6, 8, 2) != 0) return;  // reach 1, 0.875, 0.75, 0.625, 0.5, 0.375
    const char *path = TMP "/labels.bin", *page = TMP "/labels.html";
    ProbeFile pf;
    ProbeRecord r;
    char err[ERR_LEN], *text;
    if (!CHECK(probe_file_create(&pf, path, &h, err) == 0 && probe_record_alloc(&r, &h, err) == 0, "%s", err)) return;
    fill_record(&r, &h, 0, 1);
    // head 1 has no score: no label
    const float scores[3][6] = {{0.5f, 0.45f, 0.1f, 0.1f, 0.1f, 0.1f}, {NAN, NAN, NAN, NAN, NAN, NAN},
                                {0.2f, 0.1f, 0.4f, 0.2f, 0.3f, 0.2f}};
    for (int i = 0; i < 3; i++) {
        r.previous_token[i] = scores[i][0], r.induction[i] = scores[i][1], r.first_character[i] = scores[i][2];
        r.same_character[i] = scores[i][3], r.word_start[i] = scores[i][4], r.last_space[i] = scores[i][5];
    }
    CHECK(probe_file_append(&pf, &r, err) == 0, "%s", err);
    probe_record_free(&r);
    probe_file_close(&pf);
    LossPoint points[40];  // steps 10 to 400: every step clipped up to step 100, none after
    for (int i = 0; i < 40; i++)
        points[i] = (LossPoint){10 * (i + 1), 3.0 - 0.01 * i, NAN, 1e-3, 1.5, i < 10 ? 10 : 0, NAN};
    TimelineSummary s;
    if (!CHECK(timeline_write(page, path, points, 40, "labels", TIMELINE_MAX_RECORD_BYTES, 1, &s, err) == 0, "%s", err))
        return;
    JsonDoc doc;
    if (page_data(page, &doc, &text) != 0) return;
    const JsonNode *labels = json_object_get(&doc, doc.nodes, "labels");
    const JsonNode *first = labels && labels->count == 1 ? json_first(json_first(labels)) : NULL;
    if (CHECK(first && first->count == 3, "the page holds no labels of 3 heads")) {
        const JsonNode *label = json_first(first), *strength = json_first(json_next(first));
        float reach[HEAD_PATTERNS], chance[HEAD_PATTERNS];
        double want[3], want_strength[3];
        CHECK(probe_baselines(&h, reach, chance, err) == 0, "%s", err);
        for (int i = 0; i < 3; i++) want[i] = head_label(scores[i], h.reach, chance, &want_strength[i]);
        CHECK(want[1] == -1 && want[0] >= 0 && want[2] >= 0, "the test's heads: labels %g, %g, %g", want[0], want[1],
              want[2]);
        for (int i = 0; i < 3; i++, label = json_next(label), strength = json_next(strength))
            CHECK(json_number(label) == want[i] && fabs(json_number(strength) - want_strength[i]) < 1e-4,
                  "head %d: label %g (strength %g), want %g (%g)", i, json_number(label), json_number(strength), want[i],
                  want_strength[i]);
    }
    const JsonNode *clip = json_object_get(&doc, doc.nodes, "clipping");
    const JsonNode *steps = clip ? json_object_get(&doc, clip, "steps") : NULL;
    const JsonNode *clipped = clip ? json_object_get(&doc, clip, "clipped") : NULL;
    const JsonNode *bins = clip ? json_object_get(&doc, clip, "bins") : NULL;
    const JsonNode *third = clip ? json_object_get(&doc, clip, "third_loss") : NULL;
    const JsonNode *fourth = clip ? json_object_get(&doc, clip, "fourth_loss") : NULL;
    if (CHECK(steps && clipped && bins && bins->count == 20 && third && fourth, "the page's clipping figures")) {
        CHECK(json_number(steps) == 400 && json_number(clipped) == 100, "%g of %g steps clipped, want 100 of 400",
              json_number(clipped), json_number(steps));
        const JsonNode *b = json_first(bins);
        for (int k = 0; k < 20; k++, b = json_next(b))
            CHECK(json_number(b) == (k < 5 ? 1.0 : 0.0), "twentieth %d: %g of its steps clipped", k, json_number(b));
        // rows 20..29 (steps 210-300) and 30..39 (steps 310-400): losses 2.80-2.71 and 2.70-2.61
        CHECK(fabs(json_number(third) - 2.755) < 1e-9 && fabs(json_number(fourth) - 2.655) < 1e-9,
              "quarter losses %g and %g, want 2.755 and 2.655", json_number(third), json_number(fourth));
    }
    json_free(&doc);
    free(text);
    probe_header_free(&h);
}
