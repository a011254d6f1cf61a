// Issue 19's bounds on input and checked output, one test per item: a compressed text that
// inflates past the memory limit is stopped while inflating (./train --data, --score FILE and
// --score -), with the peak memory held under the limit; a failed write to stdout is exit 1;
// a non-finite result is exit 1 naming where; a safetensors header is parsed in memory
// proportional to it, with caps on its counts; and the smaller ones (a prompt file that is not
// UTF-8, an unwritable --surprisal found before scoring, temporaries of killed runs removed).
// The programs run as child processes under tests/tmp/bounds/.
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "../common/platform.h"
#include "../format/atomic_file.h"
#include "../format/checkpoint.h"
#include "../format/json.h"
#include "../format/safetensors.h"
#include "../model/gpt.h"
#include "test.h"

#define WORK_DIR "tests/tmp/bounds"
#define LOG WORK_DIR "/run.log"
#define TIMEOUT_S 120.0  // generous: the sanitizer build is several times slower
#define MIB 1024L  // in KiB, as peak RSS is given

// The sanitizer build's programs take more memory for the same work: AddressSanitizer's shadow
// (an eighth of what is touched) and its quarantine of freed blocks. Their memory bounds are
// loosened by this factor.
#if defined(__SANITIZE_ADDRESS__)
#define RSS_SLACK 3
#else
#define RSS_SLACK 1
#endif

static TestRun run_program(const char *program, const char *in_path, const char *const *args) {
    return test_run_program(program, in_path, LOG, TIMEOUT_S, args);
}
#define TRAIN(...) run_program("train", NULL, (const char *[]){__VA_ARGS__, NULL})
#define GENERATE(...) run_program("generate", NULL, (const char *[]){__VA_ARGS__, NULL})

static void work_dir(void) {
    test_make_dir("tests/tmp");
    test_make_dir(WORK_DIR);
}

// The peak memory of ./generate refusing a file that does not exist: the programs' own.
static long baseline_rss_kib(void) {
    static long kib;
    if (kib == 0) {
        TestRun r = GENERATE(WORK_DIR "/no_such.safetensors", "a");
        kib = r.max_rss_kib;
        test_run_free(&r);
    }
    return kib;
}

// Writes a safetensors file at path whose header is the len bytes at header (padded with
// spaces as the format's writer pads it) and whose data section is empty.
static int write_header_file(const char *path, const char *header, size_t len) {
    size_t padded = len + (8 - (8 + len) % 8) % 8;
    unsigned char *bytes = malloc(8 + padded);
    if (!CHECK(bytes != NULL, "out of memory")) return -1;
    for (int i = 0; i < 8; i++) bytes[i] = (unsigned char)((uint64_t)padded >> (8 * i));
    memcpy(bytes + 8, header, len);
    memset(bytes + 8 + len, ' ', padded - len);
    int rc = test_write_file(path, bytes, 8 + padded);
    free(bytes);
    return rc;
}

// A header {"a":[0,0,...,0]} of n zeros (a header must begin with '{'), which is n + 3 JSON
// values with the object, its key and the array.
static int write_zeros_header(const char *path, size_t n) {
    char *text = malloc(2 * n + 7);
    if (!CHECK(text != NULL, "out of memory")) return -1;
    memcpy(text, "{\"a\":[", 6);
    for (size_t i = 0; i < n; i++) text[6 + 2 * i] = '0', text[7 + 2 * i] = ',';
    memcpy(text + 5 + 2 * n, "]}", 2);
    int rc = write_header_file(path, text, 2 * n + 7);
    free(text);
    return rc;
}

// A header of n tensors "t<i>" of shape [0] (no bytes), and metadata of m entries.
static int write_empty_tensors_header(const char *path, int n, int m) {
    char *text = malloc((size_t)(n + m) * 64 + 64);
    if (!CHECK(text != NULL, "out of memory")) return -1;
    size_t len = (size_t)sprintf(text, "{\"__metadata__\":{");
    for (int i = 0; i < m; i++) len += (size_t)sprintf(text + len, "%s\"k%d\":\"\"", i ? "," : "", i);
    len += (size_t)sprintf(text + len, "}");
    for (int i = 0; i < n; i++)
        len += (size_t)sprintf(text + len, ",\"t%d\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]}", i);
    text[len++] = '}';
    int rc = write_header_file(path, text, len);
    free(text);
    return rc;
}

// A checkpoint of a model of config (its vocabulary of 29 characters: newline, space, '.' and
// 'a' to 'z'), its weights initialised from a seed; with ln_f_weight != 0, every weight of
// ln_f is that.
static const char *checkpoint_of(const char *path, GPTConfig config, float ln_f_weight) {
    work_dir();
    uint32_t vocab[29] = {'\n', ' ', '.'};
    for (int i = 0; i < 26; i++) vocab[3 + i] = 'a' + (uint32_t)i;
    GPT model;
    char err[ERR_LEN];
    if (!CHECK(gpt_build(&model, &config, 0, err) == 0, "%s", err)) return NULL;
    gpt_init_weights(&model, 7);
    if (ln_f_weight != 0.0f)
        for (int c = 0; c < config.n_embd; c++) model.params.lnfw[c] = ln_f_weight;
    int rc = checkpoint_save(path, &model, &(Vocab){(uint32_t *)vocab, model.config.vocab_size, 0}, NULL, NULL, 0, err);
    gpt_free(&model);
    return CHECK(rc == 0, "%s", err) ? path : NULL;
}

// A small model's checkpoint: block 16, 1 layer of 2 heads, 16 wide.
static const char *small_checkpoint(const char *path, float ln_f_weight) {
    return checkpoint_of(path, (GPTConfig){29, 16, 1, 2, 16, 8, 1, 0.0f, POSITION_LEARNED}, ln_f_weight);
}

// A gzip file of `bytes` bytes of 'a' (about a thousandth of that on disk).
static int write_gzip_bomb(const char *path, size_t bytes) {
    FILE *fp = fopen(path, "wb");
    if (!CHECK(fp != NULL, "cannot write %s: %s", path, strerror(errno))) return -1;
    z_stream zs;
    memset(&zs, 0, sizeof(zs));
    if (!CHECK(deflateInit2(&zs, 9, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) == Z_OK, "deflateInit2")) {
        fclose(fp);
        return -1;
    }
    static unsigned char in[1 << 16], out[1 << 16];
    memset(in, 'a', sizeof(in));
    int ret = Z_OK;
    while (ret != Z_STREAM_END) {
        size_t n = bytes < sizeof(in) ? bytes : sizeof(in);
        bytes -= n;
        zs.next_in = in;
        zs.avail_in = (uInt)n;
        do {
            zs.next_out = out;
            zs.avail_out = sizeof(out);
            ret = deflate(&zs, bytes == 0 ? Z_FINISH : Z_NO_FLUSH);
            fwrite(out, 1, sizeof(out) - zs.avail_out, fp);
        } while (zs.avail_out == 0);
    }
    deflateEnd(&zs);
    return CHECK(fclose(fp) == 0, "cannot write %s", path) ? 0 : -1;
}

// ---------------------------------------------------------------------------------------
// item 4: a text's memory is planned; a gzip bomb is stopped while inflating

#define BOMB_LIMIT_MIB 16

// Checks that r was refused (exit 2) for holding more characters than BOMB_LIMIT_MIB allows,
// with its peak memory under the limit, give or take the program's own.
static void check_bomb_refused(TestRun *r, const char *what, const char *size_words) {
    if (test_exit_status(r, 2, what)) {
        test_output_has(r, size_words, what);
        test_output_has(r, "16.0 MiB --max-memory", what);
    }
    long bound = BOMB_LIMIT_MIB * MIB + baseline_rss_kib() + 2 * MIB;
    printf("    %s: peak RSS %ld KiB (limit %d MiB, the program alone %ld KiB), %.2f s\n", what, r->max_rss_kib,
           BOMB_LIMIT_MIB, baseline_rss_kib(), r->seconds);
    CHECK(r->max_rss_kib < RSS_SLACK * bound, "%s: peak RSS %ld KiB, more than %ld KiB", what, r->max_rss_kib,
          RSS_SLACK * bound);
    test_run_free(r);
}

TEST(bounds_04_gzip_bomb_stopped_while_inflating) {
    const char *ckpt = small_checkpoint(WORK_DIR "/small.safetensors", 0.0f);
    if (!ckpt) return;
    const char *bomb = WORK_DIR "/bomb.gz";
    if (write_gzip_bomb(bomb, (size_t)64 << 20) != 0) return;  // 64 MiB of text in 64 KiB
    char limit[16];
    snprintf(limit, sizeof(limit), "%d", BOMB_LIMIT_MIB);
    TestRun r = TRAIN("--data", bomb, "--max-memory", limit, "--steps", "1", "--out", WORK_DIR "/bomb_run");
    check_bomb_refused(&r, "./train --data bomb.gz", "more than 4063232 characters (decompressing stopped there");
    r = GENERATE(ckpt, "--score", bomb, "--max-memory", limit);
    check_bomb_refused(&r, "./generate --score bomb.gz", "characters (decompressing stopped there");
    r = run_program("generate", bomb, (const char *[]){ckpt, "--score", "-", "--max-memory", limit, NULL});
    check_bomb_refused(&r, "./generate --score - < bomb.gz", "standard input: more than");
    unlink(bomb);
    // a plain file: refused at once when its size alone is too much, else stopped while read
    const char *plain = WORK_DIR "/plain.txt";
    size_t n = (size_t)12 << 20;
    char *text = malloc(n);
    if (!CHECK(text != NULL, "out of memory")) return;
    memset(text, 'a', n);
    test_write_file(plain, text, n);
    free(text);
    r = GENERATE(ckpt, "--score", plain, "--max-memory", limit);
    check_bomb_refused(&r, "./generate --score plain.txt", "characters (reading stopped there");
    r = GENERATE(ckpt, "--score", plain, "--max-memory", "4");
    if (test_exit_status(&r, 2, "--score plain.txt --max-memory 4"))
        test_output_has(&r, "plain.txt: 12582912 bytes, more than", "--score plain.txt --max-memory 4");
    test_run_free(&r);
    unlink(plain);
}

// The memory line of ./train shows the text's part, and a text that fits alone but not with
// the model is refused before the model is allocated.
TEST(bounds_04_text_in_the_memory_plan) {
    work_dir();
    const char *corpus = WORK_DIR "/corpus.txt";
    char text[6000];
    for (size_t i = 0; i < sizeof(text); i++) text[i] = "the lazy dog.\n"[i % 14];
    test_write_file(corpus, text, sizeof(text));
    TestRun r = TRAIN("--data", corpus, "--n-layer", "1", "--n-embd", "16", "--n-head", "2", "--block-size", "16",
                      "--batch-size", "4", "--steps", "1", "--threads", "1", "--force", "--out", WORK_DIR "/run");
    if (test_exit_status(&r, 0, "a small run")) test_output_has(&r, "text 23.4 KiB)", "the memory line");
    test_run_free(&r);
    // 3 MiB of text (12 MiB as characters) fits in 16 MiB, and so does the model (10 MiB); not both
    size_t n = (size_t)3 << 20;
    char *big = malloc(n);
    if (!CHECK(big != NULL, "out of memory")) return;
    for (size_t i = 0; i < n; i++) big[i] = "the lazy dog.\n"[i % 14];
    test_write_file(corpus, big, n);
    free(big);
    r = TRAIN("--data", corpus, "--n-layer", "1", "--n-embd", "64", "--n-head", "2", "--block-size", "128",
              "--batch-size", "4", "--steps", "1", "--max-memory", "16", "--force", "--out", WORK_DIR "/run");
    if (test_exit_status(&r, 2, "a text and a model over --max-memory")) {
        test_output_has(&r, "text 12.0 MiB", "a text and a model over --max-memory");
        test_output_has(&r, "more than the 16.0 MiB --max-memory", "a text and a model over --max-memory");
    }
    test_run_free(&r);
    unlink(corpus);
}

// ---------------------------------------------------------------------------------------
// item 7: every write to stdout is checked

// Runs program with args, its stdout into /dev/full; it must stop with exit 1 and say so.
static void check_full_stdout(const char *program, const char *what, const char *const *args) {
    const char *argv[32] = {test_program(program)};
    int n = 1;
    while (args[n - 1] && n < 31) argv[n] = args[n - 1], n++;
    argv[n] = NULL;
    TestRun r = test_run_stdout(argv, NULL, "/dev/full", LOG, TIMEOUT_S);
    if (test_exit_status(&r, 1, what)) test_output_has(&r, "cannot write to standard output: No space left", what);
    test_run_free(&r);
}

TEST(bounds_07_stdout_writes_checked) {
    if (!test_system_has(TEST_FULL_DEVICE)) {
        test_skip("no /dev/full to write standard output into");
        return;
    }
    const char *ckpt = small_checkpoint(WORK_DIR "/small.safetensors", 0.0f);
    if (!ckpt) return;
    const char *text = WORK_DIR "/scored.txt";
    test_write_file(text, "the quick brown fox jumps over the lazy dog.\n", 45);
    check_full_stdout("generate", "./generate -n 50 > /dev/full", (const char *[]){ckpt, "the", "-n", "50", NULL});
    check_full_stdout("generate", "./generate --num-samples 3 > /dev/full",
                      (const char *[]){ckpt, "the", "-n", "5", "--num-samples", "3", NULL});
    check_full_stdout("generate", "./generate -n 0 > /dev/full", (const char *[]){ckpt, "the", "-n", "0", NULL});
    check_full_stdout("generate", "./generate --score > /dev/full", (const char *[]){ckpt, "--score", text, NULL});
    check_full_stdout("train", "./train > /dev/full",
                      (const char *[]){"--data", text, "--n-layer", "1", "--n-embd", "16", "--n-head", "2",
                                       "--block-size", "8", "--batch-size", "2", "--val-fraction", "0",
                                       "--steps", "2", "--force", "--out", WORK_DIR "/full_run", NULL});
}

// ---------------------------------------------------------------------------------------
// item 8: a non-finite score, loss or logit in ./generate is exit 1, naming where

TEST(bounds_08_nonfinite_results_refused) {
    // finite weights (the checkpoint loads) whose forward pass overflows float
    const char *ckpt = small_checkpoint(WORK_DIR "/overflowing.safetensors", 3e38f);
    if (!ckpt) return;
    const char *text = WORK_DIR "/scored.txt", *csv = WORK_DIR "/overflowing.csv", *json = WORK_DIR "/overflowing.json";
    test_write_file(text, "the quick brown fox.\n", 21);
    unlink(csv);
    unlink(json);
    static const struct { const char *what, *words; const char *args[8]; } cases[] = {
        {"--score", "loss on the character at position 1 is", {"--score", WORK_DIR "/scored.txt", NULL}},
        {"--score --surprisal", "loss on the character at position 1 is",
         {"--score", WORK_DIR "/scored.txt", "--surprisal", WORK_DIR "/overflowing.csv", NULL}},
        {"sampling", "logits for the character at position 3 of sample 1 are not finite", {"the", "-n", "10", NULL}},
        {"--num-samples 2", "of sample 1 are not finite", {"the", "-n", "3", "--num-samples", "2", NULL}},
        {"--attention", "--attention: the model's logits at position 0",
         {"the", "-n", "0", "--attention", WORK_DIR "/overflowing.json", NULL}},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *args[10] = {ckpt};
        for (int k = 0; cases[i].args[k]; k++) args[k + 1] = cases[i].args[k];
        TestRun r = run_program("generate", NULL, args);
        if (test_exit_status(&r, 1, cases[i].what)) {
            test_output_has(&r, cases[i].words, cases[i].what);
            CHECK(!strstr(r.output, "nats/char"), "%s: a score was printed:\n%s", cases[i].what, r.output);
        }
        test_run_free(&r);
    }
    CHECK(access(csv, F_OK) != 0 && access(json, F_OK) != 0, "a file of non-finite numbers was written");
}

// ---------------------------------------------------------------------------------------
// item 10: an unwritable --surprisal is found before the text is read; ./generate removes the
// temporaries its killed runs left beside its outputs

TEST(bounds_10_unwritable_surprisal_found_first) {
    const char *ckpt = small_checkpoint(WORK_DIR "/small.safetensors", 0.0f);
    if (!ckpt) return;
    // the text holds a character the model lacks (exit 2 once read): the path is refused first
    const char *text = WORK_DIR "/unknown_char.txt";
    test_write_file(text, "the \xe2\x82\xac sign", 12);
    int fifo = test_system_has(TEST_FIFOS);
    if (fifo) CHECK(test_make_fifo(WORK_DIR "/fifo") == 0, "mkfifo: %s", strerror(errno));
    else printf("    no FIFOs on %s: that case left out\n", platform_name());
    static const struct { const char *path, *words; } cases[] = {
        {".", "--surprisal .: is a directory"},
        {WORK_DIR, "is a directory"},
        {WORK_DIR "/no_such_dir/s.csv", "--surprisal " WORK_DIR "/no_such_dir"},
        {WORK_DIR "/fifo", "--surprisal " WORK_DIR "/fifo: not a regular file"},  // the last: FIFOs
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]) - !fifo; i++) {
        TestRun r = GENERATE(ckpt, "--score", text, "--surprisal", cases[i].path);
        if (test_exit_status(&r, 1, cases[i].path)) test_output_has(&r, cases[i].words, cases[i].path);
        test_run_free(&r);
    }
}

// `run_tests --child open_temporary PATH`: opens the temporary file of an atomic write of PATH
// and exits without cleaning up, as a killed run does.
TEST_CHILD(open_temporary) {
    AtomicFile f;
    char err[ERR_LEN];
    return argc == 1 && atomic_file_open(&f, argv[0], err) == 0 ? 0 : 1;
}

// Leaves the temporary file of an atomic write of path behind, as a killed run does.
static void leave_temporary(const char *path) {
    TestEnd end = test_run_child("open_temporary", (const char *[]){path, NULL}, TIMEOUT_S);
    CHECK(end.status == 0, "could not leave a temporary file of %s", path);
}

// Empties WORK_DIR "/outputs" (files an earlier run of the tests left).
static void fresh_outputs_dir(void) {
    platform_make_dir(WORK_DIR "/outputs");
    DIR *d = opendir(WORK_DIR "/outputs");
    struct dirent *e;
    char path[600];
    while (d && (e = readdir(d)) != NULL) {
        snprintf(path, sizeof(path), "%s/%s", WORK_DIR "/outputs", e->d_name);
        if (e->d_name[0] != '.') unlink(path);
    }
    if (d) closedir(d);
}

// How many names in WORK_DIR "/outputs" start with prefix.
static int count_prefixed(const char *prefix) {
    DIR *d = opendir(WORK_DIR "/outputs");
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    if (d) closedir(d);
    return n;
}

TEST(bounds_10_stale_temporaries_removed) {
    const char *ckpt = small_checkpoint(WORK_DIR "/small.safetensors", 0.0f);
    if (!ckpt) return;
    fresh_outputs_dir();
    const char *csv = WORK_DIR "/outputs/s.csv", *json = WORK_DIR "/outputs/view.json";
    const char *text = WORK_DIR "/scored.txt";
    test_write_file(text, "the quick brown fox.\n", 21);
    leave_temporary(csv);
    leave_temporary(csv);
    leave_temporary(json);
    // one of this process's own, open: a running process's temporary is kept
    AtomicFile open_here;
    char err[ERR_LEN];
    if (!CHECK(atomic_file_open(&open_here, json, err) == 0, "%s", err)) return;
    CHECK(count_prefixed("s.csv") == 2 && count_prefixed("view.json") == 2, "%d and %d temporaries",
          count_prefixed("s.csv"), count_prefixed("view.json"));
    TestRun r = GENERATE(ckpt, "--score", text, "--surprisal", csv);
    if (test_exit_status(&r, 0, "--surprisal beside 2 stale temporaries"))
        test_output_has(&r, "removed 2 temporary files", "--surprisal beside 2 stale temporaries");
    test_run_free(&r);
    CHECK(count_prefixed("s.csv") == 1, "%d files s.csv*, want s.csv alone", count_prefixed("s.csv"));
    r = GENERATE(ckpt, "the", "-n", "0", "--attention", json);
    if (test_exit_status(&r, 0, "--attention beside a stale temporary"))
        test_output_has(&r, "removed 1 temporary file left", "--attention beside a stale temporary");
    test_run_free(&r);
    CHECK(count_prefixed("view.json") == 2 && access(open_here.tmp_path, F_OK) == 0,
          "%d files view.json*, want view.json and the running process's temporary", count_prefixed("view.json"));
    atomic_file_abort(&open_here);
}

// ---------------------------------------------------------------------------------------
// item 9: a header is parsed in memory proportional to its size, with caps on its counts

TEST(bounds_09_json_node_cap) {
    JsonDoc doc;
    char err[ERR_LEN];
    CHECK(json_parse("[0,0,0]", 7, 3, &doc, err) == -2 && strstr(err, "more than 3 values"), "3 nodes: %s", err);
    CHECK(json_parse("{\"a\":0}", 7, 2, &doc, err) == -2, "keys count as nodes");
    if (CHECK(json_parse("[0,0,0]", 7, 4, &doc, err) == 0, "4 nodes: %s", err)) {
        CHECK(doc.num_nodes == 4 && json_next(&doc.nodes[0]) == doc.nodes + 4, "%zu nodes", doc.num_nodes);
        json_free(&doc);
    }
    CHECK(sizeof(JsonNode) == 16, "a node takes %zu bytes", sizeof(JsonNode));
}

TEST(bounds_09_header_memory_and_caps) {
    work_dir();
    char err[ERR_LEN];
    SafeTensors st;
    // the largest checkpoint chargpt writes, with its optimizer's moments, is within the caps
    GPTConfig largest = {1 << 21, 1 << 16, 1024, 1024, 64, 64, 1, 0.0f, POSITION_LEARNED};
    CHECK(3 * gpt_num_tensors(&largest) * 3 <= ST_MAX_TENSORS, "%d tensors: the cap of %d is not far above",
          3 * gpt_num_tensors(&largest), ST_MAX_TENSORS);
    // the worst case under the caps: a value every 2 bytes, the whole node budget
    long base = baseline_rss_kib();
    const char *zeros = WORK_DIR "/zeros.safetensors";
    size_t values = ST_MAX_NODES - 3;
    if (write_zeros_header(zeros, values) == 0) {
        TestRun r = GENERATE(zeros, "a");
        if (test_exit_status(&r, 1, "a header of 1.8 M zeros")) {
            test_output_has(&r, "tensor 'a': entry is not an object", "a header of 1.8 M zeros");
            double per_byte = (r.max_rss_kib - base) * 1024.0 / (2.0 * values);
            printf("    a %zu-byte header of zeros: peak RSS %ld KiB (%ld KiB for a missing file): %.2f bytes per "
                   "header byte, in %.2f s\n", 2 * values, r.max_rss_kib, base, per_byte, r.seconds);
            CHECK(per_byte < 10.0 * RSS_SLACK * test_heap_slack(), "%.2f bytes of memory per header byte", per_byte);
        }
        test_run_free(&r);
    }
    // past the node cap: refused once the cap is reached, with nothing more allocated
    values = 4 * 1000 * 1000;
    if (write_zeros_header(zeros, values) == 0) {
        TestRun r = GENERATE(zeros, "a");
        if (test_exit_status(&r, 1, "a header of 4 M zeros")) {
            test_output_has(&r, "more than 1843203 JSON values", "a header of 4 M zeros");
            printf("    a %zu-byte header of zeros: refused in %.2f s, peak RSS %ld KiB\n", 2 * values, r.seconds,
                   r.max_rss_kib);
            long bound = (long)(2 * values / 1024) + (long)(ST_MAX_NODES * 16.0 * 1.1 / 1024);
            CHECK(r.max_rss_kib < base + RSS_SLACK * test_heap_slack() * bound, "peak RSS %ld KiB", r.max_rss_kib);
        }
        test_run_free(&r);
    }
    unlink(zeros);
    // more tensors than the cap, each within the node budget
    const char *tensors = WORK_DIR "/150k_tensors.safetensors";
    if (write_empty_tensors_header(tensors, 150000, 0) == 0) {
        CHECK(safetensors_read(tensors, &st, err) == -1 && strstr(err, "more than 131072 tensors"),
              "150000 empty tensors: '%s'", err);
        TestRun r = GENERATE(tensors, "a");
        if (test_exit_status(&r, 1, "150000 empty tensors"))
            test_output_has(&r, "more than 131072 tensors", "150000 empty tensors");
        test_run_free(&r);
    }
    unlink(tensors);
    // more metadata entries than the cap
    const char *meta = WORK_DIR "/5000_meta.safetensors";
    if (write_empty_tensors_header(meta, 0, 5000) == 0)
        CHECK(safetensors_read(meta, &st, err) == -1 && strstr(err, "5000 metadata entries, more than the 4096"),
              "5000 metadata entries: '%s'", err);
    unlink(meta);
    // a header at the caps is read (in this process, after the child processes measured above)
    const char *at_caps = WORK_DIR "/at_caps.safetensors";
    if (write_empty_tensors_header(at_caps, ST_MAX_TENSORS, ST_MAX_META) == 0 &&
        CHECK(safetensors_read(at_caps, &st, err) == 0, "a header at the caps: %s", err)) {
        CHECK(st.num_tensors == ST_MAX_TENSORS && st.num_meta == ST_MAX_META, "%d tensors, %d metadata entries",
              st.num_tensors, st.num_meta);
        safetensors_free(&st);
    }
    unlink(at_caps);

}

// ---------------------------------------------------------------------------------------
// issue 29's item 4: what grows with an input is planned or streamed

// A run's log.csv of a million rows (41 MB; the probe of issue 29 had ten million): --resume
// reads it a line at a time and keeps at most LOSS_HISTORY_MAX_POINTS of its points for the
// plot, and ./generate --timeline does the same. Before, both held the whole file and a point
// per row (10 M rows: 463 MB under --max-memory 50, 460 MB for --timeline).
TEST(bounds_11_log_csv_read_in_bounded_memory) {
    work_dir();
    const char *corpus = WORK_DIR "/log_corpus.txt", *run = WORK_DIR "/long_log";
    char text[4000];
    for (size_t i = 0; i < sizeof(text); i++) text[i] = "the lazy dog.\n"[i % 14];
    test_write_file(corpus, text, sizeof(text));
    TestRun r = TRAIN("--data", corpus, "--n-layer", "1", "--n-embd", "16", "--n-head", "2", "--block-size", "16",
                      "--batch-size", "4", "--steps", "2", "--threads", "1", "--force", "--out", run);
    int trained = test_exit_status(&r, 0, "a small run");
    test_run_free(&r);
    FILE *fp = trained ? fopen(WORK_DIR "/long_log/log.csv", "a") : NULL;
    if (!CHECK(fp != NULL, "cannot append to the run's log.csv")) return;
    for (int i = 0; i < 1000000; i++) fputs("2,2.500000,,1.000000e-03,128,1.000,0.5,0\n", fp);
    CHECK(fclose(fp) == 0, "cannot write the long log.csv");
    // the run's plan is 1 MiB: the program, its buffers and 1.5 MB of points (and under an
    // emulator its own 16 MiB or so: a missing file's run takes 17.5 MiB there, 3 natively)
    long bound = (test_emulated() ? 40 : 24) * MIB;
    r = TRAIN("--resume", WORK_DIR "/long_log/ckpt.safetensors", "--steps", "3", "--max-memory", "50");
    if (test_exit_status(&r, 0, "--resume with a million rows in log.csv")) {
        printf("    --resume with a 1 M-row log.csv: peak RSS %ld KiB, %.2f s\n", r.max_rss_kib, r.seconds);
        CHECK(r.max_rss_kib < RSS_SLACK * bound, "--resume: peak RSS %ld KiB", r.max_rss_kib);
    }
    test_run_free(&r);
    r = GENERATE("--timeline", run, "--force", "--max-memory", "50");
    if (test_exit_status(&r, 0, "--timeline over a million rows")) {
        printf("    --timeline over a 1 M-row log.csv: peak RSS %ld KiB, %.2f s\n", r.max_rss_kib, r.seconds);
        CHECK(r.max_rss_kib < RSS_SLACK * bound, "--timeline: peak RSS %ld KiB", r.max_rss_kib);
    }
    test_run_free(&r);
    r = GENERATE("--timeline", run, "--force", "--max-memory", "1");
    if (test_exit_status(&r, 2, "--timeline within 1 MiB"))
        test_output_has(&r, "more than the 1.00 MiB --max-memory", "--timeline within 1 MiB");
    test_run_free(&r);
    unlink(corpus);
}

// --attention x.png: the image (its pixels, their filtered rows, the compressed copy: 9 bytes
// a pixel) is in the plan. A window of 128 over 2 layers of 4 heads is an image of about 2.5 M pixels:
// its plan is 22.7 MiB now; before, the plan passed --max-memory 3 and the run took 19 MiB.
TEST(bounds_11_attention_png_in_the_plan) {
    const char *ckpt = checkpoint_of(WORK_DIR "/wide.safetensors", (GPTConfig){29, 128, 2, 4, 16, 4, 1, 0.0f, POSITION_LEARNED}, 0.0f);
    if (!ckpt) return;
    TestRun r = GENERATE(ckpt, "the lazy dog", "-n", "120", "--attention", WORK_DIR "/view.png", "--force",
                         "--max-memory", "12");
    if (test_exit_status(&r, 2, "--attention x.png within 12 MiB")) {
        test_output_has(&r, "generation buffers", "--attention x.png within 12 MiB");
        test_output_has(&r, "more than the 12.0 MiB --max-memory", "--attention x.png within 12 MiB");
    }
    test_run_free(&r);
    r = GENERATE(ckpt, "the lazy dog", "-n", "120", "--attention", WORK_DIR "/view.png", "--force", "--max-memory",
                 "40");
    if (test_exit_status(&r, 0, "--attention x.png within 40 MiB"))
        printf("    --attention x.png of a window of 128 over 2 x 4 heads: peak RSS %ld KiB\n", r.max_rss_kib);
    test_run_free(&r);
    r = GENERATE(ckpt, "the lazy dog", "-n", "120", "--attention", WORK_DIR "/view.json", "--force", "--max-memory",
                 "12");
    test_exit_status(&r, 0, "--attention x.json within 12 MiB");
    test_run_free(&r);
    unlink(ckpt);
}

// Issue 42, hole 7: an image too large to write is refused before the model runs. A window of
// 1024 over 32 heads (a 33052 x 1126 image) learned it after generating 1100 characters and
// recording their attention (18.5 s, 277 MB here), then exit 1; now exit 2 at once, naming the
// most characters that fit.
TEST(bounds_11_attention_png_too_large_refused_first) {
    const char *ckpt = checkpoint_of(WORK_DIR "/heads32.safetensors",
                                     (GPTConfig){29, 1024, 1, 32, 64, 2, 1, 0.0f, POSITION_LEARNED}, 0.0f);
    if (!ckpt) return;
    const char *png = WORK_DIR "/heads32.png";
    unlink(png);
    TestRun r = GENERATE(ckpt, "the", "-n", "1100", "--attention", png);
    if (test_exit_status(&r, 2, "--attention x.png of 1024 characters over 32 heads")) {
        test_output_has(&r, "1024 characters over 1 layers x 32 heads make a 33052 x 1126 image, past the 30000 "
                        "pixels a side it may have: record at most 928 characters", "the image's size");
        CHECK(!strstr(r.output, "generated"), "the refusal came after generating:\n%s", r.output);
        CHECK(r.seconds < 5.0, "the refusal took %.1f s", r.seconds);
    }
    test_run_free(&r);
    CHECK(!test_file_exists(png), "the refused run wrote %s", png);
    unlink(ckpt);
}

// A checkpoint's header is read only when its parse (up to ST_HEADER_MEMORY bytes a byte) fits
// the memory limit. Before, a 3 MB metadata string took 3 bytes of memory a byte under
// --max-memory 1 (a 64 MB one: 186 MiB under --max-memory 20).
TEST(bounds_11_header_parse_within_the_limit) {
    work_dir();
    const char *path = WORK_DIR "/long_meta.safetensors";
    size_t n = (size_t)3 << 20;
    char *header = malloc(n + 64);
    if (!CHECK(header != NULL, "out of memory")) return;
    size_t len = (size_t)sprintf(header, "{\"__metadata__\":{\"format\":\"chargpt-2\",\"n\":\"");
    memset(header + len, 'x', n);
    len += n;
    len += (size_t)sprintf(header + len, "\"}}");
    int written = write_header_file(path, header, len);
    free(header);
    if (written != 0) return;
    Checkpoint ck;
    char err[ERR_LEN];
    int rc = checkpoint_open_within(path, 20.0 * 1048576, &ck, err);
    CHECK(rc == -2 && strstr(err, "reading it needs up to 30.") && strstr(err, "more than the 20.0 MiB"),
          "a 3 MiB header within 20 MiB: rc %d, %s", rc, err);
    rc = checkpoint_open_within(path, 40.0 * 1048576, &ck, err);
    CHECK(rc == -1 && strstr(err, "crc32"), "a 3 MiB header within 40 MiB: rc %d, %s", rc, err);
    TestRun r = GENERATE(path, "a", "--max-memory", "1");
    if (test_exit_status(&r, 2, "a 3 MiB header under --max-memory 1")) {
        test_output_has(&r, "more than the 1.0 MiB --max-memory", "a 3 MiB header under --max-memory 1");
        CHECK(r.max_rss_kib < baseline_rss_kib() + MIB, "peak RSS %ld KiB", r.max_rss_kib);
    }
    test_run_free(&r);
    unlink(path);
}
