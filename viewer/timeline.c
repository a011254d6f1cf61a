// The timeline page: the fixed page (viewer/timeline_page.html, made into a C string at build
// time) with the run's data in the place of its @DATA@ mark, its title in place of @TITLE@ and
// the attention math (viewer/attention_math.html) in place of @MATH@.
#include "timeline.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../analysis/probe_baselines.h"
#include "../common/input_file.h"
#include "../common/utf8.h"
#include "../format/atomic_file.h"
#include "../format/probe_file.h"
#include "attention_formats.h"
#include "markup.h"

static const char timeline_page[] =
#include "timeline_page.inc"
    ;
static const char attention_math[] =
#include "attention_math.inc"
    ;

// ----------------------------------------------------------------------------
// JSON and base64

static void write_token_ids(FILE *fp, const char *name, const int32_t *tokens, int n) {
    fprintf(fp, ",\"%s\":[", name);
    for (int i = 0; i < n; i++) fprintf(fp, i ? ",%d" : "%d", (int)tokens[i]);
    fputc(']', fp);
}

// The bytes of n bytes as a base64 string in the page, with its quotes and comma.
static double base64_cost(size_t n) { return 4.0 * ((n + 2) / 3) + 3.0; }

// ----------------------------------------------------------------------------
// what the page keeps

// 1 when item i of n is one of k kept evenly spaced (the first and the last among them):
// items round(j (n - 1) / (k - 1)) for j = 0 .. k - 1; all of them when k >= n, the last
// alone when k == 1, none when k < 1.
static int evenly_kept(long i, long n, long k) {
    if (k >= n) return 1;
    if (k < 1) return 0;
    if (k == 1) return i == n - 1;
    long j = i * (k - 1) / (n - 1);
    for (long c = j; c <= j + 1 && c < k; c++)
        if ((c * (n - 1) * 2 + (k - 1)) / (2 * (k - 1)) == i) return 1;
    return 0;
}

// The records' place in the page: for each record, 0 left out, 1 its light part, 2 whole.
typedef struct {
    uint8_t *keep;  // (records)
    long records, whole, kept, kept_whole;
} Selection;

// Chooses what the page keeps of records whose flags are whole[i] (1: a probe record).
static void select_records(Selection *s, const uint8_t *whole, const ProbeHeader *h, double budget) {
    double light = base64_cost(probe_light_bytes(h)), full = base64_cost(probe_record_bytes(h)), all = 0.0;
    for (long i = 0; i < s->records; i++) all += whole[i] ? full : light;
    if (all <= budget) {
        for (long i = 0; i < s->records; i++) s->keep[i] = whole[i] ? 2 : 1;
        s->kept = s->records, s->kept_whole = s->whole;
        return;
    }
    long light_kept = s->records * light <= budget / 2 ? s->records : (long)(budget / 2 / light);
    long candidates = 0;
    for (long i = 0; i < s->records; i++) {
        s->keep[i] = (uint8_t)evenly_kept(i, s->records, light_kept);
        candidates += s->keep[i] && whole[i];
    }
    long whole_kept = (long)((budget - (double)light_kept * light) / (full - light)), c = 0;
    s->kept = light_kept, s->kept_whole = 0;
    for (long i = 0; i < s->records; i++)
        if (s->keep[i] && whole[i] && evenly_kept(c++, candidates, whole_kept)) s->keep[i] = 2, s->kept_whole++;
}

// Pass one over the probe file: which records are probes, and the selection. Returns 0, or
// -1 with err.
static int plan_page(const char *probe_path, double budget, Selection *s, TimelineSummary *summary,
                     char err[ERR_LEN]) {
    memset(s, 0, sizeof(*s));
    FILE *fp = input_file_fopen(probe_path, 0, NULL, err);
    if (!fp) return -1;
    ProbeReader r;
    ProbeRecord rec;
    int rc = probe_reader_open(&r, fp, probe_path, err);
    if (rc == 0 && probe_record_alloc(&rec, &r.header, err) != 0) {
        probe_reader_close(&r);
        rc = -1;
    }
    uint8_t *whole = NULL;
    long capacity = 0;
    int got = 0;
    while (rc == 0 && (got = probe_reader_next(&r, &rec, err)) == 1) {
        if (s->records == capacity) {
            capacity = capacity ? 2 * capacity : 256;
            uint8_t *bigger = realloc(whole, (size_t)capacity);
            if (!bigger) {
                snprintf(err, ERR_LEN, "out of memory for the timeline of %ld records", s->records);
                rc = -1;
                break;
            }
            whole = bigger;
        }
        whole[s->records++] = (rec.flags & PROBE_HAS_PROBE) != 0;
        s->whole += (rec.flags & PROBE_HAS_PROBE) != 0;
    }
    if (got < 0) rc = -1;
    if (rc == 0) {
        summary->torn_bytes = r.torn_bytes;
        summary->damage = r.damage;
        summary->damaged_at = r.offset;
        s->keep = malloc((size_t)s->records + 1);
        if (s->keep) select_records(s, whole, &r.header, budget);
        else rc = -1, snprintf(err, ERR_LEN, "out of memory for the timeline of %ld records", s->records);
    }
    if (r.payload) {
        probe_record_free(&rec);
        probe_reader_close(&r);
    }
    free(whole);
    fclose(fp);
    return rc;
}

int timeline_memory(const char *probe_path, double *bytes, char err[ERR_LEN]) {
    FILE *fp = input_file_fopen(probe_path, 0, NULL, err);
    if (!fp) return -1;
    PlatformFileInfo info;
    ProbeReader r;
    int rc = probe_reader_open(&r, fp, probe_path, err);
    if (rc == 0 && platform_fd_info(fileno(fp), &info) != 0) {
        snprintf(err, ERR_LEN, "cannot read %s: %s", probe_path, strerror(errno));
        rc = -1;
    }
    if (rc == 0) {
        double header = (double)r.offset, records = ((double)info.size - header) / (probe_light_bytes(&r.header) + 8);
        *bytes = 4.0 * header + 2.0 * ((double)probe_record_bytes(&r.header) + 64) + 2.0 * records;
    }
    if (r.payload) probe_reader_close(&r);
    fclose(fp);
    return rc;
}

// ----------------------------------------------------------------------------
// the data

static void write_header(FILE *fp, const ProbeHeader *h, const char *title) {
    fputs("{\"title\":", fp);
    viewer_write_json_text(fp, title);
    fprintf(fp, ",\"n_layer\":%d,\"n_head\":%d,\"vocab_size\":%d,\"block_size\":%d,\"groups\":%d,\"probe_len\":%d,"
            "\"repeat_len\":%d,\"prompt_len\":%d,\"sample_chars\":%d,\"probe_top\":%d,\"lens_top\":%d,"
            "\"light_bytes\":%zu,\"record_bytes\":%zu,\"seed\":\"%llu\",\"temperature\":", h->n_layer, h->n_head,
            h->vocab_size, h->block_size, h->groups, h->probe_len, h->repeat_len, h->prompt_len, h->sample_chars,
            PROBE_TOP, PROBE_LENS_TOP, probe_light_bytes(h), probe_record_bytes(h),
            (unsigned long long)h->sample_seed);
    viewer_write_number(fp, h->temperature);
    fprintf(fp, ",\"version\":%d,\"head_size\":%d,\"vector_len\":%d,\"vector_repeat_len\":%d,\"label_clear\":%g,"
            "\"patterns\":[", h->version, h->head_size, h->vector_len, h->vector_repeat_len,
            HEAD_LABEL_CLEAR);
    for (int p = 0; p < HEAD_PATTERNS; p++) fprintf(fp, p ? ",\"%s\"" : "\"%s\"", head_pattern_names[p]);
    fputs("],\"reach\":[", fp);
    for (int p = 0; p < PROBE_PATTERNS; p++) {
        if (p) fputc(',', fp);
        viewer_write_number(fp, h->reach[p]);
    }
    fputc(']', fp);
    fputs(",\"grad_clip\":", fp);
    viewer_write_number(fp, h->grad_clip);
    fputs(",\"source\":", fp);
    viewer_write_json_text(fp, h->source);
    fputs(",\"run_id\":", fp);
    viewer_write_json_text(fp, h->run_id);
    fputs(",\"vocab\":[", fp);
    for (int v = 0; v < h->vocab_size; v++) {
        char text[JSON_CHAR_MAX + 1];
        int n = viewer_append_json_char(text, h->vocab[v], 1);
        if (v) fputc(',', fp);
        fwrite(text, 1, (size_t)n, fp);
    }
    fputc(']', fp);
    write_token_ids(fp, "passage", h->passage, h->probe_len + 1);
    write_token_ids(fp, "repeated", h->repeated, h->repeat_len);
    write_token_ids(fp, "prompt", h->prompt, h->prompt_len);
    fputs(",\"group_names\":[", fp);
    for (int g = 0; g < h->groups; g++) {
        if (g) fputc(',', fp);
        viewer_write_json_text(fp, h->group_names[g]);
    }
    fputc(']', fp);
}

// How often the gradient was clipped, from every row of the loss history that says (its
// clipped count of the steps since the row before: the first row's as many as the second's,
// or all of its steps).
#define CLIP_BINS 20
typedef struct {
    double steps, clipped;           // over the whole history
    double bin_steps[CLIP_BINS], bin_clipped[CLIP_BINS];  // over twentieths of its steps
    double first_step, last_step;    // the history's span: from before its first row to its last
    double third_loss, fourth_loss;  // the mean train loss over its third and last quarters
} Clipping;

// The steps row i of points reports on.
static double steps_of(const LossPoint *points, size_t n, size_t i) {
    if (i > 0) return (double)(points[i].step - points[i - 1].step);
    return n > 1 && points[1].step - points[0].step < points[0].step ? (double)(points[1].step - points[0].step)
                                                                    : (double)points[0].step;
}

static void count_clipping(const LossPoint *points, size_t n, Clipping *c) {
    memset(c, 0, sizeof(*c));
    if (n == 0) return;
    c->first_step = (double)points[0].step - steps_of(points, n, 0), c->last_step = (double)points[n - 1].step;
    double span = c->last_step - c->first_step, loss[2] = {0, 0}, rows[2] = {0, 0};
    for (size_t i = 0; i < n && span > 0; i++) {
        double steps = steps_of(points, n, i), at = ((double)points[i].step - c->first_step) / span;
        int quarter = at > 0.75 ? 1 : at > 0.5 ? 0 : -1;
        if (quarter >= 0 && isfinite(points[i].train_loss)) loss[quarter] += points[i].train_loss, rows[quarter]++;
        if (!isfinite(points[i].clipped) || steps <= 0) continue;
        double clipped = fmin(points[i].clipped, steps);
        int bin = (int)fmin(CLIP_BINS - 1, fmax(0, ceil(at * CLIP_BINS) - 1));
        c->steps += steps, c->clipped += clipped;
        c->bin_steps[bin] += steps, c->bin_clipped[bin] += clipped;
    }
    c->third_loss = rows[0] ? loss[0] / rows[0] : NAN;
    c->fourth_loss = rows[1] ? loss[1] / rows[1] : NAN;
}

// "clipping": {"steps", "clipped", "first_step", "last_step", "bins": [CLIP_BINS shares, null
// where no step says], "third_loss", "fourth_loss"}
static void write_clipping(FILE *fp, const LossPoint *points, size_t n) {
    Clipping c;
    count_clipping(points, n, &c);
    fprintf(fp, ",\"clipping\":{\"steps\":%.0f,\"clipped\":%.0f,\"first_step\":%.0f,\"last_step\":%.0f,\"bins\":[",
            c.steps, c.clipped, c.first_step, c.last_step);
    for (int b = 0; b < CLIP_BINS; b++) {
        if (b) fputc(',', fp);
        viewer_write_number(fp, c.bin_steps[b] > 0 ? c.bin_clipped[b] / c.bin_steps[b] : NAN);
    }
    fputs("],\"third_loss\":", fp);
    viewer_write_number(fp, c.third_loss);
    fputs(",\"fourth_loss\":", fp);
    viewer_write_number(fp, c.fourth_loss);
    fputc('}', fp);
}

// "losses": [[step, train, val, lr, grad_norm, clipped], ...]: every row with a validation
// loss and at most TIMELINE_MAX_LOSS_POINTS others, evenly spaced.
static void write_losses(FILE *fp, const LossPoint *points, size_t n) {
    long others = 0, seen = 0;
    for (size_t i = 0; i < n; i++) others += !isfinite(points[i].val_loss);
    fputs(",\"losses\":[", fp);
    int first = 1;
    for (size_t i = 0; i < n; i++) {
        const LossPoint *p = &points[i];
        if (!isfinite(p->val_loss) && !evenly_kept(seen++, others, TIMELINE_MAX_LOSS_POINTS)) continue;
        fprintf(fp, "%s\n[%ld,", first ? "" : ",", p->step);
        first = 0;
        const double values[5] = {p->train_loss, p->val_loss, p->lr, p->grad_norm, p->clipped};
        for (int k = 0; k < 5; k++) {
            if (k) fputc(',', fp);
            viewer_write_number(fp, values[k]);
        }
        fputc(']', fp);
    }
    fputc(']', fp);
}

// Writes what the page holds of a record the selection keeps (keep: 1 its light part, 2 whole),
// with what the writer keeps across records in context. Returns 0, or -1 with err.
typedef int (*RecordWriter)(FILE *fp, const ProbeReader *r, const ProbeRecord *rec, uint8_t keep, void *context,
                            char err[ERR_LEN]);

// A pass over the probe file: "key": [...] with what write writes of each record kept, ",\n" apart.
static int write_kept(FILE *fp, const char *key, const char *probe_path, const Selection *s, RecordWriter write,
                      void *context, char err[ERR_LEN]) {
    FILE *in = input_file_fopen(probe_path, 0, NULL, err);
    if (!in) return -1;
    ProbeReader r;
    ProbeRecord rec;
    int rc = probe_reader_open(&r, in, probe_path, err);
    if (rc == 0 && probe_record_alloc(&rec, &r.header, err) != 0) {
        probe_reader_close(&r);
        rc = -1;
    }
    fprintf(fp, ",\"%s\":[", key);
    long i = 0, written = 0;
    int got = 0;
    while (rc == 0 && i < s->records && (got = probe_reader_next(&r, &rec, err)) == 1) {
        uint8_t keep = s->keep[i++];
        if (!keep) continue;
        fputs(written++ ? ",\n" : "\n", fp);
        rc = write(fp, &r, &rec, keep, context, err);
    }
    if (got < 0) rc = -1;
    fputc(']', fp);
    if (r.payload) {
        probe_record_free(&rec);
        probe_reader_close(&r);
    }
    fclose(in);
    return rc;
}

// The payload as the probe file holds it, its light part or whole, in base64.
static int write_payload(FILE *fp, const ProbeReader *r, const ProbeRecord *rec, uint8_t keep, void *context,
                         char err[ERR_LEN]) {
    viewer_write_base64(fp, r->payload, keep == 2 ? r->payload_len : probe_light_bytes(&r->header));
    return 0;
}

// The chance of each pattern on the probe's texts (analysis/probe_baselines.h), found at the
// first record: what the labels subtract.
typedef struct {
    int found;
    float chance[HEAD_PATTERNS];
} Chances;

// Each head's label (analysis/head_scores.h: its strongest pattern, -1 for none) and its
// strength: [[labels (L H)], [strengths (L H), 4 decimals]].
static int write_labels(FILE *fp, const ProbeReader *r, const ProbeRecord *rec, uint8_t keep, void *context,
                        char err[ERR_LEN]) {
    Chances *c = context;
    float reach[HEAD_PATTERNS];  // the header's (0 in version 1: no labels), not found again
    if (!c->found && probe_baselines(&r->header, reach, c->chance, err) != 0) return -1;
    c->found = 1;
    const int heads = r->header.n_layer * r->header.n_head;
    for (int pass = 0; pass < 2; pass++) {  // the labels, then their strengths
        fputs(pass ? "],[" : "[[", fp);
        for (int i = 0; i < heads; i++) {
            // the scores in head_scores.h's order of patterns
            const float scores[HEAD_PATTERNS] = {rec->previous_token[i], rec->induction[i], rec->first_character[i],
                                                 rec->same_character[i], rec->word_start[i], rec->last_space[i]};
            double strength;
            int label = head_label(scores, r->header.reach, c->chance, &strength);
            if (i) fputc(',', fp);
            if (pass) fprintf(fp, "%.4f", strength);
            else fprintf(fp, "%d", label);
        }
    }
    fputs("]]", fp);
    (void)keep;
    return 0;
}

// Writes the page text up to the next mark (or its end); returns what follows the mark, or
// NULL at the end.
static const char *write_until_mark(FILE *fp, const char *page, const char *mark) {
    const char *at = strstr(page, mark);
    fwrite(page, 1, at ? (size_t)(at - page) : strlen(page), fp);
    return at ? at + strlen(mark) : NULL;
}

int timeline_write(const char *path, const char *probe_path, const LossPoint *points, size_t n, const char *title,
                   double budget, int replace, TimelineSummary *summary, char err[ERR_LEN]) {
    memset(summary, 0, sizeof(*summary));
    Selection s;
    if (plan_page(probe_path, budget, &s, summary, err) != 0) return -1;
    FILE *in = input_file_fopen(probe_path, 0, NULL, err);
    ProbeReader r;
    if (!in || probe_reader_open(&r, in, probe_path, err) != 0) {
        if (in) fclose(in);
        free(s.keep);
        return -1;
    }
    // the title the page shows, with the sizes scripts/check_timeline.sh reads from it
    char heading[1400];
    snprintf(heading, sizeof(heading), "%s: %ld step%s, %d layer%s \u00d7 %d head%s, %d characters", title,
             s.kept_whole, s.kept_whole == 1 ? "" : "s", r.header.n_layer, r.header.n_layer == 1 ? "" : "s",
             r.header.n_head, r.header.n_head == 1 ? "" : "s", r.header.probe_len);
    AtomicFile f;
    int rc = atomic_file_open(&f, path, err);
    if (rc == 0) {
        const char *rest = write_until_mark(f.fp, timeline_page, "@TITLE@");
        markup_write_text(f.fp, heading);
        rest = write_until_mark(f.fp, rest, "@TITLE@");
        markup_write_text(f.fp, heading);
        rest = write_until_mark(f.fp, rest, "@MATH@");
        fputs(attention_math, f.fp);
        rest = write_until_mark(f.fp, rest, "@DATA@");
        write_header(f.fp, &r.header, title);
        write_losses(f.fp, points, n);
        write_clipping(f.fp, points, n);
        Chances chances = {0};
        rc = write_kept(f.fp, "records", probe_path, &s, write_payload, NULL, err);
        if (rc == 0) rc = write_kept(f.fp, "labels", probe_path, &s, write_labels, &chances, err);
        fprintf(f.fp, ",\"summary\":{\"records\":%ld,\"whole\":%ld,\"kept\":%ld,\"kept_whole\":%ld,\"torn_bytes\":%llu,"
                "\"budget\":%.0f}}", s.records, s.whole, s.kept, s.kept_whole,
                (unsigned long long)summary->torn_bytes, budget);
        write_until_mark(f.fp, rest, "@END@");
        if (rc == 0) rc = replace ? atomic_file_commit(&f, err) : atomic_file_commit_new(&f, err);
        else atomic_file_abort(&f);
    }
    summary->records = s.records, summary->whole = s.whole, summary->kept = s.kept;
    summary->kept_whole = summary->steps = s.kept_whole;
    probe_reader_close(&r);
    fclose(in);
    free(s.keep);
    return rc;
}
