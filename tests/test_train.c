// Tests of the training program and its checkpoints: ./train is run as a child process on
// small corpora written under tests/tmp/train/, with a tiny model, and its exit status,
// messages, log.csv and checkpoints are checked; the checkpoint functions are also called
// directly. The binary runs from the repository root after `make` built ./train.
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "../common/clock.h"
#include "../common/platform.h"
#include "../common/rng.h"
#include "../format/checkpoint.h"
#include "../format/safetensors.h"
#include "../model/adamw.h"
#include "../model/gpt.h"
#include "test.h"

#define LOG_HEADER "step,train_loss,val_loss,lr,tokens_seen,elapsed_s,grad_norm,clipped,accuracy"
#define TRAIN_TMP "tests/tmp/train"
#define MAX_ARGS 64

// The model every run uses unless a test needs otherwise: 1 layer, 2 heads, C = 16, T = 16.
#define SMALL_MODEL "--n-layer", "1", "--n-head", "2", "--n-embd", "16", "--batch-size", "4", \
                    "--eval-batches", "2", "--threads", "1"
#define BLOCK_16 "--block-size", "16"

// ----------------------------------------------------------------------------
// files

static void write_gzip(const char *path, const void *bytes, size_t len) {
    gzFile gz = gzopen(path, "wb9");
    if (!CHECK(gz != NULL, "cannot write %s", path)) return;
    CHECK(gzwrite(gz, bytes, (unsigned)len) == (int)len, "short gzip write to %s", path);
    CHECK(gzclose(gz) == Z_OK, "gzclose %s failed", path);
}

// Offset of the data section of a safetensors file held in memory (8 + header length).
static size_t data_start(const char *file) {
    uint64_t header_len = 0;
    for (int i = 0; i < 8; i++) header_len |= (uint64_t)(unsigned char)file[i] << (8 * i);
    return 8 + (size_t)header_len;
}

// A deterministic text of about `bytes` bytes: words, punctuation and newlines, with
// 2-, 3- and 4-byte UTF-8 characters among them.
static char *make_text(size_t bytes, uint64_t seed, size_t *len) {
    static const char *words[] = {"the", "king", "queen", "of", "and", "to", "thou", "art", "my", "lord",
                                  "café", "naïve", "señor", "Ærø", "—", "☃", "🙂", "ROMEO:", "fair", "night"};
    static const char *ends[] = {" ", " ", " ", ", ", ". ", "!\n", "?\n", "\n"};
    Rng rng;
    rng_seed(&rng, seed);
    char *text = malloc(bytes + 64);
    size_t n = 0;
    while (n < bytes) {
        const char *w = words[rng_below(&rng, sizeof(words) / sizeof(words[0]))];
        const char *e = ends[rng_below(&rng, sizeof(ends) / sizeof(ends[0]))];
        n += (size_t)sprintf(text + n, "%s%s", w, e);
    }
    *len = n;
    return text;
}

// tests/tmp/train/corpus.txt: a 6 KB text the tests share.
static const char *shared_corpus(void) {
    static char path[256];
    test_make_dir("tests/tmp");
    test_make_dir(TRAIN_TMP);
    snprintf(path, sizeof(path), "%s/corpus.txt", TRAIN_TMP);
    size_t len;
    char *text = make_text(6000, 42, &len);
    test_write_file(path, text, len);
    free(text);
    return path;
}

// ----------------------------------------------------------------------------
// running ./train

static int have_train(void) {
    return CHECK(test_file_exists(test_program("train")), "%s is missing: run the tests from the repository root "
                 "after make", test_program("train"));
}

// Starts ./train with the given arguments (NULL-terminated), stdout and stderr into log,
// in the working directory cwd (NULL: this one). Returns 0, or -1 (a failed check).
static int start_train_in(TestChild *c, const char *cwd, const char *log, char *const *args) {
    char program[4096];
    if (!CHECK(platform_real_path(test_program("train"), program, sizeof(program)) == 0, "%s: %s",
               test_program("train"), strerror(errno)))
        return -1;
    const char *argv[MAX_ARGS + 2] = {program};
    int n = 0;
    while (args[n] && n < MAX_ARGS) argv[n + 1] = args[n], n++;
    argv[n + 1] = NULL;
    return CHECK(test_child_start(c, argv, &(TestSpawn){.out_path = log, .cwd = cwd}) == 0, "cannot start ./train: %s",
                 strerror(errno)) ? 0 : -1;
}

static int start_train(TestChild *c, const char *log, char *const *args) { return start_train_in(c, NULL, log, args); }

// Runs ./train as start_train_in starts it, to its end.
static TestEnd train_to_end(const char *cwd, const char *log, char *const *args) {
    TestChild c;
    TestEnd end = {-1, 0, 0};
    if (start_train_in(&c, cwd, log, args) == 0) test_child_wait(&c, 1e9, &end);
    return end;
}

// Runs ./train with the NULL-terminated arguments that follow log; returns how it ended.
static TestEnd run_train(const char *log, ...) {
    char *args[MAX_ARGS + 1];
    int n = 0;
    va_list ap;
    va_start(ap, log);
    const char *a;
    while ((a = va_arg(ap, const char *)) != NULL && n < MAX_ARGS) args[n++] = (char *)a;
    va_end(ap);
    args[n] = NULL;
    return train_to_end(NULL, log, args);
}

// 1 when the process exited normally with `want`; otherwise records a failure that quotes
// its output.
static int exited_with(TestEnd end, int want, const char *what, const char *log) {
    size_t n;
    char *out = test_read_file(log, &n), text[64];
    int ok = CHECK(end.status == want, "%s: ./train %s, want exit status %d; output:\n%s", what,
                   test_end_text(&end, text), want, out ? out : "");
    free(out);
    return ok;
}

// 1 when the file contains text; otherwise records a failure that quotes it.
static int output_has(const char *log, const char *text, const char *what) {
    size_t n;
    char *out = test_read_file(log, &n);
    int ok = out && strstr(out, text) != NULL;
    CHECK(ok, "%s: the output lacks \"%s\"; it is:\n%s", what, text, out ? out : "(missing)");
    free(out);
    return ok;
}

// ----------------------------------------------------------------------------
// checkpoints

// 1 when a and b hold the same tensors (names, order, dtypes, shapes, bytes); otherwise 0
// with a description of the first difference and how many tensors differ.
static int same_tensors(const char *a, const char *b, char why[ERR_LEN]) {
    SafeTensors sa, sb;
    char err[ERR_LEN];
    why[0] = '\0';
    if (safetensors_read(a, &sa, err) != 0) {
        snprintf(why, ERR_LEN, "%s", err);
        return 0;
    }
    if (safetensors_read(b, &sb, err) != 0) {
        snprintf(why, ERR_LEN, "%s", err);
        safetensors_free(&sa);
        return 0;
    }
    int differ = 0;
    if (sa.num_tensors != sb.num_tensors) {
        snprintf(why, ERR_LEN, "%d tensors vs %d", sa.num_tensors, sb.num_tensors);
        differ = 1;
    }
    for (int i = 0; !differ && i < sa.num_tensors; i++) {
        const StTensor *ta = &sa.tensors[i], *tb = &sb.tensors[i];
        int same_shape = strcmp(ta->name, tb->name) == 0 && ta->dtype == tb->dtype && ta->ndim == tb->ndim;
        for (int d = 0; same_shape && d < ta->ndim; d++) same_shape = ta->shape[d] == tb->shape[d];
        if (!same_shape) {
            snprintf(why, ERR_LEN, "tensor %d is %s in one and %s in the other (or its shape differs)", i,
                     ta->name, tb->name);
            differ = 1;
            break;
        }
    }
    int bytes_differ = 0;
    for (int i = 0; !differ && i < sa.num_tensors; i++) {
        const StTensor *ta = &sa.tensors[i];
        const float *fa = safetensors_tensor_data(&sa, ta), *fb = safetensors_tensor_data(&sb, &sb.tensors[i]);
        if (memcmp(fa, fb, ta->nbytes) == 0) continue;
        if (bytes_differ++ == 0) {
            size_t k = 0;
            while (memcmp(fa + k, fb + k, 4) == 0) k++;
            snprintf(why, ERR_LEN, "tensor %s differs first at element %zu (%.9g vs %.9g)", ta->name, k,
                     fa[k], fb[k]);
        }
    }
    if (bytes_differ) {
        size_t used = strlen(why);
        snprintf(why + used, ERR_LEN - used, "; %d of %d tensors differ", bytes_differ, sa.num_tensors);
        differ = 1;
    }
    safetensors_free(&sa);
    safetensors_free(&sb);
    return !differ;
}

static long meta_long(const char *path, const char *key) {
    char value[64];
    if (!test_meta_value(path, key, value, sizeof(value))) return -1;
    return strtol(value, NULL, 10);
}

// Writes to dst the checkpoint src with metadata key set to value (removed when value is
// NULL), a valid file with the CRC recomputed as checkpoint_save does.
static void rewrite_meta(const char *src, const char *dst, const char *key, const char *value) {
    test_edit_checkpoint(src, dst, &(CheckpointEdit){.key = key, .value = value});
}

// 1 when every value of every F32 tensor in the file is finite.
static int all_finite(const char *path) {
    SafeTensors st;
    char err[ERR_LEN];
    if (safetensors_read(path, &st, err) != 0) return 0;
    int ok = 1;
    for (int i = 0; ok && i < st.num_tensors; i++) {
        const float *f = safetensors_tensor_data(&st, &st.tensors[i]);
        for (size_t k = 0; ok && k < st.tensors[i].nbytes / 4; k++) ok = isfinite(f[k]);
    }
    safetensors_free(&st);
    return ok;
}

// ----------------------------------------------------------------------------
// 1. plain and gzip corpora train identically

// Trains the same options on a and b (into dirs out_a, out_b) and checks that the two
// checkpoints hold the same tensors and the same metadata but for train.data, elapsed and
// the run's identity.
static void check_same_training(const char *a, const char *b, const char *out_a, const char *out_b,
                                const char *steps) {
    char log_a[300], log_b[300], ck_a[300], ck_b[300], why[ERR_LEN];
    snprintf(log_a, sizeof(log_a), "%s/train.log", out_a);
    snprintf(log_b, sizeof(log_b), "%s/train.log", out_b);
    TestEnd sa = run_train(log_a, SMALL_MODEL, BLOCK_16, "--steps", steps, "--data", a, "--out", out_a, NULL);
    TestEnd sb = run_train(log_b, SMALL_MODEL, BLOCK_16, "--steps", steps, "--data", b, "--out", out_b, NULL);
    if (!exited_with(sa, 0, a, log_a) || !exited_with(sb, 0, b, log_b)) return;
    snprintf(ck_a, sizeof(ck_a), "%s/ckpt.safetensors", out_a);
    snprintf(ck_b, sizeof(ck_b), "%s/ckpt.safetensors", out_b);
    CHECK(same_tensors(ck_a, ck_b, why), "%s and %s trained differently: %s", a, b, why);
    SafeTensors st;
    char err[ERR_LEN], other[2048];
    if (!CHECK(safetensors_read(ck_a, &st, err) == 0, "%s", err)) return;
    int compared = 0;
    for (int i = 0; i < st.num_meta; i++) {
        const char *key = st.meta[i].key;
        if (!strcmp(key, "train.data") || !strcmp(key, "state.elapsed_s") || !strcmp(key, "crc32") ||
            !strcmp(key, "train.run_id"))  // each run's own, at random
            continue;
        test_meta_value(ck_b, key, other, sizeof(other));
        CHECK(strcmp(st.meta[i].value, other) == 0, "metadata %s: '%.80s' from %s, '%.80s' from %s", key,
              st.meta[i].value, a, other, b);
        compared++;
    }
    CHECK(compared >= 30, "only %d metadata entries compared", compared);
    safetensors_free(&st);
}

TEST(train_plain_and_gzip_corpus_train_identically) {
    if (!have_train()) return;
    char dir[256], txt[300], gz[300], out_a[300], out_b[300];
    test_fresh_dir(dir, sizeof(dir), TRAIN_TMP, "gzip");
    size_t len;
    char *text = make_text(5000, 7, &len);
    snprintf(txt, sizeof(txt), "%s/corpus.txt", dir);
    snprintf(gz, sizeof(gz), "%s/corpus.gz", dir);
    test_write_file(txt, text, len);
    write_gzip(gz, text, len);
    free(text);
    snprintf(out_a, sizeof(out_a), "%s/plain", dir);
    snprintf(out_b, sizeof(out_b), "%s/gzip", dir);
    test_make_dir(out_a), test_make_dir(out_b);
    check_same_training(txt, gz, out_a, out_b, "20");

    // the real corpus: data/tinyshakespeare.txt.gz against its decompressed text
    gzFile in = gzopen("data/tinyshakespeare.txt.gz", "rb");
    if (!CHECK(in != NULL, "cannot open data/tinyshakespeare.txt.gz")) return;
    size_t cap = 2 << 20, n = 0;
    char *plain = malloc(cap);
    int got;
    while ((got = gzread(in, plain + n, (unsigned)(cap - n))) > 0) n += (size_t)got;
    gzclose(in);
    CHECK(n > 1000000, "tinyshakespeare decompressed to only %zu bytes", n);
    snprintf(txt, sizeof(txt), "%s/shakespeare.txt", dir);
    test_write_file(txt, plain, n);
    free(plain);
    snprintf(out_a, sizeof(out_a), "%s/shakespeare_plain", dir);
    snprintf(out_b, sizeof(out_b), "%s/shakespeare_gzip", dir);
    test_make_dir(out_a), test_make_dir(out_b);
    check_same_training(txt, "data/tinyshakespeare.txt.gz", out_a, out_b, "5");
}

// ----------------------------------------------------------------------------
// 2. every bad input gets its message and exit status

typedef struct {
    const char *what;
    const char *args[24];  // NULL-terminated; --out goes before them
    int status;
    const char *messages[3];  // each must appear in the output
} BadCase;

static void run_cases(const BadCase *cases, int n, const char *dir) {
    for (int i = 0; i < n; i++) {
        const BadCase *c = &cases[i];
        char log[300], out[300];
        snprintf(log, sizeof(log), "%s/case%02d.log", dir, i);
        snprintf(out, sizeof(out), "%s/out%02d", dir, i);
        char *args[MAX_ARGS + 1] = {"--out", out};
        int k = 2;
        for (int a = 0; c->args[a]; a++) args[k++] = (char *)c->args[a];
        args[k] = NULL;
        if (!exited_with(train_to_end(NULL, log, args), c->status, c->what, log)) continue;
        for (int m = 0; m < 3 && c->messages[m]; m++) output_has(log, c->messages[m], c->what);
    }
}

TEST(train_bad_data_and_usage_exit_codes) {
    if (!have_train()) return;
    char dir[256], missing[300], trunc_gz[300], bad_method[300], bad_crc[300], bad_utf8[300],
        bad_utf8_gz[300], empty[300], tiny[300], gz[300];
    test_fresh_dir(dir, sizeof(dir), TRAIN_TMP, "bad_input");
    const char *corpus = shared_corpus();
    snprintf(missing, sizeof(missing), "%s/no_such_corpus.txt", dir);
    snprintf(gz, sizeof(gz), "%s/corpus.gz", dir);
    snprintf(trunc_gz, sizeof(trunc_gz), "%s/truncated.gz", dir);
    snprintf(bad_method, sizeof(bad_method), "%s/bad_method.gz", dir);
    snprintf(bad_crc, sizeof(bad_crc), "%s/bad_crc.gz", dir);
    snprintf(bad_utf8, sizeof(bad_utf8), "%s/bad_utf8.txt", dir);
    snprintf(bad_utf8_gz, sizeof(bad_utf8_gz), "%s/bad_utf8.gz", dir);
    snprintf(empty, sizeof(empty), "%s/empty.txt", dir);
    snprintf(tiny, sizeof(tiny), "%s/tiny.txt", dir);

    size_t len, gz_len;
    char *text = make_text(6000, 3, &len);
    write_gzip(gz, text, len);
    char *gz_bytes = test_read_file(gz, &gz_len);
    if (!CHECK(gz_bytes && gz_len > 100, "cannot read back %s", gz)) return;
    test_write_file(trunc_gz, gz_bytes, gz_len / 2);
    gz_bytes[2] = 7;  // compression method: only 8 (deflate) exists
    test_write_file(bad_method, gz_bytes, gz_len);
    gz_bytes[2] = 8;
    gz_bytes[gz_len - 8] ^= 0x01;  // the trailer's CRC-32 of the text
    test_write_file(bad_crc, gz_bytes, gz_len);
    free(gz_bytes);
    text[1234] = (char)0xff;  // never valid in UTF-8
    test_write_file(bad_utf8, text, len);
    write_gzip(bad_utf8_gz, text, len);
    free(text);
    test_write_file(empty, "", 0);
    test_write_file(tiny, "To be, or not to be, that is the question.\n", 43);

    const BadCase cases[] = {
        {"missing corpus", {SMALL_MODEL, "--data", missing}, 1, {"cannot open corpus", "no_such_corpus.txt"}},
        {"truncated gzip", {SMALL_MODEL, "--data", trunc_gz}, 1, {"truncated", "truncated.gz"}},
        {"gzip with a bad method", {SMALL_MODEL, "--data", bad_method}, 1, {"corrupt gzip", "bad_method.gz"}},
        {"gzip with a bad CRC", {SMALL_MODEL, "--data", bad_crc}, 1, {"corrupt gzip", "bad_crc.gz"}},
        {"invalid UTF-8", {SMALL_MODEL, "--data", bad_utf8}, 1, {"invalid UTF-8", "byte offset 1234", "bad_utf8.txt"}},
        {"invalid UTF-8 in gzip", {SMALL_MODEL, "--data", bad_utf8_gz}, 1, {"byte offset 1234 of the decompressed"}},
        {"empty corpus", {SMALL_MODEL, "--data", empty}, 1, {"empty", "empty.txt"}},
        {"corpus shorter than the default block", {SMALL_MODEL, "--data", tiny}, 1, {"needs at least 65", "tiny.txt"}},
        {"--block-size too large for the training split", {SMALL_MODEL, "--data", corpus, "--block-size", "5000"}, 2,
         {"needs at least 5001", "smaller --block-size"}},
        {"--block-size too large for the validation split", {SMALL_MODEL, "--data", corpus, "--block-size", "1000"},
         2, {"validation split is too short", "needs at least 1001", "smaller --block-size"}},
        {"unknown flag", {"--data", corpus, "--frobnicate", "3"}, 2, {"--frobnicate"}},
        {"stray argument", {"--data", corpus, "stray"}, 2, {"stray"}},
        {"flag without its value", {"--data", corpus, "--steps"}, 2, {"--steps", "needs a value"}},
        {"--n-head 0", {"--data", corpus, "--n-head", "0"}, 2, {"--n-head"}},
        {"--batch-size -3", {"--data", corpus, "--batch-size", "-3"}, 2, {"--batch-size"}},
        {"--lr abc", {"--data", corpus, "--lr", "abc"}, 2, {"--lr", "abc"}},
        {"--dropout 1", {"--data", corpus, "--dropout", "1"}, 2, {"--dropout"}},
        {"--steps 1.5", {"--data", corpus, "--steps", "1.5"}, 2, {"--steps"}},
        {"--lr 1e9", {"--data", corpus, "--lr", "1e9"}, 2, {"--lr"}},
        {"--lr=abc", {"--data", corpus, "--lr=abc"}, 2, {"--lr", "abc"}},
        {"--n-head=0", {"--data", corpus, "--n-head=0"}, 2, {"--n-head"}},
        {"--n-embd not divisible by --n-head", {"--data", corpus, "--n-embd", "30", "--n-head", "4"}, 2,
         {"--n-embd 30", "--n-head 4", "--head-size"}},
        {"--min-lr above --lr", {"--data", corpus, "--lr", "0.001", "--min-lr", "0.01"}, 2, {"--min-lr"}},
        {"--grad-accum not dividing --batch-size", {SMALL_MODEL, BLOCK_16, "--data", corpus, "--grad-accum", "3"}, 2,
         {"--batch-size 4 is not divisible by --grad-accum 3"}},
        {"--grad-accum 0", {"--data", corpus, "--grad-accum", "0"}, 2, {"--grad-accum"}},
        {"--zero 2", {"--data", corpus, "--zero", "2"}, 2, {"--zero"}},
        {"--mpi-timeout -1", {"--data", corpus, "--mpi-timeout", "-1"}, 2, {"--mpi-timeout"}},
        {"--mpi-timeout abc", {"--data", corpus, "--mpi-timeout", "abc"}, 2, {"--mpi-timeout", "abc"}},
        {"--pos alibi", {"--data", corpus, "--pos", "alibi"}, 2, {"--pos must be learned or rope", "alibi"}},
        {"--pos rope with an odd head size", {"--data", corpus, "--pos", "rope", "--n-embd", "30", "--n-head", "2"}, 2,
         {"rope", "head_size must be even (got 15)"}},
        // controls: the same corpus and sizes are fine where the options allow them
        {"--head-size makes --n-embd 30 with 4 heads valid",
         {"--n-layer", "1", "--batch-size", "2", "--eval-batches", "1", "--threads", "1", BLOCK_16, "--data", corpus,
          "--n-embd", "30", "--n-head", "4", "--head-size", "8", "--steps", "2"}, 0, {"done: 2 steps"}},
        {"gzip of the same text trains", {SMALL_MODEL, BLOCK_16, "--data", gz, "--steps", "2"}, 0, {"done: 2 steps"}},
        {"--mpi-timeout 0 (no limit) on one process", {SMALL_MODEL, BLOCK_16, "--data", corpus, "--steps", "2",
         "--mpi-timeout", "0"}, 0, {"done: 2 steps"}},
    };
    run_cases(cases, (int)(sizeof(cases) / sizeof(cases[0])), dir);
}

TEST(train_bad_resume_exit_codes) {
    if (!have_train()) return;
    char dir[256], good[300], log[300], ck[300], missing[300], truncated[300], flipped[300], format[300],
        shape[300], no_step[300], other_vocab[300], other_corpus[300], renamed[300], old_vocab[300];
    test_fresh_dir(dir, sizeof(dir), TRAIN_TMP, "bad_resume");
    const char *corpus = shared_corpus();
    snprintf(good, sizeof(good), "%s/good", dir);
    snprintf(log, sizeof(log), "%s/good.log", dir);
    TestEnd status = run_train(log, SMALL_MODEL, BLOCK_16, "--data", corpus, "--steps", "10", "--out", good, NULL);
    if (!exited_with(status, 0, "training the checkpoint to damage", log)) return;
    snprintf(ck, sizeof(ck), "%s/ckpt.safetensors", good);
    snprintf(missing, sizeof(missing), "%s/missing.safetensors", dir);
    snprintf(truncated, sizeof(truncated), "%s/truncated.safetensors", dir);
    snprintf(flipped, sizeof(flipped), "%s/flipped.safetensors", dir);
    snprintf(format, sizeof(format), "%s/format.safetensors", dir);
    snprintf(shape, sizeof(shape), "%s/shape.safetensors", dir);
    snprintf(no_step, sizeof(no_step), "%s/no_step.safetensors", dir);
    snprintf(other_vocab, sizeof(other_vocab), "%s/other_vocab.safetensors", dir);
    snprintf(other_corpus, sizeof(other_corpus), "%s/other.txt", dir);

    size_t n;
    char *bytes = test_read_file(ck, &n);
    if (!CHECK(bytes != NULL, "cannot read %s", ck)) return;
    size_t data = data_start(bytes);
    test_write_file(truncated, bytes, n / 2);
    bytes[data + (n - data) / 2] ^= 0x10;
    test_write_file(flipped, bytes, n);
    free(bytes);
    rewrite_meta(ck, format, "format", "chargpt-0");
    rewrite_meta(ck, shape, "n_embd", "32");
    rewrite_meta(ck, no_step, "state.step", NULL);
    char other_text[401];
    for (int i = 0; i < 400; i++) other_text[i] = "abc \n"[i % 5];
    test_write_file(other_corpus, other_text, 400);
    rewrite_meta(ck, other_vocab, "train.data", other_corpus);
    // a checkpoint from before corpus fingerprints: the vocabulary tells another corpus
    snprintf(old_vocab, sizeof(old_vocab), "%s/old_vocab.safetensors", dir);
    rewrite_meta(other_vocab, old_vocab, "train.corpus_fingerprint", NULL);
    // --data accepted on resume only for the same text: a copy under another name is
    snprintf(renamed, sizeof(renamed), "%s/renamed.txt", dir);
    size_t corpus_len;
    char *corpus_text = test_read_file(corpus, &corpus_len);
    if (corpus_text) test_write_file(renamed, corpus_text, corpus_len);
    free(corpus_text);

    const BadCase cases[] = {
        {"resume from a missing checkpoint", {"--resume", missing}, 1, {"missing.safetensors"}},
        {"resume from a truncated checkpoint", {"--resume", truncated}, 1, {"truncated.safetensors"}},
        {"resume from a checkpoint with a flipped data byte", {"--resume", flipped}, 1, {"CRC", "flipped.safetensors"}},
        {"resume from another format version", {"--resume", format}, 1, {"format", "chargpt-0"}},
        {"resume from a config that disagrees with a tensor", {"--resume", shape}, 1, {"shape", "shape.safetensors"}},
        {"resume from a checkpoint without state.step", {"--resume", no_step}, 1, {"state.step"}},
        {"resume on another corpus", {"--resume", other_vocab}, 1, {"is not the text", "400 characters, CRC-32"}},
        {"resume an older checkpoint on a corpus with another vocabulary", {"--resume", old_vocab}, 1, {"vocabulary"}},
        {"resume with --data of another text", {"--resume", ck, "--data", other_corpus}, 1,
         {"other.txt is not the text", "5321 characters"}},
        {"resume an older checkpoint with --data", {"--resume", old_vocab, "--data", corpus}, 2, {"fingerprint"}},
        {"resume with --lr", {"--resume", ck, "--lr", "0.01"}, 2, {"--lr", "cannot be changed"}},
        {"resume with --n-layer", {"--resume", ck, "--n-layer", "2"}, 2, {"--n-layer"}},
        // control: the undamaged checkpoint resumes, with the options resume allows
        {"resume the undamaged checkpoint", {"--resume", ck, "--steps", "12", "--eval-every", "5", "--save-every", "7",
         "--threads", "1"}, 0, {"resuming", "at step 10 of 12", "done: 2 steps"}},
        {"resume with --data naming a copy of the corpus", {"--resume", ck, "--steps", "13", "--data", renamed}, 0,
         {"at step 10 of 13", "done: 3 steps"}},
    };
    run_cases(cases, (int)(sizeof(cases) / sizeof(cases[0])), dir);
}

// ----------------------------------------------------------------------------
// 3. checkpoint_save -> checkpoint_open / load reproduces everything bit for bit

// Random bits in every float: any finite value (subnormals and -0 included; a checkpoint
// holding NaN or infinity is refused). nonnegative: clear the sign bit (second moments).
static void fill_bits(float *x, size_t n, int nonnegative, Rng *rng) {
    for (size_t i = 0; i < n; i++) {
        do {
            uint32_t bits = (uint32_t)rng_next_u64(rng) & (nonnegative ? 0x7FFFFFFFu : 0xFFFFFFFFu);
            memcpy(&x[i], &bits, 4);
        } while (!isfinite(x[i]));
    }
}

TEST(train_checkpoint_round_trip_exact) {
    char dir[256], path[300], err[ERR_LEN];
    test_fresh_dir(dir, sizeof(dir), TRAIN_TMP, "round_trip");
    static const uint32_t vocab[8] = {10, 32, 65, 0xE9, 0x3B1, 0x4E2D, 0x1F600, 0x10FFFF};
    const GPTConfig configs[2] = {
        {8, 8, 2, 3, 12, 5, 0, 0.25f, POSITION_LEARNED},  // A = 15 != C, no qkv bias, dropout
        {8, 16, 1, 2, 16, 8, 1, 0.0f, POSITION_LEARNED},
    };
    for (int c = 0; c < 2; c++) {
        GPT model;
        AdamW opt;
        if (!CHECK(gpt_build(&model, &configs[c], 1, err) == 0, "%s", err)) return;
        if (!CHECK(adamw_init(&opt, &model, 0.9f, 0.99f, 1e-8f, 0.1f, err) == 0, "%s", err)) return;
        Rng rng;
        rng_seed(&rng, 100 + c);
        fill_bits(model.params_memory, model.num_parameters, 0, &rng);
        fill_bits(opt.m, opt.n, 0, &rng);
        fill_bits(opt.v, opt.n, 1, &rng);
        opt.step = LONG_AT_MOST(123456789012LL);
        StMeta extra[2] = {{"train.note", "h\xc3\xa9llo \xe2\x9c\x93 \"quoted\" \\ back"}, {"state.step", "42"}};
        snprintf(path, sizeof(path), "%s/round_trip%d.safetensors", dir, c);
        if (!CHECK(checkpoint_save(path, &model, &(Vocab){(uint32_t *)vocab, model.config.vocab_size, 0},
                                   &opt, extra, 2, err) == 0, "%s", err)) return;

        Checkpoint ck;
        if (!CHECK(checkpoint_open(path, &ck, err) == 0, "%s", err)) return;
        CHECK(memcmp(&ck.config, &configs[c], sizeof(GPTConfig)) == 0,
              "config %d: read back V %d T %d L %d H %d C %d hs %d bias %d dropout %g", c, ck.config.vocab_size,
              ck.config.block_size, ck.config.n_layer, ck.config.n_head, ck.config.n_embd, ck.config.head_size,
              ck.config.qkv_bias, ck.config.dropout);
        CHECK(memcmp(ck.vocab, vocab, sizeof(vocab)) == 0, "config %d: the vocabulary differs", c);
        const char *note = checkpoint_meta(&ck, "train.note");
        CHECK(note && strcmp(note, extra[0].value) == 0, "config %d: train.note read back as '%s'", c,
              note ? note : "(absent)");
        CHECK(checkpoint_meta(&ck, "format") && strcmp(checkpoint_meta(&ck, "format"), CHECKPOINT_FORMAT) == 0,
              "config %d: format is not %s", c, CHECKPOINT_FORMAT);

        GPT loaded;
        if (!CHECK(checkpoint_load_model(&ck, &loaded, 0, err) == 0, "%s", err)) return;
        CHECK(loaded.num_parameters == model.num_parameters &&
              memcmp(loaded.params_memory, model.params_memory, model.num_parameters * 4) == 0,
              "config %d: parameters differ after the round trip", c);
        AdamW opt2;
        if (!CHECK(adamw_init(&opt2, &loaded, 0.9f, 0.99f, 1e-8f, 0.1f, err) == 0, "%s", err)) return;
        if (CHECK(checkpoint_load_optimizer(&ck, &opt2, err) == 0, "%s", err)) {
            CHECK(memcmp(opt2.m, opt.m, opt.n * 4) == 0, "config %d: first moments differ", c);
            CHECK(memcmp(opt2.v, opt.v, opt.n * 4) == 0, "config %d: second moments differ", c);
            CHECK(opt2.step == opt.step, "config %d: optimizer step %ld, want %ld", c, opt2.step, opt.step);
        }
        adamw_free(&opt2);
        gpt_free(&loaded);
        checkpoint_close(&ck);

        // without an optimizer the model still loads, and asking for the moments fails cleanly
        snprintf(path, sizeof(path), "%s/no_optimizer%d.safetensors", dir, c);
        if (!CHECK(checkpoint_save(path, &model, &(Vocab){(uint32_t *)vocab, model.config.vocab_size, 0},
                                   NULL, NULL, 0, err) == 0, "%s", err)) return;
        if (CHECK(checkpoint_open(path, &ck, err) == 0, "%s", err)) {
            if (CHECK(checkpoint_load_model(&ck, &loaded, 0, err) == 0, "%s", err)) {
                CHECK(memcmp(loaded.params_memory, model.params_memory, model.num_parameters * 4) == 0,
                      "config %d: parameters differ without optimizer", c);
                adamw_init(&opt2, &loaded, 0.9f, 0.99f, 1e-8f, 0.1f, err);
                err[0] = '\0';
                CHECK(checkpoint_load_optimizer(&ck, &opt2, err) != 0 && strstr(err, "optimizer.m."),
                      "config %d: loading moments from a checkpoint without them: '%s'", c, err);
                adamw_free(&opt2);
                gpt_free(&loaded);
            }
            checkpoint_close(&ck);
        }
        adamw_free(&opt);
        gpt_free(&model);
    }
}

// A sharded optimizer (ZeRO stage 1: each process holds the moments of parameters
// [first, first + n)) loads its part of a checkpoint's moments, whatever tensors the range
// cuts; a checkpoint is written only from every moment.
TEST(train_checkpoint_sharded_moments) {
    char dir[256], path[300], err[ERR_LEN];
    test_fresh_dir(dir, sizeof(dir), TRAIN_TMP, "sharded_moments");
    static const uint32_t vocab[8] = {10, 32, 65, 66, 67, 68, 69, 70};
    const GPTConfig config = {8, 8, 2, 3, 12, 5, 1, 0.0f, POSITION_LEARNED};
    GPT model;
    AdamW opt, part;
    if (!CHECK(gpt_build(&model, &config, 1, err) == 0, "%s", err)) return;
    if (!CHECK(adamw_init(&opt, &model, 0.9f, 0.99f, 1e-8f, 0.1f, err) == 0, "%s", err)) return;
    Rng rng;
    rng_seed(&rng, 7);
    fill_bits(model.params_memory, model.num_parameters, 0, &rng);
    fill_bits(opt.m, opt.n, 0, &rng);
    fill_bits(opt.v, opt.n, 1, &rng);
    opt.step = 77;
    snprintf(path, sizeof(path), "%s/full.safetensors", dir);
    if (!CHECK(checkpoint_save(path, &model, &(Vocab){(uint32_t *)vocab, model.config.vocab_size, 0},
                               &opt, NULL, 0, err) == 0, "%s", err)) return;
    Checkpoint ck;
    if (!CHECK(checkpoint_open(path, &ck, err) == 0, "%s", err)) return;
    size_t P = model.num_parameters, cuts[4] = {0, P / 3 + 1, P / 3 + 2, P};  // 3 parts, one of 1 parameter
    for (int k = 0; k < 3; k++) {
        size_t first = cuts[k], n = cuts[k + 1] - cuts[k];
        if (!CHECK(adamw_init_range(&part, &model, first, n, 0.9f, 0.99f, 1e-8f, 0.1f, err) == 0, "%s", err)) break;
        if (CHECK(checkpoint_load_optimizer(&ck, &part, err) == 0, "%s", err)) {
            CHECK(memcmp(part.m, opt.m + first, n * 4) == 0 && memcmp(part.v, opt.v + first, n * 4) == 0,
                  "part %d (parameters %zu..%zu): moments differ from the full load's", k, first, first + n);
            CHECK(memcmp(part.decay, opt.decay + first, n) == 0, "part %d: weight-decay flags differ", k);
            CHECK(part.step == 77, "part %d: step %ld, want 77", k, part.step);
        }
        // a part is not a checkpoint's optimizer state
        snprintf(path, sizeof(path), "%s/part%d.safetensors", dir, k);
        err[0] = '\0';
        CHECK(checkpoint_save(path, &model, &(Vocab){(uint32_t *)vocab, model.config.vocab_size, 0},
                              &part, NULL, 0, err) != 0 && strstr(err, "of the"),
              "saving the moments of parameters %zu..%zu only: '%s'", first, first + n, err);
        adamw_free(&part);
    }
    checkpoint_close(&ck);
    adamw_free(&opt);
    gpt_free(&model);
}

// ----------------------------------------------------------------------------
// 4. resuming, evaluation and threads do not change training

// Trains in dir/<name> with the common options plus the NULL-terminated extra ones; returns
// 1 on exit status 0.
static int train_into(const char *dir, const char *name, const char *corpus, const char **extra) {
    char out[300], log[300];
    snprintf(out, sizeof(out), "%s/%s", dir, name);
    snprintf(log, sizeof(log), "%s/%s.log", dir, name);
    char *args[MAX_ARGS + 1];
    const char *common[] = {SMALL_MODEL, BLOCK_16, "--data", corpus, "--out", out, "--warmup", "5", NULL};
    int n = 0;
    for (int i = 0; common[i]; i += 2) {  // flags and their values, but those extra gives (each option once)
        int given = 0;
        for (int k = 0; extra[k]; k++) given |= strcmp(extra[k], common[i]) == 0;
        if (!given) args[n++] = (char *)common[i], args[n++] = (char *)common[i + 1];
    }
    for (int i = 0; extra[i]; i++) args[n++] = (char *)extra[i];
    args[n] = NULL;
    return exited_with(train_to_end(NULL, log, args), 0, name, log);
}

static void check_same_ckpt(const char *dir, const char *a, const char *b, const char *what) {
    char pa[300], pb[300], why[ERR_LEN];
    snprintf(pa, sizeof(pa), "%s/%s/ckpt.safetensors", dir, a);
    snprintf(pb, sizeof(pb), "%s/%s/ckpt.safetensors", dir, b);
    CHECK(same_tensors(pa, pb, why), "%s: %s", what, why);
    static const char *keys[] = {"state.step", "state.rng", "state.tokens_seen", "optimizer.step"};
    for (int i = 0; i < 4; i++) {
        char va[64], vb[64];
        test_meta_value(pa, keys[i], va, sizeof(va));
        test_meta_value(pb, keys[i], vb, sizeof(vb));
        CHECK(va[0] && strcmp(va, vb) == 0, "%s: %s is '%s' and '%s'", what, keys[i], va, vb);
    }
}

TEST(train_resume_is_bit_identical) {
    if (!have_train()) return;
    char dir[256], ck[300];
    test_fresh_dir(dir, sizeof(dir), TRAIN_TMP, "resume");
    const char *corpus = shared_corpus();
    for (int with_dropout = 0; with_dropout < 2; with_dropout++) {
        const char *dropout = with_dropout ? "0.1" : "0";
        char full[32], half[32];
        snprintf(full, sizeof(full), "full%d", with_dropout);
        snprintf(half, sizeof(half), "half%d", with_dropout);
        const char *full_args[] = {"--steps", "20", "--decay-steps", "20", "--save-every", "10", "--dropout", dropout,
                                   NULL};
        const char *half_args[] = {"--steps", "10", "--decay-steps", "20", "--save-every", "10", "--dropout", dropout,
                                   NULL};
        if (!train_into(dir, full, corpus, full_args) || !train_into(dir, half, corpus, half_args)) return;
        snprintf(ck, sizeof(ck), "%s/%s/ckpt.safetensors", dir, half);
        CHECK(meta_long(ck, "state.step") == 10, "the half run saved step %ld", meta_long(ck, "state.step"));
        char log[300], out[300];
        snprintf(log, sizeof(log), "%s/%s_resumed.log", dir, half);
        snprintf(out, sizeof(out), "%s/%s", dir, half);
        TestEnd status = run_train(log, "--resume", ck, "--steps", "20", "--out", out, "--threads", "1", NULL);
        if (!exited_with(status, 0, "resume", log)) return;
        check_same_ckpt(dir, full, half, with_dropout ? "20 steps vs 10 + 10 resumed, dropout 0.1"
                                                      : "20 steps vs 10 + 10 resumed");
    }
    // the comparison is not vacuous: another seed trains differently
    char other[300], why[ERR_LEN];
    const char *seed_args[] = {"--steps", "20", "--decay-steps", "20", "--seed", "7", NULL};
    if (!train_into(dir, "seed7", corpus, seed_args)) return;
    snprintf(ck, sizeof(ck), "%s/full0/ckpt.safetensors", dir);
    snprintf(other, sizeof(other), "%s/seed7/ckpt.safetensors", dir);
    CHECK(!same_tensors(ck, other, why), "--seed 7 gave the same tensors as --seed 1337");
    // dropout changes training (so the dropout run above really used dropout)
    snprintf(other, sizeof(other), "%s/full1/ckpt.safetensors", dir);
    CHECK(!same_tensors(ck, other, why), "--dropout 0.1 gave the same tensors as --dropout 0");
}

// RoPE runs (--pos rope): the checkpoint says so and holds no wpe; a resume continues one bit
// for bit, --init-from starts another, and --pos cannot change either's model; a checkpoint
// without position_encoding (older chargpt) holds learned positions, an unknown value is
// refused, and a RoPE checkpoint called learned is refused for its missing wpe, not misread.
TEST(train_rope_checkpoints_resume_and_load) {
    if (!have_train()) return;
    char dir[256], ck[300], learned[300], edited[300], log[300], out[300], value[64], err[ERR_LEN];
    test_fresh_dir(dir, sizeof(dir), TRAIN_TMP, "rope");
    const char *corpus = shared_corpus();
    const char *full_args[] = {"--pos", "rope", "--steps", "20", "--decay-steps", "20", "--save-every", "10", NULL};
    const char *half_args[] = {"--pos", "rope", "--steps", "10", "--decay-steps", "20", "--save-every", "10", NULL};
    const char *learned_args[] = {"--steps", "2", NULL};
    if (!train_into(dir, "full", corpus, full_args) || !train_into(dir, "half", corpus, half_args) ||
        !train_into(dir, "learned", corpus, learned_args))
        return;
    snprintf(ck, sizeof(ck), "%s/half/ckpt.safetensors", dir);
    snprintf(log, sizeof(log), "%s/half_resumed.log", dir);
    snprintf(out, sizeof(out), "%s/half", dir);
    if (!exited_with(run_train(log, "--resume", ck, "--steps", "20", "--out", out, "--threads", "1", NULL), 0,
                     "resume", log))
        return;
    check_same_ckpt(dir, "full", "half", "--pos rope: 20 steps vs 10 + 10 resumed");

    snprintf(ck, sizeof(ck), "%s/full/ckpt.safetensors", dir);
    snprintf(learned, sizeof(learned), "%s/learned/ckpt.safetensors", dir);
    test_meta_value(ck, "position_encoding", value, sizeof(value));
    CHECK(strcmp(value, "rope") == 0, "a --pos rope checkpoint's position_encoding is '%s'", value);
    test_meta_value(learned, "position_encoding", value, sizeof(value));
    CHECK(strcmp(value, "learned") == 0, "a default checkpoint's position_encoding is '%s'", value);
    SafeTensors st;
    if (CHECK(safetensors_read(ck, &st, err) == 0, "%s", err)) {
        CHECK(!safetensors_find(&st, "transformer.wpe.weight") && !safetensors_find(&st, "optimizer.m.transformer.wpe.weight"),
              "a --pos rope checkpoint holds a position table");
        safetensors_free(&st);
    }
    // --init-from a RoPE checkpoint: a RoPE run; --pos cannot change the model there or on --resume
    snprintf(log, sizeof(log), "%s/init.log", dir);
    snprintf(out, sizeof(out), "%s/init", dir);
    if (exited_with(run_train(log, "--init-from", ck, "--data", corpus, "--steps", "2", "--batch-size", "4",
                              "--eval-batches", "1", "--threads", "1", "--out", out, NULL), 0, "--init-from", log)) {
        snprintf(edited, sizeof(edited), "%s/init/ckpt.safetensors", dir);
        test_meta_value(edited, "position_encoding", value, sizeof(value));
        CHECK(strcmp(value, "rope") == 0, "--init-from a RoPE checkpoint saved position_encoding '%s'", value);
    }
    const BadCase cases[] = {
        {"--init-from with --pos", {"--init-from", ck, "--data", corpus, "--pos", "learned"}, 2,
         {"--pos cannot be given with --init-from"}},
        {"--resume with --pos", {"--resume", ck, "--pos", "learned"}, 2, {"--pos cannot be changed when resuming"}},
    };
    run_cases(cases, 2, dir);
    // what older chargpt wrote, and what it must not be taken for
    Checkpoint c;
    snprintf(edited, sizeof(edited), "%s/old.safetensors", dir);
    rewrite_meta(learned, edited, "position_encoding", NULL);
    if (CHECK(checkpoint_open(edited, &c, err) == 0, "a checkpoint without position_encoding: %s", err)) {
        CHECK(c.config.position == POSITION_LEARNED, "a checkpoint without position_encoding is not learned");
        checkpoint_close(&c);
    }
    snprintf(edited, sizeof(edited), "%s/alibi.safetensors", dir);
    rewrite_meta(ck, edited, "position_encoding", "alibi");
    CHECK(checkpoint_open(edited, &c, err) != 0 && strstr(err, "position_encoding") && strstr(err, "alibi"),
          "position_encoding 'alibi': '%s'", err);
    snprintf(edited, sizeof(edited), "%s/misread.safetensors", dir);
    rewrite_meta(ck, edited, "position_encoding", "learned");
    CHECK(checkpoint_open(edited, &c, err) != 0 && strstr(err, "transformer.wpe.weight"),
          "a RoPE checkpoint called learned: '%s'", err);
}

TEST(train_evaluation_and_threads_do_not_change_training) {
    if (!have_train()) return;
    char dir[256], ck[300], log[300], out[300];
    test_fresh_dir(dir, sizeof(dir), TRAIN_TMP, "eval_every");
    const char *corpus = shared_corpus();
    const char *every3[] = {"--steps", "20", "--eval-every", "3", "--dropout", "0.1", NULL};
    const char *every7[] = {"--steps", "20", "--eval-every", "7", "--dropout", "0.1", NULL};
    const char *threads1[] = {"--steps", "6", "--eval-every", "3", "--dropout", "0.1", NULL};
    const char *threads2[] = {"--steps", "6", "--eval-every", "3", "--dropout", "0.1", "--threads", "2", NULL};
    if (!train_into(dir, "every3", corpus, every3) || !train_into(dir, "every7", corpus, every7) ||
        !train_into(dir, "threads1", corpus, threads1) || !train_into(dir, "threads2", corpus, threads2))
        return;
    check_same_ckpt(dir, "every3", "every7", "--eval-every 3 vs 7");
    check_same_ckpt(dir, "threads1", "threads2", "--threads 1 vs 2");
    snprintf(log, sizeof(log), "%s/every3/log.csv", dir);
    output_has(log, "\n3,", "log.csv of --eval-every 3 (a row at the evaluation of step 3)");

    // resuming with another --eval-every and --threads (both allowed) changes nothing either;
    // every3 ran 20 steps with the decay ending at step 20, as half does
    const char *half[] = {"--steps", "14", "--decay-steps", "20", "--eval-every", "3", "--dropout", "0.1", NULL};
    if (!train_into(dir, "half", corpus, half)) return;
    snprintf(ck, sizeof(ck), "%s/half/ckpt.safetensors", dir);
    snprintf(log, sizeof(log), "%s/half_resumed.log", dir);
    snprintf(out, sizeof(out), "%s/half", dir);
    TestEnd status = run_train(log, "--resume", ck, "--steps", "20", "--eval-every", "4", "--threads", "2", "--out", out,
                           NULL);
    if (!exited_with(status, 0, "resume with --eval-every 4 --threads 2", log)) return;
    CHECK(meta_long(ck, "train.eval_every") == 4, "the resumed run saved train.eval_every %ld, want 4",
          meta_long(ck, "train.eval_every"));
    check_same_ckpt(dir, "every3", "half", "20 steps vs 14 + 6 resumed with --eval-every 4 --threads 2");
}

// ||a - b|| / ||b|| over the parameter tensors (not optimizer.*) of two checkpoints, or -1
// when one cannot be read or they hold different tensors.
static double params_rel_error(const char *pa, const char *pb) {
    SafeTensors a, b;
    char err[ERR_LEN];
    if (safetensors_read(pa, &a, err) != 0) return -1;
    if (safetensors_read(pb, &b, err) != 0) {
        safetensors_free(&a);
        return -1;
    }
    double diff2 = 0.0, norm2 = 0.0;
    int ok = a.num_tensors == b.num_tensors;
    for (int i = 0; ok && i < a.num_tensors; i++) {
        const StTensor *ta = &a.tensors[i], *tb = safetensors_find(&b, ta->name);
        ok = tb && tb->nbytes == ta->nbytes;
        if (!ok || strncmp(ta->name, "optimizer.", 10) == 0) continue;
        const float *x = safetensors_tensor_data(&a, ta), *y = safetensors_tensor_data(&b, tb);
        for (size_t k = 0; k < ta->nbytes / sizeof(float); k++) {
            diff2 += ((double)x[k] - y[k]) * ((double)x[k] - y[k]);
            norm2 += (double)y[k] * y[k];
        }
    }
    safetensors_free(&a);
    safetensors_free(&b);
    return ok && norm2 > 0 ? sqrt(diff2 / norm2) : -1;
}

// --grad-accum K sums the gradients of K micro-batches: the same step as one batch, up to
// the order of float sums, with and without dropout (whose masks follow the global row).
TEST(train_grad_accum_matches_one_batch) {
    if (!have_train()) return;
    char dir[256], pa[300], pb[300], ck[300], log[300], out[300];
    test_fresh_dir(dir, sizeof(dir), TRAIN_TMP, "grad_accum");
    const char *corpus = shared_corpus();
    for (int with_dropout = 0; with_dropout < 2; with_dropout++) {
        const char *dropout = with_dropout ? "0.1" : "0";
        static const char *ks[] = {"1", "2", "4"};
        char names[3][32];
        for (int i = 0; i < 3; i++) {
            snprintf(names[i], sizeof(names[i]), "k%s_dropout%d", ks[i], with_dropout);
            const char *args[] = {"--steps", "20", "--dropout", dropout, "--grad-accum", ks[i], NULL};
            if (!train_into(dir, names[i], corpus, args)) return;
        }
        snprintf(pb, sizeof(pb), "%s/%s/ckpt.safetensors", dir, names[0]);
        for (int i = 1; i < 3; i++) {
            snprintf(pa, sizeof(pa), "%s/%s/ckpt.safetensors", dir, names[i]);
            double e = params_rel_error(pa, pb);
            printf("    --grad-accum %s vs one batch, dropout %s: weights rel err %.2e after 20 steps\n", ks[i],
                   dropout, e);
            CHECK(e >= 0 && e <= 1e-5, "--grad-accum %s, dropout %s: weights differ from one batch's by %.3e "
                  "(relative), want <= 1e-5", ks[i], dropout, e);
        }
    }
    // not vacuous: without the dropout masks of the global rows (another seed's masks), the
    // weights differ far more than that
    const char *seed_args[] = {"--steps", "20", "--dropout", "0.1", "--seed", "7", NULL};
    if (!train_into(dir, "seed7", corpus, seed_args)) return;
    snprintf(pa, sizeof(pa), "%s/seed7/ckpt.safetensors", dir);
    snprintf(pb, sizeof(pb), "%s/k1_dropout1/ckpt.safetensors", dir);
    CHECK(params_rel_error(pa, pb) > 1e-3, "another seed's run is within 1e-3 of this one");

    // the thread count changes no bit of an accumulated step either
    const char *threads2[] = {"--steps", "20", "--dropout", "0.1", "--grad-accum", "2", "--threads", "2", NULL};
    if (!train_into(dir, "k2_threads2", corpus, threads2)) return;
    check_same_ckpt(dir, "k2_dropout1", "k2_threads2", "--grad-accum 2 on 1 and 2 threads");

    // resuming a --grad-accum 2 run (with --grad-accum 2) is bit-exact
    const char *half[] = {"--steps", "10", "--decay-steps", "20", "--dropout", "0.1", "--grad-accum", "2", NULL};
    const char *full[] = {"--steps", "20", "--decay-steps", "20", "--dropout", "0.1", "--grad-accum", "2", NULL};
    if (!train_into(dir, "half", corpus, half) || !train_into(dir, "full", corpus, full)) return;
    snprintf(ck, sizeof(ck), "%s/half/ckpt.safetensors", dir);
    snprintf(log, sizeof(log), "%s/half_resumed.log", dir);
    snprintf(out, sizeof(out), "%s/half", dir);
    TestEnd status = run_train(log, "--resume", ck, "--steps", "20", "--grad-accum", "2", "--out", out, NULL);
    if (!exited_with(status, 0, "resume with --grad-accum 2", log)) return;
    check_same_ckpt(dir, "full", "half", "20 steps vs 10 + 10 resumed, --grad-accum 2, dropout 0.1");
}

// ----------------------------------------------------------------------------
// 5. the CRC catches a changed byte anywhere in the data section; truncation is refused

TEST(train_checkpoint_corruption_detected) {
    if (!have_train()) return;
    char dir[256], out[300], log[300], ck[300], bad[300], err[ERR_LEN];
    test_fresh_dir(dir, sizeof(dir), TRAIN_TMP, "corrupt");
    const char *corpus = shared_corpus();
    snprintf(out, sizeof(out), "%s/run", dir);
    snprintf(log, sizeof(log), "%s/run.log", dir);
    TestEnd status = run_train(log, SMALL_MODEL, BLOCK_16, "--data", corpus, "--steps", "3", "--out", out, NULL);
    if (!exited_with(status, 0, "training the checkpoint", log)) return;
    snprintf(ck, sizeof(ck), "%s/ckpt.safetensors", out);
    snprintf(bad, sizeof(bad), "%s/bad.safetensors", dir);
    size_t n;
    char *bytes = test_read_file(ck, &n);
    if (!CHECK(bytes != NULL && n > 64, "cannot read %s", ck)) return;
    size_t data = data_start(bytes);
    if (!CHECK(data < n, "data section of %s starts at %zu of %zu", ck, data, n)) return;

    Checkpoint c;
    if (!CHECK(checkpoint_open(ck, &c, err) == 0, "the undamaged checkpoint: %s", err)) return;
    checkpoint_close(&c);

    // one byte changed: first, early, middle, late and last byte of the data section
    size_t len = n - data;
    size_t flips[] = {data, data + 1 + len / 7, data + len / 2, data + len - len / 5, n - 1};
    for (size_t i = 0; i < sizeof(flips) / sizeof(flips[0]); i++) {
        for (int bit = 0; bit < 8; bit += 7) {
            bytes[flips[i]] ^= (char)(1 << bit);
            test_write_file(bad, bytes, n);
            bytes[flips[i]] ^= (char)(1 << bit);
            err[0] = '\0';
            int rc = checkpoint_open(bad, &c, err);
            CHECK(rc != 0 && strstr(err, "CRC") && strstr(err, "bad.safetensors"),
                  "byte %zu (data offset %zu), bit %d flipped: open returned %d, '%s'", flips[i], flips[i] - data, bit,
                  rc, err);
            if (rc == 0) checkpoint_close(&c);
        }
    }
    // cut short: in the length prefix, the header, at the data section, inside it, one byte short
    size_t cuts[] = {0, 5, 8, data / 2, data - 1, data, data + 4, data + len / 3, n - 4, n - 1};
    for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
        test_write_file(bad, bytes, cuts[i]);
        err[0] = '\0';
        int rc = checkpoint_open(bad, &c, err);
        CHECK(rc != 0 && strstr(err, "bad.safetensors"), "truncated to %zu of %zu bytes: open returned %d, '%s'",
              cuts[i], n, rc, err);
        if (rc == 0) checkpoint_close(&c);
    }
    // one byte appended
    bytes = realloc(bytes, n + 1);
    bytes[n] = 0;
    test_write_file(bad, bytes, n + 1);
    err[0] = '\0';
    int rc = checkpoint_open(bad, &c, err);
    CHECK(rc != 0 && err[0], "one byte appended: open returned %d, '%s'", rc, err);
    if (rc == 0) checkpoint_close(&c);
    free(bytes);
}

// ----------------------------------------------------------------------------
// 6. log.csv

typedef struct {
    long step;
    double train_loss, val_loss;  // val_loss NAN when the field is empty
    double lr;
    long tokens_seen;
    double elapsed;
    double grad_norm;  // the report's mean gradient norm before clipping
    int clipped;       // how many of its steps were clipped
} LogRow;

// Parses log.csv: the header and up to max rows; returns the number of rows (max + 1 when
// there are more) or -1.
static int read_log(const char *path, LogRow *rows, int max, char *header, size_t header_len) {
    size_t n;
    char *text = test_read_file(path, &n);
    if (!text) return -1;
    char *save = NULL, *line = strtok_r(text, "\n", &save);
    snprintf(header, header_len, "%s", line ? line : "");
    int count = 0;
    while ((line = strtok_r(NULL, "\n", &save)) != NULL) {
        if (count == max) {
            count++;
            break;
        }
        LogRow *r = &rows[count++];
        // step,train_loss,val_loss,lr,tokens_seen,elapsed_s,grad_norm,clipped,accuracy with val_loss
        // possibly empty (accuracy too: it is a task's)
        char *c1 = strchr(line, ','), *c2 = c1 ? strchr(c1 + 1, ',') : NULL;
        char *c3 = c2 ? strchr(c2 + 1, ',') : NULL;
        r->grad_norm = NAN, r->clipped = -1;  // empty in a row from before those columns
        if (!c3 || sscanf(c3 + 1, "%lf,%ld,%lf,%lf,%d", &r->lr, &r->tokens_seen, &r->elapsed, &r->grad_norm,
                          &r->clipped) < 3) {
            free(text);
            return -1;
        }
        r->step = strtol(line, NULL, 10);
        r->train_loss = strtod(c1 + 1, NULL);
        r->val_loss = c3 == c2 + 1 ? NAN : strtod(c2 + 1, NULL);
    }
    free(text);
    return count;
}

TEST(train_log_csv_rows) {
    if (!have_train()) return;
    char dir[256], out[300], log[300], csv[300], ck[300], best[300], header[256], value[64];
    test_fresh_dir(dir, sizeof(dir), TRAIN_TMP, "log");
    const char *corpus = shared_corpus();
    snprintf(out, sizeof(out), "%s/run", dir);
    snprintf(log, sizeof(log), "%s/run.log", dir);
    snprintf(csv, sizeof(csv), "%s/log.csv", out);
    snprintf(ck, sizeof(ck), "%s/ckpt.safetensors", out);
    snprintf(best, sizeof(best), "%s/best.safetensors", out);
    TestEnd status = run_train(log, SMALL_MODEL, BLOCK_16, "--data", corpus, "--steps", "20", "--log-every", "5",
                           "--eval-every", "10", "--out", out, NULL);
    if (!exited_with(status, 0, "training", log)) return;
    LogRow rows[16];
    int n = read_log(csv, rows, 16, header, sizeof(header));
    CHECK(strcmp(header, LOG_HEADER) == 0, "header '%s'", header);
    if (!CHECK(n == 4, "%s has %d rows, want 4 (steps 5, 10, 15, 20)", csv, n)) return;
    double best_val = INFINITY;
    for (int i = 0; i < 4; i++) {
        long want = 5 * (i + 1);
        CHECK(rows[i].step == want, "row %d is step %ld, want %ld", i, rows[i].step, want);
        CHECK(!!isnan(rows[i].val_loss) == (want % 10 != 0), "row of step %ld: val_loss %g (filled only at 10, 20)",
              want, rows[i].val_loss);
        CHECK(rows[i].tokens_seen == want * 4 * 16, "row of step %ld: tokens_seen %ld, want %ld", want,
              rows[i].tokens_seen, want * 64);
        CHECK(isfinite(rows[i].train_loss) && rows[i].train_loss > 0 && rows[i].lr > 0 && rows[i].elapsed >= 0,
              "row of step %ld: train_loss %g lr %g elapsed %g", want, rows[i].train_loss, rows[i].lr, rows[i].elapsed);
        CHECK(isfinite(rows[i].grad_norm) && rows[i].grad_norm > 0 && rows[i].clipped >= 0 && rows[i].clipped <= 5,
              "row of step %ld: grad_norm %g, clipped %d (of its 5 steps)", want, rows[i].grad_norm, rows[i].clipped);
        if (!isnan(rows[i].val_loss) && rows[i].val_loss < best_val) best_val = rows[i].val_loss;
    }
    // the checkpoints agree with the log
    test_meta_value(ck, "state.last_val_loss", value, sizeof(value));
    CHECK(fabs(strtod(value, NULL) - rows[3].val_loss) < 1e-5, "state.last_val_loss %s, log says %.6f", value,
          rows[3].val_loss);
    test_meta_value(best, "state.best_val_loss", value, sizeof(value));
    CHECK(fabs(strtod(value, NULL) - best_val) < 1e-5, "best.safetensors has best_val_loss %s, log's best %.6f",
          value, best_val);
    // warm-up: lr rises as (step + 1) / (warmup + 1) of --lr 1e-3 (warm-up 100)
    CHECK(fabs(rows[0].lr - 1e-3 * 5 / 101) < 1e-9, "lr at step 5 is %g, want %g", rows[0].lr, 1e-3 * 5 / 101);

    // resuming appends rows and no second header
    snprintf(log, sizeof(log), "%s/resumed.log", dir);
    status = run_train(log, "--resume", ck, "--steps", "30", "--out", out, "--threads", "1", NULL);
    if (!exited_with(status, 0, "resume", log)) return;
    n = read_log(csv, rows, 16, header, sizeof(header));
    if (!CHECK(n == 6, "after resuming to step 30 %s has %d rows, want 6", csv, n)) return;
    for (int i = 0; i < 6; i++) CHECK(rows[i].step == 5 * (i + 1), "row %d is step %ld", i, rows[i].step);
    CHECK(!isnan(rows[5].val_loss) && isnan(rows[4].val_loss), "resumed rows: val_loss %g at 25, %g at 30",
          rows[4].val_loss, rows[5].val_loss);
    CHECK(rows[5].elapsed >= rows[3].elapsed, "elapsed went back from %g to %g on resume", rows[3].elapsed,
          rows[5].elapsed);

    // without a validation split: no val_loss anywhere and no best.safetensors
    snprintf(out, sizeof(out), "%s/no_val", dir);
    snprintf(log, sizeof(log), "%s/no_val.log", dir);
    snprintf(csv, sizeof(csv), "%s/log.csv", out);
    snprintf(best, sizeof(best), "%s/best.safetensors", out);
    status = run_train(log, SMALL_MODEL, BLOCK_16, "--data", corpus, "--steps", "10", "--log-every", "5",
                       "--eval-every", "5", "--val-fraction", "0", "--out", out, NULL);
    if (!exited_with(status, 0, "--val-fraction 0", log)) return;
    n = read_log(csv, rows, 16, header, sizeof(header));
    CHECK(n == 2 && isnan(rows[0].val_loss) && isnan(rows[1].val_loss), "--val-fraction 0: %d rows, val_loss %g %g",
          n, rows[0].val_loss, rows[1].val_loss);
    CHECK(access(best, F_OK) != 0, "--val-fraction 0 wrote %s", best);
}

// The log.csv of the run in out with only its first `columns` columns (an older log.csv), and
// that many in its header.
static void keep_columns(const char *csv, int columns, const char *header) {
    size_t len;
    char *text = test_read_file(csv, &len), old[4096];
    if (!CHECK(text != NULL, "no %s", csv)) return;
    size_t used = (size_t)snprintf(old, sizeof(old), "%s\n", header);
    for (char *line = strchr(text, '\n') + 1; *line; line = strchr(line, '\n') + 1) {
        char *end = line;
        for (int k = 0; k < columns; k++) end = strpbrk(end, ",\n") + 1;
        used += (size_t)snprintf(old + used, sizeof(old) - used, "%.*s\n", (int)(end - 1 - line), line);
    }
    test_write_file(csv, old, used);
    free(text);
}

// How many rows of log.csv end with `ending` (the empty fields an older row was given).
static int rows_ending(const char *csv, const char *ending) {
    size_t len, n = strlen(ending);
    char *text = test_read_file(csv, &len);
    int count = 0;
    for (char *line = text ? strchr(text, '\n') + 1 : NULL; line && *line; line = strchr(line, '\n') + 1) {
        char *eol = strchr(line, '\n');
        count += eol - line >= (long)n && !strncmp(eol - n, ending, n) && (eol - line == (long)n || eol[-n - 1] != ',');
    }
    free(text);
    return count;
}

// A run whose log.csv was written before grad_norm and clipped (six columns), or before
// accuracy (eight), resumes: the file gets the new header, its rows the later fields empty,
// the new rows all nine; loss.svg shows the gradient norms it has.
TEST(train_log_csv_older_header_resumes) {
    if (!have_train()) return;
    char dir[256], out[300], log[300], csv[300], ck[300], plot[300];
    test_fresh_dir(dir, sizeof(dir), TRAIN_TMP, "old_log");
    snprintf(out, sizeof(out), "%s/run", dir);
    snprintf(log, sizeof(log), "%s/run.log", dir);
    snprintf(csv, sizeof(csv), "%s/log.csv", out);
    snprintf(ck, sizeof(ck), "%s/ckpt.safetensors", out);
    snprintf(plot, sizeof(plot), "%s/loss.svg", out);
    TestEnd status = run_train(log, SMALL_MODEL, BLOCK_16, "--data", shared_corpus(), "--steps", "20", "--eval-every", "10",
                           "--out", out, NULL);
    if (!exited_with(status, 0, "training", log)) return;
    keep_columns(csv, 6, "step,train_loss,val_loss,lr,tokens_seen,elapsed_s");
    status = run_train(log, "--resume", ck, "--steps", "30", "--threads", "1", NULL);
    if (!exited_with(status, 0, "resuming a run with a six-column log.csv", log)) return;
    LogRow rows[8];
    char header[256];
    int n = read_log(csv, rows, 8, header, sizeof(header));
    CHECK(strcmp(header, LOG_HEADER) == 0, "header '%s'", header);
    int old_rows = rows_ending(csv, ",,,");
    CHECK(n == 3 && old_rows == 2 && rows[2].step == 30 && rows[2].grad_norm > 0,
          "%d rows (want 3), %d with empty grad_norm, clipped and accuracy (want 2); the new row's grad_norm %g", n,
          old_rows, n == 3 ? rows[2].grad_norm : NAN);
    size_t len;
    char *svg = test_read_file(plot, &len);
    CHECK(svg && strstr(svg, "<path class=\"grad-norm\""), "loss.svg shows no gradient norm");
    free(svg);
    keep_columns(csv, 8, "step,train_loss,val_loss,lr,tokens_seen,elapsed_s,grad_norm,clipped");
    status = run_train(log, "--resume", ck, "--steps", "40", "--threads", "1", NULL);
    if (!exited_with(status, 0, "resuming a run with an eight-column log.csv", log)) return;
    n = read_log(csv, rows, 8, header, sizeof(header));
    CHECK(strcmp(header, LOG_HEADER) == 0, "header '%s'", header);
    CHECK(n == 4 && rows_ending(csv, ",,,") == 2 && rows_ending(csv, ",") == 2 && rows[3].step == 40,
          "%d rows (want 4): 2 with three empty fields, 2 with an empty accuracy", n);
}

// --resume without --out continues in the checkpoint's directory: its log.csv gets the new
// rows and its ckpt.safetensors the new state, and nothing is written to the default out/.
TEST(train_resume_defaults_out_to_checkpoint_dir) {
    if (!have_train()) return;
    char dir[256], corpus[300], log[300], ck[300], csv[300], default_out[300], header[256];
    test_fresh_dir(dir, sizeof(dir), TRAIN_TMP, "default_out");
    size_t len;
    char *text = make_text(6000, 42, &len);
    snprintf(corpus, sizeof(corpus), "%s/corpus.txt", dir);
    test_write_file(corpus, text, len);
    free(text);
    snprintf(log, sizeof(log), "%s/first.log", dir);
    char *first[] = {SMALL_MODEL, BLOCK_16, "--data", "corpus.txt", "--steps", "10", "--log-every", "5", "--out", "run",
                     NULL};
    if (!exited_with(train_to_end(dir, log, first), 0, "training in run/", log)) return;
    snprintf(log, sizeof(log), "%s/resumed.log", dir);
    char *resume[] = {"--resume", "run/ckpt.safetensors", "--steps", "20", "--threads", "1", NULL};
    if (!exited_with(train_to_end(dir, log, resume), 0, "--resume run/ckpt.safetensors", log)) return;
    snprintf(ck, sizeof(ck), "%s/run/ckpt.safetensors", dir);
    snprintf(csv, sizeof(csv), "%s/run/log.csv", dir);
    snprintf(default_out, sizeof(default_out), "%s/out", dir);
    CHECK(access(default_out, F_OK) != 0, "--resume run/ckpt.safetensors without --out wrote to out/ instead of run/");
    CHECK(meta_long(ck, "state.step") == 20, "run/ckpt.safetensors holds step %ld after resuming to 20",
          meta_long(ck, "state.step"));
    LogRow rows[8];
    int n = read_log(csv, rows, 8, header, sizeof(header));
    CHECK(n == 4, "run/log.csv has %d rows after resuming to step 20, want 4", n);
}

// Options refused on their own (a resume with an option it cannot change, an option out of
// range) are refused before anything touches the disk: the --out they name is not created.
TEST(train_refused_options_create_no_out_dir) {
    if (!have_train()) return;
    char dir[256], ck[300], out[300], log[300];
    test_fresh_dir(dir, sizeof(dir), TRAIN_TMP, "refused_options");
    snprintf(ck, sizeof(ck), "%s/first/ckpt.safetensors", dir);
    snprintf(out, sizeof(out), "%s/first", dir);
    snprintf(log, sizeof(log), "%s/first.log", dir);
    TestEnd status = run_train(log, SMALL_MODEL, BLOCK_16, "--data", shared_corpus(), "--steps", "2", "--out", out, NULL);
    if (!exited_with(status, 0, "the run to resume", log)) return;
    snprintf(out, sizeof(out), "%s/new", dir);
    status = run_train(log, "--resume", ck, "--out", out, "--lr", "1", NULL);
    if (exited_with(status, 2, "--resume with --lr", log)) output_has(log, "--lr cannot be changed", "--resume --lr");
    CHECK(access(out, F_OK) != 0, "--resume with --lr, refused, created its --out %s", out);
    status = run_train(log, "--out", out, "--n-layer", "0", NULL);
    exited_with(status, 2, "--n-layer 0", log);
    CHECK(access(out, F_OK) != 0, "--n-layer 0, refused, created its --out %s", out);
}

// ----------------------------------------------------------------------------
// 7. the checkpoint's names, shapes and metadata

TEST(train_checkpoint_names_shapes_metadata) {
    if (!have_train()) return;
    char dir[256], out[300], log[300], ck[300], err[ERR_LEN];
    test_fresh_dir(dir, sizeof(dir), TRAIN_TMP, "names");
    const char *corpus = shared_corpus();
    for (int bias = 1; bias >= 0; bias--) {
        snprintf(out, sizeof(out), "%s/bias%d", dir, bias);
        snprintf(log, sizeof(log), "%s/bias%d.log", dir, bias);
        TestEnd status = run_train(log, "--n-layer", "2", "--n-head", "2", "--n-embd", "16", "--batch-size", "2",
                               "--eval-batches", "1", "--threads", "1", BLOCK_16, "--data", corpus, "--steps", "2",
                               "--out", out, bias ? NULL : "--no-qkv-bias", NULL);
        if (!exited_with(status, 0, "training", log)) return;
        snprintf(ck, sizeof(ck), "%s/ckpt.safetensors", out);
        SafeTensors st;
        if (!CHECK(safetensors_read(ck, &st, err) == 0, "%s", err)) return;
        const char *vs = safetensors_meta(&st, "vocab_size");
        int V = vs ? atoi(vs) : -1;
        CHECK(V > 20, "vocab_size %s", vs ? vs : "(absent)");
        // nanoGPT's state_dict names and shapes for L=2, C=16, T=16 (lm_head is tied to wte)
        struct { const char *name; int ndim; int64_t d0, d1; } want[] = {
            {"transformer.wte.weight", 2, V, 16}, {"transformer.wpe.weight", 2, 16, 16},
            {"transformer.ln_f.weight", 1, 16, 0}, {"transformer.ln_f.bias", 1, 16, 0},
            {"transformer.h.%d.ln_1.weight", 1, 16, 0}, {"transformer.h.%d.ln_1.bias", 1, 16, 0},
            {"transformer.h.%d.attn.c_attn.weight", 2, 48, 16}, {"transformer.h.%d.attn.c_attn.bias", 1, 48, 0},
            {"transformer.h.%d.attn.c_proj.weight", 2, 16, 16}, {"transformer.h.%d.attn.c_proj.bias", 1, 16, 0},
            {"transformer.h.%d.ln_2.weight", 1, 16, 0}, {"transformer.h.%d.ln_2.bias", 1, 16, 0},
            {"transformer.h.%d.mlp.c_fc.weight", 2, 64, 16}, {"transformer.h.%d.mlp.c_fc.bias", 1, 64, 0},
            {"transformer.h.%d.mlp.c_proj.weight", 2, 16, 64}, {"transformer.h.%d.mlp.c_proj.bias", 1, 16, 0},
        };
        int expected = 0;
        for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
            int per_layer = strstr(want[i].name, "%d") != NULL;
            for (int layer = 0; layer < (per_layer ? 2 : 1); layer++) {
                int is_bias = strstr(want[i].name, "c_attn.bias") != NULL;
                for (int prefix = 0; prefix < 3; prefix++) {
                    char base[128], name[160];
                    snprintf(base, sizeof(base), want[i].name, layer);
                    snprintf(name, sizeof(name), "%s%s", prefix == 0 ? "" : prefix == 1 ? "optimizer.m." : "optimizer.v.",
                             base);
                    const StTensor *t = safetensors_find(&st, name);
                    if (is_bias && !bias) {
                        CHECK(t == NULL, "--no-qkv-bias: %s is present", name);
                        continue;
                    }
                    expected++;
                    if (!CHECK(t != NULL, "bias %d: no tensor %s", bias, name)) continue;
                    CHECK(t->dtype == ST_F32 && t->ndim == want[i].ndim && t->shape[0] == want[i].d0 &&
                          (want[i].ndim == 1 || t->shape[1] == want[i].d1),
                          "%s: ndim %d shape [%lld, %lld], want ndim %d [%lld, %lld]", name, t->ndim,
                          (long long)t->shape[0], (long long)t->shape[1], want[i].ndim, (long long)want[i].d0,
                          (long long)want[i].d1);
                }
            }
        }
        CHECK(st.num_tensors == expected, "bias %d: %d tensors, want %d", bias, st.num_tensors, expected);
        CHECK(safetensors_find(&st, "lm_head.weight") == NULL, "an untied lm_head.weight is stored");
        static const char *keys[] = {"format", "vocab", "crc32", "optimizer.step", "vocab_size", "block_size",
                                     "n_layer", "n_head", "n_embd", "head_size", "qkv_bias", "dropout",
                                     "train.data", "train.lr", "train.seed", "train.steps", "train.eval_every",
                                     "state.step", "state.rng", "state.best_val_loss", "state.tokens_seen",
                                     "state.elapsed_s"};
        for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
            CHECK(safetensors_meta(&st, keys[i]) != NULL, "metadata lacks %s", keys[i]);
        const char *format = safetensors_meta(&st, "format"), *step = safetensors_meta(&st, "state.step");
        const char *qkv = safetensors_meta(&st, "qkv_bias"), *data = safetensors_meta(&st, "train.data");
        CHECK(format && strcmp(format, CHECKPOINT_FORMAT) == 0, "format '%s'", format ? format : "");
        CHECK(step && strcmp(step, "2") == 0, "state.step '%s', want 2", step ? step : "");
        CHECK(qkv && atoi(qkv) == bias, "qkv_bias '%s', want %d", qkv ? qkv : "", bias);
        CHECK(data && strcmp(data, corpus) == 0, "train.data '%s', want %s", data ? data : "", corpus);
        // the vocabulary lists the corpus's characters, 🙂 (U+1F642) among them
        const char *vocab = safetensors_meta(&st, "vocab");
        CHECK(vocab && vocab[0] == '[' && strstr(vocab, ",128578]") && strstr(vocab, "[10,32,"),
              "vocab '%.200s'", vocab ? vocab : "");
        safetensors_free(&st);
    }
}

// ----------------------------------------------------------------------------
// 8. a non-finite loss stops with status 3 and leaves the last checkpoint alone

// lr 10 with weight decay 10 multiplies every decayed weight by (1 - 10 * 10) = -99 per
// step, so the loss leaves float range within a few steps, deterministically.
#define BLOW_UP "--lr", "10", "--min-lr", "10", "--weight-decay", "10", "--warmup", "0", "--eval-every", "1000", \
                "--log-every", "1"

TEST(train_nonfinite_loss_stops) {
    if (!have_train()) return;
    char dir[256], out[300], log[300], ck[300], msg[300];
    test_fresh_dir(dir, sizeof(dir), TRAIN_TMP, "nonfinite");
    const char *corpus = shared_corpus();
    snprintf(out, sizeof(out), "%s/run", dir);
    snprintf(log, sizeof(log), "%s/run.log", dir);
    snprintf(ck, sizeof(ck), "%s/ckpt.safetensors", out);
    TestEnd status = run_train(log, SMALL_MODEL, BLOCK_16, BLOW_UP, "--data", corpus, "--steps", "1000",
                           "--save-every", "3", "--out", out, NULL);
    if (!exited_with(status, 3, "--lr 10 --weight-decay 10", log)) return;
    size_t n;
    char *text = test_read_file(log, &n);
    const char *at = text ? strstr(text, "train: step ") : NULL;
    long bad_step = at ? strtol(at + strlen("train: step "), NULL, 10) : -1;
    CHECK(at && strstr(at, "not finite"), "no 'train: step N: ... not finite' message in:\n%s", text ? text : "");
    free(text);
    if (!CHECK(bad_step > 3, "the loss became non-finite at step %ld; want a step after the first save", bad_step))
        return;
    printf("    non-finite at step %ld with --lr 10 --weight-decay 10\n", bad_step);
    snprintf(msg, sizeof(msg), "step %ld/1000", bad_step - 1);
    output_has(log, msg, "the report of the last finite step");
    // the checkpoint is the one saved at the last multiple of 3 before the failure
    long saved = (bad_step - 1) / 3 * 3;
    CHECK(meta_long(ck, "state.step") == saved, "the checkpoint holds step %ld, want %ld", meta_long(ck, "state.step"),
          saved);
    CHECK(all_finite(ck), "the checkpoint left behind holds non-finite values");
    // ...and is the same as a run stopped there on purpose
    char other[300], other_log[300], other_ck[300], why[ERR_LEN], steps[32];
    snprintf(other, sizeof(other), "%s/stopped", dir);
    snprintf(other_log, sizeof(other_log), "%s/stopped.log", dir);
    snprintf(other_ck, sizeof(other_ck), "%s/ckpt.safetensors", other);
    snprintf(steps, sizeof(steps), "%ld", saved);
    status = run_train(other_log, SMALL_MODEL, BLOW_UP, BLOCK_16, "--data", corpus, "--steps", steps, "--out", other,
                       NULL);
    if (exited_with(status, 0, "the same run stopped before the failure", other_log))
        CHECK(same_tensors(ck, other_ck, why), "the failed run's checkpoint is not its step-%ld state: %s", saved, why);

    // resuming into the failure leaves the checkpoint byte for byte as it was
    size_t before_len, after_len;
    char *before = test_read_file(other_ck, &before_len);
    snprintf(log, sizeof(log), "%s/resumed.log", dir);
    status = run_train(log, "--resume", other_ck, "--steps", "1000", "--save-every", "1000", "--out", other,
                       "--threads", "1", NULL);
    exited_with(status, 3, "resuming into the failure", log);
    snprintf(msg, sizeof(msg), "train: step %ld:", bad_step);
    output_has(log, msg, "resumed run fails at the same step");
    char *after = test_read_file(other_ck, &after_len);
    CHECK(before && after && before_len == after_len && memcmp(before, after, before_len) == 0,
          "the checkpoint changed when the resumed run failed (%zu -> %zu bytes)", before_len, after_len);
    free(before);
    free(after);
}

// ----------------------------------------------------------------------------
// 9. SIGINT and SIGTERM (Windows: Ctrl-C and Ctrl-Break) save and exit 128 + signal

// Starts a long run, waits for its first report line, sends the stop request and checks exit
// status 128 + its signal, the message, and the checkpoint it saved.
static void check_stopped_by(TestStop stop, const char *dir, const char *corpus) {
    int sig = test_stop_signal(stop);
    const char *name = platform_signal_name(sig);
    char out[300], log[300], ck[300], msg[400];
    snprintf(out, sizeof(out), "%s/stop%d", dir, (int)stop);
    snprintf(log, sizeof(log), "%s/stop%d.log", dir, (int)stop);
    snprintf(ck, sizeof(ck), "%s/ckpt.safetensors", out);
    char *args[] = {SMALL_MODEL, BLOCK_16, "--data", (char *)corpus, "--steps", "100000000", "--log-every", "200",
                    "--eval-every", "1000", "--save-every", "100000000", "--out", out, NULL};
    TestChild child;
    if (start_train(&child, log, args) != 0) return;
    double start = now_seconds(), reported = -1.0;
    TestEnd status;
    size_t n;
    while (now_seconds() - start < 20.0) {
        char *text = test_read_file(log, &n);
        int seen = text && strstr(text, "step 200/");
        free(text);
        if (seen) {
            reported = now_seconds() - start;
            break;
        }
        if (test_child_wait(&child, 0.005, &status)) {
            exited_with(status, 128 + sig, "the long run ended before it was signalled", log);
            return;
        }
    }
    CHECK(test_child_stop(&child, stop) == 0, "%s: cannot send it", name);
    double sent = now_seconds();
    if (!test_child_wait(&child, 20.0, &status)) {
        test_child_kill(&child, &status);
        CHECK(0, "%s: ./train did not stop within 20 s", name);
        return;
    }
    printf("    %s: first report after %.2f s, stopped %.3f s after the signal\n", name, reported, now_seconds() - sent);
    CHECK(reported >= 0, "%s: no report line within 20 s", name);
    if (!exited_with(status, 128 + sig, name, log)) return;
    snprintf(msg, sizeof(msg), "stopped by %s after step ", name);
    output_has(log, msg, name);
    snprintf(msg, sizeof(msg), "saved %s", ck);
    output_has(log, msg, name);
    Checkpoint c;
    char err[ERR_LEN];
    if (!CHECK(checkpoint_open(ck, &c, err) == 0, "%s: %s", name, err)) return;
    const char *step_text = checkpoint_meta(&c, "state.step");
    long step = step_text ? strtol(step_text, NULL, 10) : -1;
    CHECK(step >= 200, "%s: the checkpoint holds step %ld, want >= 200", name, step);
    checkpoint_close(&c);
    // the saved step is the one the message names, and the run continues from it
    size_t len;
    char *text = test_read_file(log, &len);
    char *at = text ? strstr(text, "after step ") : NULL;
    CHECK(at && strtol(at + strlen("after step "), NULL, 10) == step, "%s: message and checkpoint disagree on the step",
          name);
    free(text);
    char steps[32], resumed_log[300];
    snprintf(steps, sizeof(steps), "%ld", step + 3);
    snprintf(resumed_log, sizeof(resumed_log), "%s/%s_resumed.log", dir, name);
    status = run_train(resumed_log, "--resume", ck, "--steps", steps, "--out", out, "--threads", "1", NULL);
    if (exited_with(status, 0, "resuming the stopped run", resumed_log))
        CHECK(meta_long(ck, "state.step") == step + 3, "%s: resumed to step %ld, want %ld", name,
              meta_long(ck, "state.step"), step + 3);
}

TEST(train_signal_saves_and_exits) {
    if (!have_train()) return;
    char dir[256];
    test_fresh_dir(dir, sizeof(dir), TRAIN_TMP, "signal");
    const char *corpus = shared_corpus();
    check_stopped_by(TEST_INTERRUPT, dir, corpus);
    if (test_system_has(TEST_TERMINATE_REQUESTS)) check_stopped_by(TEST_TERMINATE, dir, corpus);
    else printf("    no SIGTERM or Ctrl-Break to send on %s: left out\n", platform_name());
}

// ----------------------------------------------------------------------------
// --precision bf16

// The val loss on the "done:" line of a run's output, or NAN.
static double done_val_loss(const char *log) {
    size_t n;
    char *out = test_read_file(log, &n);
    char *at = out ? strstr(out, "done: ") : NULL;
    at = at ? strstr(at, ", val loss ") : NULL;
    double v = at ? strtod(at + strlen(", val loss "), NULL) : NAN;
    free(out);
    return v;
}

// 300 steps of a small model in bf16 end within 0.03 of the same run's fp32 validation loss.
// Batches of 4: the drift being tested grows with the steps, not the batch. Under an emulated
// CPU (test_emulated: qemu-aarch64, make test-arm64), whose emulated BFDOT makes a bf16 step
// 3.4 times as long as fp32's, the runs take 100 steps (on x86 fp32's val loss is 1.58 after
// 100, 1.17 after 300): the native suites keep the 300, and the emulated one still holds the
// AArch64 bf16 paths to fp32 after a run's worth of steps. No probe: its samples took a fifth
// of an emulated run, and they change no bit of the training.
TEST(train_bf16_300_steps_near_fp32) {
    if (!have_train()) return;
    char dir[256], log[2][300];
    test_fresh_dir(dir, sizeof(dir), TRAIN_TMP, "bf16_300");
    const char *corpus = shared_corpus();
    static const char *precisions[] = {"fp32", "bf16"};
    const char *steps = test_emulated() ? "100" : "300";
    for (int p = 0; p < 2; p++) {
        const char *args[] = {"--n-layer", "2", "--n-embd", "48", "--block-size", "32", "--batch-size", "4",
                              "--steps", steps, "--eval-every", steps, "--eval-batches", "20", "--save-every", steps,
                              "--log-every", steps, "--lr", "5e-3", "--warmup", "20", "--precision", precisions[p],
                              "--no-probe", NULL};
        if (!train_into(dir, precisions[p], corpus, args)) return;
        snprintf(log[p], sizeof(log[p]), "%s/%s.log", dir, precisions[p]);
    }
    output_has(log[0], "precision fp32, kernels ", "the fp32 run's model line");
    output_has(log[1], "precision bf16 (", "the bf16 run's model line (which path)");
    double fp32 = done_val_loss(log[0]), bf16 = done_val_loss(log[1]);
    CHECK(fabs(bf16 - fp32) <= 0.03, "after %s steps val loss bf16 %.4f, fp32 %.4f", steps, bf16, fp32);
    CHECK(fp32 < 2.6, "the fp32 run did not learn (val loss %.4f)", fp32);
    printf("    %s steps: val loss bf16 %.4f, fp32 %.4f\n", steps, bf16, fp32);
}

// a bf16 run resumed from its checkpoint gives the bits of the run that did not stop; the
// checkpoint keeps train.precision, which --resume uses unless --precision is given
TEST(train_bf16_resume_is_bit_identical) {
    if (!have_train()) return;
    char dir[256], ck[300], log[300], out[300], value[64], why[ERR_LEN], other[300];
    test_fresh_dir(dir, sizeof(dir), TRAIN_TMP, "bf16_resume");
    const char *corpus = shared_corpus();
    const char *full[] = {"--steps", "20", "--decay-steps", "20", "--save-every", "10", "--dropout", "0.1",
                          "--precision", "bf16", NULL};
    const char *half[] = {"--steps", "10", "--decay-steps", "20", "--save-every", "10", "--dropout", "0.1",
                          "--precision", "bf16", NULL};
    const char *fp32[] = {"--steps", "20", "--decay-steps", "20", "--save-every", "10", "--dropout", "0.1", NULL};
    if (!train_into(dir, "full", corpus, full) || !train_into(dir, "half", corpus, half) ||
        !train_into(dir, "fp32", corpus, fp32))
        return;
    snprintf(ck, sizeof(ck), "%s/half/ckpt.safetensors", dir);
    test_meta_value(ck, "train.precision", value, sizeof(value));
    CHECK(strcmp(value, "bf16") == 0, "train.precision is '%s', want bf16", value);
    snprintf(log, sizeof(log), "%s/half_resumed.log", dir);
    snprintf(out, sizeof(out), "%s/half", dir);
    TestEnd status = run_train(log, "--resume", ck, "--steps", "20", "--out", out, "--threads", "2", NULL);
    if (!exited_with(status, 0, "resume a bf16 run", log)) return;
    output_has(log, "precision bf16 (", "the resumed run's model line");
    check_same_ckpt(dir, "full", "half", "bf16: 20 steps vs 10 + 10 resumed on 2 threads");
    snprintf(ck, sizeof(ck), "%s/full/ckpt.safetensors", dir);
    snprintf(other, sizeof(other), "%s/fp32/ckpt.safetensors", dir);
    CHECK(!same_tensors(ck, other, why), "--precision bf16 gave the tensors of fp32");

    // --precision fp32 overrides the checkpoint's; a damaged train.precision is refused
    snprintf(log, sizeof(log), "%s/override.log", dir);
    snprintf(out, sizeof(out), "%s/override", dir);
    status = run_train(log, "--resume", ck, "--steps", "21", "--out", out, "--precision", "fp32", NULL);
    if (exited_with(status, 0, "resume a bf16 run in fp32", log)) output_has(log, "precision fp32, kernels ", "override");
    snprintf(other, sizeof(other), "%s/bad_precision.safetensors", dir);
    rewrite_meta(ck, other, "train.precision", "fp8");
    snprintf(log, sizeof(log), "%s/bad_precision.log", dir);
    status = run_train(log, "--resume", other, "--out", out, NULL);
    if (exited_with(status, 1, "resume with train.precision fp8", log)) output_has(log, "train.precision", "fp8");
    snprintf(log, sizeof(log), "%s/bad_flag.log", dir);
    status = run_train(log, "--data", corpus, "--out", out, "--precision", "fp16", NULL);
    if (exited_with(status, 2, "--precision fp16", log)) output_has(log, "--precision", "--precision fp16");

    // ./generate in bf16 says so; a bad value is a usage error
    const char *gen = test_program("generate");
    snprintf(log, sizeof(log), "%s/generate.log", dir);
    const char *argv[] = {gen, ck, "the", "-n", "40", "--precision", "bf16", NULL};
    TestRun r = test_run(argv, NULL, log, 0, 60.0);
    if (test_exit_status(&r, 0, "./generate --precision bf16")) test_output_has(&r, "precision bf16 (", "generate bf16");
    test_run_free(&r);
    const char *bad[] = {gen, ck, "the", "--precision", "half", NULL};
    r = test_run(bad, NULL, log, 0, 60.0);
    if (test_exit_status(&r, 2, "./generate --precision half")) test_output_has(&r, "--precision", "generate half");
    test_run_free(&r);
}
