// Tests of the timeline in use (issue 23): ./train's probe file, samples and timeline page,
// across --resume (without a duplicate or a gap, after a kill's torn record), --init-from,
// --force and --no-probe; the sample at a step against ./generate on that step's checkpoint;
// a bad --probe or --sample-prompt refused with nothing changed; and ./generate --timeline.
// ./train runs as a child process on a small corpus written under tests/tmp/timeline/, with a
// tiny model.
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../analysis/probe_baselines.h"
#include "../common/platform.h"
#include "../common/utf8.h"
#include "../format/probe_file.h"
#include "test.h"

#define TMP "tests/tmp/timeline"
#define TINY "--n-layer", "1", "--n-head", "2", "--n-embd", "16", "--block-size", "16", "--batch-size", "4", \
             "--eval-batches", "2", "--threads", "1"

// The corpus these tests train on, written into tests/tmp/timeline; its path.
static const char *corpus(void) {
    static const char path[] = TMP "/corpus.txt";
    test_make_dir("tests/tmp");
    test_make_dir(TMP);
    static const char *lines[] = {"ROMEO:\nBut soft, what light through yonder window breaks?\n\n",
                                  "JULIET:\nO Romeo, Romeo, wherefore art thou Romeo?\n\n",
                                  "MERCUTIO:\nA plague on both your houses!\n\n"};
    FILE *fp = fopen(path, "wb");
    for (int i = 0; i < 120; i++) fputs(lines[(i * 7) % 3], fp);
    fclose(fp);
    return path;
}

// Runs ./train with args (NULL-terminated); its output in dir/<log>.
static TestRun train(const char *dir, const char *log, const char *const *args) {
    char out[300];
    snprintf(out, sizeof(out), "%s/%s", dir, log);
    return test_run_program("train", NULL, out, 120, args);
}

// The probe file's records: their steps and flags (at most max), and its header.
typedef struct {
    long count;
    int64_t steps[64];
    uint32_t flags[64];
    uint64_t torn;
} Records;

static int read_records(const char *path, Records *got, ProbeHeader *header, ProbeRecord *last) {
    memset(got, 0, sizeof(*got));
    FILE *fp = fopen(path, "rb");
    char err[ERR_LEN];
    ProbeReader r;
    if (!CHECK(fp != NULL, "%s: %s", path, strerror(errno))) return -1;
    if (!CHECK(probe_reader_open(&r, fp, path, err) == 0, "%s", err)) {
        fclose(fp);
        return -1;
    }
    ProbeRecord mine, *rec = last ? last : &mine;  // last, when wanted, keeps the last record read
    probe_record_alloc(rec, &r.header, err);
    while (probe_reader_next(&r, rec, err) == 1 && got->count < 64) {
        got->steps[got->count] = rec->step;
        got->flags[got->count++] = rec->flags;
    }
    got->torn = r.torn_bytes;
    if (!last) probe_record_free(&mine);
    fclose(fp);
    if (header) {
        *header = r.header;
        free(r.payload);
    } else {
        probe_reader_close(&r);
    }
    return 0;
}

// 1 when the records' steps are exactly want (n of them); else a failure naming them.
static int steps_are(const Records *got, const long *want, long n, const char *what) {
    int same = got->count == n;
    for (long i = 0; same && i < n; i++) same = got->steps[i] == want[i];
    char text[600] = "";
    for (long i = 0, used = 0; i < got->count && used < 560; i++)
        used += snprintf(text + used, sizeof(text) - used, " %lld", (long long)got->steps[i]);
    return CHECK(same, "%s: the probe file's records are of steps%s", what, text);
}

static int exists(const char *path) { return access(path, F_OK) == 0; }

// The UTF-8 of tokens (n) of a header's vocabulary.
static void text_of(const ProbeHeader *h, const int32_t *tokens, int n, char *out, size_t size) {
    size_t used = 0;
    for (int i = 0; i < n && used + 5 < size; i++) used += (size_t)utf8_encode(h->vocab[tokens[i]], out + used);
    out[used] = '\0';
}

TEST(timeline_train_writes_probe_samples_and_page) {
    char dir[256], run[300], probe[320], ck[320], page[320];
    test_fresh_dir(dir, sizeof(dir), TMP, "basic");
    snprintf(run, sizeof(run), "%s/run", dir);
    snprintf(probe, sizeof(probe), "%s/probe.bin", run);
    snprintf(ck, sizeof(ck), "%s/ckpt.safetensors", run);
    snprintf(page, sizeof(page), "%s/timeline.html", run);
    TestRun r = train(dir, "train.log", (const char *[]){TINY, "--data", corpus(), "--steps", "30", "--eval-every",
                                                         "10", "--sample-chars", "40", "--out", run, NULL});
    if (!test_exit_status(&r, 0, "training")) return;
    test_output_has(&r, "sample at step 30 (seed 1337):", "the sample under the progress");
    test_output_has(&r, "timeline: " TMP "/basic/run/timeline.html (4 steps probed in this run in ", "the timeline line");
    test_output_has(&r, " ms and the files ", "the timeline line's costs");
    test_output_has(&r, ", probe ", "the memory line names the probe's");
    Records got;
    ProbeHeader h;
    ProbeRecord last;
    if (read_records(probe, &got, &h, &last) != 0) return;
    steps_are(&got, (long[]){0, 10, 20, 30}, 4, "30 steps, an evaluation every 10");
    for (long i = 0; i < got.count; i++)
        CHECK(got.flags[i] == (PROBE_HAS_PROBE | PROBE_HAS_SAMPLE), "record %ld has flags %u", i, got.flags[i]);
    CHECK(exists(page) && got.torn == 0, "no timeline.html, or a torn probe file");
    // the default passage: a block and one of the validation split from a line's start; the
    // prompt its first line
    char passage[256], prompt[256], sample[256], want[600];
    text_of(&h, h.passage, h.probe_len + 1, passage, sizeof(passage));
    text_of(&h, h.prompt, h.prompt_len, prompt, sizeof(prompt));
    // (its first line is longer than half the block, 8 characters, so the prompt is cut there)
    CHECK(h.probe_len == 16 && h.repeat_len == 16 && h.sample_chars == 40 && h.groups == 16 && h.prompt_len == 8 &&
              strncmp(passage, prompt, strlen(prompt)) == 0 && strstr(h.source, "validation split"),
          "header: passage '%s' (%d), prompt '%s', repeat %d, groups %d, source '%s'", passage, h.probe_len, prompt,
          h.repeat_len, h.groups, h.source);
    // the sample at step 30 is what ./generate writes from step 30's checkpoint
    text_of(&h, last.sample, h.sample_chars, sample, sizeof(sample));
    char out[320];
    snprintf(out, sizeof(out), "%s/generate.log", dir);
    TestRun g = test_run_program("generate", NULL, out, 60, (const char *[]){ck, prompt, "-n", "40", "-s", "1337",
                                                                             "--threads", "1", NULL});
    if (test_exit_status(&g, 0, "./generate")) {
        snprintf(want, sizeof(want), "%s%s\n", prompt, sample);
        CHECK(strncmp(g.output, want, strlen(want)) == 0, "./generate wrote\n%s\nthe step's sample is\n%s", g.output,
              want);
    }
    // the printed sample: the prompt and the sample, each line indented
    char printed[700] = "  ";
    size_t used = 2;
    for (const char *p = want; *p && used + 3 < sizeof(printed); p++) {
        printed[used++] = *p;
        if (*p == '\n' && p[1]) printed[used++] = ' ', printed[used++] = ' ';
    }
    printed[used] = '\0';
    test_output_has(&r, printed, "the printed sample");
    // the scores at step 0: a model at its initialisation attends about uniformly
    test_run_free(&g);
    test_run_free(&r);
    probe_record_free(&last);
    probe_header_free(&h);
}

// The early probes (training/schedule.h): by default at 10, 20, 50, ... below --eval-every, or at
// --probe-steps's, each a whole record with a sample and every head's importance, the first
// lines saying when and what probe.bin will hold; a list that cannot be kept, or --probe-steps
// with --no-probe, exits 2 before --out is made.
// The heads of the probe file's first record (step 0, an untrained model) get no label: their
// attention is at chance on every pattern (analysis/head_scores.h).
static void step_0_unlabelled(const char *probe) {
    char err[ERR_LEN];
    FILE *fp = fopen(probe, "rb");
    ProbeReader r;
    ProbeRecord rec;
    if (!CHECK(fp && probe_reader_open(&r, fp, probe, err) == 0, "%s: %s", probe, err)) {
        if (fp) fclose(fp);
        return;
    }
    float reach[HEAD_PATTERNS], chance[HEAD_PATTERNS];
    if (CHECK(probe_record_alloc(&rec, &r.header, err) == 0 && probe_reader_next(&r, &rec, err) == 1 &&
                  probe_baselines(&r.header, reach, chance, err) == 0,
              "%s", err)) {
        for (int i = 0; i < r.header.n_layer * r.header.n_head; i++) {
            const float scores[HEAD_PATTERNS] = {rec.previous_token[i], rec.induction[i], rec.first_character[i],
                                                 rec.same_character[i], rec.word_start[i], rec.last_space[i]};
            double strength;
            int label = head_label(scores, r.header.reach, chance, &strength);
            CHECK(rec.step == 0 && label == -1, "step %lld, head %d: labelled %s (%.3f)", (long long)rec.step, i,
                  label >= 0 ? head_pattern_names[label] : "-", strength);
        }
        probe_record_free(&rec);
    }
    probe_reader_close(&r);
    fclose(fp);
}

TEST(timeline_early_probes) {
    char dir[256], run[300], probe[320];
    test_fresh_dir(dir, sizeof(dir), TMP, "early");
    snprintf(run, sizeof(run), "%s/run", dir);
    snprintf(probe, sizeof(probe), "%s/probe.bin", run);
    TestRun r = train(dir, "default.log", (const char *[]){TINY, "--data", corpus(), "--steps", "30", "--eval-every",
                                                           "25", "--sample-chars", "8", "--out", run, NULL});
    Records got;
    ProbeHeader h;
    ProbeRecord last;
    if (test_exit_status(&r, 0, "training") && read_records(probe, &got, &h, &last) == 0) {
        test_output_has(&r, "timeline: probes at steps 0, 10, 20 and every 25 and the last: 5 probes, ", "the plan");
        test_output_has(&r, "sample at step 10 (seed 1337):", "the early probe's sample");
        steps_are(&got, (long[]){0, 10, 20, 25, 30}, 5, "early probes at 10 and 20, evaluations at 25 and 30");
        for (long i = 0; i < got.count; i++)
            CHECK(got.flags[i] == (PROBE_HAS_PROBE | PROBE_HAS_SAMPLE), "record %ld has flags %u", i, got.flags[i]);
        int finite = h.version == 3;
        for (int i = 0; i < h.n_layer * h.n_head; i++) finite &= isfinite(last.importance[i]);
        CHECK(finite, "the last record's importance is not every head's (version %d)", h.version);
        step_0_unlabelled(probe);
        probe_record_free(&last);
        probe_header_free(&h);
    }
    test_run_free(&r);
    r = train(dir, "list.log", (const char *[]){TINY, "--data", corpus(), "--steps", "12", "--eval-every", "8",
                                                "--probe-steps", "2,3,8", "--sample-chars", "0", "--out", run,
                                                "--force", NULL});
    if (test_exit_status(&r, 0, "--probe-steps 2,3,8") && read_records(probe, &got, NULL, NULL) == 0) {
        test_output_has(&r, "timeline: probes at steps 0, 2, 3, 8 and every 8 and the last: 5 probes, ", "the plan");
        steps_are(&got, (long[]){0, 2, 3, 8, 12}, 5, "--probe-steps 2,3,8 with evaluations at 8 and 12");
    }
    test_run_free(&r);
    static const char *const bad[][3] = {{"--probe-steps", "40", "step 40 is after the run's last, 30"},
                                         {"--probe-steps", "20,10", "step 10 after 20"},
                                         {"--no-probe", "--probe-steps", "--probe-steps says when the probe runs"}};
    char other[300], other_probe[320];
    snprintf(other, sizeof(other), "%s/refused", dir);
    snprintf(other_probe, sizeof(other_probe), "%s/probe.bin", other);
    for (int i = 0; i < 3; i++) {
        const char *first = i < 2 ? bad[i][0] : "--no-probe", *second = i < 2 ? bad[i][1] : "--probe-steps=10";
        r = train(dir, "bad.log", (const char *[]){TINY, "--data", corpus(), "--steps", "30", first, second, "--out",
                                                   other, NULL});
        if (test_exit_status(&r, 2, bad[i][2])) test_output_has(&r, bad[i][2], "the message");
        CHECK(!exists(other_probe), "a refused run wrote %s", other_probe);
        test_run_free(&r);
    }
}

// The byte offset of record `index` (0 the first) of the probe file held in bytes (len).
static size_t record_offset(const unsigned char *bytes, size_t len, int index) {
    size_t at = 8 + 8 + (bytes[8] | bytes[9] << 8 | (size_t)bytes[10] << 16 | (size_t)bytes[11] << 24);
    for (int i = 0; i < index && at + 4 <= len; i++)
        at += 8 + (bytes[at] | bytes[at + 1] << 8 | (size_t)bytes[at + 2] << 16 | (size_t)bytes[at + 3] << 24);
    return at;
}

TEST(timeline_resume_continues_without_duplicate_or_gap) {
    char dir[256], run[300], probe[320], ck[320], ck20[320];
    test_fresh_dir(dir, sizeof(dir), TMP, "resume");
    snprintf(run, sizeof(run), "%s/run", dir);
    snprintf(probe, sizeof(probe), "%s/probe.bin", run);
    snprintf(ck, sizeof(ck), "%s/ckpt.safetensors", run);
    snprintf(ck20, sizeof(ck20), "%s/ckpt20.safetensors", run);
    TestRun r = train(dir, "first.log", (const char *[]){TINY, "--data", corpus(), "--steps", "20", "--eval-every",
                                                         "10", "--sample-chars", "8", "--out", run, NULL});
    if (!test_exit_status(&r, 0, "training to step 20")) return;
    test_run_free(&r);
    test_copy_file(ck, ck20);
    r = train(dir, "second.log", (const char *[]){"--resume", ck, "--steps", "40", "--threads", "1", NULL});
    if (!test_exit_status(&r, 0, "resuming to step 40")) return;
    // the plan names only the probes to come, not step 0 or the early ones it has passed
    test_output_has(&r, "timeline: probes every 10 from step 30 and the last: 2 probes, ", "the resumed run's plan");
    test_run_free(&r);
    Records got;
    read_records(probe, &got, NULL, NULL);
    steps_are(&got, (long[]){0, 10, 20, 30, 40}, 5, "resumed from 20 to 40");
    size_t len;
    char *before = test_read_file(probe, &len);
    // a kill in the middle of appending step 50's record leaves a torn tail (here the first 300
    // bytes of a record like step 40's); resuming step 20's checkpoint then cuts it and the
    // records after step 20 (--force: newer work of the run)
    FILE *fp = fopen(probe, "ab");
    fwrite(before + record_offset((const unsigned char *)before, len, 4), 1, 300, fp);
    fclose(fp);
    r = train(dir, "third.log", (const char *[]){"--resume", ck20, "--steps", "40", "--force", "--threads", "1", NULL});
    if (test_exit_status(&r, 0, "resuming step 20 again")) {
        test_output_has(&r, "probe.bin: dropped the records of steps 30 to 40, written after the checkpoint", "the cut");
        test_output_has(&r, "probe.bin: cut 300 bytes of a record that a stopped run left unfinished", "the torn tail");
    }
    test_run_free(&r);
    read_records(probe, &got, NULL, NULL);
    steps_are(&got, (long[]){0, 10, 20, 30, 40}, 5, "step 20 resumed once more to 40");
    // the same steps made again measure the same model: the file is byte for byte the same
    size_t len_after;
    char *after = test_read_file(probe, &len_after);
    CHECK(len == len_after && memcmp(before, after, len) == 0, "the remade records differ from the first ones");
    free(before);
    free(after);
    // a run without --sample-every's steps on resume, or with it: samples between evaluations
    r = train(dir, "fourth.log", (const char *[]){"--resume", ck, "--steps", "46", "--sample-every", "3", "--threads",
                                                  "1", NULL});
    if (test_exit_status(&r, 0, "resuming with --sample-every 3")) test_output_has(&r, "sample at step 45", "a sample");
    test_run_free(&r);
    read_records(probe, &got, NULL, NULL);
    if (steps_are(&got, (long[]){0, 10, 20, 30, 40, 42, 45, 46}, 8, "--sample-every 3 from 40 to 46"))
        CHECK(got.flags[5] == PROBE_HAS_SAMPLE && got.flags[6] == PROBE_HAS_SAMPLE &&
                  got.flags[7] == (PROBE_HAS_SAMPLE | PROBE_HAS_PROBE),
              "flags %u %u %u: samples at 42 and 45, the last evaluation at 46", got.flags[5], got.flags[6],
              got.flags[7]);
}

// A damaged probe.bin is never cut or replaced unsaid (issue 29, M3): one flipped bit in
// record 3 of 5, or in the header, and the resume moves the file aside under the name it
// prints, keeping the whole records before the damage in probe.bin (before: "cut ... bytes of
// a record that a stopped run left unfinished", the intact records after it dropped; a header
// "no probe file of this run", the file replaced). Another run's probe.bin with records, alone
// in an --out, needs --force (it was replaced).
TEST(timeline_damaged_probe_file_set_aside) {
    char dir[256], run[300], probe[320], ck[320], aside[340], lone[320], lone_probe[340], other[320], other_ck[340];
    test_fresh_dir(dir, sizeof(dir), TMP, "damaged");
    snprintf(run, sizeof(run), "%s/run", dir);
    snprintf(probe, sizeof(probe), "%s/probe.bin", run);
    snprintf(ck, sizeof(ck), "%s/ckpt.safetensors", run);
    snprintf(aside, sizeof(aside), "%s.damaged", probe);
    TestRun r = train(dir, "first.log", (const char *[]){TINY, "--data", corpus(), "--steps", "40", "--eval-every",
                                                         "10", "--sample-chars", "8", "--out", run, NULL});
    if (!test_exit_status(&r, 0, "training to step 40")) return;
    test_run_free(&r);
    size_t len;
    unsigned char *bytes = (unsigned char *)test_read_file(probe, &len);
    if (!CHECK(bytes != NULL, "no %s", probe)) return;
    size_t third = record_offset(bytes, len, 2);
    bytes[third + 20] ^= 1;
    test_write_file(probe, bytes, len);
    r = train(dir, "second.log", (const char *[]){"--resume", ck, "--steps", "50", "--threads", "1", NULL});
    if (test_exit_status(&r, 0, "a resume with a damaged record")) {
        test_output_has(&r, "probe.bin: record 3 (at byte", "the damaged record");
        test_output_has(&r, "fails its CRC-32: moved the file to", "where it went");
        test_output_has(&r, "keeps the 2 records before it", "what was kept");
    }
    test_run_free(&r);
    Records got;
    read_records(probe, &got, NULL, NULL);
    steps_are(&got, (long[]){0, 10, 50}, 3, "after the damaged record 3");
    size_t aside_len;
    char *kept = test_read_file(aside, &aside_len);
    CHECK(kept && aside_len == len && memcmp(kept, bytes, len) == 0, "%s is not the damaged file, byte for byte", aside);
    free(kept);
    // a damaged header: moved aside to the next free name, the timeline started anew
    free(bytes);
    bytes = (unsigned char *)test_read_file(probe, &len);
    if (!CHECK(bytes != NULL, "no %s", probe)) return;
    bytes[30] ^= 1;
    test_write_file(probe, bytes, len);
    free(bytes);
    r = train(dir, "third.log", (const char *[]){"--resume", ck, "--steps", "60", "--threads", "1", NULL});
    if (test_exit_status(&r, 0, "a resume with a damaged header")) {
        test_output_has(&r, "its header fails its CRC-32: moved to", "the damaged header");
        test_output_has(&r, "probe.bin.damaged.2; the timeline starts anew at step 50", "where it went");
    }
    test_run_free(&r);
    read_records(probe, &got, NULL, NULL);
    steps_are(&got, (long[]){60}, 1, "after the damaged header");
    // another run's probe.bin alone in an --out: refused, a new run and a resumed one alike
    snprintf(lone, sizeof(lone), "%s/lone", dir);
    snprintf(lone_probe, sizeof(lone_probe), "%s/probe.bin", lone);
    test_make_dir(lone);
    bytes = (unsigned char *)test_read_file(probe, &len);
    if (!CHECK(bytes != NULL, "no %s", probe)) return;
    test_write_file(lone_probe, bytes, len);
    r = train(dir, "fourth.log", (const char *[]){TINY, "--data", corpus(), "--steps", "10", "--out", lone, NULL});
    if (test_exit_status(&r, 2, "a new run over another run's probe.bin"))
        test_output_has(&r, "is the timeline of another run", "the refusal");
    test_run_free(&r);
    snprintf(other, sizeof(other), "%s/other", dir);
    snprintf(other_ck, sizeof(other_ck), "%s/ckpt.safetensors", other);
    r = train(dir, "fifth.log", (const char *[]){TINY, "--data", corpus(), "--steps", "5", "--no-probe", "--out", other,
                                                 NULL});
    test_exit_status(&r, 0, "another run");
    test_run_free(&r);
    r = train(dir, "sixth.log", (const char *[]){"--resume", other_ck, "--steps", "10", "--out", lone, "--threads", "1",
                                                 NULL});
    if (test_exit_status(&r, 2, "a resume into an --out with another run's probe.bin"))
        test_output_has(&r, "is the timeline of another run", "the refusal");
    test_run_free(&r);
    size_t lone_len;
    char *lone_bytes = test_read_file(lone_probe, &lone_len);
    CHECK(lone_bytes && lone_len == len && memcmp(lone_bytes, bytes, len) == 0, "the lone probe.bin was changed");
    free(lone_bytes);
    free(bytes);
    r = train(dir, "seventh.log", (const char *[]){TINY, "--data", corpus(), "--steps", "10", "--out", lone, "--force",
                                                   NULL});
    test_exit_status(&r, 0, "--force replaces it");
    test_run_free(&r);
}

TEST(timeline_init_from_force_and_no_probe) {
    char dir[256], a[300], b[320], ck[320], probe_a[320], probe_b[320], page_b[320];
    test_fresh_dir(dir, sizeof(dir), TMP, "init");
    snprintf(a, sizeof(a), "%s/a", dir);
    snprintf(b, sizeof(b), "%s/b", dir);
    snprintf(ck, sizeof(ck), "%s/ckpt.safetensors", a);
    snprintf(probe_a, sizeof(probe_a), "%s/probe.bin", a);
    snprintf(probe_b, sizeof(probe_b), "%s/probe.bin", b);
    snprintf(page_b, sizeof(page_b), "%s/timeline.html", b);
    TestRun r = train(dir, "a.log", (const char *[]){TINY, "--data", corpus(), "--steps", "20", "--eval-every", "10",
                                                     "--out", a, NULL});
    if (!test_exit_status(&r, 0, "run a")) return;
    test_run_free(&r);
    r = train(dir, "b.log", (const char *[]){"--init-from", ck, "--data", corpus(), "--steps", "10", "--eval-every",
                                             "10", "--threads", "1", "--eval-batches", "2", "--out", b, NULL});
    if (!test_exit_status(&r, 0, "--init-from a")) return;
    test_run_free(&r);
    Records got;
    ProbeHeader ha, hb;
    read_records(probe_a, &got, &ha, NULL);
    read_records(probe_b, &got, &hb, NULL);
    steps_are(&got, (long[]){0, 10}, 2, "--init-from: a new run's timeline");
    CHECK(strcmp(ha.run_id, hb.run_id) != 0, "the fine-tuning run's probe file has run a's identity");
    probe_header_free(&ha);
    probe_header_free(&hb);
    // --force replaces b with a run that probes nothing: its probe file and page go too
    r = train(dir, "c.log", (const char *[]){TINY, "--data", corpus(), "--steps", "5", "--no-probe", "--force",
                                             "--out", b, NULL});
    if (test_exit_status(&r, 0, "--force --no-probe"))
        CHECK(!exists(probe_b) && !exists(page_b), "--force left the replaced run's probe.bin or timeline.html");
    CHECK(!strstr(r.output, "sample at") && !strstr(r.output, "timeline:") && !strstr(r.output, ", probe "),
          "--no-probe: a sample, the timeline or its memory in the output:\n%s", r.output);
    test_run_free(&r);
}

TEST(timeline_bad_probe_options_change_nothing) {
    char dir[256], run[300], text[320], one[320];
    test_fresh_dir(dir, sizeof(dir), TMP, "bad");
    snprintf(run, sizeof(run), "%s/run", dir);
    snprintf(text, sizeof(text), "%s/probe_text.txt", dir);
    snprintf(one, sizeof(one), "%s/one.txt", dir);
    const char *passage = "ROMEO: a \xE2\x98\x83 snowman in a passage";
    test_write_file(text, passage, strlen(passage));
    test_write_file(one, "R", 1);
    const struct { const char *flag, *value; int status; const char *message; } cases[] = {
        {"--probe", TMP "/bad/missing.txt", 1, "missing.txt"},
        {"--probe", one, 1, "1 character: the probe needs at least 2"},
        {"--probe", text, 2, "--probe: character 9, '\xE2\x98\x83' (U+2603), is not in the model's vocabulary"},
        {"--sample-prompt", "ROMEO\xE2\x98\x83", 2, "--sample-prompt: character 5, '\xE2\x98\x83' (U+2603)"},
        {"--sample-prompt", "12345678901234567", 2, "--sample-prompt holds 17 characters, more than the block of 16"},
        {"--sample-prompt", "\xff", 2, "--sample-prompt is not valid UTF-8"},
        {"--sample-chars", "-1", 2, "--sample-chars must be between 0 and 65536"},
        {"--sample-every", "0", 2, "--sample-every must be between 1 and"},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        if (cases[c].value[0] == '\xff' && !test_system_has(TEST_BYTE_ARGUMENTS)) {
            printf("    %s's arguments are UTF-16: a byte that is not UTF-8 cannot be passed\n", platform_name());
            continue;
        }
        snprintf(run, sizeof(run), "%s/run%zu", dir, c);
        TestRun r = train(dir, "bad.log", (const char *[]){TINY, "--data", corpus(), "--steps", "5", cases[c].flag,
                                                           cases[c].value, "--out", run, NULL});
        char what[200];
        snprintf(what, sizeof(what), "%s %s", cases[c].flag, cases[c].value);
        if (test_exit_status(&r, cases[c].status, what)) test_output_has(&r, cases[c].message, what);
        char log[320];
        snprintf(log, sizeof(log), "%s/log.csv", run);
        CHECK(!exists(log), "%s: refused, yet log.csv was written", what);
        test_run_free(&r);
    }
    // what a resumed run probes is its probe file's: --probe cannot change it
    snprintf(run, sizeof(run), "%s/run", dir);
    test_write_file(one, "ROMEO: a passage", 16);
    TestRun r = train(dir, "ok.log", (const char *[]){TINY, "--data", corpus(), "--steps", "5", "--probe", one,
                                                      "--out", run, NULL});
    test_exit_status(&r, 0, "--probe with a passage the vocabulary has");
    test_run_free(&r);
    char ck[320];
    snprintf(ck, sizeof(ck), "%s/ckpt.safetensors", run);
    r = train(dir, "resume.log", (const char *[]){"--resume", ck, "--probe", one, NULL});
    if (test_exit_status(&r, 2, "--probe on resume"))
        test_output_has(&r, "--probe cannot be changed when resuming", "--probe on resume");
    test_run_free(&r);
}

TEST(timeline_probe_file_passage) {
    char dir[256], run[300], text[320], probe[320];
    test_fresh_dir(dir, sizeof(dir), TMP, "passage");
    snprintf(run, sizeof(run), "%s/run", dir);
    snprintf(text, sizeof(text), "%s/probe_text.txt", dir);
    snprintf(probe, sizeof(probe), "%s/probe.bin", run);
    const char *words = "ROMEO:\r\nBut soft, what light through yonder window breaks?\r\n";
    test_write_file(text, words, strlen(words));
    TestRun r = train(dir, "train.log", (const char *[]){TINY, "--data", corpus(), "--steps", "5", "--probe", text,
                                                         "--sample-prompt", "", "--out", run, NULL});
    if (!test_exit_status(&r, 0, "--probe FILE")) return;
    test_run_free(&r);
    Records got;
    ProbeHeader h;
    if (read_records(probe, &got, &h, NULL) != 0) return;
    char passage[256];
    text_of(&h, h.passage, h.probe_len + 1, passage, sizeof(passage));
    // its first block + 1 characters, CR LF read as LF as the corpus is
    CHECK(strcmp(passage, "ROMEO:\nBut soft, ") == 0 && h.prompt_len == 0 && strstr(h.source, "probe_text.txt"),
          "passage '%s', prompt of %d, source '%s'", passage, h.prompt_len, h.source);
    probe_header_free(&h);
}

TEST(timeline_generate_rebuilds_the_page) {
    char dir[256], run[300], page[320], out[320], empty[320];
    test_fresh_dir(dir, sizeof(dir), TMP, "rebuild");
    snprintf(run, sizeof(run), "%s/run", dir);
    snprintf(page, sizeof(page), "%s/timeline.html", run);
    snprintf(out, sizeof(out), "%s/generate.log", dir);
    snprintf(empty, sizeof(empty), "%s/empty", dir);
    test_make_dir(empty);
    TestRun r = train(dir, "train.log", (const char *[]){TINY, "--data", corpus(), "--steps", "20", "--eval-every",
                                                         "10", "--out", run, NULL});
    if (!test_exit_status(&r, 0, "training")) return;
    test_run_free(&r);
    size_t len;
    char *written = test_read_file(page, &len);
    TestRun g = test_run_program("generate", NULL, out, 60, (const char *[]){"--timeline", run, NULL});
    if (test_exit_status(&g, 2, "--timeline over the run's page"))
        test_output_has(&g, "timeline.html exists: give --force to replace it", "--timeline without --force");
    test_run_free(&g);
    g = test_run_program("generate", NULL, out, 60, (const char *[]){"--timeline", run, "--force", NULL});
    if (test_exit_status(&g, 0, "--timeline --force")) test_output_has(&g, "3 probed steps of 3 in full", "--timeline");
    test_run_free(&g);
    // the same records as ./train wrote
    char *rebuilt = test_read_file(page, &len);
    const char *a = written ? strstr(written, "\"records\":[") : NULL, *b = rebuilt ? strstr(rebuilt, "\"records\":[") : NULL;
    CHECK(a && b && strcmp(a, b) == 0, "the rebuilt page's records differ from ./train's");
    free(written);
    free(rebuilt);
    const struct { const char *dir; int status; const char *message; } cases[] = {
        {empty, 1, "it holds no probe.bin"}, {TMP "/rebuild/none", 1, "no such directory"},
    };
    for (size_t c = 0; c < 2; c++) {
        g = test_run_program("generate", NULL, out, 60, (const char *[]){"--timeline", cases[c].dir, NULL});
        if (test_exit_status(&g, cases[c].status, cases[c].dir)) test_output_has(&g, cases[c].message, cases[c].dir);
        test_run_free(&g);
    }
    g = test_run_program("generate", NULL, out, 60, (const char *[]){"--timeline", run, "--seed", "3", NULL});
    if (test_exit_status(&g, 2, "--timeline with --seed")) test_output_has(&g, "it takes only --csv, --force and --max-memory, not '--seed'", "");
    test_run_free(&g);
    // an option refused is named as an option, whether its value came with it or after it
    char ck[320], text[320];
    snprintf(ck, sizeof(ck), "%s/ckpt.safetensors", run);
    snprintf(text, sizeof(text), "%s/text.txt", dir);
    test_write_file(text, "ROMEO: hi\n", 10);
    const char *given[][2] = {{"-n", "5"}, {"-n5", NULL}, {"--max-new", "5"}, {"--max-new=5", NULL}};
    for (int c = 0; c < 4; c++) {
        g = test_run_program("generate", NULL, out, 60,
                             (const char *[]){ck, "--score", text, given[c][0], given[c][1], NULL});
        if (test_exit_status(&g, 2, given[c][0]))
            test_output_has(&g, c < 2 ? ": -n is for generating text" : ": --max-new is for generating text",
                            given[c][0]);
        test_run_free(&g);
    }
}

// Issue 42, hole 2: ./generate --timeline names the damage of probe.bin as --resume does, and
// says what the page leaves out (before: "a torn record at the end of probe.bin left out" for a
// CRC failure in record 2 of 5, and for another model's header, the records after dropped
// unsaid); refuses a log.csv of another run (the page was made of both); and leaves the page
// of a run that holds the directory's lock to it (it rewrote it under the running run).
TEST(timeline_generate_names_damage_and_refuses_another_log) {
    char dir[256], runs[3][300], probe[320], log[320], page[320], out[320], ck[320];
    test_fresh_dir(dir, sizeof(dir), TMP, "rebuild_checks");
    snprintf(out, sizeof(out), "%s/generate.log", dir);
    static const char *const names[3] = {"run", "seed5", "layers2"};
    static const char *const extra[3][2] = {{"--seed", "1337"}, {"--seed", "5"}, {"--n-layer=2", NULL}};
    for (int i = 0; i < 3; i++) {
        snprintf(runs[i], sizeof(runs[i]), "%s/%s", dir, names[i]);
        TestRun r = train(dir, "train.log", (const char *[]){"--n-head", "2", "--n-embd", "16", "--block-size", "16",
                                                             "--batch-size", "4", "--eval-batches", "2", "--threads",
                                                             "1", "--data", corpus(), "--steps", "40", "--eval-every",
                                                             "10", "--probe-steps", "none", "--out", runs[i],
                                                             extra[i][0], extra[i][1], NULL});
        int ok = test_exit_status(&r, 0, names[i]);
        test_run_free(&r);
        if (!ok) return;
    }
    snprintf(probe, sizeof(probe), "%s/probe.bin", runs[0]);
    size_t len;
    unsigned char *bytes = (unsigned char *)test_read_file(probe, &len);
    if (!CHECK(bytes != NULL, "no %s", probe)) return;
    // record 2 of 5 fails its CRC
    unsigned char *damaged = malloc(len);
    memcpy(damaged, bytes, len);
    size_t second = record_offset(bytes, len, 1);
    damaged[second + 20] ^= 1;
    test_write_file(probe, damaged, len);
    char want[200];
    snprintf(want, sizeof(want), "probe.bin: record 2 (at byte %zu) fails its CRC-32: the page holds the 1 records "
             "before it", second);
    TestRun g = test_run_program("generate", NULL, out, 60, (const char *[]){"--timeline", runs[0], "--force", NULL});
    if (test_exit_status(&g, 0, "--timeline of a probe.bin damaged in record 2")) {
        test_output_has(&g, want, "the damaged record");
        CHECK(!strstr(g.output, "torn"), "the damage taken for a torn record:\n%s", g.output);
    }
    test_run_free(&g);
    // another model's header (2 layers) before the run's records
    size_t other_len, first = record_offset(bytes, len, 0);
    snprintf(page, sizeof(page), "%s/probe.bin", runs[2]);
    unsigned char *other = (unsigned char *)test_read_file(page, &other_len);
    if (CHECK(other != NULL, "no %s", page)) {
        size_t header = record_offset(other, other_len, 0);
        memcpy(damaged, other, header);
        memcpy(damaged + header, bytes + first, len - first);
        test_write_file(probe, damaged, header + len - first);
        snprintf(want, sizeof(want), "probe.bin: record 1 (at byte %zu) has a length that fits no record of the "
                 "file's header", header);
        g = test_run_program("generate", NULL, out, 60, (const char *[]){"--timeline", runs[0], "--force", NULL});
        if (test_exit_status(&g, 0, "--timeline of another model's header")) test_output_has(&g, want, "the header");
        test_run_free(&g);
    }
    free(other);
    free(damaged);
    test_write_file(probe, bytes, len);
    free(bytes);
    // the log.csv of the same options with another seed: refused, the page left as it was
    snprintf(log, sizeof(log), "%s/log.csv", runs[0]);
    snprintf(page, sizeof(page), "%s/log.csv", runs[1]);
    char saved[340];
    snprintf(saved, sizeof(saved), "%s.own", log);
    test_copy_file(log, saved);
    test_copy_file(page, log);
    snprintf(page, sizeof(page), "%s/timeline.html", runs[0]);
    char *before = test_read_file(page, &len);
    g = test_run_program("generate", NULL, out, 60, (const char *[]){"--timeline", runs[0], "--force", NULL});
    if (test_exit_status(&g, 1, "--timeline with another run's log.csv")) {
        test_output_has(&g, "log.csv is not the log of the run probe.bin probed: at step 10 its row has", "the log");
        test_output_has(&g, "move it away to make the page without its loss curves", "the way out");
    }
    test_run_free(&g);
    size_t after_len;
    char *after = test_read_file(page, &after_len);
    CHECK(before && after && len == after_len && memcmp(before, after, len) == 0, "the refused rebuild changed %s",
          page);
    free(before);
    free(after);
    test_copy_file(saved, log);
    g = test_run_program("generate", NULL, out, 60, (const char *[]){"--timeline", runs[0], "--force", NULL});
    if (test_exit_status(&g, 0, "--timeline with the run's own log.csv"))
        test_output_has(&g, "5 probed steps of 5 in full", "the run's own log");
    test_run_free(&g);
    // a run holds the directory: its page is its own to rewrite
    snprintf(ck, sizeof(ck), "%s/ckpt.safetensors", runs[0]);
    char train_log[320];
    snprintf(train_log, sizeof(train_log), "%s/running.log", dir);
    const char *argv[] = {test_program("train"), "--resume", ck, "--steps", "1000000", "--threads", "1", NULL};
    TestChild c;
    TestEnd end;
    if (!CHECK(test_child_start(&c, argv, &(TestSpawn){.out_path = train_log}) == 0, "cannot start ./train")) return;
    int running = 0;
    for (int i = 0; i < 4000 && !running && !test_child_wait(&c, 0.005, &end); i++) {
        char *text = test_read_file(train_log, &len);
        running = text && strstr(text, "step 50/");
        free(text);
    }
    if (CHECK(running, "the resumed run did not reach step 50")) {
        g = test_run_program("generate", NULL, out, 60, (const char *[]){"--timeline", runs[0], "--force", NULL});
        snprintf(want, sizeof(want), "is in use by another run (pid %ld)", c.pid);
        if (test_exit_status(&g, 2, "--timeline of a running run")) test_output_has(&g, want, "the lock");
        test_run_free(&g);
    }
    test_child_kill(&c, &end);
}
