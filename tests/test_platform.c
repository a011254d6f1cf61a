// Tests of what chargpt asks the operating system (common/platform.h) and what the programs
// share (common/program.h), in whichever version this build has (`make PLATFORM=posix`:
// the plain-POSIX one, whose "unknown" answers are checked as such); and that the rest of the
// tree keeps to the rules those rooms exist for: no /proc, no name only GNU or one system has,
// outside common/platform.c; no exit or abort in library code.
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/platform.h"
#include "../common/program.h"
#include "test.h"

static int is_posix_version(void) { return strcmp(platform_name(), "posix") == 0; }

TEST(platform_program_name_and_path) {
    CHECK(strcmp(program_name(), "run_tests") == 0, "program_name() is '%s', want run_tests", program_name());
    const char *invoked = program_invocation(), *slash = strrchr(invoked, '/');
    CHECK(strcmp(slash ? slash + 1 : invoked, "run_tests") == 0, "program_invocation() is '%s'", invoked);
    char path[PATH_MAX], resolved[PATH_MAX], err[ERR_LEN];
    int known = platform_executable_path(path, sizeof(path), err) == 0;
    if (is_posix_version()) {
        CHECK(!known && strstr(err, "does not say"), "the POSIX version knows its path (%s) or says '%s'", path, err);
        return;
    }
    if (!CHECK(known, "%s: executable path unknown: %s", platform_name(), err)) return;
    CHECK(realpath(invoked, resolved) && strcmp(resolved, path) == 0, "executable path %s, invoked as %s", path,
          invoked);
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

// A terminal of 57 columns says so; a pipe is no terminal.
TEST(platform_terminal_width_of_a_terminal) {
    int fds[2];
    if (!CHECK(pipe(fds) == 0, "pipe")) return;
    CHECK(platform_terminal_width(fds[1]) == 0, "a pipe: width %d", platform_terminal_width(fds[1]));
    close(fds[0]), close(fds[1]);
    int master = posix_openpt(O_RDWR | O_NOCTTY);
    const char *name = master >= 0 && grantpt(master) == 0 && unlockpt(master) == 0 ? ptsname(master) : NULL;
    int slave = name ? open(name, O_RDWR | O_NOCTTY) : -1;
    struct winsize ws = {24, 57, 0, 0};
    if (CHECK(slave >= 0 && ioctl(slave, TIOCSWINSZ, &ws) == 0, "cannot make a pseudo-terminal"))
        CHECK(platform_terminal_width(slave) == 57, "a terminal of 57 columns: width %d",
              platform_terminal_width(slave));
    if (slave >= 0) close(slave);
    if (master >= 0) close(master);
}

TEST(platform_processors_and_cpu) {
    int n = platform_cpu_count();
    CHECK(n >= 1 && n <= 1 << 20, "%d processors", n);
#if !defined(__aarch64__)
    CHECK(platform_cpu_has_arm_bf16() == 0, "an AArch64 feature on another CPU");
#endif
    CHECK(platform_max_rss_kib(strcmp(platform_name(), "macos") == 0 ? 1 << 20 : 1024) == 1024, "ru_maxrss's unit");
}

// A rename that never replaces (issue 29): a name taken is refused with EEXIST, both files
// kept; a free name is taken, the old one gone.
TEST(platform_rename_new_never_replaces) {
    mkdir("tests/tmp", 0777);
    const char *from = "tests/tmp/platform_rename_from", *taken = "tests/tmp/platform_rename_taken",
               *free_name = "tests/tmp/platform_rename_free";
    remove(free_name);
    if (test_write_file(from, "new", 3) != 0 || test_write_file(taken, "old", 3) != 0) return;
    errno = 0;
    CHECK(platform_rename_new(from, taken) == -1 && errno == EEXIST, "%s: a taken name: errno %d", platform_name(),
          errno);
    size_t len;
    char *kept = test_read_file(taken, &len);
    CHECK(kept && len == 3 && memcmp(kept, "old", 3) == 0 && test_file_exists(from), "the files were not both kept");
    free(kept);
    CHECK(platform_rename_new(from, free_name) == 0 && !test_file_exists(from) && test_file_exists(free_name),
          "%s: a free name: %s", platform_name(), strerror(errno));
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

static void check_no_system_names(const char *path, const char *text) {
    if (strcmp(path, "common/platform.c") == 0 || strcmp(path, "tests/test_platform.c") == 0) return;
    static const char *const names[] = {"program_invocation_name", "program_invocation_short_name", "qsort_r",
                                        "_GNU_SOURCE", "getauxval", "sysctlbyname", "getprogname",
                                        "_NSGetExecutablePath", "TIOCGWINSZ", "prctl", "forkpty", "sysconf",
                                        "renameat2", "renamex_np"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        CHECK(!uses_name(text, names[i]), "%s uses %s: ask common/platform.h", path, names[i]);
    CHECK(!strstr(text, "\"/proc/"), "%s reads /proc: ask common/platform.h", path);
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
        {"9223372036854775807", 0, 9223372036854775807L}, {"1.5", -2, 0}, {"1e-3", -2, 0}, {"1e30", -3, 0},
        {"9.3e18", -3, 0}, {"-1e19", -3, 0}, {"", -1, 0}, {"2k", -1, 0}, {"1e3x", -1, 0}, {"nan", -1, 0},
        {"inf", -1, 0}, {"0x10", -1, 0}, {"0x1p4", -1, 0}, {" 16", -1, 0}, {"16 ", -1, 0}, {"+16", 0, 16},
        {"infinity", -1, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        long v = 12345;
        int rc = whole_number_parse(cases[i].text, &v);
        CHECK(rc == cases[i].rc && (rc != 0 || v == cases[i].value), "'%s': rc %d, value %ld (want %d, %ld)",
              cases[i].text, rc, v, cases[i].rc, cases[i].value);
    }
}
