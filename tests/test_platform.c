// Tests of what chargpt asks the operating system (common/platform.h) and what the programs
// share (common/program.h), in whichever version this build has (`make PLATFORM=posix`:
// the plain-POSIX one, whose "unknown" answers are checked as such); and that the rest of the
// tree keeps to the rules those rooms exist for: no /proc, no name only GNU or one system has,
// outside common/platform.c; no exit or abort in library code.
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
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
    CHECK(strncmp(file, "run_tests", 9) == 0 &&
              (!file[9] || strcmp(file + 9, ".exe") == 0 || strcmp(file + 9, ".js") == 0),  // node runs run_tests.js
          "program_invocation() is '%s'", invoked);
    char path[PATH_MAX], resolved[PATH_MAX], err[ERR_LEN];
    int known = platform_executable_path(path, sizeof(path), err) == 0;
    if (is_posix_version() || strcmp(platform_name(), "wasm") == 0) {
        CHECK(!known && strstr(err, "does not say"), "the POSIX version knows its path (%s) or says '%s'", path, err);
        return;
    }
    if (!CHECK(known, "%s: executable path unknown: %s", platform_name(), err)) return;
    CHECK(platform_real_path(invoked, resolved, sizeof(resolved)) == 0 && strcmp(resolved, path) == 0,
          "executable path %s, invoked as %s", path, invoked);
    CHECK(platform_executable_path(path, 4, err) != 0, "a path in 4 bytes");
}

TEST(platform_memory_bounds_and_limit) {
    MemoryBound bounds[PLATFORM_MEMORY_BOUNDS];
    const char *unknown, *limit_source;
    int n = platform_memory_bounds(bounds, &unknown);
    if (is_posix_version())
        CHECK(n == 0 && strncmp(unknown, "unknown", 7) == 0, "POSIX: %d bounds, '%s'", n, unknown);
    else
        CHECK(n >= 1 && strcmp(bounds[0].name, strcmp(platform_name(), "linux") == 0     ? "MemAvailable"
                                               : strcmp(platform_name(), "windows") == 0 ? "available physical memory"
                                               : strcmp(platform_name(), "wasm") == 0 ? "WebAssembly memory less its use"
                                                                                         : "free and inactive pages") == 0,
              "%s: %d bounds, the first '%s'", platform_name(), n, n ? bounds[0].name : "");
    for (int i = 0; i < n; i++)
        CHECK(bounds[i].available >= 0 && bounds[i].available < 1e18 && bounds[i].total >= bounds[i].available,
              "%s: %.0f of %.0f bytes", bounds[i].name, bounds[i].available, bounds[i].total);
    CHECK(memory_limit(64.0 * 1048576, 3, &limit_source) == 64.0 * 1048576 &&
              strcmp(limit_source, "--max-memory") == 0, "--max-memory 64: %s", limit_source);
    double shared = memory_limit(0.0, 2, &limit_source);
    if (n == 0) {
        CHECK(shared == 0.0 && strcmp(limit_source, unknown) == 0, "unknown: %.0f, '%s'", shared, limit_source);
        return;
    }
    // the least bound less its margin, a shared one halved between 2 processes (the memory
    // available moves between the calls: within a quarter)
    double least = INFINITY;
    for (int i = 0; i < n; i++) {
        double total = bounds[i].total, margin = fmax(total / 10, fmin(total / 4, 256.0 * 1048576));
        least = fmin(least, fmax(bounds[i].available - margin, 0.0) / (bounds[i].shared ? 2 : 1));
    }
    CHECK(shared > least * 0.75 && shared < least * 1.25 + 1.0, "2 processes: %.0f, want about %.0f", shared, least);
    CHECK(strncmp(limit_source, "available (", 11) == 0 && strstr(limit_source, "kept free)"), "2 processes: '%s'",
          limit_source);
}

// ----------------------------------------------------------------------------
// the Linux bounds on a tree of the tests' own ($CHARGPT_TEST_SYSTEM_ROOT): /proc's files and
// a cgroup file system, v2 and v1

#define FAKE_ROOT "tests/tmp/system_root"
#define MIB_BYTES 1048576.0

// FAKE_ROOT/path with text in it (its directories made).
static void fake_file(const char *path, const char *text) {
    char full[600];
    snprintf(full, sizeof(full), "%s/%s", FAKE_ROOT, path);
    for (char *slash = strchr(full + strlen(FAKE_ROOT) + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
        *slash = '\0';
        test_make_dir(full);
        *slash = '/';
    }
    test_write_file(full, text, strlen(text));
}

// A machine of 24 GiB, 20 GiB available, whose process is in `cgroup` (/proc/self/cgroup's
// text) with the cgroup file systems of `mounts` (mountinfo's lines).
static void fake_machine(const char *cgroup, const char *mounts) {
    char root[256];
    test_fresh_dir(root, sizeof(root), "tests/tmp", "system_root");
    fake_file("proc/meminfo", "MemTotal:       25165824 kB\nMemFree:  1000 kB\nMemAvailable:   20971520 kB\n");
    fake_file("proc/self/status", "Name:\trun_tests\nVmPeak:\t  900000 kB\nVmSize:\t  524288 kB\n");
    fake_file("proc/self/cgroup", cgroup);
    fake_file("proc/self/mountinfo", mounts);
}

// The bounds platform_memory_bounds finds on the fake machine; the one named `name`, or NULL.
static const MemoryBound *fake_bound(MemoryBound bounds[PLATFORM_MEMORY_BOUNDS], const char *name, int *n) {
    const char *unknown;
    test_set_env("CHARGPT_TEST_SYSTEM_ROOT", FAKE_ROOT);
    *n = platform_memory_bounds(bounds, &unknown);
    test_set_env("CHARGPT_TEST_SYSTEM_ROOT", NULL);
    for (int i = 0; i < *n; i++)
        if (strcmp(bounds[i].name, name) == 0) return &bounds[i];
    return NULL;
}

// cgroup v2 (mounted at a path with a space, as mountinfo escapes it): the least of every
// level's memory.max less its memory.current (its inactive page cache not counted as used),
// "max" at the levels without a limit; and ./train's memory line names it.
TEST(platform_memory_bound_of_cgroup_v2) {
    if (strcmp(platform_name(), "linux") != 0) return;
    fake_machine("0::/user.slice/job\n",
                 "22 1 8:1 / / rw - ext4 /dev/sda1 rw\n"
                 "31 22 0:27 / /sys/fs/cg\\040root rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n");
    fake_file("sys/fs/cg root/memory.current", "5000000000\n");  // the top: no memory.max
    fake_file("sys/fs/cg root/user.slice/memory.max", "1073741824\n");
    fake_file("sys/fs/cg root/user.slice/memory.current", "734003200\n");  // 700 MiB: 324 MiB left
    fake_file("sys/fs/cg root/user.slice/job/memory.max", "314572800\n");  // 300 MiB
    fake_file("sys/fs/cg root/user.slice/job/memory.current", "115343360\n");  // 110 MiB, 30 of it cache
    fake_file("sys/fs/cg root/user.slice/job/memory.stat", "anon 83886080\nfile 31457280\ninactive_file 31457280\n");
    MemoryBound bounds[PLATFORM_MEMORY_BOUNDS];
    int n;
    const MemoryBound *b = fake_bound(bounds, "cgroup memory.max less its use", &n);
    if (CHECK(b != NULL, "no cgroup v2 bound among %d", n))
        CHECK(b->available == 220 * MIB_BYTES && b->total == 300 * MIB_BYTES && b->shared,
              "%.1f MiB of %.1f MiB (want 220 of 300)", b->available / MIB_BYTES, b->total / MIB_BYTES);
    CHECK(n == 2 && strcmp(bounds[0].name, "MemAvailable") == 0 && bounds[0].available == 20 * 1024 * MIB_BYTES &&
              bounds[0].total == 24 * 1024 * MIB_BYTES, "%d bounds, the first %s", n, bounds[0].name);
    // the parent's room is the least when it is smaller
    fake_file("sys/fs/cg root/user.slice/memory.current", "943718400\n");  // 900 MiB: 124 MiB left
    b = fake_bound(bounds, "cgroup memory.max less its use", &n);
    CHECK(b && b->available == 124 * MIB_BYTES && b->total == 1024 * MIB_BYTES, "the parent's room: %.1f MiB",
          b ? b->available / MIB_BYTES : -1);
    // ./train in the job's 300 MiB, the parent unlimited: 220 MiB less 75 kept free (a quarter
    // of 300, under 256 MiB)
    fake_file("sys/fs/cg root/user.slice/memory.max", "max\n");
    fake_file("corpus.txt", "the lazy dog sleeps. the quick fox jumps over the lazy dog.\n");
    const char *const args[] = {test_program("train"), "--data", FAKE_ROOT "/corpus.txt", "--n-layer", "1",
                                "--n-head", "2", "--n-embd", "16", "--block-size", "8", "--batch-size", "2",
                                "--val-fraction", "0", "--steps", "1", "--no-probe", "--out", FAKE_ROOT "/run",
                                NULL};
    test_set_env("CHARGPT_TEST_SYSTEM_ROOT", FAKE_ROOT);
    TestRun r = test_run(args, NULL, FAKE_ROOT "/train.log", 0, 120.0);
    test_set_env("CHARGPT_TEST_SYSTEM_ROOT", NULL);
    if (test_exit_status(&r, 0, "./train in a 300 MiB cgroup"))
        test_output_has(&r, "145 MiB available (cgroup memory.max less its use, less 75.0 MiB kept free)",
                        "./train in a 300 MiB cgroup");
    test_run_free(&r);
}

// cgroup v1's memory controller, mounted with its own cgroup at the mount's root (as a
// container sees it): memory.limit_in_bytes (2^63 rounded to a page: no limit) less
// memory.usage_in_bytes less total_inactive_file; and ./train refuses a plan past it.
TEST(platform_memory_bound_of_cgroup_v1) {
    if (strcmp(platform_name(), "linux") != 0) return;
    fake_machine("5:cpu,cpuacct:/docker/abc\n4:memory:/docker/abc\n0::/\n",
                 "31 22 0:27 / /sys/fs/cgroup rw - tmpfs tmpfs rw\n"
                 "32 31 0:28 /docker/abc /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu,cpuacct\n"
                 "35 31 0:31 /docker/abc /sys/fs/cgroup/memory rw,relatime master:9 - cgroup cgroup rw,memory\n"
                 "41 31 0:38 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n");
    fake_file("sys/fs/cgroup/memory/memory.limit_in_bytes", "67108864\n");  // 64 MiB
    fake_file("sys/fs/cgroup/memory/memory.usage_in_bytes", "12582912\n");  // 12 MiB, 4 of it cache
    fake_file("sys/fs/cgroup/memory/memory.stat", "cache 4194304\ninactive_file 1\ntotal_inactive_file 4194304\n");
    fake_file("sys/fs/cgroup/unified/memory.current", "1000\n");  // v2 without the memory controller
    MemoryBound bounds[PLATFORM_MEMORY_BOUNDS];
    int n;
    const MemoryBound *b = fake_bound(bounds, "cgroup memory.limit_in_bytes less its use", &n);
    if (CHECK(b != NULL, "no cgroup v1 bound among %d", n))
        CHECK(b->available == 56 * MIB_BYTES && b->total == 64 * MIB_BYTES, "%.1f MiB of %.1f MiB (want 56 of 64)",
              b->available / MIB_BYTES, b->total / MIB_BYTES);
    CHECK(n == 2, "%d bounds: v2 has no memory.max here", n);
    // 56 MiB less 16 kept free (a quarter of 64): the default model over blocks of 512 is refused
    const char *const args[] = {test_program("train"), "--block-size", "512", "--steps", "1", "--no-probe", "--out",
                                FAKE_ROOT "/run", NULL};
    test_set_env("CHARGPT_TEST_SYSTEM_ROOT", FAKE_ROOT);
    TestRun r = test_run(args, NULL, FAKE_ROOT "/train.log", 0, 120.0);
    test_set_env("CHARGPT_TEST_SYSTEM_ROOT", NULL);
    if (test_exit_status(&r, 2, "./train in a 64 MiB cgroup"))
        test_output_has(&r, "more than the 40.0 MiB available (cgroup memory.limit_in_bytes less its use, less 16.0 "
                        "MiB kept free)", "./train in a 64 MiB cgroup");
    test_run_free(&r);
    // no limit at any level: no bound
    fake_file("sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");
    CHECK(fake_bound(bounds, "cgroup memory.limit_in_bytes less its use", &n) == NULL && n == 1,
          "an unlimited cgroup: %d bounds", n);
}

// `run_tests --child address_space_bound`: sets RLIMIT_AS 1 GiB past the address space it
// maps now, and writes the last bound platform_memory_bounds finds, with what it mapped as its
// total, on standard output; exits 0 when it found one.
TEST_CHILD(address_space_bound) {
    FILE *fp = fopen("/proc/self/status", "r");  // its size is 0 to stat: read a line at a time
    char line[256];
    double mapped = 0.0;
    while (fp && fgets(line, sizeof(line), fp))
        if (strncmp(line, "VmSize:", 7) == 0) mapped = strtod(line + 7, NULL) * 1024.0;
    if (fp) fclose(fp);
    MemoryBound bounds[PLATFORM_MEMORY_BOUNDS] = {{0}};
    const char *unknown;
    int n = test_limit_address_space(mapped + 1024 * MIB_BYTES) == 0 ? platform_memory_bounds(bounds, &unknown) : 0;
    MemoryBound b = n > 0 ? bounds[n - 1] : (MemoryBound){0};
    b.total = mapped;  // for the message
    char text[256];
    snprintf(text, sizeof(text), "%.0f %.0f %d %s\n", b.available, b.total, b.shared, b.name ? b.name : "");
    return fputs(text, stdout) >= 0 && fflush(stdout) == 0 && n > 0 ? 0 : 1;
}

// RLIMIT_AS less the address space mapped (VmSize), in a child that sets the limit 1 GiB past
// what it maps now.
TEST(platform_memory_bound_of_rlimit_as) {
    if (strcmp(platform_name(), "linux") != 0) return;
    if (test_emulated()) {  // qemu-user keeps a guest's RLIMIT_AS from the host
        test_skip("an emulated CPU: qemu-user does not apply a program's RLIMIT_AS");
        return;
    }
    int from_child;
    TestChild c;
    TestEnd end;
    const char *argv[] = {test_self_path(), "--child", "address_space_bound", NULL};
    if (!CHECK(test_child_start(&c, argv, &(TestSpawn){.stdout_pipe = &from_child}) == 0, "cannot start")) return;
    char text[256] = "";
    FILE *fp = fdopen(from_child, "rb");
    int got = fp && fgets(text, sizeof(text), fp) != NULL;
    if (fp) fclose(fp);
    test_child_wait(&c, 60.0, &end);
    double available = 0, total = 0;
    int shared = -1, at = 0;
    text[strcspn(text, "\n")] = '\0';
    if (CHECK(got && end.status == 0 && sscanf(text, "%lf %lf %d %n", &available, &total, &shared, &at) == 3,
              "the child found no bound: '%s'", text))
        CHECK(strcmp(text + at, "RLIMIT_AS less the address space in use") == 0 && !shared && total > 0 &&
                  available > 1000 * MIB_BYTES && available <= 1024 * MIB_BYTES,
              "%s: %.1f MiB (%.1f MiB mapped before)", text + at, available / MIB_BYTES, total / MIB_BYTES);
}

// Idle processors: on Linux those online less /proc/loadavg's runnable tasks (the tests' own
// file under $CHARGPT_TEST_SYSTEM_ROOT), never below 0, and -1 for a file it cannot read; the
// other versions cannot say.
TEST(platform_idle_cpus_of_loadavg) {
    int cpus = platform_cpu_count(), now = platform_idle_cpus();
    if (strcmp(platform_name(), "linux") != 0) {
        CHECK(now == -1, "%s says %d processors idle: it has no way to ask", platform_name(), now);
        return;
    }
    CHECK(now >= 0 && now < cpus, "%d of %d processors idle while this thread runs on one", now, cpus);
    fake_machine("0::/\n", "");
    static const struct {
        const char *loadavg;
        int runnable;  // the tasks it says run or wait to, -1 for a file that says nothing
    } cases[] = {{"0.50 0.40 0.30 1/120 999\n", 1}, {"2.00 1.00 0.50 3/150 1200\n", 3},
                 {"9.00 9.00 9.00 4000000/4000100 1\n", 4000000}, {"0.1 0.1\n", -1}, {"", -1}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        fake_file("proc/loadavg", cases[i].loadavg);
        test_set_env("CHARGPT_TEST_SYSTEM_ROOT", FAKE_ROOT);
        int idle = platform_idle_cpus();
        test_set_env("CHARGPT_TEST_SYSTEM_ROOT", NULL);
        int runnable = cases[i].runnable, want = runnable < 0 ? -1 : cpus > runnable ? cpus - runnable : 0;
        CHECK(idle == want, "loadavg '%.*s' on %d processors: %d idle, want %d", (int)strcspn(cases[i].loadavg, "\n"),
              cases[i].loadavg, cpus, idle, want);
    }
    test_set_env("CHARGPT_TEST_SYSTEM_ROOT", "tests/tmp/no_such_root");
    int missing = platform_idle_cpus();
    test_set_env("CHARGPT_TEST_SYSTEM_ROOT", NULL);
    CHECK(missing == -1, "no /proc/loadavg: %d idle, want -1", missing);
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

// A rename that never replaces (issue 29): a name taken is refused with EEXIST, both files
// kept; a free name is taken, the old one gone.
TEST(platform_rename_new_never_replaces) {
    test_make_dir("tests/tmp");
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
// files: the lock, the atomic replace, a file's identity (flock, rename; Windows's LockFileEx,
// MoveFileEx, the volume's serial number and the file's index)

#define FILES_DIR "tests/tmp/platform"
#define LOCK_FILE (PLATFORM_READ | PLATFORM_WRITE | PLATFORM_CREATE | PLATFORM_NO_FOLLOW)  // as run_lock.c opens it

// `run_tests --child hold_lock PATH`: takes the lock of PATH and holds it until it is killed.
TEST_CHILD(hold_lock) {
    int fd = argc == 1 ? platform_open(argv[0], LOCK_FILE) : -1;
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
    int a = platform_open(path, LOCK_FILE), b = platform_open(path, LOCK_FILE);
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
    b = platform_open(path, LOCK_FILE);
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
    int fd = argc == 2 ? platform_open(argv[0], PLATFORM_READ) : -1;
    if (fd < 0 || test_write_file(argv[1], "", 0) != 0) return 1;
    usleep(300000);
    char text[8] = "";
    long n = read(fd, text, sizeof(text) - 1);
    close(fd);
    return n == 3 && strcmp(text, "old") == 0 ? 0 : 2;
}

// A file replaced while a reader in another process has it open: the reader reads the old one,
// the name then gives the new one (Windows refuses to replace a file that is open: the replace
// is tried again until the reader has closed it).
TEST(platform_replace_while_read) {
    char dir[256], target[300], next[300], ready[300];
    test_fresh_dir(dir, sizeof(dir), FILES_DIR, "replace");
    snprintf(target, sizeof(target), "%s/ckpt.bin", dir);
    snprintf(next, sizeof(next), "%s/ckpt.bin.tmp", dir);
    snprintf(ready, sizeof(ready), "%s/ready", dir);
    test_write_file(target, "old", 3);
    test_write_file(next, "new!", 4);
    PlatformFileInfo before, after;
    CHECK(platform_path_info(target, 1, &before) == 0, "%s: %s", target, strerror(errno));
    int writer = platform_open(next, PLATFORM_WRITE);
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
                                        "renameat2", "renamex_np", "aligned_alloc", "flock", "fsync", "fdatasync",
                                        "isatty", "realpath", "pread", "pwrite", "sigaction", "lstat"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        CHECK(!uses_name(text, names[i]), "%s uses %s: ask common/platform.h", path, names[i]);
    CHECK(!strstr(text, "\"/proc/"), "%s reads /proc: ask common/platform.h", path);
    CHECK(!uses_name(text, "_WIN32") && !uses_name(text, "__MINGW32__") && !uses_name(text, "_MSC_VER"),
          "%s asks whether it is on Windows: ask common/platform.h", path);
}

TEST(platform_no_system_names_elsewhere) {
    static const char *const dirs[] = {".", "analysis", "common", "data", "dist", "format", "generation", "kernels",
                                       "model", "training", "viewer", "scripts", "tests", "tests/fuzz", "tests/mpi"};
    each_source(dirs, (int)(sizeof(dirs) / sizeof(dirs[0])), check_no_system_names);
}

static void check_library_code(const char *path, const char *text) {
    if (strcmp(path, "common/program.c") == 0 || strcmp(path, "common/program.h") == 0) return;
    CHECK(!uses_name(text, "exit") && !uses_name(text, "abort") && !uses_name(text, "die"),
          "%s: library code calls exit, abort or die: return the error (common/errors.h)", path);
    CHECK(!strstr(text, "program.h\""), "%s includes common/program.h, which is for the programs", path);
}

TEST(library_code_never_exits) {
    static const char *const dirs[] = {"analysis", "common", "data", "dist", "format", "generation", "kernels", "model",
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
        {"inf", -1, 0}, {"0x10", -1, 0}, {"0x1p4", -1, 0}, {" 16", -1, 0}, {"16 ", -1, 0}, {"+16", 0, 16},
        {"infinity", -1, 0},
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
