// Tests of ./train and ./generate on real corpora's shapes (issue 24), run as child processes
// on small texts written under tests/tmp/corpora/ with a tiny model: a directory against the
// same files concatenated (one fingerprint, and a resume that takes either), several --data,
// standard input, compressions and encodings named with what reads them, degenerate texts,
// the rare-character token through a checkpoint, ./generate and --score, --grow-vocab's rows,
// the bounded whole-validation pass against --score, and the model line's "1 thread".
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "../common/utf8.h"
#include "../data/batch.h"
#include "../data/corpus.h"
#include "../format/checkpoint.h"
#include "test.h"

#define CORPORA_TMP "tests/tmp/corpora"
#define LOG CORPORA_TMP "/run.log"
#define TINY "--n-layer", "1", "--n-head", "2", "--n-embd", "16", "--block-size", "16", "--batch-size", "4", \
             "--eval-batches", "2", "--threads", "1", "--eval-every", "1000"
#define ARGS(...) ((const char *[]){__VA_ARGS__, NULL})

static void put(const char *dir, const char *name, const void *bytes, size_t len) {
    char path[600];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    test_write_file(path, bytes, len);
}

// About `bytes` bytes of words, a different text for each seed.
static char *words(size_t bytes, unsigned seed) {
    static const char *const list[] = {"the", "king", "queen", "of", "and", "to", "thou", "art", "my", "lord",
                                       "fair", "night", "ROMEO:", "JULIET:"};
    char *text = malloc(bytes + 64);
    size_t n = 0;
    while (n < bytes) {
        seed = seed * 1103515245u + 12345u;
        n += (size_t)sprintf(text + n, "%s%s", list[(seed >> 16) % 14], (seed >> 8) % 7 == 0 ? ".\n" : " ");
    }
    return text;
}

static TestRun train(const char *in, const char *const *args) {
    return test_run_program("train", in, LOG, 120, args);
}

static TestRun generate(const char *in, const char *const *args) {
    return test_run_program("generate", in, LOG, 60, args);
}

static void meta(const char *ckpt, const char *key, char *value, size_t n) {
    if (!test_meta_value(ckpt, key, value, n)) snprintf(value, n, "(none)");
}

// books/: a.txt, b/c.txt, d.txt and what the walk skips (a hidden file, a binary one); and
// one.txt, the three texts joined by the default separator (a newline), as cat would with one.
static void make_books(const char *dir) {
    char books[300], sub[320];
    snprintf(books, sizeof(books), "%s/books", dir);
    snprintf(sub, sizeof(sub), "%s/b", books);
    test_make_dir(books);
    test_make_dir(sub);
    char *a = words(3000, 1), *c = words(3000, 2), *d = words(3000, 3);
    put(books, "a.txt", a, strlen(a));
    put(sub, "c.txt", c, strlen(c));
    put(books, "d.txt", d, strlen(d));
    put(books, ".notes.txt", "not read", 8);
    put(books, "cover.jpg", "\xff\xd8\xff\xe0\0\x10JFIF\0", 11);
    size_t n = strlen(a) + strlen(c) + strlen(d) + 2;
    char *one = malloc(n + 1);
    snprintf(one, n + 1, "%s\n%s\n%s", a, c, d);
    put(dir, "one.txt", one, n);
    free(one);
    free(a);
    free(c);
    free(d);
}

TEST(corpora_directory_and_its_files_concatenated_are_one_text) {
    char dir[256], books[300], one[300], out_a[300], out_b[300], ckpt_a[320], ckpt_b[320];
    test_fresh_dir(dir, sizeof(dir), CORPORA_TMP, "books");
    make_books(dir);
    snprintf(books, sizeof(books), "%s/books", dir);
    snprintf(one, sizeof(one), "%s/one.txt", dir);
    snprintf(out_a, sizeof(out_a), "%s/a", dir);
    snprintf(out_b, sizeof(out_b), "%s/b", dir);
    snprintf(ckpt_a, sizeof(ckpt_a), "%s/ckpt.safetensors", out_a);
    snprintf(ckpt_b, sizeof(ckpt_b), "%s/ckpt.safetensors", out_b);
    TestRun r = train(NULL, ARGS(TINY, "--data", books, "--steps", "2", "--out", out_a));
    if (test_exit_status(&r, 0, "a directory"))
        test_output_has(&r, "3 files in 2 directories; skipped 1 hidden entry, 1 file that is not text ("
                        "tests/tmp/corpora/books/books/cover.jpg: binary data)", "what the walk read and skipped");
    test_run_free(&r);
    r = train(NULL, ARGS(TINY, "--data", one, "--steps", "2", "--out", out_b));
    test_exit_status(&r, 0, "the files concatenated");
    test_run_free(&r);
    char fa[64], fb[64];
    meta(ckpt_a, "train.corpus_fingerprint", fa, sizeof(fa));
    meta(ckpt_b, "train.corpus_fingerprint", fb, sizeof(fb));
    CHECK(strcmp(fa, fb) == 0 && strcmp(fa, "(none)") != 0, "fingerprints %s and %s", fa, fb);
    // the same text either way: the directory's run resumes on the concatenated file, and both
    // runs made the same steps
    r = train(NULL, ARGS("--resume", ckpt_a, "--data", one, "--steps", "3"));
    test_exit_status(&r, 0, "resuming a directory's run on its files concatenated");
    test_run_free(&r);
    // several --data, in order, are the directory's files one by one
    char a[320], c[320], d[320], out_c[300], ckpt_c[320], fc[64];
    snprintf(a, sizeof(a), "%s/a.txt", books);
    snprintf(c, sizeof(c), "%s/b/c.txt", books);
    snprintf(d, sizeof(d), "%s/d.txt", books);
    snprintf(out_c, sizeof(out_c), "%s/c", dir);
    snprintf(ckpt_c, sizeof(ckpt_c), "%s/ckpt.safetensors", out_c);
    r = train(NULL, ARGS(TINY, "--data", a, "--data", c, "--data", d, "--steps", "1", "--out", out_c));
    if (test_exit_status(&r, 0, "three --data")) test_output_has(&r, "a.txt, ", "the paths named");
    test_run_free(&r);
    meta(ckpt_c, "train.corpus_fingerprint", fc, sizeof(fc));
    CHECK(strcmp(fc, fa) == 0, "three --data give %s, the directory %s", fc, fa);
    // another separator is another text
    r = train(NULL, ARGS(TINY, "--data", books, "--separator", "", "--steps", "1", "--out", out_c, "--force"));
    test_exit_status(&r, 0, "--separator ''");
    test_run_free(&r);
    meta(ckpt_c, "train.corpus_fingerprint", fc, sizeof(fc));
    CHECK(strtol(fc, NULL, 10) == strtol(fa, NULL, 10) - 2, "no separator gives %s, the newlines between 3 files %s",
          fc, fa);
    r = train(NULL, ARGS(TINY, "--data", books, "--separator", "\\q", "--out", out_c, "--force"));
    if (test_exit_status(&r, 2, "a separator's unknown escape")) test_output_has(&r, "'\\q'", "the escape named");
    test_run_free(&r);
}

TEST(corpora_standard_input) {
    char dir[256], one[300], out[300], ckpt[320], out_file[300], ckpt_file[320];
    test_fresh_dir(dir, sizeof(dir), CORPORA_TMP, "stdin");
    make_books(dir);
    snprintf(one, sizeof(one), "%s/one.txt", dir);
    snprintf(out, sizeof(out), "%s/piped", dir);
    snprintf(ckpt, sizeof(ckpt), "%s/ckpt.safetensors", out);
    snprintf(out_file, sizeof(out_file), "%s/file", dir);
    snprintf(ckpt_file, sizeof(ckpt_file), "%s/ckpt.safetensors", out_file);
    TestRun r = train(one, ARGS(TINY, "--data", "-", "--steps", "2", "--out", out));
    test_exit_status(&r, 0, "--data - with the text on standard input");
    test_run_free(&r);
    r = train(NULL, ARGS(TINY, "--data", one, "--steps", "2", "--out", out_file));
    test_exit_status(&r, 0, "the same text as a file");
    test_run_free(&r);
    char a[64], b[64];
    meta(ckpt, "train.corpus_fingerprint", a, sizeof(a));
    meta(ckpt_file, "train.corpus_fingerprint", b, sizeof(b));
    CHECK(strcmp(a, b) == 0, "standard input %s, the file %s", a, b);
    // standard input cannot be read again: a resume needs --data
    r = train(NULL, ARGS("--resume", ckpt, "--steps", "3"));
    if (test_exit_status(&r, 2, "resuming a run of standard input without --data"))
        test_output_has(&r, "cannot be read again: give --data", "what to do");
    test_run_free(&r);
    r = train(one, ARGS("--resume", ckpt, "--data", "-", "--steps", "3"));
    test_exit_status(&r, 0, "resuming it with the text on standard input again");
    test_run_free(&r);
    r = train(one, ARGS(TINY, "--data", "-", "--data", "-", "--out", out, "--force"));
    if (test_exit_status(&r, 2, "--data - twice")) test_output_has(&r, "once only", "--data - twice");
    test_run_free(&r);
}

TEST(corpora_compressions_encodings_and_degenerate_texts) {
    char dir[256], path[300], out[300];
    test_fresh_dir(dir, sizeof(dir), CORPORA_TMP, "formats");
    snprintf(out, sizeof(out), "%s/out", dir);
    // xz (its first bytes, as xz writes them): named, with the pipe that reads it
    put(dir, "corpus.xz", "\xfd" "7zXZ\0\0\x04\xe6\xd6\xb4\x46\x02\0\x21\x01", 16);
    snprintf(path, sizeof(path), "%s/corpus.xz", dir);
    TestRun r = train(NULL, ARGS(TINY, "--data", path, "--out", out));
    char pipe[400];
    snprintf(pipe, sizeof(pipe), "compressed with xz, which chargpt does not read (gzip is the one it reads): "
             "decompress it through a pipe, xz -dc %s | ", path);
    if (test_exit_status(&r, 1, "an xz corpus")) {
        test_output_has(&r, pipe, "an xz corpus");
        test_output_has(&r, " --data -", "the pipe into ./train");
    }
    test_run_free(&r);
    // Latin-1: named, with --encoding and iconv; then read with --encoding latin-1
    char *text = words(3000, 4);
    for (char *p = text; (p = strstr(p, "fair")) != NULL; p += 4) p[1] = (char)0xE9;  // "fér", é as Latin-1
    put(dir, "latin1.txt", text, strlen(text));
    free(text);
    snprintf(path, sizeof(path), "%s/latin1.txt", dir);
    r = train(NULL, ARGS(TINY, "--data", path, "--out", out));
    if (test_exit_status(&r, 1, "a Latin-1 corpus")) {
        test_output_has(&r, "it looks like Latin-1 (ISO-8859-1): give --encoding latin-1", "the encoding named");
        test_output_has(&r, "iconv -f LATIN1 -t UTF-8 ", "iconv's command");
    }
    test_run_free(&r);
    r = train(NULL, ARGS(TINY, "--data", path, "--encoding", "latin-1", "--steps", "1", "--out", out));
    test_exit_status(&r, 0, "--encoding latin-1");
    test_run_free(&r);
    char ckpt[320], value[1024];
    snprintf(ckpt, sizeof(ckpt), "%s/ckpt.safetensors", out);
    meta(ckpt, "train.encoding", value, sizeof(value));
    CHECK(strcmp(value, "latin-1") == 0, "train.encoding '%s'", value);
    meta(ckpt, "vocab", value, sizeof(value));
    CHECK(strstr(value, ",233,") || strstr(value, ",233]"), "é (233) is not in the vocabulary %s", value);
    // a file of NUL bytes, and one of a single character: refused
    char *zeros = calloc(200000, 1);
    put(dir, "zeros.bin", zeros, 200000);
    memset(zeros, 'a', 200000);
    put(dir, "aaaa.txt", zeros, 200000);
    free(zeros);
    snprintf(path, sizeof(path), "%s/zeros.bin", dir);
    r = train(NULL, ARGS(TINY, "--data", path, "--out", out, "--force"));
    if (test_exit_status(&r, 1, "NUL bytes")) test_output_has(&r, "a NUL byte at byte offset 0: not text", "NUL bytes");
    test_run_free(&r);
    snprintf(path, sizeof(path), "%s/aaaa.txt", dir);
    r = train(NULL, ARGS(TINY, "--data", path, "--out", out, "--force"));
    if (test_exit_status(&r, 1, "one distinct character"))
        test_output_has(&r, "one distinct character, 'a' U+0061 200000 times: a model has nothing to learn from it",
                        "one distinct character");
    test_run_free(&r);
}

// A text of words with rare characters: '€' twice, 'ß' once, '中' three times.
static char *rare_text(void) {
    char *base = words(6000, 5);
    size_t n = strlen(base);
    char *text = malloc(n + 64);
    snprintf(text, n + 64, "%.1000s€ %.1000sß %.1000s中中 €%.1000s中 %s", base, base + 1000, base + 2000, base + 3000,
             base + 4000);
    free(base);
    return text;
}

// The text with each of '€', 'ß' and '中' replaced by U+FFFD (3 bytes: 'ß' takes 2, so the
// text may grow by half).
static char *replaced(const char *text) {
    char *out = malloc(strlen(text) * 3 / 2 + 4);
    size_t n = 0;
    for (const char *p = text; *p;) {
        if (strncmp(p, "€", 3) == 0 || strncmp(p, "中", 3) == 0) {
            n += (size_t)sprintf(out + n, "\xef\xbf\xbd");
            p += 3;
        } else if (strncmp(p, "ß", 2) == 0) {
            n += (size_t)sprintf(out + n, "\xef\xbf\xbd");
            p += 2;
        } else {
            out[n++] = *p++;
        }
    }
    out[n] = '\0';
    return out;
}

// Prints nats/char of a --score output; NAN when it has none.
static double scored_nats(const TestRun *r) {
    const char *p = strstr(r->output, "characters scored (");
    const char *q = p ? strstr(p, "): ") : NULL;
    double nats = NAN;
    if (q) sscanf(q, "): %lf nats/char", &nats);
    return nats;
}

TEST(corpora_rare_character_token_through_checkpoint_generate_and_score) {
    char dir[256], path[300], out[300], ckpt[320], value[64];
    test_fresh_dir(dir, sizeof(dir), CORPORA_TMP, "rare");
    char *text = rare_text(), *fffd = replaced(text);
    put(dir, "rare.txt", text, strlen(text));
    put(dir, "rare_as_fffd.txt", fffd, strlen(fffd));
    snprintf(path, sizeof(path), "%s/rare.txt", dir);
    snprintf(out, sizeof(out), "%s/out", dir);
    snprintf(ckpt, sizeof(ckpt), "%s/ckpt.safetensors", out);
    TestRun r = train(NULL, ARGS(TINY, "--data", path, "--min-char-count", "4", "--steps", "3", "--out", out));
    if (test_exit_status(&r, 0, "--min-char-count 4"))
        test_output_has(&r, "--min-char-count 4: 3 characters seen fewer times (6 occurrences", "the rare ones said");
    test_run_free(&r);
    meta(ckpt, "vocab_unknown", value, sizeof(value));
    CHECK(strcmp(value, "65533") == 0, "vocab_unknown '%s'", value);
    meta(ckpt, "train.min_char_count", value, sizeof(value));
    CHECK(strcmp(value, "4") == 0, "train.min_char_count '%s'", value);
    // ./generate: a prompt's rare characters take the unknown token, with a note
    r = generate(NULL, ARGS(ckpt, "the € king 中", "-n", "5", "-t", "0"));
    if (test_exit_status(&r, 0, "a prompt with rare characters"))
        test_output_has(&r, "2 characters of the prompt not in the vocabulary take its unknown token U+FFFD",
                        "the prompt's note");
    test_run_free(&r);
    // --score: the text scores as itself with its rare characters written as U+FFFD
    char fffd_path[320];
    snprintf(fffd_path, sizeof(fffd_path), "%s/rare_as_fffd.txt", dir);
    TestRun a = generate(NULL, ARGS(ckpt, "--score", path)), b = generate(NULL, ARGS(ckpt, "--score", fffd_path));
    if (test_exit_status(&a, 0, "--score with rare characters") && test_exit_status(&b, 0, "--score with U+FFFD")) {
        test_output_has(&a, "6 characters of tests/tmp/corpora/rare/rare.txt not in the vocabulary take its unknown "
                        "token U+FFFD", "--score's note");
        CHECK(scored_nats(&a) == scored_nats(&b) && !isnan(scored_nats(&a)), "%.6f against %.6f nats/char",
              scored_nats(&a), scored_nats(&b));
    }
    test_run_free(&a);
    test_run_free(&b);
    // the run resumes, its rare characters still the unknown token, unsaid
    r = train(NULL, ARGS("--resume", ckpt, "--steps", "4"));
    if (test_exit_status(&r, 0, "resuming it")) CHECK(!strstr(r.output, "take its unknown token"), "%s", r.output);
    test_run_free(&r);
    // a model without the token names every character it lacks
    char plain[300], plain_ckpt[320];
    snprintf(plain, sizeof(plain), "%s/plain", dir);
    snprintf(plain_ckpt, sizeof(plain_ckpt), "%s/ckpt.safetensors", plain);
    r = train(NULL, ARGS(TINY, "--data", fffd_path, "--steps", "1", "--out", plain));
    test_exit_status(&r, 0, "a run without rare characters");
    test_run_free(&r);
    r = generate(NULL, ARGS(plain_ckpt, "€<x>€", "-n", "1"));
    if (test_exit_status(&r, 2, "a prompt of unknown characters"))
        test_output_has(&r, "the prompt has 5 characters (4 distinct) not in the checkpoint's vocabulary: '€' U+20AC 2 "
                        "times, '<' U+003C 1 time, '>' U+003E 1 time, 'x' U+0078 1 time", "every one named");
    test_run_free(&r);
    free(text);
    free(fffd);
}

TEST(corpora_grow_vocab_keeps_the_old_rows) {
    char dir[256], base[300], base_ckpt[320], gpl[300], out[300], ckpt[320];
    test_fresh_dir(dir, sizeof(dir), CORPORA_TMP, "grow");
    char *text = words(6000, 6);
    put(dir, "base.txt", text, strlen(text));
    free(text);
    snprintf(base, sizeof(base), "%s/base", dir);
    snprintf(base_ckpt, sizeof(base_ckpt), "%s/ckpt.safetensors", base);
    snprintf(gpl, sizeof(gpl), "%s/base.txt", dir);
    TestRun r = train(NULL, ARGS(TINY, "--data", gpl, "--steps", "2", "--out", base));
    test_exit_status(&r, 0, "the base run");
    test_run_free(&r);
    // a text with digits, '<', '/' and '"' the base never saw
    const char *license = "Copyright (C) 2007 <https://fsf.org/> \"the king\" and the queen, 1 2 3 / 4 5 6.\n";
    char *fine = malloc(20000);
    size_t n = 0;
    while (n + strlen(license) < 19000) n += (size_t)sprintf(fine + n, "%s", license);
    put(dir, "license.txt", fine, n);
    free(fine);
    snprintf(gpl, sizeof(gpl), "%s/license.txt", dir);
    snprintf(out, sizeof(out), "%s/grown", dir);
    snprintf(ckpt, sizeof(ckpt), "%s/ckpt.safetensors", out);
    r = train(NULL, ARGS("--init-from", base_ckpt, "--data", gpl, "--out", out));
    if (test_exit_status(&r, 1, "new characters without --grow-vocab"))
        test_output_has(&r, "give --grow-vocab to add them, or --skip-unknown to drop them", "what to do");
    test_run_free(&r);
    r = train(NULL, ARGS("--init-from", base_ckpt, "--data", gpl, "--grow-vocab", "--steps", "0", "--out", out));
    if (test_exit_status(&r, 0, "--grow-vocab"))
        test_output_has(&r, "the new characters' embedding rows start as a new model's", "what the new rows are");
    test_run_free(&r);
    Checkpoint a, b;
    char err[ERR_LEN];
    if (!CHECK(checkpoint_open(base_ckpt, &a, err) == 0, "%s", err)) return;
    if (!CHECK(checkpoint_open(ckpt, &b, err) == 0, "%s", err)) {
        checkpoint_close(&a);
        return;
    }
    int C = a.config.n_embd, grown = b.config.vocab_size - a.config.vocab_size;
    CHECK(grown > 10 && b.config.n_embd == C, "the vocabulary grew by %d characters", grown);
    const float *old_rows = safetensors_tensor_data(&a.file, safetensors_find(&a.file, "transformer.wte.weight"));
    const float *new_rows = safetensors_tensor_data(&b.file, safetensors_find(&b.file, "transformer.wte.weight"));
    Vocab grown_vocab;
    CHECK(checkpoint_vocab(&b, &grown_vocab, err) == 0, "%s", err);
    int same = 1;
    for (int i = 0; i < a.config.vocab_size; i++) {
        int at = vocab_index(&grown_vocab, a.vocab[i]);
        same &= at >= 0 && memcmp(old_rows + (size_t)i * C, new_rows + (size_t)at * C, (size_t)C * 4) == 0;
    }
    CHECK(same, "an old character's embedding row changed");
    // the new rows are a new model's of this vocabulary and the default seed
    GPT fresh = {0};
    if (CHECK(gpt_build(&fresh, &b.config, 0, err) == 0, "%s", err)) {
        gpt_init_weights(&fresh, 1337);
        int fresh_rows = 1;
        for (int i = 0; i < b.config.vocab_size; i++)
            if (vocab_index(&(Vocab){a.vocab, a.config.vocab_size, 0}, b.vocab[i]) < 0)
                fresh_rows &= memcmp(new_rows + (size_t)i * C, fresh.params.wte + (size_t)i * C, (size_t)C * 4) == 0;
        CHECK(fresh_rows, "a new character's row is not a new model's");
        gpt_free(&fresh);
    }
    vocab_free(&grown_vocab);
    checkpoint_close(&a);
    checkpoint_close(&b);
}

// The first n characters of the validation split of path (as ./train splits it at
// --val-fraction 0.1), written as UTF-8 to out; the number of characters it holds is *total.
static int write_validation_prefix(const char *path, size_t n, const char *out, size_t *total) {
    Corpus c;
    char err[ERR_LEN];
    if (!CHECK(corpus_load(path, 0, CORPUS_NO_LIMIT, &c, err) == 0, "%s", err)) return -1;
    int *tokens = calloc(c.len, sizeof(int));
    Dataset ds;
    int rc = -1;
    if (CHECK(dataset_split(&ds, tokens, c.len, 0.1f, 16, err) == 0, "%s", err)) {
        char *bytes = malloc(4 * n + 1);
        size_t m = 0;
        for (size_t i = 0; i < n && i < ds.val_len; i++) m += (size_t)utf8_encode(c.text[ds.train_len + i], bytes + m);
        rc = test_write_file(out, bytes, m);
        *total = ds.val_len;
        free(bytes);
    }
    free(tokens);
    corpus_free(&c);
    return rc;
}

TEST(corpora_final_validation_pass_bounded) {
    char dir[256], path[300], out[300], ckpt[320], prefix[300];
    test_fresh_dir(dir, sizeof(dir), CORPORA_TMP, "final");
    char *text = words(20000, 8);
    put(dir, "corpus.txt", text, strlen(text));
    free(text);
    snprintf(path, sizeof(path), "%s/corpus.txt", dir);
    snprintf(out, sizeof(out), "%s/out", dir);
    snprintf(ckpt, sizeof(ckpt), "%s/ckpt.safetensors", out);
    snprintf(prefix, sizeof(prefix), "%s/val_prefix.txt", dir);
    TestRun r = train(NULL, ARGS(TINY, "--data", path, "--steps", "3", "--final-val-chars", "300", "--out", out));
    size_t total = 0;
    double trained = NAN;
    if (test_exit_status(&r, 0, "--final-val-chars 300") && write_validation_prefix(path, 301, prefix, &total) == 0) {
        char want[128];
        snprintf(want, sizeof(want), "validation split: loss ");
        const char *line = strstr(r.output, want);
        long scored = 0, all = 0;
        if (CHECK(line && sscanf(line, "validation split: loss %lf over its first %ld of %ld characters", &trained,
                                 &scored, &all) == 3, "no bounded pass in:\n%s", r.output))
            CHECK(scored == 300 && all == (long)total - 1, "%ld of %ld characters, want 300 of %zu", scored, all,
                  total - 1);
    }
    test_run_free(&r);
    // the same windows through ./generate --score: the first 301 characters at stride 16
    r = generate(NULL, ARGS(ckpt, "--score", prefix, "--stride", "16"));
    if (test_exit_status(&r, 0, "--score of the split's first 301 characters"))
        CHECK(fabs(scored_nats(&r) - trained) < 1e-5, "--score %.6f, ./train %.6f", scored_nats(&r), trained);
    test_run_free(&r);
    // 0 skips the pass, saying how to score a text; a split shorter than the bound is whole
    r = train(NULL, ARGS(TINY, "--data", path, "--steps", "1", "--final-val-chars", "0", "--out", out, "--force"));
    if (test_exit_status(&r, 0, "--final-val-chars 0"))
        test_output_has(&r, "whole-validation pass skipped (--final-val-chars 0; ./generate ", "the pass skipped");
    test_run_free(&r);
    r = train(NULL, ARGS(TINY, "--data", path, "--steps", "1", "--out", out, "--force"));
    if (test_exit_status(&r, 0, "the default bound")) test_output_has(&r, "whole validation split: loss ", "all of it");
    test_run_free(&r);
    r = train(NULL, ARGS(TINY, "--data", path, "--steps", "1", "--final-val-chars", "many", "--out", out, "--force"));
    if (test_exit_status(&r, 2, "--final-val-chars many"))
        test_output_has(&r, "--final-val-chars expects a whole number", "a bad bound");
    test_run_free(&r);
}

TEST(corpora_one_thread_said_so) {
    char dir[256], path[300], out[300];
    test_fresh_dir(dir, sizeof(dir), CORPORA_TMP, "thread");
    char *text = words(4000, 9);
    put(dir, "corpus.txt", text, strlen(text));
    free(text);
    snprintf(path, sizeof(path), "%s/corpus.txt", dir);
    snprintf(out, sizeof(out), "%s/out", dir);
    TestRun r = train(NULL, ARGS(TINY, "--data", path, "--steps", "1", "--out", out));
    if (test_exit_status(&r, 0, "--threads 1")) test_output_has(&r, "batch 4, 1 thread;", "one thread");
    test_run_free(&r);
}

// --steps 1e3 is a thousand steps (a whole number in any form strtod reads); 1.5 is refused.
TEST(corpora_whole_numbers_in_exponent_form) {
    char dir[256], path[300], out[300];
    test_fresh_dir(dir, sizeof(dir), CORPORA_TMP, "numbers");
    char *text = words(4000, 10);
    put(dir, "corpus.txt", text, strlen(text));
    free(text);
    snprintf(path, sizeof(path), "%s/corpus.txt", dir);
    snprintf(out, sizeof(out), "%s/out", dir);
    TestRun r = train(NULL, ARGS(TINY, "--data", path, "--steps", "3e0", "--log-every", "1e0", "--out", out));
    if (test_exit_status(&r, 0, "--steps 3e0")) test_output_has(&r, "done: 3 steps", "three steps");
    test_run_free(&r);
    r = train(NULL, ARGS(TINY, "--data", path, "--steps", "1.5", "--out", out, "--force"));
    if (test_exit_status(&r, 2, "--steps 1.5")) test_output_has(&r, "--steps expects a whole number", "--steps 1.5");
    test_run_free(&r);
    r = generate(NULL, ARGS("no_such.safetensors", "-n", "1e40"));
    if (test_exit_status(&r, 2, "-n 1e40")) test_output_has(&r, "--max-new must be between 0 and", "-n 1e40");
    test_run_free(&r);
}
