// Tests of ./generate --score and --surprisal: a small model trained here by ./train (under
// tests/tmp/score/) scores its own validation split with the training program's loss, each
// character's loss is the one a full forward over the documented window gives, the CSV's
// rows add up to the printed loss, and bad texts and options get their messages and exit
// statuses.
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "../common/rng.h"
#include "../common/utf8.h"
#include "../data/batch.h"
#include "../data/corpus.h"
#include "../data/vocab.h"
#include "../format/checkpoint.h"
#include "../generation/score_progress.h"
#include "../model/gpt.h"
#include "test.h"

#define WORK_DIR "tests/tmp/score"
#define CKPT WORK_DIR "/out/ckpt.safetensors"
#define LOG WORK_DIR "/run.log"
#define TIMEOUT_S 300.0  // generous: the sanitizer build is several times slower
#define BLOCK 16
#define TRAIN_FULL_PASS "whole validation split: loss "

// ---------------------------------------------------------------------------------------
// helpers

static TestRun run(const char *program, const char *in_path, const char *const *args) {
    return test_run_program(program, in_path, LOG, TIMEOUT_S, args);
}
#define GENERATE(...) run("generate", NULL, (const char *[]){__VA_ARGS__, NULL})

// Code points as UTF-8 into out (4 bytes each at most, NUL-terminated); returns the length.
static size_t encode(const uint32_t *chars, size_t n, char *out) {
    size_t len = 0;
    for (size_t i = 0; i < n; i++) len += (size_t)utf8_encode(chars[i], out + len);
    out[len] = '\0';
    return len;
}

// The corpus: about 24 KB of words with commas, quotes, full stops, newlines and an é, so
// the CSV must quote characters.
static const char *corpus_path(void) {
    static const char *path = WORK_DIR "/corpus.txt";
    static const char *words[] = {"the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "and", "caf\xc3\xa9"};
    static const char *ends[] = {" ", " ", " ", " ", ", ", ".\n", " \"", "\" "};
    static char text[24600];
    size_t n = 0;
    Rng rng;
    rng_seed(&rng, 11);
    while (n < 24000) n += (size_t)sprintf(text + n, "%s%s", words[rng_below(&rng, 10)], ends[rng_below(&rng, 8)]);
    test_make_dir("tests/tmp");
    test_make_dir(WORK_DIR);
    test_write_file(path, text, n);
    return path;
}

// Trains the model once per run and keeps the training program's whole-split loss and count.
static double train_loss;
static long train_count;

static const char *trained_checkpoint(void) {
    static int state;  // 0 not tried, 1 ready, -1 failed
    if (state == 0) {
        test_program("train");  // where processes cannot be started (WebAssembly) the test ends here, untried
        state = -1;
        const char *corpus = corpus_path();
        TestRun r = run("train", NULL, (const char *[]){"--data", corpus, "--out", WORK_DIR "/out", "--force",
                                                        "--n-layer", "2", "--n-head", "2", "--n-embd", "32", "--block-size", "16",
                                                        "--batch-size", "8", "--steps", "300", "--eval-every", "100",
                                                        "--eval-batches", "4", NULL});
        const char *line = strstr(r.output, TRAIN_FULL_PASS);
        if (test_exit_status(&r, 0, "./train") &&
            CHECK(line && sscanf(line + strlen(TRAIN_FULL_PASS), "%lf over %ld", &train_loss, &train_count) == 2,
                  "./train did not report the whole validation split:\n%s", r.output))
            state = 1;
        test_run_free(&r);
    }
    CHECK(state == 1, "the test checkpoint could not be made (see the first failure)");
    return state == 1 ? CKPT : NULL;
}

// The validation split of the corpus, as ./train makes it (dataset_split, --val-fraction
// 0.1), as UTF-8 in a malloc'd string; NULL on failure.
static char *validation_split(size_t *len) {
    Corpus corpus;
    Vocab vocab;
    Dataset ds;
    char err[ERR_LEN];
    if (!CHECK(corpus_load(corpus_path(), 0, CORPUS_NO_LIMIT, &corpus, err) == 0, "%s", err)) return NULL;
    int *tokens = malloc(corpus.len * sizeof(int));
    size_t bad;
    char *text = NULL;
    if (CHECK(tokens && vocab_build(&vocab, corpus.text, corpus.len, err) == 0, "%s", err)) {
        vocab_encode(&vocab, corpus.text, corpus.len, tokens, &bad);
        if (CHECK(dataset_split(&ds, tokens, corpus.len, 0.1f, BLOCK, err) == 0, "%s", err)) {
            text = malloc(4 * ds.val_len + 1);
            *len = encode(corpus.text + ds.train_len, ds.val_len, text);
        }
        vocab_free(&vocab);
    }
    free(tokens);
    corpus_free(&corpus);
    return text;
}

// What --score printed: the count and the loss in nats, bits and as perplexity.
typedef struct {
    long scored;
    double nats, bits, perplexity;
} Printed;

static int parse_score(const TestRun *r, Printed *p) {
    const char *line = strstr(r->output, " characters scored (");
    const char *nats = strstr(r->output, "): ");
    while (line && line > r->output && line[-1] >= '0' && line[-1] <= '9') line--;
    return CHECK(line && nats && sscanf(line, "%ld", &p->scored) == 1 &&
                     sscanf(nats, "): %lf nats/char, %lf bits/char, perplexity %lf", &p->nats, &p->bits,
                            &p->perplexity) == 3,
                 "no score line in:\n%s", r->output);
}

// ---------------------------------------------------------------------------------------
// the training program's loss

TEST(score_validation_split_equals_training_whole_pass) {
    if (!trained_checkpoint()) return;
    size_t len;
    char *val = validation_split(&len);
    if (!val) return;
    const char *txt = WORK_DIR "/val.txt", *gz = WORK_DIR "/val.txt.gz";
    test_write_file(txt, val, len);
    gzFile f = gzopen(gz, "wb");
    CHECK(f && gzwrite(f, val, (unsigned)len) == (int)len && gzclose(f) == Z_OK, "cannot write %s", gz);
    free(val);

    // stride = block size: the windows of the training program's whole-split pass
    char stride[16];
    snprintf(stride, sizeof(stride), "%d", BLOCK);
    TestRun r = GENERATE(CKPT, "--score", txt, "--stride", stride);
    Printed p;
    if (test_exit_status(&r, 0, "--score val.txt") && parse_score(&r, &p)) {
        printf("    validation split: ./train %.6f over %ld characters, ./generate --score --stride %d %.6f over %ld "
               "(difference %.1e)\n", train_loss, train_count, BLOCK, p.nats, p.scored, fabs(p.nats - train_loss));
        CHECK(p.scored == train_count, "scored %ld characters, ./train %ld", p.scored, train_count);
        CHECK(fabs(p.nats - train_loss) <= 1e-5, "--score %.6f, ./train %.6f", p.nats, train_loss);
        CHECK(fabs(p.bits - p.nats / M_LN2) <= 1e-6 && fabs(p.perplexity - exp(p.nats)) <= 1e-4 * exp(p.nats),
              "bits %.6f and perplexity %.4f do not follow from %.6f nats", p.bits, p.perplexity, p.nats);
    }
    // the same text gzip-compressed and from stdin
    TestRun zipped = GENERATE(CKPT, "--score", gz, "--stride", stride);
    TestRun piped = run("generate", txt, (const char *[]){CKPT, "--score", "-", "--stride", stride, NULL});
    Printed pz, pp;
    if (test_exit_status(&zipped, 0, "--score val.txt.gz") && parse_score(&zipped, &pz))
        CHECK(pz.scored == p.scored && pz.nats == p.nats, "gzip: %ld characters, %.6f nats", pz.scored, pz.nats);
    if (test_exit_status(&piped, 0, "--score -") && parse_score(&piped, &pp)) {
        CHECK(pp.scored == p.scored && pp.nats == p.nats, "stdin: %ld characters, %.6f nats", pp.scored, pp.nats);
        test_output_has(&piped, "standard input:", "--score -");
    }
    // the default stride reads every character with the full block before it: another loss
    TestRun exact = GENERATE(CKPT, "--score", txt);
    Printed pe;
    if (test_exit_status(&exact, 0, "--score, stride 1") && parse_score(&exact, &pe)) {
        printf("    stride 1: %.6f nats/char\n", pe.nats);
        CHECK(pe.scored == p.scored && fabs(pe.nats - p.nats) > 1e-4, "stride 1 gives %.6f, stride %d %.6f", pe.nats,
              BLOCK, p.nats);
    }
    test_run_free(&r), test_run_free(&zipped), test_run_free(&piped), test_run_free(&exact);
}

// ---------------------------------------------------------------------------------------
// each character's loss, and the CSV

// Splits one CSV record starting at *p into fields (quotes per RFC 4180); returns the count
// and moves *p past the record's LF.
static int csv_record(const char **p, char fields[16][16]) {
    int n = 0;
    const char *s = *p;
    while (*s && n < 16) {
        char *f = fields[n++];
        size_t k = 0;
        if (*s == '"') {
            for (s++; *s && !(*s == '"' && s[1] != '"'); s++) {
                if (*s == '"') s++;
                if (k < 15) f[k++] = *s;
            }
            if (*s == '"') s++;
        } else {
            while (*s && *s != ',' && *s != '\n') {
                if (k < 15) f[k++] = *s;
                s++;
            }
        }
        f[k] = '\0';
        if (*s == ',') {
            s++;
            continue;
        }
        if (*s == '\n') s++;
        break;
    }
    *p = s;
    return n;
}

// Scores text with stride and --surprisal, and checks every row against a full forward of
// model over the documented window: character j is predicted from [start, j), start 0 at
// first and moved on by stride whenever the window would hold T + 1 characters.
static void check_surprisal(GPT *model, const Vocab *vocab, const char *path, const uint32_t *chars, long n,
                            int stride) {
    const int T = model->config.block_size, V = model->config.vocab_size;
    const char *csv_path = WORK_DIR "/surprisal.csv";
    char stride_text[16];
    snprintf(stride_text, sizeof(stride_text), "%d", stride);
    remove(csv_path);
    TestRun r = GENERATE(CKPT, "--score", path, "--stride", stride_text, "--surprisal", csv_path);
    Printed p;
    size_t csv_len;
    char *csv = NULL;
    if (!test_exit_status(&r, 0, "--surprisal") || !parse_score(&r, &p) ||
        !CHECK((csv = test_read_file(csv_path, &csv_len)) != NULL, "%s not written", csv_path))
        goto done;
    const char *s = csv;
    char fields[16][16];
    CHECK(csv_record(&s, fields) == 14 && strcmp(fields[0], "position") == 0 && strcmp(fields[2], "loss_bits") == 0 &&
              strcmp(fields[13], "top5_prob") == 0, "CSV header: %.80s", csv);
    int tokens[4096];
    for (long i = 0; i < n; i++) tokens[i] = vocab_index(vocab, chars[i]);
    long rows = 0, start = 0, bad_order = 0, bad_char = 0, bad_top = 0;
    double sum_bits = 0.0, worst = 0.0, worst_prob = 0.0;
    for (long j = 1; j < n && *s; j++) {
        if (!CHECK(csv_record(&s, fields) == 14, "row %ld has the wrong field count", j)) break;
        rows++;
        bad_order += atol(fields[0]) != j;
        uint32_t cp[4];
        size_t bad;
        bad_char += utf8_decode((const unsigned char *)fields[1], strlen(fields[1]), cp, &bad) != 1 || cp[0] != chars[j];
        double bits = strtod(fields[2], NULL), prob = strtod(fields[3], NULL);
        sum_bits += bits;
        // the reference: a full forward over the window, -log2 softmax in double
        gpt_forward(model, tokens + start, NULL, 1, (int)(j - start), NULL);
        const float *z = model->acts.logits + (size_t)(j - start - 1) * V;
        // the largest logit, taken in float: the same value, and gcc 12's AArch64 vectoriser
        // stops with an internal error on an fmax reduction of floats widened to double
        float zmax = z[0];
        for (int v = 1; v < V; v++) zmax = fmaxf(zmax, z[v]);
        double max = zmax, sum = 0.0;
        for (int v = 0; v < V; v++) sum += exp(z[v] - max);
        double want = (max + log(sum) - z[tokens[j]]) / M_LN2;
        worst = fmax(worst, fabs(bits - want));
        worst_prob = fmax(worst_prob, fabs(prob - exp2(-bits)));
        // the top five: probabilities falling, the first at least the character's
        double last = 2.0;
        for (int k = 0; k < 5; k++) {
            double q = strtod(fields[5 + 2 * k], NULL);
            bad_top += !(q <= last + 1e-7) || !(q > 0.0) || utf8_decode((const unsigned char *)fields[4 + 2 * k],
                                                                         strlen(fields[4 + 2 * k]), cp, &bad) != 1;
            last = q;
        }
        bad_top += strtod(fields[5], NULL) < prob - 1e-6;
        if (j + 1 - start > T) start += stride;
    }
    printf("    stride %2d: %ld rows, worst |loss - full forward| %.1e bits, mean %.6f bits/char (printed %.6f)\n",
           stride, rows, worst, rows ? sum_bits / rows : NAN, p.bits);
    CHECK(rows == n - 1 && p.scored == n - 1 && *s == '\0', "%ld rows for %ld characters (%ld scored)", rows, n,
          p.scored);
    CHECK(bad_order == 0 && bad_char == 0, "%ld positions and %ld characters out of place", bad_order, bad_char);
    CHECK(worst <= 1e-4, "stride %d: a loss differs from the full forward over its window by %.2e bits", stride, worst);
    CHECK(worst_prob <= 1e-6, "probability differs from 2^-loss_bits by %.2e", worst_prob);
    CHECK(bad_top == 0, "%ld top-5 predictions out of order or not characters", bad_top);
    CHECK(fabs(sum_bits / rows - p.bits) <= 1e-6, "the CSV's mean %.8f differs from the printed %.8f bits/char",
          sum_bits / rows, p.bits);
done:
    free(csv);
    test_run_free(&r);
}

TEST(score_windows_and_surprisal_csv) {
    if (!trained_checkpoint()) return;
    size_t len;
    char *val = validation_split(&len);
    if (!val) return;
    // 300 characters of the validation split, with its commas, quotes and newlines
    uint32_t *chars = malloc((len + 1) * sizeof(uint32_t));
    size_t bad;
    long n = chars ? utf8_decode((const unsigned char *)val, len, chars, &bad) : -1;
    free(val);
    if (!CHECK(n >= 300, "the validation split is too short")) {
        free(chars);
        return;
    }
    n = 300;
    char text[1300];
    const char *path = WORK_DIR "/short.txt";
    test_write_file(path, text, encode(chars, (size_t)n, text));
    Checkpoint ck;
    GPT model;
    Vocab vocab;
    char err[ERR_LEN];
    if (!CHECK(checkpoint_open(CKPT, &ck, err) == 0, "%s", err)) {
        free(chars);
        return;
    }
    int ok = CHECK(checkpoint_load_model(&ck, &model, 0, err) == 0 && gpt_alloc_activations(&model, 1, err) == 0 &&
                       vocab_from_chars(&vocab, ck.vocab, ck.config.vocab_size, err) == 0, "%s", err);
    checkpoint_close(&ck);
    if (ok) {
        const int strides[4] = {1, 3, BLOCK / 2, BLOCK};
        for (int i = 0; i < 4; i++) check_surprisal(&model, &vocab, path, chars, n, strides[i]);
        vocab_free(&vocab);
        gpt_free(&model);
    }
    free(chars);
}

// ---------------------------------------------------------------------------------------
// the progress line

// Checks that `out`, what a terminal showed, has a progress line "TASK: D/TOTAL UNITS ... ETA"
// from the first unit on (first "1"; "" for any count: scoring's first line comes after its
// first forward pass) and erases it ("\r\033[K") after the last one.
static void check_progress_shown(const char *out, const char *task, const char *first_count, long total,
                                 const char *what) {
    char first[64], whole[64];
    snprintf(first, sizeof(first), "%s: %s", task, first_count);
    snprintf(whole, sizeof(whole), "/%ld characters", total);
    const char *line = strstr(out, first), *last = line;
    for (const char *p = line; p && (p = strstr(p + 1, task)) != NULL;) last = p;
    CHECK(line != NULL, "%s: no line '%s' on the terminal:\n%s", what, first, out);
    if (!line) return;
    CHECK(strstr(line, whole) && strstr(line, "ETA "), "%s: the progress line lacks its total or ETA: '%.80s'", what,
          line);
    CHECK(strstr(last, "\r\033[K") != NULL, "%s: the last progress line is not erased: '%.80s'", what, last);
}

TEST(score_progress_line_on_terminal) {
    if (!trained_checkpoint()) return;
    if (!test_system_has(TEST_TERMINALS)) {
        test_skip("no pseudo-terminal to run ./generate on");
        return;
    }
    size_t len;
    char *val = validation_split(&len);
    if (!val) return;
    const char *path = WORK_DIR "/progress.txt";
    test_write_file(path, val, len > 2000 ? 2000 : len);  // ASCII but for the odd é: ~1990 characters
    free(val);
    long total = -1;
    TestRun plain = GENERATE(CKPT, "--score", path);  // stderr a file: no progress line
    Printed printed;
    if (test_exit_status(&plain, 0, "--score to a file") && parse_score(&plain, &printed)) total = printed.scored;
    CHECK(strstr(plain.output, "scoring:") == NULL && strchr(plain.output, '\r') == NULL,
          "--score with stderr a file showed a progress line:\n%s", plain.output);
    test_run_free(&plain);
    const char *argv[] = {test_program("generate"), CKPT, "--score", path, NULL};
    TestEnd end;
    char text[64], *out = test_run_on_terminal(argv, 100, &end);
    if (CHECK(out && end.status == 0, "--score on a terminal: %s", test_end_text(&end, text)) && total > 0)
        check_progress_shown(out, "scoring", "", total, "--score");
    free(out);
    // generation to a file (a POSIX shell's redirection: where there are pseudo-terminals),
    // stderr on the terminal: the line shows there, never in the file
    char command[512];
    const char *file = WORK_DIR "/generated.txt";
    snprintf(command, sizeof(command), "exec '%s' '%s' -n 300 > '%s'", test_program("generate"), CKPT, file);
    const char *shell[] = {"/bin/sh", "-c", command, NULL};
    out = test_run_on_terminal(shell, 100, &end);
    if (CHECK(out && end.status == 0, "generation to a file: %s", test_end_text(&end, text)))
        check_progress_shown(out, "generating", "1/300 characters", 300, "generation to a file");
    free(out);
    size_t file_len;
    char *written = test_read_file(file, &file_len);
    CHECK(written && file_len >= 300 && !memchr(written, '\033', file_len),
          "the generated file: %zu bytes, escape sequences in it", written ? file_len : 0);
    free(written);
}

// What --score shows while it scores, at given times: nothing for a text that scores in less
// than SCORE_QUIET_SECONDS when stderr is not a terminal; for a long one, the time of the
// whole once the pace is known, with the fastest window's, then a line at each tenth.
TEST(score_progress_says_the_time_then_each_tenth) {
    ScoreProgress p;
    char text[512];
    score_progress_init(&p, 9999, 0, 2, 64, 0.02);
    for (int i = 1; i <= 10; i++) {  // 5 s in all: quiet
        score_progress_text(&p, 0.5 * i, 100.0 * i, 1000.0, 1000L * i - 1, "generate", text, sizeof(text));
        CHECK(text[0] == '\0', "a 5 s scoring showed '%s'", text);
    }
    score_progress_init(&p, 9999, 0, 2, 64, 0.02);  // 200 s in all
    score_progress_text(&p, 0.5, 2.5, 1000.0, 24, "generate", text, sizeof(text));
    CHECK(text[0] == '\0', "before a second the pace is unknown, yet it showed '%s'", text);
    score_progress_text(&p, 1.0, 5.0, 1000.0, 49, "generate", text, sizeof(text));
    CHECK(strstr(text, "generate: scoring 9999 characters takes about 3m20s on 2 threads") == text &&
              strstr(text, "--stride 64 would take about 0m04s") && !strstr(text, "(10%)"),
          "after a second: '%s'", text);
    score_progress_text(&p, 2.0, 10.0, 1000.0, 99, "generate", text, sizeof(text));
    CHECK(text[0] == '\0', "the time was said twice, or a tenth before 10%%: '%s'", text);
    score_progress_text(&p, 25.0, 125.0, 1000.0, 1249, "generate", text, sizeof(text));
    CHECK(strcmp(text, "scoring: 1249/9999 characters (10%), 25 s, about 2m55s left\n") == 0, "at 12.5%%: '%s'", text);
    score_progress_text(&p, 70.0, 350.0, 1000.0, 3499, "generate", text, sizeof(text));
    CHECK(strstr(text, "(30%)") && !strstr(text, "(20%)"), "at 35%%, one line for 30%%: '%s'", text);
    score_progress_text(&p, 200.0, 1000.0, 1000.0, 9999, "generate", text, sizeof(text));
    CHECK(text[0] == '\0', "at the end (the result follows) it showed '%s'", text);
    // on a terminal the line shows from the first pass, at most twice a second
    score_progress_init(&p, 9999, 1, 1, 64, 1.0);
    score_progress_text(&p, 0.1, 1.0, 1000.0, 9, "generate", text, sizeof(text));
    CHECK(strncmp(text, "\r\033[Kscoring: 9/9999 characters | 0% | ETA ", 40) == 0, "on a terminal: '%s'", text);
    score_progress_text(&p, 0.3, 2.0, 1000.0, 19, "generate", text, sizeof(text));
    CHECK(text[0] == '\0', "rewritten within half a second: '%s'", text);
    score_progress_text(&p, 1.0, 5.0, 1000.0, 49, "generate", text, sizeof(text));
    CHECK(strstr(text, "takes about 3m20s on 1 thread (") && !strstr(text, "--stride") &&
              strstr(text, "\n\r\033[Kscoring: 49/9999"),
          "on a terminal, the time then the line: '%s'", text);
}

// ---------------------------------------------------------------------------------------
// bad texts and options

TEST(score_bad_texts) {
    if (!trained_checkpoint()) return;
    const char *unknown = WORK_DIR "/unknown.txt", *one = WORK_DIR "/one.txt", *empty = WORK_DIR "/empty.txt";
    const char *bad_utf8 = WORK_DIR "/bad_utf8.txt", *cut = WORK_DIR "/cut.txt.gz", *csv = WORK_DIR "/bad.csv";
    const char *missing = WORK_DIR "/no_such.txt";
    test_write_file(unknown, "the fox \xe2\x82\xac jumps", 17);  // € at position 8
    test_write_file(one, "a", 1);
    test_write_file(empty, "", 0);
    test_write_file(bad_utf8, "the \xff fox", 9);
    gzFile f = gzopen(cut, "wb");
    static char words[20000];
    for (int i = 0; i < 2000; i++) memcpy(words + 10 * i, "the lazy. ", 10);
    CHECK(f && gzwrite(f, words, sizeof(words)) == (int)sizeof(words) && gzclose(f) == Z_OK, "cannot write %s", cut);
    size_t gz_len;
    char *gz = test_read_file(cut, &gz_len);
    if (CHECK(gz != NULL, "cannot read %s", cut)) test_write_file(cut, gz, gz_len / 2);
    free(gz);
    remove(missing), remove(csv);

    TestRun r = GENERATE(CKPT, "--score", unknown, "--surprisal", csv);
    if (test_exit_status(&r, 2, "an unknown character")) {
        test_output_has(&r, "U+20AC", "an unknown character");
        test_output_has(&r, WORK_DIR "/unknown.txt has 1 character (1 distinct) not in the checkpoint's vocabulary: "
                        "'€' U+20AC 1 time; the first, '€' (U+20AC), at position 8", "an unknown character");
        test_output_has(&r, "--skip-unknown", "an unknown character");
    }
    CHECK(access(csv, F_OK) != 0, "%s was written", csv);
    test_run_free(&r);
    r = GENERATE(CKPT, "--score", unknown, "--skip-unknown");
    Printed p;
    if (test_exit_status(&r, 0, "--skip-unknown") && parse_score(&r, &p)) {
        test_output_has(&r, "dropped 1 character of " WORK_DIR "/unknown.txt", "--skip-unknown");
        CHECK(p.scored == 13, "--skip-unknown: %ld characters scored, want 13 (14 kept, the first context)", p.scored);
    }
    test_run_free(&r);

    const struct { const char *path, *what, *message; } data_errors[] = {
        {missing, "a missing file", "no_such.txt"},
        {one, "one character", "at least 2"},
        {empty, "an empty file", "empty.txt"},
        {bad_utf8, "invalid UTF-8", "UTF-8"},
        {cut, "a truncated gzip file", "cut.txt.gz"},
        {WORK_DIR, "a directory", "not a regular file"},
    };
    for (size_t i = 0; i < sizeof(data_errors) / sizeof(data_errors[0]); i++) {
        r = GENERATE(CKPT, "--score", data_errors[i].path);
        if (test_exit_status(&r, 1, data_errors[i].what)) test_output_has(&r, data_errors[i].message, data_errors[i].what);
        test_run_free(&r);
    }
    // a CSV that cannot be written
    test_write_file(one, "ab", 2);
    r = GENERATE(CKPT, "--score", one, "--surprisal", WORK_DIR "/no_dir/out.csv");
    if (test_exit_status(&r, 1, "--surprisal in a missing directory")) test_output_has(&r, "no_dir", "--surprisal");
    test_run_free(&r);
}

// --score-task and --timeline's --csv refuse what they cannot do, naming it (exit 2): a model of
// a text has no task's split; --rows without --score-task, --score-task with a text or sampling
// options; --csv without --timeline, or over a file that is there without --force.
TEST(score_task_and_csv_refusals) {
    if (!trained_checkpoint()) return;
    static const struct {
        const char *args[6];
        const char *says;
    } cases[] = {
        {{CKPT, "--score-task", NULL}, "trained on a text, not a --task"},
        {{CKPT, "--rows", "10", NULL}, "--rows is --score-task's"},
        {{CKPT, "--score-task", "--score", "x.txt", NULL}, "--score-task scores the task's own rows"},
        {{CKPT, "--score-task", "-t", "0", NULL}, "--score-task scores the task's own rows"},
        {{CKPT, "--score-task", "--rows", "0", NULL}, "--rows"},
        {{CKPT, "--csv", WORK_DIR "/heads.csv", NULL}, "--csv writes a run's head scores: give --timeline"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TestRun r = test_run_program("generate", NULL, WORK_DIR "/refusal.log", 60, cases[i].args);
        if (test_exit_status(&r, 2, cases[i].args[1])) test_output_has(&r, cases[i].says, cases[i].args[1]);
        test_run_free(&r);
    }
    const char *csv = WORK_DIR "/heads.csv";
    test_write_file(csv, "mine\n", 5);
    TestRun r = test_run_program("generate", NULL, WORK_DIR "/refusal.log", 60,
                                 (const char *[]){"--timeline", WORK_DIR "/out", "--csv", csv, NULL});
    if (test_exit_status(&r, 2, "--csv over a file")) test_output_has(&r, "exists: give --force", "--csv over a file");
    test_run_free(&r);
    size_t len;
    char *kept = test_read_file(csv, &len);
    CHECK(kept && len == 5 && memcmp(kept, "mine\n", 5) == 0, "--csv without --force changed %s", csv);
    free(kept);
}
