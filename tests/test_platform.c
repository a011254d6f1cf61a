// Tests of what chargpt asks the operating system (common/platform.h) and what the programs
// share (common/program.h), in whichever version this build has (`make PLATFORM=posix`:
// the plain-POSIX one, whose "unknown" answers are checked as such); and that the rest of the
// tree keeps to the rules those rooms exist for: no /proc, no name only GNU or one system has,
// outside common/platform.c; no exit or abort in library code.
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/platform.h"
#include "../common/program.h"
#include "test.h"

static int is_posix_version(void) { return strcmp(platform_name(), "posix") == 0; }

TEST(platform_program_name_and_path) {
    CHECK(strcmp(program_name(), "run_tests") == 0, "program_name() is '%s', want run_tests", program_name());
    const char *invoked = program_invocation(), *slash = platform_path_last_separator(invoked);
    const char *file = slash ? slash + 1 : invoked;
    CHECK(strncmp(file, "run_tests", 9) == 0 && (!file[9] || strcmp(file + 9, ".exe") == 0),
          "program_invocation() is '%s'", invoked);
    char path[PATH_MAX], resolved[PATH_MAX], err[ERR_LEN];
    int known = platform_executable_path(path, sizeof(path), err) == 0;
    if (is_posix_version()) {
        CHECK(!known && strstr(err, "does not say"), "the POSIX version knows its path (%s) or says '%s'", path, err);
        return;
    }
    if (!CHECK(known, "%s: executable path unknown: %s", platform_name(), err)) return;
    CHECK(platform_real_path(invoked, resolved, sizeof(resolved)) == 0 && strcmp(resolved, path) == 0,
          "executable path %s, invoked as %s", path, invoked);
    CHECK(platform_executable_path(path, 4, err) != 0, "a path in 4 bytes");
}

TEST(platform_memory_available_and_limit) {
    const char *source, *limit_source;
    double available = platform_memory_available(&source);
    if (is_posix_version())
        CHECK(available == 0.0 && strncmp(source, "unknown", 7) == 0, "POSIX: %.0f bytes, '%s'", available, source);
    else
        CHECK(available > 1 << 20 && available < 1e16 && strncmp(source, "unknown", 7) != 0, "%s: %.0f bytes (%s)",
              platform_name(), available, source);
    CHECK(memory_limit(64.0 * 1048576, 3, &limit_source) == 64.0 * 1048576 &&
              strcmp(limit_source, "--max-memory") == 0, "--max-memory 64: %s", limit_source);
    double shared = memory_limit(0.0, 2, &limit_source);
    if (available > 0) {
        // the memory available moves between the calls: within a quarter
        CHECK(shared > available / 2 * 0.75 && shared < available / 2 * 1.25, "2 processes: %.0f of %.0f", shared,
              available);
        char want[160];
        snprintf(want, sizeof(want), "available (%s) per process on this machine", source);
        CHECK(strcmp(limit_source, want) == 0, "2 processes: '%s'", limit_source);
    } else {
        CHECK(shared == 0.0 && strcmp(limit_source, source) == 0, "unknown: %.0f, '%s'", shared, limit_source);
    }
}

// `run_tests --child terminal_width N`: exits with the width of a terminal of N columns
// (Windows: of the child's console), 254 when it is no terminal, 255 when there is none.
TEST_CHILD(terminal_width) {
    int fd, other;
    if (argc != 1 || test_open_terminal(atoi(argv[0]), &fd, &other) != 0) return 255;
    int width = platform_is_terminal(fd) ? platform_terminal_width(fd) : 254;
    close(fd);
    if (other >= 0) close(other);
    return width;
}

// A terminal (Windows: a console) of 57 columns says so; the null device and a file are none.
TEST(platform_terminal_width_of_a_terminal) {
    FILE *null = fopen(test_null_device(), "w");
    if (CHECK(null != NULL, "cannot open %s", test_null_device())) {
        CHECK(platform_terminal_width(fileno(null)) == 0 && !platform_is_terminal(fileno(null)),
              "the null device: width %d, a terminal %d", platform_terminal_width(fileno(null)),
              platform_is_terminal(fileno(null)));
        fclose(null);
    }
    TestEnd end = test_run_child("terminal_width", (const char *[]){"57", NULL}, 60.0);
    CHECK(end.status == 57, "a terminal of 57 columns: width %d (254: no terminal, 255: none made)", end.status);
}

TEST(platform_processors_and_cpu) {
    int n = platform_cpu_count();
    CHECK(n >= 1 && n <= 1 << 20, "%d processors", n);
#if !defined(__aarch64__)
    CHECK(platform_cpu_has_arm_bf16() == 0, "an AArch64 feature on another CPU");
#endif
    CHECK(platform_max_rss_kib(strcmp(platform_name(), "macos") == 0 ? 1 << 20 : 1024) == 1024, "ru_maxrss's unit");
}

// ----------------------------------------------------------------------------
// files: the lock, the atomic replace, the rename that never replaces, a file's identity
// (flock, rename, renameat2 or link; Windows's LockFileEx, MoveFileEx, the volume's serial
// number and the file's index)

#define FILES_DIR "tests/tmp/platform"

// `run_tests --child hold_lock PATH`: takes the lock of PATH and holds it until it is killed.
TEST_CHILD(hold_lock) {
    int fd = argc == 1 ? platform_open(argv[0], PLATFORM_OPEN_LOCK_FILE) : -1;
    if (fd < 0 || platform_lock(fd) != PLATFORM_LOCK_HELD || platform_write_at(fd, "held\n", 5, 0) != 5) return 1;
    for (;;) usleep(100000);
}

// A lock is one holder's, another open of the file (in this process or another) is refused
// while it holds it, the file's content stays readable to those refused (Windows's locks are
// mandatory: the locked byte is past it), and the system releases it when the holder ends,
// killed or not.
TEST(platform_lock_one_holder) {
    char dir[256], path[300];
    test_fresh_dir(dir, sizeof(dir), FILES_DIR, "lock");
    snprintf(path, sizeof(path), "%s/lock", dir);
    int a = platform_open(path, PLATFORM_OPEN_LOCK_FILE), b = platform_open(path, PLATFORM_OPEN_LOCK_FILE);
    if (!CHECK(a >= 0 && b >= 0, "cannot open %s: %s", path, strerror(errno))) return;
    CHECK(platform_lock(a) == PLATFORM_LOCK_HELD, "the first lock: %s", strerror(errno));
    CHECK(platform_lock(b) == PLATFORM_LOCK_BUSY, "a second open of the file took the held lock");
    CHECK(platform_write_at(a, "12345\n", 6, 0) == 6, "the holder cannot write the file: %s", strerror(errno));
    char text[16] = "";
    CHECK(platform_read_at(b, text, sizeof(text) - 1, 0) == 6 && strncmp(text, "12345\n", 6) == 0,
          "the file cannot be read while it is locked: '%s' (%s)", text, strerror(errno));
    close(a);
    CHECK(platform_lock(b) == PLATFORM_LOCK_HELD, "the lock was not released when its holder closed the file");
    close(b);
    // held by another process, released when it is killed
    TestChild c;
    TestEnd end;
    const char *argv[] = {test_self_path(), "--child", "hold_lock", path, NULL};
    if (!CHECK(test_child_start(&c, argv, &(TestSpawn){0}) == 0, "cannot start: %s", strerror(errno))) return;
    b = platform_open(path, PLATFORM_OPEN_LOCK_FILE);
    int busy = 0;
    for (int i = 0; i < 600 && !busy && !test_child_wait(&c, 0.05, &end); i++) {
        memset(text, 0, sizeof(text));
        busy = platform_read_at(b, text, 5, 0) == 5 && strcmp(text, "held\n") == 0;
    }
    CHECK(busy && platform_lock(b) == PLATFORM_LOCK_BUSY, "another process's lock was not seen");
    test_child_kill(&c, &end);
    CHECK(platform_lock(b) == PLATFORM_LOCK_HELD, "the lock of a killed process was not released");
    close(b);
}

// `run_tests --child read_slowly PATH READY`: opens PATH, makes the file READY, reads PATH
// 300 ms later, and exits 0 when it read "old".
TEST_CHILD(read_slowly) {
    int fd = argc == 2 ? platform_open(argv[0], PLATFORM_OPEN_READ) : -1;
    if (fd < 0 || test_write_file(argv[1], "", 0) != 0) return 1;
    usleep(300000);
    char text[8] = "";
    long n = read(fd, text, sizeof(text) - 1);
    close(fd);
    return n == 3 && strcmp(text, "old") == 0 ? 0 : 2;
}

// A file replaced while a reader in another process has it open: the reader reads the old one,
// the name then gives the new one (Windows refuses to replace a file that is open: the replace
// is tried again until the reader has closed it); a rename that never replaces refuses a
// taken name and keeps both.
TEST(platform_replace_and_rename_new) {
    char dir[256], target[300], next[300], other[300], ready[300];
    test_fresh_dir(dir, sizeof(dir), FILES_DIR, "replace");
    snprintf(target, sizeof(target), "%s/ckpt.bin", dir);
    snprintf(next, sizeof(next), "%s/ckpt.bin.tmp", dir);
    snprintf(other, sizeof(other), "%s/other.bin", dir);
    snprintf(ready, sizeof(ready), "%s/ready", dir);
    test_write_file(target, "old", 3);
    test_write_file(next, "new!", 4);
    PlatformFileInfo before, after, replaced;
    CHECK(platform_path_info(target, 1, &before) == 0, "%s: %s", target, strerror(errno));
    int writer = platform_open(next, PLATFORM_OPEN_WRITE);
    CHECK(writer >= 0 && platform_file_sync(writer) == 0, "cannot sync %s", next);
    if (writer >= 0) close(writer);
    TestChild c;
    TestEnd end;
    const char *argv[] = {test_self_path(), "--child", "read_slowly", target, ready, NULL};
    if (!CHECK(test_child_start(&c, argv, &(TestSpawn){0}) == 0, "cannot start: %s", strerror(errno))) return;
    for (int i = 0; i < 6000 && !test_file_exists(ready); i++) usleep(10000);
    int replaced_rc = platform_replace_file(next, target);
    CHECK(replaced_rc == 0, "replacing a file another process reads: %s", strerror(errno));
    test_child_wait(&c, 60.0, &end);
    CHECK(end.status == 0, "the reader did not read the old file (exit status %d)", end.status);
    size_t n;
    char *now = test_read_file(target, &n);
    CHECK(now && n == 4 && memcmp(now, "new!", 4) == 0 && !test_file_exists(next), "after the replace: '%s'",
          now ? now : "");
    free(now);
    CHECK(platform_path_info(target, 1, &after) == 0 && after.kind == PLATFORM_FILE_REGULAR && after.size == 4 &&
              !platform_same_file(&before, &after), "the replaced file: kind %d, %llu bytes, the same file %d",
          (int)after.kind, (unsigned long long)after.size, platform_same_file(&before, &after));
    // never over a file
    test_write_file(other, "other", 5);
    errno = 0;
    int renamed = platform_rename_new(other, target);
    CHECK(renamed == -1 && errno == EEXIST, "a rename onto a taken name: %d, errno %d", renamed, errno);
    now = test_read_file(target, &n);
    CHECK(now && n == 4 && test_file_exists(other), "the refused rename changed a file");
    free(now);
    CHECK(platform_path_info(target, 1, &replaced) == 0 && platform_same_file(&after, &replaced),
          "the refused rename replaced the target");
    snprintf(next, sizeof(next), "%s/free.bin", dir);
    CHECK(platform_rename_new(other, next) == 0 && test_file_exists(next) && !test_file_exists(other),
          "a rename to a free name");
}

// ----------------------------------------------------------------------------
// the rules, on the sources

// Calls fn(path, text) for every C source and header (.c .h .inc) under the directories.
static void each_source(const char *const *dirs, int n, void (*fn)(const char *path, const char *text)) {
    for (int d = 0; d < n; d++) {
        DIR *dir = opendir(dirs[d]);
        if (!CHECK(dir != NULL, "cannot read %s (run the tests from the repository root)", dirs[d])) continue;
        struct dirent *e;
        while ((e = readdir(dir)) != NULL) {
            const char *dot = strrchr(e->d_name, '.');
            if (!dot || (strcmp(dot, ".c") && strcmp(dot, ".h") && strcmp(dot, ".inc"))) continue;
            char path[600];
            snprintf(path, sizeof(path), "%s/%s", dirs[d], e->d_name);
            size_t len;
            char *text = test_read_file(path, &len);
            if (CHECK(text != NULL, "cannot read %s", path)) fn(path, text);
            free(text);
        }
        closedir(dir);
    }
}

// Whether text uses `word` as a name (not inside a longer name), outside comments.
static int uses_name(const char *text, const char *word) {
    size_t n = strlen(word);
    for (const char *p = strstr(text, word); p; p = strstr(p + 1, word)) {
        int alone = (p == text || !(p[-1] == '_' || isalnum((unsigned char)p[-1]))) &&
                    !(p[n] == '_' || isalnum((unsigned char)p[n]));
        const char *line = p;
        while (line > text && line[-1] != '\n') line--;
        const char *comment = strstr(line, "//");
        if (alone && !(comment && comment < p)) return 1;
    }
    return 0;
}

// common/platform.c, and tests/test_process.c for the tests, are where the system is asked.
static void check_no_system_names(const char *path, const char *text) {
    if (strcmp(path, "common/platform.c") == 0 || strcmp(path, "tests/test_platform.c") == 0 ||
        strcmp(path, "tests/test_process.c") == 0)
        return;
    static const char *const names[] = {"program_invocation_name", "program_invocation_short_name", "qsort_r",
                                        "_GNU_SOURCE", "getauxval", "sysctlbyname", "getprogname",
                                        "_NSGetExecutablePath", "TIOCGWINSZ", "prctl", "forkpty", "sysconf",
                                        "aligned_alloc", "flock", "fsync", "fdatasync", "isatty", "realpath",
                                        "pread", "pwrite", "sigaction", "lstat"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        CHECK(!uses_name(text, names[i]), "%s uses %s: ask common/platform.h", path, names[i]);
    CHECK(!strstr(text, "\"/proc/"), "%s reads /proc: ask common/platform.h", path);
    CHECK(!uses_name(text, "_WIN32") && !uses_name(text, "__MINGW32__") && !uses_name(text, "_MSC_VER"),
          "%s asks whether it is on Windows: ask common/platform.h", path);
}

TEST(platform_no_system_names_elsewhere) {
    static const char *const dirs[] = {".", "common", "data", "dist", "format", "generation", "kernels", "model",
                                       "training", "viewer", "scripts", "tests", "tests/fuzz", "tests/mpi"};
    each_source(dirs, (int)(sizeof(dirs) / sizeof(dirs[0])), check_no_system_names);
}

static void check_library_code(const char *path, const char *text) {
    if (strcmp(path, "common/program.c") == 0 || strcmp(path, "common/program.h") == 0) return;
    CHECK(!uses_name(text, "exit") && !uses_name(text, "abort") && !uses_name(text, "die"),
          "%s: library code calls exit, abort or die: return the error (common/errors.h)", path);
    CHECK(!strstr(text, "program.h\""), "%s includes common/program.h, which is for the programs", path);
}

TEST(library_code_never_exits) {
    static const char *const dirs[] = {"common", "data", "dist", "format", "generation", "kernels", "model",
                                       "training", "viewer"};
    each_source(dirs, (int)(sizeof(dirs) / sizeof(dirs[0])), check_library_code);
}

// Option values as a person writes them: --steps 2e3 is 2000, 1.5 is no whole number, 1e30 too large.
TEST(program_whole_numbers_as_people_write_them) {
    static const struct {
        const char *text;
        int rc;
        long value;
    } cases[] = {
        {"2000", 0, 2000}, {"2e3", 0, 2000}, {"1.5e3", 0, 1500}, {"1E3", 0, 1000}, {"-7", 0, -7}, {"0", 0, 0},
        {"1.5", -2, 0}, {"1e-3", -2, 0}, {"1e30", -3, 0},
        {"9.3e18", -3, 0}, {"-1e19", -3, 0}, {"", -1, 0}, {"2k", -1, 0}, {"1e3x", -1, 0}, {"nan", -1, 0},
        {"inf", -3, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        long v = 12345;
        int rc = whole_number_parse(cases[i].text, &v);
        CHECK(rc == cases[i].rc && (rc != 0 || v == cases[i].value), "'%s': rc %d, value %ld (want %d, %ld)",
              cases[i].text, rc, v, cases[i].rc, cases[i].value);
    }
    // the largest, and the first past it (a long is 64 bits, or 32 on Windows)
    char text[32];
    long v = 12345;
    snprintf(text, sizeof(text), "%ld", LONG_MAX);
    CHECK(whole_number_parse(text, &v) == 0 && v == LONG_MAX, "'%s': value %ld", text, v);
    snprintf(text, sizeof(text), "%llu", (unsigned long long)LONG_MAX + 1);
    CHECK(whole_number_parse(text, &v) == -3, "'%s' is past a long", text);
}
