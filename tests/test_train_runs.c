// Tests of a training run's everyday use (issue 12): the progress line fitted to a terminal
// (./train under a pseudo-terminal of a known width), a second run refused in a run's --out,
// the corpus fingerprint on resume, fine-tuning with --init-from, a new schedule on resume,
// stop signals, --keep-cr, the loss plot and the figures of the last lines; and that a run is
// never lost (issue 19): resume into another run or over newer work, a refused resume, the
// lock on --out, a stop during the whole-validation pass, a killed run's --out. ./train runs
// as a child process on small corpora written under tests/tmp/runs/, with a tiny model.
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "../common/clock.h"
#include "../common/platform.h"
#include "../format/probe_file.h"
#include "../format/safetensors.h"
#include "../training/out_dir.h"
#include "../training/progress.h"
#include "test.h"

#define RUNS_TMP "tests/tmp/runs"
#define MAX_ARGS 48
#define TINY "--n-layer", "1", "--n-head", "2", "--n-embd", "16", "--block-size", "16", "--batch-size", "4", \
             "--eval-batches", "2", "--threads", "1"

// ----------------------------------------------------------------------------
// helpers

static void write_text(const char *path, const char *text, size_t len) {
    FILE *fp = fopen(path, "wb");
    if (!CHECK(fp != NULL, "cannot write %s: %s", path, strerror(errno))) return;
    CHECK(fwrite(text, 1, len, fp) == len, "short write to %s", path);
    fclose(fp);
}

// A text of about `bytes` bytes from a few words (lowercase ASCII, space, punctuation, newline).
static char *words_text(size_t bytes, unsigned seed, const char *const *words, int num_words, size_t *len) {
    char *text = malloc(bytes + 64);
    size_t n = 0;
    while (n < bytes) {
        seed = seed * 1103515245u + 12345u;
        n += (size_t)sprintf(text + n, "%s%s", words[(seed >> 16) % (unsigned)num_words],
                             (seed >> 8) % 7 == 0 ? ".\n" : " ");
    }
    *len = n;
    return text;
}

static const char *const BASE_WORDS[] = {"the", "king", "queen", "of", "and", "to", "thou", "art", "my", "lord",
                                         "fair", "night", "ROMEO:", "JULIET:"};

// <dir>/corpus.txt: the text base runs train on.
static void base_corpus(const char *dir, char *path, size_t n) {
    snprintf(path, n, "%s/corpus.txt", dir);
    size_t len;
    char *text = words_text(6000, 7, BASE_WORDS, 14, &len);
    write_text(path, text, len);
    free(text);
}

// ./train's argv: its absolute path (a run in another directory finds it), then args.
static void train_argv(const char **argv, const char *const *args) {
    static char program[4096];
    if (platform_real_path(test_program("train"), program, sizeof(program)) != 0)
        snprintf(program, sizeof(program), "%s", test_program("train"));
    argv[0] = program;
    int n = 1;
    while (args[n - 1] && n <= MAX_ARGS) argv[n] = args[n - 1], n++;
    argv[n] = NULL;
}

// Runs ./train with args (NULL-terminated) in cwd (NULL: here), output into log, killed after
// timeout_s seconds.
static TestRun train_for(const char *cwd, const char *log, const char *const *args, double timeout_s) {
    const char *argv[MAX_ARGS + 2];
    train_argv(argv, args);
    return test_run_spawned(argv, &(TestSpawn){.out_path = log, .cwd = cwd, .measure = 1}, timeout_s);
}

// The same with a timeout of 120 s.
static TestRun train_in(const char *cwd, const char *log, const char *const *args) {
    return train_for(cwd, log, args, 120.0);
}
#define ARGS(...) ((const char *[]){__VA_ARGS__, NULL})


// 1 when the model tensors (not the optimizer's) of a and b hold the same bytes.
static int same_weights(const char *a, const char *b) {
    SafeTensors sa, sb;
    char err[ERR_LEN];
    if (safetensors_read(a, &sa, err) != 0) return 0;
    if (safetensors_read(b, &sb, err) != 0) {
        safetensors_free(&sa);
        return 0;
    }
    int same = 1, compared = 0;
    for (int i = 0; i < sa.num_tensors && same; i++) {
        const StTensor *ta = &sa.tensors[i];
        if (strncmp(ta->name, "optimizer.", 10) == 0) continue;
        const StTensor *tb = NULL;
        for (int k = 0; k < sb.num_tensors; k++)
            if (strcmp(sb.tensors[k].name, ta->name) == 0) tb = &sb.tensors[k];
        same = tb && tb->nbytes == ta->nbytes &&
               memcmp(safetensors_tensor_data(&sa, ta), safetensors_tensor_data(&sb, tb), ta->nbytes) == 0;
        compared++;
    }
    safetensors_free(&sa);
    safetensors_free(&sb);
    return same && compared > 0;
}

// ----------------------------------------------------------------------------
// 1. the progress line

TEST(runs_progress_line_fit) {
    const char *fields[] = {"step 120/2000", "loss 2.1234 (mean of 10)", "val 2.3456", "lr 1.00e-03",
                            "12.3 ms/step", "28000 tok/s", "1m02s elapsed", "ETA 1m05s"};
    static const int importance[] = {0, 1, 3, 5, 6, 4, 7, 2};
    char line[512];
    progress_line_fit(fields, importance, 8, 1000, line, sizeof(line));
    CHECK(strcmp(line, "step 120/2000 | loss 2.1234 (mean of 10) | val 2.3456 | lr 1.00e-03 | 12.3 ms/step | "
                       "28000 tok/s | 1m02s elapsed | ETA 1m05s") == 0, "wide: '%s'", line);
    progress_line_fit(fields, importance, 8, 80, line, sizeof(line));
    CHECK(strlen(line) <= 79 && !strstr(line, "elapsed") && strstr(line, "ETA") && strstr(line, "tok/s"),
          "80 columns: '%s' (%zu)", line, strlen(line));
    progress_line_fit(fields, importance, 8, 41, line, sizeof(line));
    CHECK(strcmp(line, "step 120/2000 | loss 2.1234 (mean of 10)") == 0, "41 columns: '%s'", line);
    progress_line_fit(fields, importance, 8, 40, line, sizeof(line));
    CHECK(strcmp(line, "step 120/2000") == 0, "40 columns: '%s'", line);
    progress_line_fit(fields, importance, 8, 10, line, sizeof(line));
    CHECK(strcmp(line, "step 120/") == 0, "10 columns: '%s'", line);
    // the width: the null device is no terminal, so $COLUMNS, else 80
    FILE *null = fopen(test_null_device(), "w");
    if (!CHECK(null != NULL, "cannot open %s", test_null_device())) return;
    int fd = fileno(null);
    const char *saved = getenv("COLUMNS");
    char saved_copy[64] = "";
    if (saved) snprintf(saved_copy, sizeof(saved_copy), "%s", saved);
    test_set_env("COLUMNS", "57");
    CHECK(terminal_width(fd) == 57, "COLUMNS=57: width %d", terminal_width(fd));
    test_set_env("COLUMNS", "wide");
    CHECK(terminal_width(fd) == 80, "COLUMNS=wide: width %d", terminal_width(fd));
    test_set_env("COLUMNS", NULL);
    CHECK(terminal_width(fd) == 80, "no COLUMNS: width %d", terminal_width(fd));
    if (saved) test_set_env("COLUMNS", saved_copy);
    fclose(null);
}

// Runs ./train on a terminal `columns` wide (tests/test_process.c); returns its output
// (malloc'd) or NULL.
static char *train_on_terminal(int columns, const char *const *args) {
    const char *argv[MAX_ARGS + 2];
    train_argv(argv, args);
    TestEnd end;
    char *out = test_run_on_terminal(argv, columns, &end), text[64];
    CHECK(out && end.status == 0, "./train on a terminal: %s:\n%s", test_end_text(&end, text), out ? out : "");
    return out;
}

// Checks every progress line the terminal showed (the text between \r, \n and the
// erase-line sequence that start with "step ") fits in columns - 1; returns how many.
static int check_fitted(const char *out, int columns, const char *must_have, const char *must_lack) {
    int lines = 0;
    const char *p = out;
    while ((p = strstr(p, "step ")) != NULL) {
        size_t len = strcspn(p, "\r\n\033");
        if (p == out || p[-1] == 'K' || p[-1] == '\n') {
            lines++;
            CHECK((int)len <= columns - 1, "%d columns: a progress line of %zu characters: '%.*s'", columns, len,
                  (int)len, p);
            char line[512];
            snprintf(line, sizeof(line), "%.*s", (int)len, p);
            int evaluating = strstr(line, "| evaluating: ") != NULL;  // an evaluation's own line
            CHECK(evaluating || strstr(line, must_have) != NULL, "%d columns: '%s' lacks '%s'", columns, line,
                  must_have);
            if (must_lack) CHECK(strstr(line, must_lack) == NULL, "%d columns: '%s' has '%s'", columns, line, must_lack);
        }
        p += len;
    }
    return lines;
}

TEST(runs_progress_line_on_terminal) {
    if (!test_system_has(TEST_TERMINALS)) {
        test_skip("no pseudo-terminal to run ./train on");
        return;
    }
    char dir[256], corpus[300], out[300];
    test_fresh_dir(dir, sizeof(dir), RUNS_TMP, "terminal");
    base_corpus(dir, corpus, sizeof(corpus));
    snprintf(out, sizeof(out), "%s/narrow", dir);
    char *text = train_on_terminal(60, ARGS(TINY, "--data", corpus, "--steps", "12", "--eval-every", "6",
                                            "--log-every", "4", "--out", out));
    if (!CHECK(text != NULL, "cannot run ./train on a pseudo-terminal")) return;
    int lines = check_fitted(text, 60, "loss ", "elapsed");
    CHECK(lines >= 12, "60 columns: %d progress lines, want one per step", lines);
    CHECK(strstr(text, "step 6/12 | evaluating: ") && strstr(text, " batches | ETA "),
          "an evaluation does not show on the line:\n%s", text);
    CHECK(strstr(text, "\r\033[K") != NULL, "the terminal line is not rewritten in place");
    free(text);
    snprintf(out, sizeof(out), "%s/wide", dir);
    text = train_on_terminal(200, ARGS(TINY, "--data", corpus, "--steps", "4", "--out", out));
    if (!CHECK(text != NULL, "cannot run ./train on a pseudo-terminal")) return;
    CHECK(check_fitted(text, 200, "elapsed | ETA", NULL) >= 4, "200 columns: too few progress lines");
    free(text);
    // not a terminal: plain lines with every field, whatever COLUMNS says
    char log[300];
    snprintf(log, sizeof(log), "%s/plain.log", dir);
    snprintf(out, sizeof(out), "%s/plain", dir);
    test_set_env("COLUMNS", "40");
    TestRun r = train_in(NULL, log, ARGS(TINY, "--data", corpus, "--steps", "4", "--log-every", "2", "--out", out));
    test_set_env("COLUMNS", NULL);
    if (test_exit_status(&r, 0, "./train into a file")) {
        CHECK(!strchr(r.output, '\r') && !strstr(r.output, "\033["), "a file got terminal sequences:\n%s", r.output);
        test_output_has(&r, "step 2/4 | loss ", "plain lines");
        test_output_has(&r, " elapsed | ETA ", "plain lines with every field");
    }
    test_run_free(&r);
}

// ----------------------------------------------------------------------------
// 2. a run's --out is not overwritten without --force

TEST(runs_second_run_refused_without_force) {
    char dir[256], corpus[300], out[300], log[300], csv[300], best[300], plot[300];
    test_fresh_dir(dir, sizeof(dir), RUNS_TMP, "overwrite");
    base_corpus(dir, corpus, sizeof(corpus));
    snprintf(out, sizeof(out), "%s/run", dir);
    snprintf(log, sizeof(log), "%s/run.log", dir);
    snprintf(csv, sizeof(csv), "%s/log.csv", out);
    snprintf(best, sizeof(best), "%s/best.safetensors", out);
    snprintf(plot, sizeof(plot), "%s/loss.svg", out);
    TestRun r = train_in(NULL, log, ARGS(TINY, "--data", corpus, "--steps", "6", "--eval-every", "3", "--out", out));
    int ok = test_exit_status(&r, 0, "the first run");
    test_run_free(&r);
    if (!ok) return;
    size_t before_len, after_len;
    char *before = test_read_file(csv, &before_len);
    r = train_in(NULL, log, ARGS(TINY, "--data", corpus, "--steps", "3", "--out", out));
    if (test_exit_status(&r, 2, "a second run into the same --out")) {
        test_output_has(&r, "already holds a run", "refused");
        test_output_has(&r, "--resume", "refused");
        test_output_has(&r, "--force", "refused");
    }
    test_run_free(&r);
    char *after = test_read_file(csv, &after_len);
    CHECK(before && after && before_len == after_len && memcmp(before, after, before_len) == 0,
          "the refused run changed %s", csv);
    free(before), free(after);
    // --force replaces it: best.safetensors and loss.svg of the old run are gone (no validation now)
    CHECK(test_file_exists(best) && test_file_exists(plot), "the first run wrote no best.safetensors or loss.svg");
    r = train_in(NULL, log, ARGS(TINY, "--data", corpus, "--steps", "3", "--val-fraction", "0", "--force",
                                 "--out", out));
    if (test_exit_status(&r, 0, "--force")) {
        test_output_has(&r, "--force: replacing the run in", "--force");
        const char *final = strstr(r.output, "\ncheckpoints: ");
        CHECK(final && !strstr(final, "best.safetensors") && !strstr(final, "loss.svg"),
              "the final lines name files this run did not write:\n%s", r.output);
    }
    test_run_free(&r);
    CHECK(!test_file_exists(best) && !test_file_exists(plot), "--force left the old run's best.safetensors or loss.svg");
    char ck[300], step[32];
    snprintf(ck, sizeof(ck), "%s/ckpt.safetensors", out);
    test_meta_value(ck, "state.step", step, sizeof(step));
    CHECK(strcmp(step, "3") == 0, "after --force the checkpoint is at step '%s', want 3", step);
    // a run refused before its first step leaves log.csv with its header alone: not a run
    snprintf(out, sizeof(out), "%s/refused", dir);
    r = train_in(NULL, log, ARGS(TINY, "--data", corpus, "--steps", "3", "--n-embd", "256", "--max-memory", "1",
                                 "--out", out));
    test_exit_status(&r, 2, "--max-memory 1");
    test_run_free(&r);
    r = train_in(NULL, log, ARGS(TINY, "--data", corpus, "--steps", "3", "--out", out));
    test_exit_status(&r, 0, "a run where a refused run left only log.csv's header");
    test_run_free(&r);
}

// ----------------------------------------------------------------------------
// 3. the corpus fingerprint: resume from another directory, --data of the same text

TEST(runs_resume_by_fingerprint) {
    char dir[256], corpus[300], log[300], ck[300], gz[300], value[64];
    test_fresh_dir(dir, sizeof(dir), RUNS_TMP, "fingerprint");
    base_corpus(dir, corpus, sizeof(corpus));
    snprintf(log, sizeof(log), "%s/train.log", dir);
    snprintf(ck, sizeof(ck), "%s/ckpt.safetensors", dir);
    // trained in dir with the relative path corpus.txt, the run written beside it
    TestRun r = train_in(dir, log, ARGS(TINY, "--data", "corpus.txt", "--steps", "4", "--out", "."));
    int ok = test_exit_status(&r, 0, "training in its directory");
    test_run_free(&r);
    if (!ok) return;
    CHECK(test_meta_value(ck, "train.corpus_fingerprint", value, sizeof(value)) && strchr(value, ':') &&
          strlen(strchr(value, ':') + 1) == 8, "train.corpus_fingerprint is '%s'", value);
    // resumed from here: corpus.txt is not in this directory, but beside the checkpoint
    r = train_in(NULL, log, ARGS("--resume", ck, "--steps", "6"));
    if (test_exit_status(&r, 0, "resume from another directory")) test_output_has(&r, "at step 4 of 6", "resumed");
    test_run_free(&r);
    // --data: a gzip copy of the same text under another name is the same corpus
    snprintf(gz, sizeof(gz), "%s/moved.gz", dir);
    size_t len;
    char *text = test_read_file(corpus, &len);
    gzFile f = gzopen(gz, "wb");
    if (f && text) gzwrite(f, text, (unsigned)len), gzclose(f);
    r = train_in(NULL, log, ARGS("--resume", ck, "--steps", "8", "--data", gz));
    if (test_exit_status(&r, 0, "resume with --data of a gzip copy")) test_output_has(&r, "at step 6 of 8", "resumed");
    test_run_free(&r);
    test_meta_value(ck, "train.data", value, sizeof(value));
    CHECK(strstr(value, "moved.gz") != NULL, "after --data the checkpoint names '%s'", value);
    // one character changed: refused, naming both fingerprints
    text[len / 2] = text[len / 2] == 'e' ? 'o' : 'e';
    snprintf(gz, sizeof(gz), "%s/edited.txt", dir);
    write_text(gz, text, len);
    free(text);
    r = train_in(NULL, log, ARGS("--resume", ck, "--steps", "10", "--data", gz));
    if (test_exit_status(&r, 1, "resume with --data of an edited text")) {
        test_output_has(&r, "is not the text", "edited text");
        test_output_has(&r, "CRC-32", "edited text");
    }
    test_run_free(&r);
    // nowhere to be found: the message says --data
    remove(corpus);
    r = train_in(NULL, log, ARGS("--resume", ck, "--steps", "10", "--data", corpus));
    test_exit_status(&r, 1, "resume with --data of a missing file");
    test_run_free(&r);
}

// ----------------------------------------------------------------------------
// 4. --init-from: fine-tuning on another text

TEST(runs_init_from_fine_tunes) {
    char dir[256], corpus[300], log[300], base[300], base_ck[300], other[300], foreign[300], out[300], ck[300],
        value[64];
    test_fresh_dir(dir, sizeof(dir), RUNS_TMP, "init_from");
    base_corpus(dir, corpus, sizeof(corpus));
    snprintf(log, sizeof(log), "%s/train.log", dir);
    snprintf(base, sizeof(base), "%s/base", dir);
    snprintf(base_ck, sizeof(base_ck), "%s/ckpt.safetensors", base);
    TestRun r = train_in(NULL, log, ARGS(TINY, "--data", corpus, "--steps", "6", "--dropout", "0.1", "--out", base));
    int ok = test_exit_status(&r, 0, "the base run");
    test_run_free(&r);
    if (!ok) return;
    // another text of a part of the vocabulary
    static const char *const other_words[] = {"thou", "art", "my", "lord", "and", "king"};
    size_t len;
    char *text = words_text(3000, 3, other_words, 6, &len);
    snprintf(other, sizeof(other), "%s/other.txt", dir);
    write_text(other, text, len);
    // step 0: the weights are the checkpoint's
    snprintf(out, sizeof(out), "%s/zero", dir);
    r = train_in(NULL, log, ARGS("--init-from", base_ck, "--data", other, "--steps", "0", "--out", out));
    snprintf(ck, sizeof(ck), "%s/ckpt.safetensors", out);
    if (test_exit_status(&r, 0, "--init-from --steps 0"))
        CHECK(same_weights(base_ck, ck), "--init-from with 0 steps changed the weights");
    test_run_free(&r);
    snprintf(out, sizeof(out), "%s/tuned", dir);
    snprintf(ck, sizeof(ck), "%s/ckpt.safetensors", out);
    r = train_in(NULL, log, ARGS("--init-from", base_ck, "--data", other, "--steps", "5", "--warmup", "0",
                                 "--threads", "1", "--out", out));
    if (test_exit_status(&r, 0, "--init-from")) {
        test_output_has(&r, "fine-tuning", "--init-from");
        test_output_has(&r, "step 0 of 5", "--init-from");
        CHECK(!same_weights(base_ck, ck), "5 fine-tuning steps left the weights as they were");
        test_meta_value(ck, "state.step", value, sizeof(value));
        CHECK(strcmp(value, "5") == 0, "the fine-tuned run is at step '%s', want 5", value);
        test_meta_value(ck, "optimizer.step", value, sizeof(value));
        CHECK(strcmp(value, "5") == 0, "the optimizer made %s steps, want 5 (a new optimizer)", value);
        test_meta_value(ck, "vocab_size", value, sizeof(value));
        char base_vocab[64];
        test_meta_value(base_ck, "vocab_size", base_vocab, sizeof(base_vocab));
        CHECK(strcmp(value, base_vocab) == 0, "vocabulary %s, the checkpoint's %s", value, base_vocab);
        test_meta_value(ck, "dropout", value, sizeof(value));
        CHECK(strcmp(value, "0.1") == 0, "dropout '%s', the checkpoint's 0.1", value);
    }
    test_run_free(&r);
    // the fine-tuned run resumes (its vocabulary is the checkpoint's, not its corpus's)
    r = train_in(NULL, log, ARGS("--resume", ck, "--steps", "7"));
    test_exit_status(&r, 0, "resuming the fine-tuned run");
    test_run_free(&r);
    // characters outside the vocabulary: named with counts and code points, or dropped
    snprintf(foreign, sizeof(foreign), "%s/foreign.txt", dir);
    char *mixed = malloc(len + 64);
    int n = sprintf(mixed, "zebra \xe2\x82\xac\xe2\x82\xac\t");
    memcpy(mixed + n, text, len);
    write_text(foreign, mixed, len + (size_t)n);
    free(mixed), free(text);
    snprintf(out, sizeof(out), "%s/foreign", dir);
    r = train_in(NULL, log, ARGS("--init-from", base_ck, "--data", foreign, "--steps", "2", "--out", out));
    if (test_exit_status(&r, 1, "characters outside the vocabulary")) {
        test_output_has(&r, "'\xe2\x82\xac' U+20AC 2 times", "the euro sign");
        test_output_has(&r, "'z' U+007A 1 time", "z");
        test_output_has(&r, "U+0009 (tab) 1 time", "the tab");
        test_output_has(&r, "--skip-unknown", "the way out");
    }
    test_run_free(&r);
    r = train_in(NULL, log, ARGS("--init-from", base_ck, "--data", foreign, "--steps", "2", "--skip-unknown",
                                 "--out", out));
    if (test_exit_status(&r, 0, "--skip-unknown")) test_output_has(&r, "dropped 5 characters (4 distinct)", "report");
    test_run_free(&r);
    // usage: the model is the checkpoint's; --skip-unknown needs --init-from
    r = train_in(NULL, log, ARGS("--init-from", base_ck, "--n-layer", "2", "--out", out));
    if (test_exit_status(&r, 2, "--init-from with --n-layer")) test_output_has(&r, "--n-layer", "named");
    test_run_free(&r);
    r = train_in(NULL, log, ARGS("--skip-unknown", "--data", corpus, "--out", out));
    test_exit_status(&r, 2, "--skip-unknown without --init-from");
    test_run_free(&r);
}

// ----------------------------------------------------------------------------
// 5. a new learning-rate schedule on resume

// The lr column of log.csv's row for step, or NAN.
static double logged_lr(const char *csv, long step) {
    size_t len;
    char *text = test_read_file(csv, &len);
    double lr = NAN;
    for (char *line = text ? strchr(text, '\n') : NULL; line && line[1]; line = strchr(line + 1, '\n')) {
        if (strtol(line + 1, NULL, 10) != step) continue;
        char *field = line + 1;
        for (int k = 0; k < 3 && field; k++) field = strchr(field, ',') ? strchr(field, ',') + 1 : NULL;
        if (field) lr = strtod(field, NULL);
    }
    free(text);
    return lr;
}

TEST(runs_resume_new_schedule) {
    char dir[256], corpus[300], log[300], out[300], ck[300], csv[300];
    test_fresh_dir(dir, sizeof(dir), RUNS_TMP, "schedule");
    base_corpus(dir, corpus, sizeof(corpus));
    snprintf(log, sizeof(log), "%s/train.log", dir);
    snprintf(out, sizeof(out), "%s/run", dir);
    snprintf(ck, sizeof(ck), "%s/ckpt.safetensors", out);
    snprintf(csv, sizeof(csv), "%s/log.csv", out);
    TestRun r = train_in(NULL, log, ARGS(TINY, "--data", corpus, "--steps", "10", "--warmup", "2", "--log-every", "1",
                                         "--out", out));
    int ok = test_exit_status(&r, 0, "the first run");
    test_run_free(&r);
    if (!ok) return;
    // extended without a new schedule: min_lr, and the message says so
    r = train_in(NULL, log, ARGS("--resume", ck, "--steps", "12"));
    if (test_exit_status(&r, 0, "extended on the old schedule"))
        test_output_has(&r, "steps 11-12 at --min-lr 0.0001 (the decay ended at step 10", "warned");
    test_run_free(&r);
    CHECK(fabs(logged_lr(csv, 12) - 1e-4) < 1e-9, "step 12 on the old schedule: lr %g, want 1e-4", logged_lr(csv, 12));
    // a new schedule: 2 warm-up steps from step 12, cosine to min_lr at step 20
    r = train_in(NULL, log, ARGS("--resume", ck, "--steps", "20", "--decay-steps", "20", "--warmup", "2"));
    if (test_exit_status(&r, 0, "a new schedule"))
        test_output_has(&r, "on a new learning-rate schedule: steps 13-14 warm up", "the resume message");
    test_run_free(&r);
    double want[] = {1e-3 / 3, 2e-3 / 3, 1e-3, 1e-4 + 0.5 * (1 + cos(M_PI / 6)) * 9e-4};
    for (int i = 0; i < 4; i++)
        CHECK(fabs(logged_lr(csv, 13 + i) - want[i]) < 1e-6 * want[i] + 1e-9, "step %d: lr %.6e, want %.6e", 13 + i,
              logged_lr(csv, 13 + i), want[i]);
    char value[64];
    test_meta_value(ck, "train.schedule_start", value, sizeof(value));
    CHECK(strcmp(value, "12") == 0, "train.schedule_start '%s', want 12", value);
    r = train_in(NULL, log, ARGS("--resume", ck, "--steps", "30", "--decay-steps", "15"));
    if (test_exit_status(&r, 2, "--decay-steps before the checkpoint's step"))
        test_output_has(&r, "after the checkpoint's step 20", "message");
    test_run_free(&r);
}

// The schedule as a run prints it ("learning rate: steps 1-2 warm up from X to Y, then steps
// 3-10 decay (cosine) from ..."), each phase checked against the rates log.csv logged for its
// steps: a warm-up rises, a decay falls, --min-lr is flat, and the printed figures (3
// significant digits) are the logged rates of its first and last steps. Returns the last
// step the phases reach, or -1 when the text holds no schedule.
static long check_printed_schedule(const char *output, const char *csv, const char *what) {
    const char *text = strstr(output, "learning rate: ");
    if (!text) text = strstr(output, "learning-rate schedule: ");
    if (!CHECK(text != NULL, "%s: no schedule printed:\n%s", what, output)) return -1;
    text = strchr(text, ':') + 2;
    long last_step = -1;
    char line[1024];
    snprintf(line, sizeof(line), "%.*s", (int)strcspn(text, "\n"), text);
    for (char *phase = line; phase; ) {
        char *next = strstr(phase, ", then ");
        if (next) *next = '\0';
        long a, b;
        double x = NAN, y = NAN;
        int kind = -1;  // 0 warm-up, 1 decay, 2 --min-lr
        if (sscanf(phase, "steps %ld-%ld warm up from %lf to %lf", &a, &b, &x, &y) == 4) kind = 0;
        else if (sscanf(phase, "step %ld warms up at %lf", &a, &x) == 2) kind = 0, b = a, y = x;
        else if (sscanf(phase, "steps %ld-%ld decay (cosine) from %lf to %lf", &a, &b, &x, &y) == 4) kind = 1;
        else if (sscanf(phase, "step %ld decays (cosine) at %lf", &a, &x) == 2) kind = 1, b = a, y = x;
        else if (sscanf(phase, "steps %ld-%ld at --min-lr %lf", &a, &b, &x) == 3) kind = 2, y = x;
        else if (sscanf(phase, "step %ld at --min-lr %lf", &a, &x) == 2) kind = 2, b = a, y = x;
        if (!CHECK(kind >= 0, "%s: a phase the test cannot read: '%s'", what, phase)) return -1;
        CHECK(last_step < 0 || a == last_step + 1, "%s: a phase starts at step %ld after %ld", what, a, last_step);
        double previous = NAN;
        for (long step = a; step <= b; step++) {
            double lr = logged_lr(csv, step);
            int ok = kind == 0 ? isnan(previous) || lr > previous
                     : kind == 1 ? isnan(previous) || lr <= previous
                                 : fabs(lr - x) <= 5e-3 * x;
            CHECK(ok && !isnan(lr), "%s: step %ld logged lr %g, not what '%s' says", what, step, lr, phase);
            previous = lr;
        }
        CHECK(fabs(logged_lr(csv, a) - x) <= 5e-3 * x && fabs(logged_lr(csv, b) - y) <= 5e-3 * y,
              "%s: '%s' but steps %ld and %ld logged %g and %g", what, phase, a, b, logged_lr(csv, a),
              logged_lr(csv, b));
        last_step = b;
        phase = next ? next + strlen(", then ") : NULL;
    }
    return last_step;
}

// A table of schedules, new runs, resumes and fine-tunes, whose printed description is held
// against the rates each run logged (tests/test_schedule.c checks the descriptions against
// learning_rate itself, for more of them).
TEST(runs_schedule_messages_match_logged_rates) {
    char dir[256], corpus[300], log[300];
    test_fresh_dir(dir, sizeof(dir), RUNS_TMP, "schedule_table");
    base_corpus(dir, corpus, sizeof(corpus));
    snprintf(log, sizeof(log), "%s/train.log", dir);
    static const struct {
        const char *what, *out, *from;  // from: the run resumed (--resume) or fine-tuned (--init-from)
        const char *args[8];
        long first, last;  // the steps the run takes
        const char *warning;  // in its output, or NULL: no warning
    } cases[] = {
        {"a run inside its warm-up", "short", NULL, {"--steps", "8", NULL}, 1, 8, "inside its 100-step warm-up"},
        {"its resume to 12", "short", "--resume", {"--steps", "12", NULL}, 9, 12, "last step, 12, is inside"},
        {"a new schedule on resume", "short", "--resume", {"--steps", "20", "--warmup", "2", NULL}, 13, 20, NULL},
        {"a decay that ends inside the warm-up", "inside", NULL,
         {"--steps", "12", "--warmup", "6", "--decay-steps", "3", NULL}, 1, 12, NULL},
        {"warm-up, decay and --min-lr", "three", NULL, {"--steps", "10", "--warmup", "2", "--decay-steps", "6", NULL}, 1,
         10, NULL},
        {"a fine-tune's default warm-up", "tuned", "--init-from", {"--steps", "20", NULL}, 1, 20, NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char out[300], ck[300], csv[300], from[300];
        snprintf(out, sizeof(out), "%s/%s", dir, cases[i].out);
        snprintf(ck, sizeof(ck), "%s/ckpt.safetensors", out);
        snprintf(csv, sizeof(csv), "%s/log.csv", out);
        snprintf(from, sizeof(from), "%s/short/ckpt.safetensors", dir);
        const char *argv[MAX_ARGS];
        int n = 0;
        if (cases[i].from && strcmp(cases[i].from, "--resume") == 0) argv[n++] = "--resume", argv[n++] = ck;
        else argv[n++] = "--data", argv[n++] = corpus, argv[n++] = "--out", argv[n++] = out;
        if (cases[i].from && strcmp(cases[i].from, "--init-from") == 0) argv[n++] = "--init-from", argv[n++] = from;
        else if (!cases[i].from) {
            const char *tiny[] = {TINY};
            for (size_t k = 0; k < sizeof(tiny) / sizeof(tiny[0]); k++) argv[n++] = tiny[k];
        }
        if (!cases[i].from || strcmp(cases[i].from, "--resume") != 0)  // a resume keeps the run's
            argv[n++] = "--log-every", argv[n++] = "1";
        for (int k = 0; cases[i].args[k]; k++) argv[n++] = cases[i].args[k];
        argv[n] = NULL;
        TestRun r = train_in(NULL, log, argv);
        if (test_exit_status(&r, 0, cases[i].what)) {
            long last = check_printed_schedule(r.output, csv, cases[i].what);
            CHECK(last == cases[i].last, "%s: the phases end at step %ld, want %ld", cases[i].what, last,
                  cases[i].last);
            char first[32];
            snprintf(first, sizeof(first), "step%s %ld", cases[i].first == cases[i].last ? "" : "s", cases[i].first);
            CHECK(strstr(r.output, first) != NULL, "%s: the schedule does not start at step %ld", cases[i].what,
                  cases[i].first);
            if (cases[i].warning) test_output_has(&r, cases[i].warning, cases[i].what);
            else CHECK(!strstr(r.output, "warning: this run's last step"), "%s warned:\n%s", cases[i].what, r.output);
        }
        test_run_free(&r);
    }
}

// ----------------------------------------------------------------------------
// 6. stop signals

// Starts ./train (output into log) and waits until log contains `ready`, at most READY_WAIT_S
// (generous: under qemu-aarch64, two suites side by side, step 0's probe and sample took over
// 120 s). Returns 0 with the child in *c, or -1 (a failed check; the child killed).
#define READY_WAIT_S 900.0
static int start_until(TestChild *c, const char *log, const char *const *args, const char *ready) {
    const char *argv[MAX_ARGS + 2];
    train_argv(argv, args);
    platform_remove_file(log);  // an earlier run's, which the child truncates only once it runs
    if (!CHECK(test_child_start(c, argv, &(TestSpawn){.out_path = log}) == 0, "cannot start ./train: %s",
               strerror(errno)))
        return -1;
    double start = now_seconds();
    TestEnd end;
    while (now_seconds() - start < READY_WAIT_S) {
        size_t len;
        char *text = test_read_file(log, &len);
        int seen = text && strstr(text, ready);
        free(text);
        if (seen) return 0;
        if (test_child_wait(c, 0.005, &end)) {
            CHECK(0, "./train ended (%s) before it printed '%s'", test_end_text(&end, (char[64]){0}), ready);
            return -1;
        }
    }
    test_child_kill(c, &end);
    CHECK(0, "./train did not print '%s' within %.0f s", ready, READY_WAIT_S);
    return -1;
}

// Waits for the child at most 20 s; returns how it ended (killed for taking too long: status
// -1, signal TEST_SIGKILL), the time it took in *seconds.
static TestEnd wait_at_most(TestChild *c, double *seconds) {
    double start = now_seconds();
    TestEnd end;
    if (!test_child_wait(c, 20.0, &end)) test_child_kill(c, &end);
    *seconds = now_seconds() - start;
    return end;
}

TEST(runs_stop_signals) {
    char dir[256], corpus[300], log[300], out[300], ck[300], value[64], want[160], text_end[64];
    test_fresh_dir(dir, sizeof(dir), RUNS_TMP, "signals");
    base_corpus(dir, corpus, sizeof(corpus));
    snprintf(log, sizeof(log), "%s/train.log", dir);
    snprintf(out, sizeof(out), "%s/eval", dir);
    snprintf(ck, sizeof(ck), "%s/ckpt.safetensors", out);
    const char *interrupt = platform_signal_name(test_stop_signal(TEST_INTERRUPT));  // SIGINT, Windows's Ctrl-C
    // an evaluation of a billion batches after step 1: SIGINT abandons it at once and saves
    const char *const long_eval[] = {"--n-layer", "1", "--n-head", "2", "--n-embd", "16", "--block-size", "16",
                                     "--batch-size", "4", "--threads", "1", "--data", corpus, "--steps", "5",
                                     "--eval-every", "1", "--eval-batches", "1000000000", "--save-every", "1000",
                                     "--out", out, NULL};
    TestChild c;
    if (start_until(&c, log, long_eval, "memory:") != 0) return;
    usleep(300000);
    CHECK(test_child_stop(&c, TEST_INTERRUPT) == 0, "cannot send %s", interrupt);
    double seconds = 0;
    TestEnd end = wait_at_most(&c, &seconds);
    size_t len;
    char *text = test_read_file(log, &len);
    CHECK(end.status == 130, "%s during an evaluation: %s (want exit 130 within 20 s):\n%s", interrupt,
          test_end_text(&end, text_end), text);
    if (!CHECK(text != NULL, "no output")) return;
    snprintf(want, sizeof(want), "%s: stopping", interrupt);
    CHECK(strstr(text, want) && strstr(text, "Ctrl-C again exits without saving"), "%s was not acknowledged:\n%s",
          interrupt, text);
    snprintf(want, sizeof(want), "stopped by %s after step 1", interrupt);
    CHECK(strstr(text, "evaluation at step 1 abandoned") && strstr(text, want),
          "the abandoned evaluation and the save are not reported:\n%s", text);
    free(text);
    printf("    %s during an evaluation: stopped %.3f s after it\n", interrupt, seconds);
    CHECK(seconds < 5.0, "the stop took %.1f s", seconds);
    test_meta_value(ck, "state.step", value, sizeof(value));
    CHECK(strcmp(value, "1") == 0, "the saved checkpoint is at step '%s', want 1", value);

    // two stop signals: the second exits without saving. The first is sent during a step of a
    // model whose steps take a second or more (1.6 s on one thread here), the second once the
    // first is acknowledged: it comes while the run ends the step under way, before the save.
    // Under an emulated CPU (test_emulated: qemu-aarch64 makes a step some 300 times as long)
    // the model is smaller (2 layers, n_embd 64, block 64): its step takes as long there (1.7 s
    // under qemu-aarch64 -cpu max) as the big one's natively, whose would take 8 minutes there.
    snprintf(out, sizeof(out), "%s/twice", dir);
    snprintf(ck, sizeof(ck), "%s/ckpt.safetensors", out);
    int emulated = test_emulated();
    const char *const twice[] = {"--n-layer", emulated ? "2" : "4", "--n-head", "4", "--n-embd",
                                 emulated ? "64" : "384", "--block-size", emulated ? "64" : "128", "--batch-size", "8",
                                 "--threads", "1", "--data", corpus, "--steps", "1000", "--log-every", "1",
                                 "--eval-every", "1000", "--save-every", "1000", "--no-probe", "--out", out, NULL};
    if (start_until(&c, log, twice, "step 1/") != 0) return;
    TestStop other = test_system_has(TEST_TERMINATE_REQUESTS) ? TEST_TERMINATE : TEST_INTERRUPT;
    CHECK(test_child_stop(&c, TEST_INTERRUPT) == 0, "cannot send %s", interrupt);
    int acknowledged = 0;
    for (int i = 0; i < 4000 && !acknowledged && !test_child_wait(&c, 0.005, &end); i++) {
        text = test_read_file(log, &len);
        acknowledged = text && strstr(text, "stopping: ");
        free(text);
    }
    CHECK(acknowledged && test_child_stop(&c, other) == 0, "the first request was not acknowledged, or the second "
          "could not be sent");
    end = wait_at_most(&c, &seconds);
    text = test_read_file(log, &len);
    int first = test_stop_signal(TEST_INTERRUPT), second = test_stop_signal(other);
    CHECK(end.status == -1 && (end.signal == first || end.signal == second),
          "two stop signals: %s, want ended by the second:\n%s", test_end_text(&end, text_end), text);
    CHECK(text && strstr(text, "again: exiting without saving"), "the second signal is not reported:\n%s", text);
    free(text);
    CHECK(!test_file_exists(ck), "two stop signals: a checkpoint was saved");

    // SIGHUP saves as SIGTERM does: exit 129
    if (!test_system_has(TEST_HANG_UPS)) {
        printf("    no hang-up to send on %s: SIGHUP left out\n", platform_name());
        return;
    }
    snprintf(out, sizeof(out), "%s/hup", dir);
    snprintf(ck, sizeof(ck), "%s/ckpt.safetensors", out);
    const char *const hup[] = {TINY, "--data", corpus, "--steps", "100000000", "--log-every", "50", "--out", out, NULL};
    if (start_until(&c, log, hup, "step 50/") != 0) return;
    test_child_stop(&c, TEST_HANG_UP);
    end = wait_at_most(&c, &seconds);
    text = test_read_file(log, &len);
    CHECK(end.status == 129, "SIGHUP: %s, want exit 129:\n%s", test_end_text(&end, text_end), text);
    CHECK(text && strstr(text, "stopped by SIGHUP after step"), "SIGHUP: no stop message:\n%s", text);
    free(text);
    CHECK(test_meta_value(ck, "state.step", value, sizeof(value)) && atol(value) >= 50, "SIGHUP saved step '%s'", value);
}

// ----------------------------------------------------------------------------
// 7. CR line endings: cleaned and reported, or kept with --keep-cr (and on resume)

// A stop request (SIGTERM; Windows: Ctrl-C, as Wine sends no Ctrl-Break) while ./train waits
// for a stalled standard input (a pipe whose writer is silent) stops it at once, before the
// first step: exit 128 + its signal, and --out as it was. Before, the run waited for the
// writer, then trained a step and saved. Issue 42, hole 6: a run stopped (or refused) before
// its first step creates nothing, so that "nothing was written in --out" is true: before, it
// had made --out and its lock file.

// Stops c (reading its text: *stop is its stop request) and checks that it ended at once with
// its status and message; returns its output.
static char *stopped_before_the_first_step(TestChild *c, TestStop stop, const char *log) {
    const char *name = platform_signal_name(test_stop_signal(stop));
    char want[128], ended[64];
    test_child_stop(c, stop);
    double seconds = 0;
    TestEnd end = wait_at_most(c, &seconds);
    size_t len;
    char *text = test_read_file(log, &len);
    CHECK(end.status == 128 + test_stop_signal(stop), "%s while the text stalls: %s (want exit %d within 20 s):\n%s",
          name, test_end_text(&end, ended), 128 + test_stop_signal(stop), text);
    snprintf(want, sizeof(want), "stopped by %s before the first step: no run was started, nothing was written in "
             "--out", name);
    CHECK(text && strstr(text, want), "no stop message:\n%s", text);
    printf("    %s while the text stalls: stopped %.3f s after it\n", name, seconds);
    CHECK(seconds < 5.0, "the stop took %.1f s", seconds);
    return text;
}

TEST(runs_stop_while_standard_input_stalls) {
    char dir[256], log[300], out[300], lock[320], fresh[300], fifo[300];
    test_fresh_dir(dir, sizeof(dir), RUNS_TMP, "stalled_stdin");
    snprintf(log, sizeof(log), "%s/train.log", dir);
    snprintf(out, sizeof(out), "%s/out", dir);
    snprintf(lock, sizeof(lock), "%s/.train.lock", out);
    TestStop stop = test_system_has(TEST_TERMINATE_REQUESTS) ? TEST_TERMINATE : TEST_INTERRUPT;
    // --out a directory a run once used (its lock file alone): the run takes the lock, writing
    // its pid in it, before it reads its text
    if (!test_make_dir(out) || test_write_file(lock, "", 0) != 0) return;
    const char *argv[MAX_ARGS + 2];
    train_argv(argv, ARGS(TINY, "--data", "-", "--steps", "5", "--out", out));
    int to_child;
    TestChild c;
    if (!CHECK(test_child_start(&c, argv, &(TestSpawn){.out_path = log, .stdin_pipe = &to_child}) == 0,
               "cannot start ./train: %s", strerror(errno)))
        return;
    const char *some = "the king and the queen of the night\n";  // a start, and then nothing
    CHECK(write(to_child, some, strlen(some)) == (long)strlen(some), "write: %s", strerror(errno));
    size_t len = 0;
    for (int i = 0; i < 4000 && len == 0; i++) {
        char *pid = test_read_file(lock, &len);
        free(pid);
        if (len == 0) usleep(5000);
    }
    usleep(300000);  // past the lock: reading standard input
    free(stopped_before_the_first_step(&c, stop, log));
    close(to_child);
    DIR *d = opendir(out);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL)
        CHECK(strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 || strcmp(e->d_name, ".train.lock") == 0,
              "%s holds %s after a stop before the first step", out, e->d_name);
    if (d) closedir(d);
    char *pid = test_read_file(lock, &len);
    CHECK(pid && len == 0, "the lock file holds '%s' after the run", pid ? pid : "(nothing to read)");
    free(pid);
    // a new --out, the text from a FIFO, stopped once ./train has read what came
    if (!test_system_has(TEST_FIFOS)) {
        printf("    no FIFOs on %s: a stop before the first step into a new --out left out\n", platform_name());
        return;
    }
    snprintf(fresh, sizeof(fresh), "%s/fresh", dir);
    snprintf(fifo, sizeof(fifo), "%s/text.fifo", dir);
    if (!CHECK(test_make_fifo(fifo) == 0, "mkfifo: %s", strerror(errno))) return;
    // the writer comes first: a ./train that opened the FIFO before it would (rightly) refuse a
    // pipe that nothing writes into
    int writer = test_fifo_feed(fifo, some);
    if (!CHECK(writer >= 0, "cannot write into %s: %s", fifo, strerror(errno))) return;
    train_argv(argv, ARGS(TINY, "--data", fifo, "--steps", "5", "--out", fresh));
    if (!CHECK(test_child_start(&c, argv, &(TestSpawn){.out_path = log}) == 0, "cannot start ./train: %s",
               strerror(errno))) {
        close(writer);
        return;
    }
    CHECK(test_fifo_wait_read(writer, 20.0) == 0, "%s was not read: %s", fifo, strerror(errno));
    free(stopped_before_the_first_step(&c, stop, log));
    close(writer);
    CHECK(!test_file_exists(fresh), "a run stopped before its first step made its --out %s", fresh);
}

// A FIFO named probe.bin or log.csv in a run's directory (nothing writes into it): --resume
// and ./generate --timeline refuse it at once, exit 1, naming it, where they would wait in
// open(2) for ever. Before, --resume hung on probe.bin holding the lock, and --timeline on
// either.
TEST(runs_fifo_run_files_refused) {
    if (!test_system_has(TEST_FIFOS)) {
        test_skip("no FIFOs to name like a run's files");
        return;
    }
    char dir[256], corpus[300], log[300], out[300], fifo_dir[300], ck[400], fifo[400];
    test_fresh_dir(dir, sizeof(dir), RUNS_TMP, "fifo_files");
    base_corpus(dir, corpus, sizeof(corpus));
    snprintf(log, sizeof(log), "%s/train.log", dir);
    snprintf(out, sizeof(out), "%s/run", dir);
    TestRun r = train_in(NULL, log, ARGS(TINY, "--data", corpus, "--steps", "2", "--out", out));
    int trained = test_exit_status(&r, 0, "the run");
    test_run_free(&r);
    if (!trained) return;
    static const char *const names[] = {"probe.bin", "log.csv"};
    for (int i = 0; i < 2; i++) {
        snprintf(fifo_dir, sizeof(fifo_dir), "%s/with_fifo_%d", dir, i);
        char command[1000];
        snprintf(command, sizeof(command), "cp -r '%s' '%s'", out, fifo_dir);
        if (!CHECK(system(command) == 0, "%s failed", command)) return;
        snprintf(fifo, sizeof(fifo), "%s/%s", fifo_dir, names[i]);
        snprintf(ck, sizeof(ck), "%s/ckpt.safetensors", fifo_dir);
        if (!CHECK(test_make_fifo(fifo) == 0, "mkfifo %s: %s", fifo, strerror(errno))) return;
        r = train_in(NULL, log, ARGS("--resume", ck, "--steps", "3", "--data", corpus));
        if (test_exit_status(&r, 1, fifo)) test_output_has(&r, "not a regular file", fifo);
        test_run_free(&r);
        r = test_run_program("generate", NULL, log, 30, (const char *[]){"--timeline", fifo_dir, "--force", NULL});
        if (test_exit_status(&r, 1, fifo)) test_output_has(&r, "a FIFO, not a regular file", fifo);
        test_run_free(&r);
    }
}

TEST(runs_keep_cr) {
    char dir[256], corpus[300], log[300], out[300], ck[300], value[64];
    test_fresh_dir(dir, sizeof(dir), RUNS_TMP, "keep_cr");
    snprintf(corpus, sizeof(corpus), "%s/crlf.txt", dir);
    size_t len;
    char *text = words_text(4000, 11, BASE_WORDS, 14, &len);
    char *crlf = malloc(2 * len + 8);
    size_t n = 0;
    memcpy(crlf, "\xef\xbb\xbf", 3), n = 3;
    for (size_t i = 0; i < len; i++) {
        if (text[i] == '\n') crlf[n++] = '\r';
        crlf[n++] = text[i];
    }
    size_t lines = n - len - 3;
    write_text(corpus, crlf, n);
    free(text), free(crlf);
    snprintf(log, sizeof(log), "%s/train.log", dir);
    snprintf(out, sizeof(out), "%s/clean", dir);
    TestRun r = train_in(NULL, log, ARGS(TINY, "--data", corpus, "--steps", "2", "--out", out));
    char want[160];
    snprintf(want, sizeof(want), "turned %zu CR LF", lines);
    if (test_exit_status(&r, 0, "a CR LF corpus")) {
        test_output_has(&r, "byte-order mark", "the BOM dropped");
        test_output_has(&r, want, "the CR LF count");
        test_output_has(&r, "(--keep-cr keeps them)", "the way to keep them");
    }
    test_run_free(&r);
    snprintf(ck, sizeof(ck), "%s/ckpt.safetensors", out);
    char clean_vocab[64];
    test_meta_value(ck, "vocab_size", clean_vocab, sizeof(clean_vocab));
    test_meta_value(ck, "train.keep_cr", value, sizeof(value));
    CHECK(strcmp(value, "0") == 0, "train.keep_cr '%s', want 0", value);
    snprintf(out, sizeof(out), "%s/kept", dir);
    snprintf(ck, sizeof(ck), "%s/ckpt.safetensors", out);
    r = train_in(NULL, log, ARGS(TINY, "--data", corpus, "--steps", "2", "--keep-cr", "--out", out));
    if (test_exit_status(&r, 0, "--keep-cr")) CHECK(!strstr(r.output, "CR LF"), "--keep-cr changed line endings");
    test_run_free(&r);
    test_meta_value(ck, "train.keep_cr", value, sizeof(value));
    CHECK(strcmp(value, "1") == 0, "train.keep_cr '%s', want 1", value);
    test_meta_value(ck, "vocab_size", value, sizeof(value));
    CHECK(atoi(value) == atoi(clean_vocab) + 1, "--keep-cr vocabulary %s, without %s: want one more (CR)", value,
          clean_vocab);
    // resuming the --keep-cr run reads the text as it did (else its fingerprint would differ)
    r = train_in(NULL, log, ARGS("--resume", ck, "--steps", "4"));
    test_exit_status(&r, 0, "resuming the --keep-cr run");
    test_run_free(&r);
}

// ----------------------------------------------------------------------------
// 8, 10. the last lines' figures agree with the progress line; loss.svg

// The <circle>s of the plot's <g class="val-points">: one per evaluation.
static int count_val_points(const char *svg) {
    const char *group = svg ? strstr(svg, "class=\"val-points\"") : NULL;
    const char *end = group ? strstr(group, "</g>") : NULL;
    int dots = 0;
    for (const char *p = group; p && end && (p = strstr(p, "<circle")) && p < end; p++) dots++;
    return dots;
}

TEST(runs_final_figures_and_loss_plot) {
    char dir[256], corpus[300], log[300], out[300], plot[300], csv[300];
    test_fresh_dir(dir, sizeof(dir), RUNS_TMP, "figures");
    base_corpus(dir, corpus, sizeof(corpus));
    snprintf(log, sizeof(log), "%s/train.log", dir);
    snprintf(out, sizeof(out), "%s/run", dir);
    snprintf(plot, sizeof(plot), "%s/loss.svg", out);
    snprintf(csv, sizeof(csv), "%s/log.csv", out);
    TestRun r = train_in(NULL, log, ARGS(TINY, "--data", corpus, "--steps", "13", "--log-every", "5", "--eval-every",
                                         "10", "--out", out));
    if (!test_exit_status(&r, 0, "a run of 13 steps")) {
        test_run_free(&r);
        return;
    }
    // the last report covers steps 11 to 13: the progress line and done: give the same mean
    const char *last = strstr(r.output, "step 13/13 | loss ");
    const char *done = strstr(r.output, "final train loss ");
    double progress_loss = NAN, done_loss = NAN;
    int progress_n = 0, done_n = 0;
    if (CHECK(last && done, "no last progress line or final train loss:\n%s", r.output)) {
        sscanf(last, "step 13/13 | loss %lf (mean of %d)", &progress_loss, &progress_n);
        sscanf(done, "final train loss %lf (mean of the last %d steps)", &done_loss, &done_n);
        CHECK(progress_n == 3 && done_n == 3 && progress_loss == done_loss && isfinite(done_loss),
              "progress line %.4f (mean of %d), done: %.4f (mean of the last %d):\n%s", progress_loss, progress_n,
              done_loss, done_n, r.output);
    }
    test_output_has(&r, "s training at ", "done: says its tok/s are of training");
    test_output_has(&r, "s evaluating and saving", "done: says what the rest was");
    test_output_has(&r, "; loss plot: ", "the final line names the plot");
    test_output_has(&r, "best.safetensors", "the final line names best.safetensors");
    test_run_free(&r);
    // log.csv's last row is the same mean
    size_t len;
    char *text = test_read_file(csv, &len);
    char *row = text ? strstr(text, "\n13,") : NULL;
    CHECK(row && fabs(strtod(row + 4, NULL) - done_loss) < 1e-4, "log.csv's row for step 13 disagrees: %s",
          row ? row + 1 : "(none)");
    free(text);
    // the plot: two evaluations (steps 10 and 13), both lines and the learning rate
    text = test_read_file(plot, &len);
    CHECK(text && strstr(text, "<svg") && strstr(text, "class=\"train-loss\"") && strstr(text, "class=\"val-loss\"") &&
          strstr(text, "class=\"lr\""), "%s is not the loss plot", plot);
    int dots = count_val_points(text);
    CHECK(dots == 2, "%s has %d validation points, want 2", plot, dots);
    free(text);
    // resumed: the plot holds the rows before the resume too
    char ck[300];
    snprintf(ck, sizeof(ck), "%s/ckpt.safetensors", out);
    r = train_in(NULL, log, ARGS("--resume", ck, "--steps", "20"));
    test_exit_status(&r, 0, "resumed to 20");
    test_run_free(&r);
    text = test_read_file(plot, &len);
    dots = 0;
    dots = count_val_points(text);
    CHECK(dots == 3, "the resumed run's plot has %d validation points, want 3 (steps 10, 13 and 20)", dots);
    free(text);
}

// ----------------------------------------------------------------------------
// 11. a run is never lost (issue 19): resuming into another run or over newer work, a refused
// resume, the lock on --out, a stop during the whole-validation pass, a killed run's --out

// The regular files of dir but its dot files (the lock), each as "name size crc32;", in name
// order, into a malloc'd string: equal snapshots, an unchanged directory.
static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static char *dir_snapshot(const char *dir) {
    char *names[256];
    int n = 0;
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL && n < 256)
        if (e->d_name[0] != '.') names[n++] = strdup(e->d_name);
    if (d) closedir(d);
    qsort(names, (size_t)n, sizeof(char *), by_name);
    size_t cap = 64 + (size_t)n * 600, used = 0;
    char *out = malloc(cap);
    out[0] = '\0';
    for (int i = 0; i < n; i++) {
        char path[600];
        size_t len;
        snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
        char *bytes = test_read_file(path, &len);
        if (bytes)
            used += (size_t)snprintf(out + used, cap - used, "%s %zu %08lx; ", names[i], len,
                                     crc32(0L, (const Bytef *)bytes, (uInt)len));
        free(bytes);
        free(names[i]);
    }
    return out;
}

// Checks that dir is as `before` (dir_snapshot) says.
static void check_unchanged(const char *dir, const char *before, const char *what) {
    char *after = dir_snapshot(dir);
    CHECK(strcmp(before, after) == 0, "%s changed %s:\nbefore: %s\nafter:  %s", what, dir, before, after);
    free(after);
}

// The steps of log.csv's rows, "5,10,15".
static void logged_steps(const char *csv, char *out, size_t size) {
    size_t len, used = 0;
    char *text = test_read_file(csv, &len);
    out[0] = '\0';
    for (char *line = text ? strchr(text, '\n') : NULL; line && line[1] && used < size; line = strchr(line + 1, '\n'))
        used += (size_t)snprintf(out + used, size - used, "%s%ld", used ? "," : "", strtol(line + 1, NULL, 10));
    free(text);
}

// A run in out of `first` steps (a row and an evaluation every 5, saved at the end), its
// checkpoint copied to `copy`, then resumed to `last` steps. Returns 1 when all went well.
static int run_copied_and_resumed(const char *log, const char *corpus, const char *out, const char *copy,
                                  const char *first, const char *last) {
    char ck[300];
    snprintf(ck, sizeof(ck), "%s/ckpt.safetensors", out);
    TestRun r = train_in(NULL, log, ARGS(TINY, "--data", corpus, "--steps", first, "--save-every", first,
                                         "--log-every", "5", "--eval-every", "5", "--out", out));
    int ok = test_exit_status(&r, 0, "the first run");
    test_run_free(&r);
    size_t len;
    char *bytes = test_read_file(ck, &len);
    int copied = bytes != NULL;
    if (bytes) write_text(copy, bytes, len);
    free(bytes);
    r = train_in(NULL, log, ARGS("--resume", ck, "--steps", last));
    ok &= test_exit_status(&r, 0, "the resumed run");
    test_run_free(&r);
    return ok && copied;
}

TEST(runs_resume_never_replaces_another_run) {
    char dir[256], corpus[300], log[300], victim[300], r0[300], r0_ck[300], old[300], ck[300], value[64];
    test_fresh_dir(dir, sizeof(dir), RUNS_TMP, "another_run");
    base_corpus(dir, corpus, sizeof(corpus));
    snprintf(log, sizeof(log), "%s/train.log", dir);
    snprintf(victim, sizeof(victim), "%s/victim", dir);
    snprintf(r0, sizeof(r0), "%s/r0", dir);
    snprintf(r0_ck, sizeof(r0_ck), "%s/ckpt.safetensors", r0);
    snprintf(old, sizeof(old), "%s/old.safetensors", r0);
    snprintf(ck, sizeof(ck), "%s/ckpt.safetensors", victim);
    TestRun r = train_in(NULL, log, ARGS(TINY, "--data", corpus, "--steps", "40", "--save-every", "10", "--eval-every",
                                         "10", "--seed", "7", "--out", victim));
    int ok = test_exit_status(&r, 0, "the victim's run");
    test_run_free(&r);
    r = train_in(NULL, log, ARGS(TINY, "--data", corpus, "--steps", "10", "--out", r0));
    ok &= test_exit_status(&r, 0, "r0's run");
    test_run_free(&r);
    if (!ok) return;
    CHECK(test_meta_value(r0_ck, "train.run_id", value, sizeof(value)) && strlen(value) == 16,
          "train.run_id is '%s', want 16 hex digits", value);
    // r0's checkpoint into victim: refused, victim untouched
    char *before = dir_snapshot(victim);
    r = train_in(NULL, log, ARGS("--resume", r0_ck, "--steps", "12", "--out", victim));
    if (test_exit_status(&r, 2, "resuming r0 into victim")) {
        test_output_has(&r, "holds another run", "resuming r0 into victim");
        test_output_has(&r, "train.run_id", "resuming r0 into victim");
        test_output_has(&r, "--force", "resuming r0 into victim");
    }
    test_run_free(&r);
    check_unchanged(victim, before, "resuming another run's checkpoint");
    // a checkpoint from before train.run_id is told apart by its options (--seed 7, --steps 40 against 1337, 10)
    if (test_edit_checkpoint(r0_ck, old, &(CheckpointEdit){.key = "train.run_id", .value = NULL}) != 0) return;
    r = train_in(NULL, log, ARGS("--resume", old, "--steps", "12", "--out", victim));
    if (test_exit_status(&r, 2, "resuming an older checkpoint of r0 into victim"))
        test_output_has(&r, "without train.run_id, a run is told by the options",
                        "resuming an older checkpoint of r0 into victim");
    test_run_free(&r);
    check_unchanged(victim, before, "resuming another run's older checkpoint");
    // ... and resumes in its own directory, as the same run as r0's ckpt.safetensors; it gets an identity
    r = train_in(NULL, log, ARGS("--resume", old, "--steps", "12"));
    test_exit_status(&r, 0, "resuming a checkpoint without train.run_id beside its run");
    test_run_free(&r);
    test_meta_value(r0_ck, "state.step", value, sizeof(value));
    CHECK(strcmp(value, "12") == 0, "r0 resumed to step '%s', want 12", value);
    CHECK(test_meta_value(r0_ck, "train.run_id", value, sizeof(value)) && strlen(value) == 16,
          "the resumed run's train.run_id is '%s'", value);
    // --force replaces victim's run: its log starts afresh, at r0's steps
    r = train_in(NULL, log, ARGS("--resume", r0_ck, "--steps", "14", "--out", victim, "--force"));
    if (test_exit_status(&r, 0, "resuming r0 into victim with --force"))
        test_output_has(&r, "--force: replacing the run in", "--force");
    test_run_free(&r);
    char steps[200], theirs[64];
    snprintf(log, sizeof(log), "%s/log.csv", victim);
    logged_steps(log, steps, sizeof(steps));
    CHECK(strcmp(steps, "14") == 0, "victim's log.csv after --force has the rows of steps %s, want 14", steps);
    test_meta_value(ck, "train.run_id", value, sizeof(value));
    test_meta_value(r0_ck, "train.run_id", theirs, sizeof(theirs));
    CHECK(strcmp(value, theirs) == 0, "victim's checkpoint is of run '%s', not r0's '%s'", value, theirs);
    free(before);
}

// Issue 42, hole 1: two checkpoints without train.run_id that differ only in
// position_encoding (a learned run, a RoPE one) are two runs: resuming the RoPE one into the
// learned one's --out is refused and leaves it as it was. Before, it replaced that run's
// checkpoint and appended to its log.csv, exit 0.
TEST(runs_resume_tells_runs_apart_by_every_option) {
    char dir[256], corpus[300], log[300], runs[2][300], ck[2][320], best[320];
    test_fresh_dir(dir, sizeof(dir), RUNS_TMP, "every_option");
    base_corpus(dir, corpus, sizeof(corpus));
    snprintf(log, sizeof(log), "%s/train.log", dir);
    static const char *const pos[2] = {"learned", "rope"};
    for (int i = 0; i < 2; i++) {
        snprintf(runs[i], sizeof(runs[i]), "%s/%s", dir, pos[i]);
        snprintf(ck[i], sizeof(ck[i]), "%s/ckpt.safetensors", runs[i]);
        snprintf(best, sizeof(best), "%s/best.safetensors", runs[i]);
        TestRun r = train_in(NULL, log, ARGS(TINY, "--data", corpus, "--steps", "10", "--pos", pos[i], "--no-probe",
                                             "--out", runs[i]));
        int ok = test_exit_status(&r, 0, pos[i]);
        test_run_free(&r);
        // checkpoints from before train.run_id: ckpt.safetensors without it, no best.safetensors
        if (!ok || test_edit_checkpoint(ck[i], best, &(CheckpointEdit){.key = "train.run_id", .value = NULL}) != 0 ||
            !CHECK(platform_replace_file(best, ck[i]) == 0, "cannot move %s to %s: %s", best, ck[i], strerror(errno)))
            return;
    }
    char *before = dir_snapshot(runs[0]);
    TestRun r = train_in(NULL, log, ARGS("--resume", ck[1], "--out", runs[0], "--steps", "20", "--no-probe"));
    if (test_exit_status(&r, 2, "resuming the RoPE run into the learned one's --out"))
        test_output_has(&r, "has position_encoding 'learned', not 'rope'", "the resume");
    test_run_free(&r);
    check_unchanged(runs[0], before, "resuming another run that differs only in position_encoding");
    free(before);
}

TEST(runs_resume_older_checkpoint_needs_force) {
    char dir[256], corpus[300], log[300], out[300], ck[300], copy[300], csv[300], steps[200], value[64];
    test_fresh_dir(dir, sizeof(dir), RUNS_TMP, "older");
    base_corpus(dir, corpus, sizeof(corpus));
    snprintf(log, sizeof(log), "%s/train.log", dir);
    snprintf(out, sizeof(out), "%s/run", dir);
    snprintf(ck, sizeof(ck), "%s/ckpt.safetensors", out);
    snprintf(copy, sizeof(copy), "%s/copy15.safetensors", out);
    snprintf(csv, sizeof(csv), "%s/log.csv", out);
    if (!run_copied_and_resumed(log, corpus, out, copy, "15", "30")) return;
    // the copy at step 15: refused, naming what it would drop
    char *before = dir_snapshot(out);
    TestRun r = train_in(NULL, log, ARGS("--resume", copy, "--steps", "40"));
    if (test_exit_status(&r, 2, "resuming a copy at step 15 beside the run at 30")) {
        test_output_has(&r, "is at step 15", "the older checkpoint");
        test_output_has(&r, "ckpt.safetensors at step 30", "the older checkpoint");
        test_output_has(&r, "log.csv's rows of steps 20 to 30", "the older checkpoint");
        test_output_has(&r, "--force", "the older checkpoint");
    }
    test_run_free(&r);
    check_unchanged(out, before, "resuming an older checkpoint");
    free(before);
    // --force drops them: the run goes on from step 15
    r = train_in(NULL, log, ARGS("--resume", copy, "--steps", "20", "--force"));
    if (test_exit_status(&r, 0, "resuming the copy with --force")) test_output_has(&r, "--force: dropping", "--force");
    test_run_free(&r);
    logged_steps(csv, steps, sizeof(steps));
    CHECK(strcmp(steps, "5,10,15,20") == 0, "log.csv after --force has the rows of steps %s, want 5,10,15,20", steps);
    test_meta_value(ck, "state.step", value, sizeof(value));
    CHECK(strcmp(value, "20") == 0, "the checkpoint is at step '%s', want 20", value);
}

TEST(runs_refused_resume_keeps_log_rows) {
    char dir[256], corpus[300], other[300], log[300], out[300], ck[300], step10[300], csv[300], steps[200];
    test_fresh_dir(dir, sizeof(dir), RUNS_TMP, "refused_rows");
    base_corpus(dir, corpus, sizeof(corpus));
    snprintf(other, sizeof(other), "%s/other.txt", dir);
    size_t len;
    static const char *const other_words[] = {"a", "b", "c", "the", "king"};
    char *text = words_text(3000, 3, other_words, 5, &len);
    write_text(other, text, len);
    free(text);
    snprintf(log, sizeof(log), "%s/train.log", dir);
    snprintf(out, sizeof(out), "%s/fr", dir);
    snprintf(ck, sizeof(ck), "%s/ckpt.safetensors", out);
    snprintf(step10, sizeof(step10), "%s/step10.safetensors", out);
    snprintf(csv, sizeof(csv), "%s/log.csv", out);
    if (!run_copied_and_resumed(log, corpus, out, step10, "10", "30")) return;
    // the rows of a run stopped after its last save (steps 40 and 50)
    FILE *fp = fopen(csv, "a");
    if (fp) fputs("40,2.0,,1e-3,2560,1.0\n50,2.0,,1e-3,3200,1.1\n", fp), fclose(fp);
    char *before = dir_snapshot(out);
    // the older checkpoint on another text: refused (as older; with --force, by the fingerprint)
    TestRun r = train_in(NULL, log, ARGS("--resume", step10, "--data", other));
    test_exit_status(&r, 2, "the step-10 checkpoint on another text");
    test_run_free(&r);
    check_unchanged(out, before, "a refused resume of an older checkpoint");
    r = train_in(NULL, log, ARGS("--resume", step10, "--data", other, "--force"));
    if (test_exit_status(&r, 1, "the step-10 checkpoint on another text, --force"))
        test_output_has(&r, "is not the text", "the fingerprint");
    test_run_free(&r);
    check_unchanged(out, before, "a resume refused by its fingerprint");
    // the newest checkpoint on another text: refused by the fingerprint, rows 40 and 50 kept
    r = train_in(NULL, log, ARGS("--resume", ck, "--data", other, "--steps", "60"));
    test_exit_status(&r, 1, "the checkpoint on another text");
    test_run_free(&r);
    check_unchanged(out, before, "a resume refused by its fingerprint");
    free(before);
    logged_steps(csv, steps, sizeof(steps));
    CHECK(strcmp(steps, "5,10,15,20,25,30,40,50") == 0, "log.csv has the rows of steps %s, want 5,10,...,30,40,50",
          steps);
    // resumed for real, the rows after the checkpoint go (and it says so)
    r = train_in(NULL, log, ARGS("--resume", ck, "--steps", "31"));
    if (test_exit_status(&r, 0, "resumed to 31"))
        test_output_has(&r, "dropping log.csv's rows of steps 40 to 50", "the rows after the checkpoint");
    test_run_free(&r);
    logged_steps(csv, steps, sizeof(steps));
    CHECK(strcmp(steps, "5,10,15,20,25,30,31") == 0, "log.csv has the rows of steps %s, want 5,10,...,30,31", steps);
}

TEST(runs_out_locked_by_one_run) {
    char dir[256], corpus[300], log[300], first_log[300], out[300], ck[300], lock[300], want[64], value[64];
    test_fresh_dir(dir, sizeof(dir), RUNS_TMP, "lock");
    base_corpus(dir, corpus, sizeof(corpus));
    snprintf(log, sizeof(log), "%s/train.log", dir);
    snprintf(first_log, sizeof(first_log), "%s/first.log", dir);
    snprintf(out, sizeof(out), "%s/run", dir);
    snprintf(ck, sizeof(ck), "%s/ckpt.safetensors", out);
    snprintf(lock, sizeof(lock), "%s/.train.lock", out);
    const char *const first[] = {TINY, "--data", corpus, "--steps", "100000000", "--save-every", "5", "--out", out,
                                 NULL};
    TestChild c;
    if (start_until(&c, first_log, first, "step 20/") != 0) return;
    snprintf(want, sizeof(want), "in use by another run (pid %ld)", c.pid);
    // a second run on the same --out, even with --force, and a resume of the running one: exit 2
    TestRun r = train_in(NULL, log, ARGS(TINY, "--data", corpus, "--steps", "3", "--force", "--out", out));
    if (test_exit_status(&r, 2, "a second run while the first runs")) test_output_has(&r, want, "the second run");
    test_run_free(&r);
    r = train_in(NULL, log, ARGS("--resume", ck, "--steps", "100000001"));
    if (test_exit_status(&r, 2, "resuming the running run")) test_output_has(&r, want, "resuming the running run");
    test_run_free(&r);
    TestEnd end;
    CHECK(!test_child_wait(&c, 0, &end), "the first run ended");
    // SIGKILL (Windows: TerminateProcess): the system releases the lock, and the run resumes
    test_child_kill(&c, &end);
    CHECK(test_file_exists(lock), "no %s", lock);
    test_meta_value(ck, "state.step", value, sizeof(value));
    char steps[32];
    snprintf(steps, sizeof(steps), "%ld", atol(value) + 2);
    r = train_in(NULL, log, ARGS("--resume", ck, "--steps", steps));
    test_exit_status(&r, 0, "resuming after the first run was killed");
    test_run_free(&r);
    // a run refused makes no --out (issue 42, hole 6: it made --out and its lock file)
    snprintf(out, sizeof(out), "%s/refused", dir);
    r = train_in(NULL, log, ARGS("--data", corpus, "--steps", "3", "--max-memory", "1", "--n-layer", "1",
                                 "--n-head", "2", "--n-embd", "512", "--out", out));
    test_exit_status(&r, 2, "a run refused by its memory");
    test_run_free(&r);
    CHECK(!test_file_exists(out), "the refused run made its --out %s", out);
    char missing[320];
    snprintf(missing, sizeof(missing), "%s/no such corpus.txt", dir);
    r = train_in(NULL, log, ARGS(TINY, "--data", missing, "--steps", "3", "--out", out));
    test_exit_status(&r, 1, "a run on a corpus that is not there");
    test_run_free(&r);
    CHECK(!test_file_exists(out), "the run on a corpus that is not there made its --out %s", out);
    // a directory that holds the lock file alone holds no run
    char found[128] = "";
    snprintf(lock, sizeof(lock), "%s/.train.lock", out);
    if (!test_make_dir(out) || test_write_file(lock, "", 0) != 0) return;
    CHECK(out_dir_find_run(out, found, sizeof(found)) == 0, "out_dir_find_run finds a run (%s) in %s", found, out);
    r = train_in(NULL, log, ARGS(TINY, "--data", corpus, "--steps", "3", "--out", out));
    test_exit_status(&r, 0, "a run where the lock file alone is");
    test_run_free(&r);
}

TEST(runs_stop_during_whole_validation_pass) {
    char dir[256], corpus[300], log[300], out[300], ck[300], value[64];
    test_fresh_dir(dir, sizeof(dir), RUNS_TMP, "validation_stop");
    snprintf(corpus, sizeof(corpus), "%s/corpus.txt", dir);
    size_t len;
    char *text = words_text(400000, 11, BASE_WORDS, 14, &len);
    write_text(corpus, text, len);
    free(text);
    snprintf(log, sizeof(log), "%s/train.log", dir);
    snprintf(out, sizeof(out), "%s/run", dir);
    snprintf(ck, sizeof(ck), "%s/ckpt.safetensors", out);
    // one step, then a whole-validation pass of 200,000 characters through a wider model: many
    // seconds (without the timeline's samples, which take seconds of their own under the sanitizers)
    const char *const args[] = {"--n-layer", "2", "--n-head", "4", "--n-embd", "256", "--block-size", "64",
                                "--batch-size", "4", "--eval-batches", "1", "--threads", "1", "--val-fraction", "0.5",
                                "--data", corpus, "--steps", "1", "--no-probe", "--out", out, NULL};
    TestChild c;
    if (start_until(&c, log, args, "checkpoints: ") != 0) return;
    usleep(200000);
    test_child_stop(&c, TEST_INTERRUPT);
    double seconds = 0;
    TestEnd end = wait_at_most(&c, &seconds);
    char ended[64], want[128];
    text = test_read_file(log, &len);
    if (!CHECK(text != NULL, "no output (%s)", test_end_text(&end, ended))) return;
    CHECK(end.status == 130, "a stop during the whole-validation pass: %s (want exit 130 within 20 s):\n%s",
          test_end_text(&end, ended), text);
    snprintf(want, sizeof(want), "stopped by %s during the whole-validation pass",
             platform_signal_name(test_stop_signal(TEST_INTERRUPT)));
    CHECK(strstr(text, want) && !strstr(text, "whole validation split:"),
          "the stop is not reported, or the pass went on:\n%s", text);
    // the pass checks for a stop before each forward of a batch: the stop waits for one forward at
    // most, and the step (a forward and a backward of the same batch) is longer than that; it
    // was 0.05 s natively and 16 s under qemu-aarch64, whose forward the stop waited 5 s for
    const char *ms = strstr(text, " ms/step");
    while (ms && ms > text && (isdigit((unsigned char)ms[-1]) || ms[-1] == '.')) ms--;
    double step_seconds = ms ? atof(ms) / 1000.0 : 0.0;
    free(text);
    printf("    a stop during the whole-validation pass: stopped %.3f s after it (step 1 took %.3f s)\n", seconds,
           step_seconds);
    CHECK(ms != NULL, "the log has no step line with its ms/step");
    CHECK(seconds < 5.0 + step_seconds, "the stop took %.1f s, more than 5 s and the %.1f s of a step", seconds,
          step_seconds);
    CHECK(test_meta_value(ck, "state.step", value, sizeof(value)) && strcmp(value, "1") == 0,
          "the checkpoint is at step '%s', want 1", value);
}

TEST(runs_killed_init_from_leaves_no_false_advice) {
    char dir[256], corpus[300], log[300], base[300], base_ck[300], out[300], ck[300];
    test_fresh_dir(dir, sizeof(dir), RUNS_TMP, "killed_init_from");
    base_corpus(dir, corpus, sizeof(corpus));
    snprintf(log, sizeof(log), "%s/train.log", dir);
    snprintf(base, sizeof(base), "%s/base", dir);
    snprintf(base_ck, sizeof(base_ck), "%s/ckpt.safetensors", base);
    snprintf(out, sizeof(out), "%s/tuned", dir);
    snprintf(ck, sizeof(ck), "%s/ckpt.safetensors", out);
    TestRun r = train_in(NULL, log, ARGS(TINY, "--data", corpus, "--steps", "3", "--out", base));
    int ok = test_exit_status(&r, 0, "the base run");
    test_run_free(&r);
    if (!ok) return;
    // killed before its first save or evaluation: log.csv alone
    const char *const tune[] = {"--init-from", base_ck, "--data", corpus, "--steps", "100000000", "--save-every",
                                "100000000", "--eval-every", "100000000", "--threads", "1", "--out", out, NULL};
    TestChild c;
    TestEnd end;
    if (start_until(&c, log, tune, "step 20/") != 0) return;
    test_child_kill(&c, &end);
    CHECK(!test_file_exists(ck), "the killed run saved %s", ck);
    // the runs after it write a log of their own: under Wine the killed process's handle on
    // its log may outlive it for a moment, and a run's output written there was seen lost
    snprintf(log, sizeof(log), "%s/after_kill.log", dir);
    r = train_in(NULL, log, ARGS("--init-from", base_ck, "--data", corpus, "--steps", "3", "--out", out));
    if (test_exit_status(&r, 2, "a new run where a killed one left log.csv")) {
        CHECK(!strstr(r.output, "--resume"), "the message advises --resume, with no checkpoint to resume:\n%s",
              r.output);
        test_output_has(&r, "stopped before it saved a checkpoint", "what is there");
        test_output_has(&r, "--force", "what to do");
    }
    test_run_free(&r);
    r = train_in(NULL, log, ARGS("--init-from", base_ck, "--data", corpus, "--steps", "3", "--force", "--out", out));
    test_exit_status(&r, 0, "--force");
    test_run_free(&r);
}

// The run files of a killed or tampered --out (issue 29, L6 and L8): a log.csv row torn inside
// its step field, as a kill during its write leaves it, is cut on resume (the resume refused
// before: "line 6 is not a row"), while a damaged row before the end is still refused; a
// log.csv that is a symbolic link out of --out is refused, the file it names untouched (it
// was truncated and written before).
TEST(runs_torn_log_row_cut_and_linked_log_refused) {
    char dir[256], corpus[300], log[300], out[300], ck[300], csv[300], steps[200], outside[300];
    test_fresh_dir(dir, sizeof(dir), RUNS_TMP, "log_files");
    base_corpus(dir, corpus, sizeof(corpus));
    snprintf(log, sizeof(log), "%s/train.log", dir);
    snprintf(out, sizeof(out), "%s/run", dir);
    snprintf(ck, sizeof(ck), "%s/ckpt.safetensors", out);
    snprintf(csv, sizeof(csv), "%s/log.csv", out);
    TestRun r = train_in(NULL, log, ARGS(TINY, "--data", corpus, "--steps", "10", "--log-every", "5", "--eval-every",
                                         "5", "--out", out));
    int ok = test_exit_status(&r, 0, "the first run");
    test_run_free(&r);
    if (!ok) return;
    FILE *fp = fopen(csv, "a");
    if (fp) fputs("1", fp), fclose(fp);  // the first byte of step 15's row
    r = train_in(NULL, log, ARGS("--resume", ck, "--steps", "15"));
    if (test_exit_status(&r, 0, "a resume after a torn row"))
        test_output_has(&r, "cut 1 bytes of a row that a stopped run left unfinished", "the torn row");
    test_run_free(&r);
    logged_steps(csv, steps, sizeof(steps));
    CHECK(strcmp(steps, "5,10,15") == 0, "log.csv has the rows of steps %s, want 5,10,15", steps);
    // an unfinished end longer than a row, or of what no row holds, is damage (issue 42, hole 3:
    // 300 MB of it were cut as "a row that a stopped run left unfinished"): moved aside, and
    // the whole rows go on in a new log.csv
    char aside[320], *junk = malloc(4096);
    if (!CHECK(junk != NULL, "out of memory")) return;
    for (int i = 0; i < 4096; i++) junk[i] = "0123456789,."[i % 12];  // digits, but longer than any row
    fp = fopen(csv, "a");
    if (fp) fwrite(junk, 1, 4096, fp), fclose(fp);
    free(junk);
    r = train_in(NULL, log, ARGS("--resume", ck, "--steps", "16"));
    if (test_exit_status(&r, 0, "a resume after 4096 bytes of no row")) {
        test_output_has(&r, "log.csv: its last 4096 bytes are no row", "the damaged end");
        test_output_has(&r, "moved the file to", "the damaged end");
        CHECK(!strstr(r.output, "left unfinished"), "the damage taken for a torn row:\n%s", r.output);
    }
    test_run_free(&r);
    logged_steps(csv, steps, sizeof(steps));
    CHECK(strcmp(steps, "5,10,15,16") == 0, "log.csv has the rows of steps %s, want 5,10,15,16", steps);
    snprintf(aside, sizeof(aside), "%s.damaged", csv);
    size_t len;
    char *kept = test_read_file(aside, &len);
    CHECK(kept && len > 4096 && !memchr(kept + len - 4096, '\n', 4096), "%s does not hold the damaged log whole",
          aside);
    free(kept);
    fp = fopen(csv, "a");
    if (fp) fputs("17,3.9\x1b[2J", fp), fclose(fp);  // short, but with what no row holds
    r = train_in(NULL, log, ARGS("--resume", ck, "--steps", "17"));
    if (test_exit_status(&r, 0, "a resume after an escape sequence"))
        test_output_has(&r, "log.csv: its last 10 bytes are no row", "the escape sequence");
    test_run_free(&r);
    snprintf(aside, sizeof(aside), "%s.damaged.2", csv);
    CHECK(test_file_exists(aside), "no %s", aside);
    logged_steps(csv, steps, sizeof(steps));
    CHECK(strcmp(steps, "5,10,15,16,17") == 0, "log.csv has the rows of steps %s, want 5,10,15,16,17", steps);
    // damage before the end is no torn row
    char *text = test_read_file(csv, &len);
    char *row = text ? strstr(text, "\n10,") : NULL;
    if (!CHECK(row != NULL, "no row of step 10 in %s", csv)) return free(text);
    row[1] = 'x';
    write_text(csv, text, len);
    free(text);
    r = train_in(NULL, log, ARGS("--resume", ck, "--steps", "20"));
    if (test_exit_status(&r, 1, "a resume with a damaged row")) test_output_has(&r, "line 3 is not a row", "the row");
    test_run_free(&r);
    // a link named log.csv
    if (!test_system_has(TEST_SYMLINKS)) {
        printf("    no symbolic links on %s: a linked log.csv left out\n", platform_name());
        return;
    }
    snprintf(outside, sizeof(outside), "%s/outside.txt", dir);
    write_text(outside, "not a log\n", 10);
    remove(csv);
    CHECK(test_make_symlink("../outside.txt", csv) == 0, "cannot make a link %s: %s", csv, strerror(errno));
    r = train_in(NULL, log, ARGS("--resume", ck, "--steps", "20"));
    if (test_exit_status(&r, 1, "a resume with a linked log.csv")) test_output_has(&r, "symbolic link", "the link");
    test_run_free(&r);
    r = train_in(NULL, log, ARGS(TINY, "--data", corpus, "--steps", "5", "--out", out, "--force"));
    test_exit_status(&r, 1, "a new run with --force and a linked log.csv");
    test_run_free(&r);
    text = test_read_file(outside, &len);
    CHECK(text && len == 10 && memcmp(text, "not a log\n", 10) == 0, "the file log.csv linked to was changed");
    free(text);
}

// ----------------------------------------------------------------------------
// 13. paths with characters beyond ASCII (Windows: the programs' code page is UTF-8)

// A corpus and an --out whose names are Latin, Cyrillic, CJK and a symbol: trained, resumed,
// read by ./generate, and named back in the messages byte for byte; a missing one of them is
// refused naming it.
TEST(runs_non_ascii_paths) {
    char dir[256], corpus[300], out[320], ck[360], log[300], missing[320];
    test_fresh_dir(dir, sizeof(dir), RUNS_TMP, "\xc3\xbc" "n" "\xc3\xaf" "c" "\xc3\xb8" "d" "\xc3\xa9 \xe2\x9c\x93");  // "ünïcødé ✓"
    snprintf(corpus, sizeof(corpus), "%s/\xd0\xba\xd0\xbe\xd1\x80\xd0\xbf\xd1\x83\xd1\x81.txt", dir);  // корпус.txt
    snprintf(out, sizeof(out), "%s/\xe8\xb7\xaf\xe5\xbe\x84 run", dir);  // 路径 run
    snprintf(ck, sizeof(ck), "%s/ckpt.safetensors", out);
    snprintf(log, sizeof(log), "%s/train.log", RUNS_TMP);
    size_t len;
    char *text = words_text(6000, 13, BASE_WORDS, 14, &len);
    write_text(corpus, text, len);
    free(text);
    TestRun r = train_in(NULL, log, ARGS(TINY, "--data", corpus, "--steps", "4", "--out", out));
    if (test_exit_status(&r, 0, "a corpus and --out of non-ASCII names")) {
        test_output_has(&r, corpus, "the corpus's name in the output");
        test_output_has(&r, ck, "the checkpoint's name in the output");
    }
    test_run_free(&r);
    CHECK(test_file_exists(ck), "no %s", ck);
    r = train_in(NULL, log, ARGS("--resume", ck, "--steps", "6"));
    test_exit_status(&r, 0, "resuming a checkpoint of a non-ASCII path");
    test_run_free(&r);
    char value[64];
    CHECK(test_meta_value(ck, "state.step", value, sizeof(value)) && strcmp(value, "6") == 0, "resumed to step '%s'",
          value);
    const char *argv[] = {test_program("generate"), ck, "the king", "-n", "20", NULL};
    r = test_run(argv, NULL, log, 0, 120.0);
    if (test_exit_status(&r, 0, "./generate on a checkpoint of a non-ASCII path"))
        test_output_has(&r, "the king", "the generated text");
    test_run_free(&r);
    snprintf(missing, sizeof(missing), "%s/\xe6\xb2\xa1\xe6\x9c\x89.txt", dir);  // 没有.txt
    r = train_in(NULL, log, ARGS(TINY, "--data", missing, "--steps", "4", "--out", out, "--force"));
    if (test_exit_status(&r, 1, "a missing corpus of a non-ASCII name")) test_output_has(&r, missing, "its name");
    test_run_free(&r);
}

// 7. --task: text chargpt makes (data/task.h)

TEST(runs_task_refusals) {
    char dir[256], corpus[300], log[300], out[300], ck[300];
    test_fresh_dir(dir, sizeof(dir), RUNS_TMP, "task_refusals");
    base_corpus(dir, corpus, sizeof(corpus));
    snprintf(log, sizeof(log), "%s/train.log", dir);
    snprintf(out, sizeof(out), "%s/add", dir);
    snprintf(ck, sizeof(ck), "%s/ckpt.safetensors", out);
    TestRun r = train_in(NULL, log, ARGS("--task", "copy", "--out", out));
    if (test_exit_status(&r, 2, "an unknown task")) test_output_has(&r, "induction, reverse, sort, add", "the choices");
    test_run_free(&r);
    r = train_in(NULL, log, ARGS("--task", "add", "--data", corpus, "--out", out));
    if (test_exit_status(&r, 2, "--task with --data")) test_output_has(&r, "--data cannot be given with --task", "why");
    test_run_free(&r);
    CHECK(!test_file_exists(out), "a refused run made %s", out);
    r = train_in(NULL, log, ARGS(TINY, "--task", "add", "--steps", "2", "--out", out));
    int ok = test_exit_status(&r, 0, "a task's run");
    test_run_free(&r);
    if (!ok) return;
    r = train_in(NULL, log, ARGS("--resume", ck, "--steps", "4", "--data", corpus));
    if (test_exit_status(&r, 2, "a task's run resumed with --data")) test_output_has(&r, "the add task", "why");
    test_run_free(&r);
    r = train_in(NULL, log, ARGS("--resume", ck, "--steps", "4", "--task", "sort"));
    if (test_exit_status(&r, 2, "a task's run resumed with another task")) test_output_has(&r, "--task sort", "why");
    test_run_free(&r);
}

// A task's run resumed goes on with the same stream of batches: 2 steps, then 2 more, give
// the weights 4 steps in one run give; log.csv has the task's accuracy at each evaluation.
TEST(runs_task_resume_continues_the_stream) {
    char dir[256], log[300], whole[300], split[300], ck_whole[300], ck_split[300], csv[320], value[64];
    test_fresh_dir(dir, sizeof(dir), RUNS_TMP, "task_resume");
    snprintf(log, sizeof(log), "%s/train.log", dir);
    snprintf(whole, sizeof(whole), "%s/whole", dir);
    snprintf(split, sizeof(split), "%s/split", dir);
    snprintf(ck_whole, sizeof(ck_whole), "%s/ckpt.safetensors", whole);
    snprintf(ck_split, sizeof(ck_split), "%s/ckpt.safetensors", split);
    TestRun r = train_in(NULL, log, ARGS(TINY, "--task", "reverse", "--steps", "4", "--eval-every", "2", "--out", whole));
    int ok = test_exit_status(&r, 0, "4 steps");
    if (ok) test_output_has(&r, "accuracy on the answers (val): ", "the accuracy printed");
    test_run_free(&r);
    r = train_in(NULL, log, ARGS(TINY, "--task", "reverse", "--steps", "2", "--eval-every", "2", "--out", split));
    ok &= test_exit_status(&r, 0, "2 steps");
    test_run_free(&r);
    if (!ok) return;
    CHECK(test_meta_value(ck_split, "train.task", value, sizeof(value)) && strcmp(value, "reverse") == 0,
          "train.task is '%s'", value);
    r = train_in(NULL, log, ARGS("--resume", ck_split, "--steps", "4"));
    if (test_exit_status(&r, 0, "2 more steps")) test_output_has(&r, "at step 2 of 4", "resumed");
    test_run_free(&r);
    CHECK(same_weights(ck_whole, ck_split), "2 + 2 steps differ from 4 steps");
    // step,train_loss,val_loss,lr,tokens_seen,elapsed_s,grad_norm,clipped,accuracy: an
    // accuracy in [0, 1] where there is a val_loss, none elsewhere
    snprintf(csv, sizeof(csv), "%s/log.csv", split);
    size_t len;
    char *text = test_read_file(csv, &len);
    if (!CHECK(text != NULL, "no %s", csv)) return;
    const char *header = "step,train_loss,val_loss,lr,tokens_seen,elapsed_s,grad_norm,clipped,accuracy\n";
    CHECK(strncmp(text, header, strlen(header)) == 0, "log.csv's header: %.90s", text);
    int evaluated = 0;
    for (char *line = strchr(text, '\n'); line && line[1]; line = strchr(line + 1, '\n')) {
        char *field[9], *p = line + 1;
        int n = 0;
        while (n < 9 && p) field[n++] = p, p = strpbrk(p, ",\n"), p = p && *p == ',' ? p + 1 : NULL;
        if (!CHECK(n == 9, "a row without 9 fields: %.80s", line + 1)) break;
        int has_val = field[2][0] != ',', has_accuracy = field[8][0] != '\n' && field[8][0] != '\0';
        double accuracy = atof(field[8]);
        CHECK(has_val == has_accuracy && (!has_accuracy || (accuracy >= 0.0 && accuracy <= 1.0)),
              "row %.80s: val_loss and accuracy", line + 1);
        evaluated += has_val;
    }
    CHECK(evaluated == 2, "%d evaluated rows, want 2 (steps 2 and 4)", evaluated);
    free(text);
}

// The best head's induction score (analysis/head_scores.h) at each probed step of the run in
// dir: steps[i], best[i], at most max of them; returns how many.
static int best_induction_scores(const char *dir, long *steps, double *best, int max) {
    char path[320], err[ERR_LEN];
    snprintf(path, sizeof(path), "%s/probe.bin", dir);
    FILE *fp = fopen(path, "rb");
    ProbeReader reader;
    if (!CHECK(fp && probe_reader_open(&reader, fp, path, err) == 0, "%s: %s", path, fp ? err : strerror(errno))) {
        if (fp) fclose(fp);
        return 0;
    }
    ProbeRecord rec;
    int n = 0, heads = reader.header.n_layer * reader.header.n_head;
    if (probe_record_alloc(&rec, &reader.header, err) == 0) {
        while (n < max && probe_reader_next(&reader, &rec, err) == 1) {
            if (!(rec.flags & PROBE_HAS_PROBE)) continue;
            steps[n] = (long)rec.step;
            best[n] = 0.0;
            for (int h = 0; h < heads; h++) best[n] = rec.induction[h] > best[n] ? rec.induction[h] : best[n];
            n++;
        }
        probe_record_free(&rec);
    }
    probe_reader_close(&reader);
    fclose(fp);
    return n;
}

// The induction lesson in small (n_embd 32 where the recipe of --task induction has 64): the
// loss stays at chance, ln 26,
// then drops as an induction head forms, whose score (the probe's, at most 0.5 on a repeat of
// distinct characters) rises by 0.2 from step 0 to 0.3 or more, and the repeated half is
// predicted 90% of the time.
// Under an emulated CPU (test_emulated: scripts/test_arm64.sh) the 2,000 steps would
// take hours: a run of 30 steps there checks that the task trains and is probed at its early steps.
static void task_induction_emulated(const char *out, const char *train_log) {
    TestRun r = train_for(NULL, train_log, ARGS("--task", "induction", "--n-embd", "32", "--steps", "30",
                                                "--sample-chars", "0", "--out", out), 3600.0);
    int ok = test_exit_status(&r, 0, "the induction run of 30 steps");
    test_run_free(&r);
    if (!ok) return;
    long steps[16];
    double best[16];
    int n = best_induction_scores(out, steps, best, 16);
    CHECK(n == 4 && steps[0] == 0 && steps[1] == 10 && steps[2] == 20 && steps[3] == 30,
          "%d probed steps, want 0, 10, 20 and 30", n);
    printf("    emulated CPU: 30 steps of --task induction (the head forms after about 1,000)\n");
}

// `./generate CKPT --score-task` scores the rows the run's evaluations read: its accuracy is
// the last evaluation's, its loss on every character the last validation loss (in bits); and
// knocking out the layer-1 head that copies (the one whose loss on the repeated half rises the
// most) costs more than a bit a character there, where the other layer-1 head costs less.
static void check_score_task(const char *out, const char *log, double val_loss, double accuracy) {
    char ckpt[320];
    snprintf(ckpt, sizeof(ckpt), "%s/ckpt.safetensors", out);
    double half[3], right[3], all[3];  // with every head, without layer 1's head 0, head 1
    const char *ablate[3] = {NULL, "1.0", "1.1"};
    for (int i = 0; i < 3; i++) {
        const char *args[] = {ckpt, "--score-task", ablate[i] ? "--ablate" : NULL, ablate[i], NULL};
        TestRun r = test_run_program("generate", NULL, log, 300, args);
        int ok = test_exit_status(&r, 0, "--score-task") &&
                 CHECK(strstr(r.output, "induction task (seed 1337), validation rows 0-127 of 65 characters") &&
                           sscanf(strstr(r.output, "the repeated half "), "the repeated half %lf bits/char over %*d "
                                  "characters, %lf%% right; every character %lf", &half[i], &right[i], &all[i]) == 3,
                       "--score-task printed:\n%s", r.output);
        test_run_free(&r);
        if (!ok) return;
    }
    printf("    --score-task: the repeated half %.3f bits/char, %.1f%% right; without head 1.0 %.3f, 1.1 %.3f\n",
           half[0], right[0], half[1], half[2]);
    CHECK(fabs(right[0] - 100.0 * accuracy) < 0.06, "--score-task's accuracy %.1f%%, the run's last %.2f%%", right[0],
          100.0 * accuracy);
    CHECK(fabs(all[0] * M_LN2 - val_loss) < 1e-3, "--score-task's loss %.4f bits/char, the run's %.4f nats", all[0],
          val_loss);
    double most = half[1] > half[2] ? half[1] : half[2], least = half[1] > half[2] ? half[2] : half[1];
    CHECK(most - half[0] > 1.0 && least < most, "knocking layer 1's heads out: %.3f and %.3f bits/char, from %.3f",
          half[1], half[2], half[0]);
}

// `./generate --timeline RUN --csv FILE`: a row per head (2 layers of 2) at each of the n probed
// steps, whose induction scores at the last step hold the probe's best (to the CSV's 6 digits),
// and whose head with that score matters: knocking it out costs the probe passage more than
// the other heads of its layer.
static void check_timeline_csv(const char *out, const char *log, int n, long last_step, double best) {
    char csv[320];
    snprintf(csv, sizeof(csv), "%s/heads.csv", out);
    TestRun r = test_run_program("generate", NULL, log, 300, (const char *[]){"--timeline", out, "--csv", csv, NULL});
    int ok = test_exit_status(&r, 0, "--timeline --csv");
    test_run_free(&r);
    size_t len;
    char *text = ok ? test_read_file(csv, &len) : NULL;
    if (!CHECK(text != NULL, "no %s", csv)) return;
    int rows = 0;
    double top = -1.0, top_importance = NAN, other_importance = -INFINITY;
    int top_layer = -1;
    for (char *line = strchr(text, '\n'); line && line[1]; line = strchr(line + 1, '\n'), rows++) {
        long step;
        int layer, head;
        double score[6], entropy, importance;
        if (!CHECK(sscanf(line + 1, "%ld,%d,%d,%lf,%lf,%lf,%lf,%lf,%lf,%lf,%lf", &step, &layer, &head, &score[0],
                          &score[1], &score[2], &score[3], &score[4], &score[5], &entropy, &importance) == 11,
                   "row %d of %s: '%.80s'", rows + 1, csv, line + 1))
            break;
        if (step != last_step) continue;
        if (score[1] > top) {
            if (layer == top_layer) other_importance = fmax(other_importance, top_importance);
            top = score[1], top_importance = importance, top_layer = layer;
        } else if (layer == top_layer) {
            other_importance = fmax(other_importance, importance);
        }
    }
    free(text);
    CHECK(rows == n * 4, "%s: %d rows, want %d (4 heads at %d probed steps)", csv, rows, n * 4, n);
    CHECK(fabs(top - best) < 1e-5, "%s: the best induction score at step %ld is %.6f, the probe's %.6f", csv,
          last_step, top, best);
    CHECK(top_importance > other_importance, "%s: the induction head's importance %.3f, its layer's other head %.3f",
          csv, top_importance, other_importance);
}

TEST(runs_task_induction_head_forms) {
    char dir[256], train_log[300], out[300], csv[320];
    test_fresh_dir(dir, sizeof(dir), RUNS_TMP, "task_induction");
    snprintf(train_log, sizeof(train_log), "%s/train.log", dir);
    snprintf(out, sizeof(out), "%s/run", dir);
    if (test_emulated()) {
        task_induction_emulated(out, train_log);
        return;
    }
    // about 20 s here on 2 cores; 100 s with the portable kernels; the timeout leaves room for
    // an emulated CPU (make test-arm64)
    TestRun r = train_for(NULL, train_log, ARGS("--task", "induction", "--n-embd", "32", "--eval-every", "250",
                                                "--sample-chars", "0", "--final-val-chars", "0", "--out", out),
                          3600.0);
    int ok = test_exit_status(&r, 0, "the induction run");
    if (ok) printf("    --task induction, small: %.1f s\n", r.seconds);
    test_run_free(&r);
    if (!ok) return;
    long steps[16];
    double best[16];
    int n = best_induction_scores(out, steps, best, 16);
    // probed at 0, the early steps 10, 20, 50, 100 and 200 (training/probe.h), then every 250 to 2000
    if (!CHECK(n == 14 && steps[0] == 0 && steps[5] == 200 && steps[n - 1] == 2000,
               "%d probed steps, want 0, 10, 20, 50, 100, 200, then every 250 to 2000", n))
        return;
    printf("    best induction score: %.3f at step 0, %.3f at step %ld\n", best[0], best[n - 1], steps[n - 1]);
    CHECK(best[n - 1] >= 0.3 && best[n - 1] - best[0] >= 0.2, "the best induction score went from %.3f to %.3f",
          best[0], best[n - 1]);
    // log.csv's evaluated rows: val_loss and accuracy
    snprintf(csv, sizeof(csv), "%s/log.csv", out);
    size_t len;
    char *text = test_read_file(csv, &len);
    if (!CHECK(text != NULL, "no %s", csv)) return;
    double first_val = NAN, last_val = NAN, accuracy = NAN;
    for (char *line = strchr(text, '\n'); line && line[1]; line = strchr(line + 1, '\n')) {
        long step;
        double train_loss, val_loss, lr, elapsed, grad_norm, row_accuracy;
        long tokens;
        int clipped;
        if (sscanf(line + 1, "%ld,%lf,%lf,%lf,%ld,%lf,%lf,%d,%lf", &step, &train_loss, &val_loss, &lr, &tokens, &elapsed,
                   &grad_norm, &clipped, &row_accuracy) != 9)
            continue;  // no evaluation at this row
        if (isnan(first_val)) first_val = val_loss;
        last_val = val_loss, accuracy = row_accuracy;
    }
    free(text);
    printf("    val loss %.3f at step 250, %.3f at the end; accuracy on the repeated half %.1f%%\n", first_val, last_val,
           100.0 * accuracy);
    CHECK(fabs(first_val - log(26.0)) < 0.05, "no plateau at chance, ln 26: val loss %.3f at step 250", first_val);
    CHECK(last_val < log(26.0) - 0.5, "no drop: val loss %.3f at the end", last_val);
    CHECK(accuracy >= 0.9, "accuracy on the repeated half %.3f at the end, want 0.9", accuracy);
    check_score_task(out, train_log, last_val, accuracy);
    check_timeline_csv(out, train_log, n, steps[n - 1], best[n - 1]);
}
