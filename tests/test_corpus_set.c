// Tests of a corpus of many texts (data/corpus_set.h): a directory walked in its documented
// order against the same files concatenated, hidden and non-text files skipped and counted,
// several --data in order, standard input (a file and a pipe), FIFOs, the separator, and the
// memory budget that bounds both the text and the walk's names.
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "../common/platform.h"
#include "../common/utf8.h"
#include "../data/corpus_fingerprint.h"
#include "../data/corpus_set.h"
#include "test.h"

#define SET_DIR "tests/tmp/set"

static void sleep_ms(long ms) { nanosleep(&(struct timespec){ms / 1000, (ms % 1000) * 1000000L}, NULL); }

static void put(const char *path, const void *bytes, size_t len) { test_write_file(path, bytes, len); }
static void put_text(const char *path, const char *text) { put(path, text, strlen(text)); }

// A gzip file of text.
static void put_gzip(const char *path, const char *text) {
    gzFile gz = gzopen(path, "wb");
    if (!CHECK(gz != NULL, "gzopen %s", path)) return;
    gzwrite(gz, text, (unsigned)strlen(text));
    gzclose(gz);
}

// books/: the fixture of the walk (see test 1 for what each entry is for). Its two links, made
// where the system has them (books_links 1), are a broken one and one back up.
static int books_links;
static const char *make_books(void) {
    static int made = 0;
    if (made) return SET_DIR "/books";
    test_make_dir("tests/tmp");
    test_make_dir(SET_DIR);
    test_make_dir(SET_DIR "/books");
    test_make_dir(SET_DIR "/books/b");
    test_make_dir(SET_DIR "/books/b/.git");
    put_text(SET_DIR "/books/a.txt", "alpha\n");
    put_text(SET_DIR "/books/b/c.txt", "gamma");  // no newline at its end
    put_text(SET_DIR "/books/b/.git/HEAD", "ref: refs/heads/main\n");
    put(SET_DIR "/books/binary.bin", "\x7f" "ELF\x02\x01\x01\0\0\0", 10);
    put_gzip(SET_DIR "/books/d.txt.gz", "delta\n");
    put_text(SET_DIR "/books/e_empty.txt", "");
    put_text(SET_DIR "/books/f_latin1.txt", "caf\xe9\n");
    put(SET_DIR "/books/g.xz", "\xfd" "7zXZ\0\0\x04\xe6\xd6\xb4\x46", 12);
    put_text(SET_DIR "/books/.hidden.txt", "not read\n");
    put_text(SET_DIR "/books/z.txt", "\xef\xbb\xbfzeta\r\n");  // a byte-order mark and CR LF
    platform_remove_file(SET_DIR "/books/loop");
    platform_remove_file(SET_DIR "/books/broken");
    if (test_system_has(TEST_SYMLINKS)) {
        CHECK(test_make_symlink(".", SET_DIR "/books/loop") == 0, "symlink: %s", strerror(errno));
        CHECK(test_make_symlink("no_such_file", SET_DIR "/books/broken") == 0, "symlink: %s", strerror(errno));
        books_links = 1;
    } else {
        printf("    no symbolic links on %s: a link back up and a broken one left out\n", platform_name());
    }
    made = 1;
    return SET_DIR "/books";
}

static int load_set(const char *const *paths, int n, const char *separator, TextEncoding encoding, size_t max_chars,
                    Corpus *c, CorpusSetReport *report, char err[ERR_LEN]) {
    uint32_t sep[CORPUS_SEPARATOR_MAX];
    size_t sep_len;
    if (!CHECK(corpus_separator_parse(separator, sep, &sep_len, err) == 0, "%s", err)) return -9;
    CorpusSetSpec spec = {paths, n, sep, sep_len, {.encoding = encoding, .pipe_into = "./train --data -"}, max_chars};
    return corpus_set_load(&spec, c, report, err);
}

// The code points of a UTF-8 string (malloc'd); *n their count.
static uint32_t *code_points(const char *text, size_t *n) {
    uint32_t *cps = malloc((strlen(text) + 1) * sizeof(uint32_t));
    size_t bad;
    long m = utf8_decode((const unsigned char *)text, strlen(text), cps, &bad);
    *n = m < 0 ? 0 : (size_t)m;
    return cps;
}

static int same_text(const Corpus *c, const char *want) {
    size_t n;
    uint32_t *cps = code_points(want, &n);
    int same = c->len == n && memcmp(c->text, cps, n * sizeof(uint32_t)) == 0;
    free(cps);
    return same;
}

// The text of c as UTF-8, for a message (static buffer).
static const char *shown(const Corpus *c) {
    static char buf[512];
    size_t used = 0;
    for (size_t i = 0; i < c->len && used + 5 < sizeof(buf); i++) used += (size_t)utf8_encode(c->text[i], buf + used);
    buf[used] = '\0';
    return buf;
}

TEST(corpus_set_directory_walked_in_order_and_skips_counted) {
    const char *books = make_books();
    Corpus c;
    CorpusSetReport r;
    char err[ERR_LEN];
    if (!CHECK(load_set(&books, 1, "\\n", ENCODING_UTF8, CORPUS_NO_LIMIT, &c, &r, err) == 0, "%s", err)) return;
    // byte order: .hidden.txt (hidden), a.txt, b/ (.git hidden, c.txt), binary.bin (binary), broken (a
    // broken link), d.txt.gz, e_empty.txt (empty), f_latin1.txt (not UTF-8), g.xz (xz), loop (a link
    // back up), z.txt
    CHECK(same_text(&c, "alpha\n\ngamma\ndelta\n\nzeta\n"), "the walk read \"%s\"", shown(&c));
    CHECK(r.files == 4 && r.empty == 1 && r.hidden == 2 && r.not_text == 3 && r.other == (size_t)books_links &&
              r.repeated == (size_t)books_links && r.directories == 2,
          "files %zu empty %zu hidden %zu not_text %zu other %zu repeated %zu directories %zu", r.files, r.empty,
          r.hidden, r.not_text, r.other, r.repeated, r.directories);
    CHECK(c.cleanup.bom == 1 && c.cleanup.crlf == 1 && c.cleanup.lone_cr == 0, "cleanup %d %zu %zu", c.cleanup.bom,
          c.cleanup.crlf, c.cleanup.lone_cr);
    char described[ERR_LEN];
    corpus_set_describe(&r, described, sizeof(described));
    const char *words[] = {"4 files in 2 directories", "2 hidden entries", "3 files that are not text",
                           "binary.bin: binary data", "f_latin1.txt: Latin-1 (ISO-8859-1), not UTF-8 (--encoding "
                           "latin-1 reads it)", "g.xz: compressed with xz", "1 empty file",
                           "1 entry that is neither a file nor a directory",  // the last two: the links
                           "1 link to a directory read already"};
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]) - 2 * (books_links == 0); i++)
        CHECK(strstr(described, words[i]) != NULL, "the report lacks \"%s\": %s", words[i], described);
    corpus_free(&c);
}

// A directory and the same files concatenated, the separator between them, are one text: the
// same code points and the same fingerprint (what a checkpoint keeps). With no separator, the
// directory is `cat` of its files.
TEST(corpus_set_directory_equals_concatenation) {
    const char *books = make_books();
    static const struct {
        const char *separator, *concatenated;
    } cases[] = {
        {"\\n", "alpha\n\ngamma\ndelta\n\nzeta\n"},
        {"", "alpha\ngammadelta\nzeta\n"},
        {"\\n=== \\\\ ===\\n", "alpha\n\n=== \\ ===\ngamma\n=== \\ ===\ndelta\n\n=== \\ ===\nzeta\n"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        Corpus dir, cat;
        CorpusSetReport r;
        char err[ERR_LEN];
        put_text(SET_DIR "/concatenated.txt", cases[i].concatenated);
        if (!CHECK(load_set(&books, 1, cases[i].separator, ENCODING_UTF8, CORPUS_NO_LIMIT, &dir, &r, err) == 0, "%s",
                   err))
            continue;
        if (CHECK(corpus_load(SET_DIR "/concatenated.txt", 0, CORPUS_NO_LIMIT, &cat, err) == 0, "%s", err)) {
            CHECK(dir.len == cat.len && memcmp(dir.text, cat.text, dir.len * sizeof(uint32_t)) == 0,
                  "separator '%s': the directory gives \"%s\"", cases[i].separator, shown(&dir));
            char a[CORPUS_FINGERPRINT_LEN], b[CORPUS_FINGERPRINT_LEN];
            corpus_fingerprint(dir.text, dir.len, a);
            corpus_fingerprint(cat.text, cat.len, b);
            CHECK(strcmp(a, b) == 0, "fingerprints %s and %s", a, b);
            corpus_free(&cat);
        }
        corpus_free(&dir);
    }
    // one file alone has no separator: its fingerprint is what a single --data always gave
    Corpus one, plain;
    CorpusSetReport r;
    char err[ERR_LEN];
    const char *path = SET_DIR "/books/a.txt";
    if (CHECK(load_set(&path, 1, "\\n", ENCODING_UTF8, CORPUS_NO_LIMIT, &one, &r, err) == 0, "%s", err)) {
        CHECK(corpus_load(path, 0, CORPUS_NO_LIMIT, &plain, err) == 0 && one.len == plain.len &&
                  memcmp(one.text, plain.text, one.len * 4) == 0, "a.txt alone differs from corpus_load's");
        corpus_free(&plain);
        corpus_free(&one);
    }
}

// Several paths are read in the order given; a directory's walk may read files as Latin-1.
TEST(corpus_set_several_paths_in_order_and_encoding) {
    make_books();
    const char *paths[] = {SET_DIR "/books/z.txt", SET_DIR "/books/b", SET_DIR "/books/a.txt"};
    Corpus c;
    CorpusSetReport r;
    char err[ERR_LEN];
    if (CHECK(load_set(paths, 3, "|", ENCODING_UTF8, CORPUS_NO_LIMIT, &c, &r, err) == 0, "%s", err)) {
        CHECK(same_text(&c, "zeta\n|gamma|alpha\n"), "read \"%s\"", shown(&c));
        CHECK(r.files == 3 && r.hidden == 1 && r.directories == 1, "files %zu hidden %zu directories %zu", r.files,
              r.hidden, r.directories);
        corpus_free(&c);
    }
    // named on its own, a file that is not text is an error, not a skip
    const char *bad[] = {SET_DIR "/books/a.txt", SET_DIR "/books/f_latin1.txt"};
    CHECK(load_set(bad, 2, "\\n", ENCODING_UTF8, CORPUS_NO_LIMIT, &c, &r, err) == -1 && strstr(err, "--encoding latin-1") &&
              c.text == NULL, "a Latin-1 file named on its own: %s", err);
    const char *xz = SET_DIR "/books/g.xz";
    CHECK(load_set(&xz, 1, "\\n", ENCODING_UTF8, CORPUS_NO_LIMIT, &c, &r, err) == -1 &&
              strstr(err, "xz -dc " SET_DIR "/books/g.xz | ./train --data -"), "an xz file named on its own: %s", err);
    // with --encoding latin-1 the Latin-1 file is read (and UTF-8's é would be two characters)
    const char *latin = SET_DIR "/books/f_latin1.txt";
    if (CHECK(load_set(&latin, 1, "\\n", ENCODING_LATIN1, CORPUS_NO_LIMIT, &c, &r, err) == 0, "%s", err)) {
        CHECK(same_text(&c, "café\n"), "read \"%s\"", shown(&c));
        corpus_free(&c);
    }
}

// `run_tests --child write_lines N`: N lines of 99 x's on standard output.
TEST_CHILD(write_lines) {
    char line[100];
    memset(line, 'x', 99);
    line[99] = '\n';
    long n = argc == 1 ? atol(argv[0]) : 0;
    for (long i = 0; i < n; i++)
        if (fwrite(line, 1, 100, stdout) != 100) return 1;
    return fflush(stdout) == 0 ? 0 : 1;
}

// Runs corpus_set_load on "-" with standard input from fd (restored after).
static int load_stdin(int fd, Corpus *c, CorpusSetReport *r, char err[ERR_LEN]) {
    int saved = dup(STDIN_FILENO);
    dup2(fd, STDIN_FILENO);
    close(fd);
    clearerr(stdin);
    const char *dash = CORPUS_STDIN;
    int rc = load_set(&dash, 1, "\\n", ENCODING_UTF8, CORPUS_NO_LIMIT, c, r, err);
    dup2(saved, STDIN_FILENO);
    close(saved);
    clearerr(stdin);
    return rc;
}

TEST(corpus_set_standard_input) {
    test_make_dir("tests/tmp");
    test_make_dir(SET_DIR);
    // a file on standard input, gzip or not
    put_gzip(SET_DIR "/stdin.gz", "from a gzip file\n");
    Corpus c;
    CorpusSetReport r;
    char err[ERR_LEN];
    if (CHECK(load_stdin(platform_open(SET_DIR "/stdin.gz", PLATFORM_READ), &c, &r, err) == 0, "%s", err)) {
        CHECK(same_text(&c, "from a gzip file\n") && r.files == 1, "read \"%s\"", shown(&c));
        corpus_free(&c);
    }
    // a pipe: 300 KB, more than a pipe's buffer, written by a child while it is read
    size_t n = 300000;
    int from_child;
    TestChild child;
    TestEnd end;
    const char *argv[] = {test_self_path(), "--child", "write_lines", "3000", NULL};
    if (!CHECK(test_child_start(&child, argv, &(TestSpawn){.stdout_pipe = &from_child}) == 0, "cannot start: %s",
               strerror(errno)))
        return;
    if (CHECK(load_stdin(from_child, &c, &r, err) == 0, "%s", err)) {
        CHECK(c.len == n && c.text[0] == 'x' && c.text[n - 1] == '\n', "read %zu characters from the pipe", c.len);
        corpus_free(&c);
    }
    test_child_wait(&child, 60.0, &end);
    CHECK(end.status == 0, "the writer: %s", test_end_text(&end, (char[64]){0}));
    // an xz stream on standard input: named, with the pipe
    put(SET_DIR "/stdin.xz", "\xfd" "7zXZ\0\0\x04\xe6\xd6\xb4\x46", 12);
    CHECK(load_stdin(platform_open(SET_DIR "/stdin.xz", PLATFORM_READ), &c, &r, err) == -1 &&
              strstr(err, "standard input") && strstr(err, "xz"), "xz on standard input: %s", err);
    // standard input twice
    const char *twice[] = {CORPUS_STDIN, CORPUS_STDIN};
    CHECK(load_set(twice, 2, "", ENCODING_UTF8, CORPUS_NO_LIMIT, &c, &r, err) == -3 && strstr(err, "once"),
          "stdin twice: %s", err);
}

// `run_tests --child write_into_fifo PATH`: opens the FIFO PATH for writing (which waits for a
// reader), then writes a line into it once the reader has found a writer there.
TEST_CHILD(write_into_fifo) {
    FILE *fp = argc == 1 ? fopen(argv[0], "wb") : NULL;
    sleep_ms(100);
    return fp && fputs("piped text\n", fp) >= 0 && fclose(fp) == 0 ? 0 : 1;
}

// A FIFO is read when a process writes into it, and refused at once when none does; a device
// is refused.
TEST(corpus_set_fifo) {
    test_make_dir("tests/tmp");
    test_make_dir(SET_DIR);
    Corpus c;
    CorpusSetReport r;
    char err[ERR_LEN];
    // a device is refused
    const char *device = test_device();
    CHECK(load_set(&device, 1, "", ENCODING_UTF8, CORPUS_NO_LIMIT, &c, &r, err) == -1 &&
              strstr(err, "not a regular file"), "%s: %s", device, err);
    if (!test_system_has(TEST_FIFOS)) {
        printf("    no FIFOs on %s: left out\n", platform_name());
        return;
    }
    const char *fifo = SET_DIR "/fifo";
    if (!CHECK(test_make_fifo(fifo) == 0, "mkfifo: %s", strerror(errno))) return;
    CHECK(load_set(&fifo, 1, "", ENCODING_UTF8, CORPUS_NO_LIMIT, &c, &r, err) == -1 &&
              strstr(err, "no process writing into it"), "a FIFO without a writer: %s", err);
    TestChild writer;
    TestEnd end;
    const char *argv[] = {test_self_path(), "--child", "write_into_fifo", fifo, NULL};
    if (!CHECK(test_child_start(&writer, argv, &(TestSpawn){0}) == 0, "cannot start: %s", strerror(errno))) return;
    // the reader must come after the writer has opened (else: no writer, refused)
    int ok = 0;
    for (int attempt = 0; attempt < 50 && !ok; attempt++) {
        sleep_ms(20);
        ok = load_set(&fifo, 1, "", ENCODING_UTF8, CORPUS_NO_LIMIT, &c, &r, err) == 0;
    }
    if (CHECK(ok, "a FIFO with a writer: %s", err)) {
        CHECK(same_text(&c, "piped text\n"), "read \"%s\"", shown(&c));
        corpus_free(&c);
    }
    test_child_kill(&writer, &end);
    platform_remove_file(fifo);
}

// The budget bounds the text across files and the names a walk holds: a directory of many
// files is refused (-2) while it is listed, before its names outgrow the limit.
TEST(corpus_set_memory_budget) {
    test_make_dir("tests/tmp");
    test_make_dir(SET_DIR);
    test_make_dir(SET_DIR "/many");
    char path[256];
    for (int i = 0; i < 300; i++) {
        snprintf(path, sizeof(path), SET_DIR "/many/file_with_a_long_name_%04d.txt", i);
        put_text(path, "ab\n");
    }
    const char *many = SET_DIR "/many";
    Corpus c;
    CorpusSetReport r;
    char err[ERR_LEN];
    CHECK(load_set(&many, 1, "", ENCODING_UTF8, CORPUS_NO_LIMIT, &c, &r, err) == 0 && c.len == 900, "%s", err);
    corpus_free(&c);
    // the names alone (300 x ~64 bytes) need more than 2000 characters' worth (8000 bytes)
    int rc = load_set(&many, 1, "", ENCODING_UTF8, 2000, &c, &r, err);
    CHECK(rc == -2 && strstr(err, "entries") && c.text == NULL, "300 names in 2000 characters: rc %d, %s", rc, err);
    // the text across files: 900 characters and the names in 5000 characters' worth do not fit
    rc = load_set(&many, 1, "\\n", ENCODING_UTF8, 5000, &c, &r, err);
    CHECK(rc == -2 && strstr(err, "more than") && c.text == NULL, "rc %d, %s", rc, err);
    // an empty directory holds no text
    test_make_dir(SET_DIR "/nothing");
    put_text(SET_DIR "/nothing/.hidden", "x");
    const char *nothing = SET_DIR "/nothing";
    CHECK(load_set(&nothing, 1, "", ENCODING_UTF8, CORPUS_NO_LIMIT, &c, &r, err) == -1 && strstr(err, "no text") &&
              strstr(err, "1 hidden entry"), "an empty directory: %s", err);
}

TEST(corpus_set_separator_parse) {
    static const struct {
        const char *arg;
        const char *want;  // UTF-8, or NULL: refused
    } cases[] = {
        {"", ""}, {"\\n", "\n"}, {"\\n\\n", "\n\n"}, {"\\t|\\r", "\t|\r"}, {"\\\\", "\\"},
        {"— end —\\n", "— end —\n"}, {"\\x41", NULL}, {"\\", NULL}, {"\xff", NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        uint32_t out[CORPUS_SEPARATOR_MAX];
        size_t len;
        char err[ERR_LEN];
        int rc = corpus_separator_parse(cases[i].arg, out, &len, err);
        if (!cases[i].want) {
            CHECK(rc == -1 && strstr(err, "--separator"), "'%s' accepted", cases[i].arg);
            continue;
        }
        size_t n;
        uint32_t *want = code_points(cases[i].want, &n);
        CHECK(rc == 0 && len == n && memcmp(out, want, n * sizeof(uint32_t)) == 0, "'%s': rc %d, %zu code points",
              cases[i].arg, rc, len);
        free(want);
    }
    char long_arg[CORPUS_SEPARATOR_MAX + 2];
    memset(long_arg, '-', sizeof(long_arg) - 1);
    long_arg[sizeof(long_arg) - 1] = '\0';
    uint32_t out[CORPUS_SEPARATOR_MAX];
    size_t len;
    char err[ERR_LEN];
    CHECK(corpus_separator_parse(long_arg, out, &len, err) == -1 && strstr(err, "more than"), "a long separator: %s", err);
}

// A chain of 1500 directories, or as deep as PATH_MAX lets a path go (Windows's 260 bytes, of
// the absolute path): walked (one path on the heap per level, not a PATH_MAX buffer on the
// stack), the file at its bottom read.
TEST(corpus_set_deep_directories) {
    char *path = malloc(PATH_MAX), absolute[PATH_MAX];
    test_fresh_dir(path, PATH_MAX, SET_DIR, "deep");
    size_t n = strlen(path);
    if (!CHECK(platform_real_path(path, absolute, sizeof(absolute)) == 0, "%s: %s", path, strerror(errno))) return;
    int depth = (PATH_MAX - (int)strlen(absolute) - (int)strlen("/bottom.txt") - 4) / 2;
    if (depth > 1500) depth = 1500;
    for (int i = 0; i < depth; i++) {
        n += (size_t)snprintf(path + n, PATH_MAX - n, "/d");
        if (platform_make_dir(path) != 0 && errno != EEXIST) {
            CHECK(0, "mkdir at depth %d: %s", i, strerror(errno));
            break;
        }
    }
    snprintf(path + n, PATH_MAX - n, "/bottom.txt");
    put_text(path, "at the bottom\n");
    const char *top = SET_DIR "/deep";
    Corpus c;
    CorpusSetReport r;
    char err[ERR_LEN];
    if (CHECK(load_set(&top, 1, "", ENCODING_UTF8, CORPUS_NO_LIMIT, &c, &r, err) == 0, "%s", err)) {
        CHECK(same_text(&c, "at the bottom\n") && r.directories == (size_t)depth + 1, "read \"%s\" in %zu directories",
              shown(&c), r.directories);
        corpus_free(&c);
    }
    test_fresh_dir(path, PATH_MAX, SET_DIR, "deep");
    free(path);
}

// Forty directories, each with two links to the next, are no loop but 2^40 paths: each
// directory is walked once (the second link to it skipped), so the walk ends at once and
// reads the file at the bottom once. Before: the walk followed every path (depth 18 took 7 s).
TEST(corpus_set_tree_of_links_walked_once) {
    if (!test_system_has(TEST_SYMLINKS)) {
        test_skip("no symbolic links to make the tree of");
        return;
    }
    char path[256], target[64];
    test_fresh_dir(path, sizeof(path), SET_DIR, "links");
    for (int i = 0; i <= 40; i++) {
        snprintf(path, sizeof(path), SET_DIR "/links/d%02d", i);
        test_make_dir(path);
        if (i == 40) break;
        snprintf(target, sizeof(target), "../d%02d", i + 1);
        for (int k = 0; k < 2; k++) {
            snprintf(path, sizeof(path), SET_DIR "/links/d%02d/%c", i, 'a' + k);
            CHECK(test_make_symlink(target, path) == 0, "symlink %s: %s", path, strerror(errno));
        }
    }
    put_text(SET_DIR "/links/d40/bottom.txt", "at the bottom\n");
    const char *top = SET_DIR "/links/d00";
    Corpus c;
    CorpusSetReport r;
    char err[ERR_LEN];
    if (CHECK(load_set(&top, 1, "", ENCODING_UTF8, CORPUS_NO_LIMIT, &c, &r, err) == 0, "%s", err)) {
        CHECK(same_text(&c, "at the bottom\n") && r.directories == 41 && r.repeated == 40,
              "read \"%s\" in %zu directories, %zu links skipped", shown(&c), r.directories, r.repeated);
        corpus_free(&c);
    }
    // an empty subdirectory lists no names (qsort on none: undefined before, which UBSan stopped)
    test_make_dir(SET_DIR "/links/d40/empty");
    if (CHECK(load_set(&top, 1, "", ENCODING_UTF8, CORPUS_NO_LIMIT, &c, &r, err) == 0, "%s", err)) {
        CHECK(r.directories == 42, "%zu directories", r.directories);
        corpus_free(&c);
    }
}

static int stop_now(void) { return 1; }

// A stop request ends the walk at once: nothing is read.
TEST(corpus_set_walk_stops_when_asked) {
    const char *books = make_books();
    uint32_t sep = '\n';
    CorpusSetSpec spec = {&books, 1, &sep, 1, {.stop_requested = stop_now}, CORPUS_NO_LIMIT};
    Corpus c;
    CorpusSetReport r;
    char err[ERR_LEN];
    int rc = corpus_set_load(&spec, &c, &r, err);
    CHECK(rc == -4 && strstr(err, "stopped") && r.files == 0 && c.text == NULL, "rc %d, %zu files: %s", rc, r.files,
          err);
}
