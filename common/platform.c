// The operating system's answers (platform.h), in five versions: Linux's, macOS's, one for any
// other POSIX system, which CHARGPT_PLATFORM_POSIX (`make PLATFORM=posix`) forces, WebAssembly's
// (emscripten's C library: the page's Web Worker, or node) and Windows's. The POSIX systems
// and WebAssembly share the second part of the file; Windows's is the last.
#if defined(_WIN32)
#define PLATFORM_WINDOWS 1
#elif defined(__EMSCRIPTEN__)
#define PLATFORM_WASM 1
#elif !defined(CHARGPT_PLATFORM_POSIX) && defined(__linux__)
#define PLATFORM_LINUX 1
#define _GNU_SOURCE  // program_invocation_name, program_invocation_short_name, renameat2: before any header
#elif !defined(CHARGPT_PLATFORM_POSIX) && defined(__APPLE__)
#define PLATFORM_MACOS 1
#endif

#include "platform.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(PLATFORM_WINDOWS)
#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#include <bcrypt.h>
#include <psapi.h>
#include <fcntl.h>
#include <io.h>
#else
#include <fcntl.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>
#endif

#if !defined(PLATFORM_WINDOWS) && !defined(PLATFORM_WASM)
static int rename_by_link(const char *from, const char *to);
#endif

#if defined(PLATFORM_LINUX)
#include <sys/auxv.h>
#include <sys/resource.h>
#elif defined(PLATFORM_WASM)
#include <emscripten/heap.h>
#include <malloc.h>
#elif defined(PLATFORM_MACOS)
#include <crt_externs.h>
#include <mach-o/dyld.h>
#include <mach/mach.h>
#include <sys/sysctl.h>
#endif

// ----------------------------------------------------------------------------
// Linux

#if defined(PLATFORM_LINUX)

const char *platform_name(void) { return "linux"; }

void platform_init(int argc, char **argv) {}  // glibc keeps the program's name
const char *program_name(void) { return program_invocation_short_name; }
const char *program_invocation(void) { return program_invocation_name; }

// The tests' tree in place of / ($CHARGPT_TEST_SYSTEM_ROOT, platform.h), else "".
static const char *system_root(void) {
    const char *root = getenv("CHARGPT_TEST_SYSTEM_ROOT");
    return root ? root : "";
}

// path under the system's root into full (PATH_MAX bytes); 0, or -1 when it does not fit.
static int system_path(char *full, const char *path) {
    return snprintf(full, PATH_MAX, "%s%s", system_root(), path) < PATH_MAX ? 0 : -1;
}

// The number after `key` at the start of a line of the file at full_path, as /proc/meminfo
// ("MemAvailable:  123 kB"), /proc/self/status and memory.stat ("inactive_file 123") write
// them; -1 when there is none.
static double file_field(const char *full_path, const char *key) {
    FILE *fp = fopen(full_path, "r");
    char line[256];
    double value = -1.0;
    size_t n = strlen(key);
    while (fp && fgets(line, sizeof(line), fp))
        if (strncmp(line, key, n) == 0 && sscanf(line + n, "%lf", &value) == 1) break;
    if (fp) fclose(fp);
    return value;
}

// The number a cgroup file (dir/name) holds: INFINITY for no limit ("max" in v2, v1's
// 2^63 rounded down to a page, or anything past 2^60), -1 when the file is missing or holds
// no number.
static double cgroup_value(const char *dir, const char *name) {
    char path[PATH_MAX], text[64];
    if (snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path)) return -1.0;
    FILE *fp = fopen(path, "r");
    int got = fp && fgets(text, sizeof(text), fp) != NULL;
    if (fp) fclose(fp);
    if (!got) return -1.0;
    if (strncmp(text, "max", 3) == 0) return INFINITY;
    char *end;
    double value = strtod(text, &end);
    return end == text || value < 0 ? -1.0 : value >= 0x1p60 ? INFINITY : value;
}

// 1 when `token` is one of the comma-separated words of list.
static int has_token(const char *list, const char *token) {
    size_t n = strlen(token);
    for (const char *p = list; p; p = strchr(p, ',')) {
        if (*p == ',') p++;
        if (strncmp(p, token, n) == 0 && (p[n] == ',' || p[n] == '\0' || p[n] == '\n')) return 1;
    }
    return 0;
}

// The cgroup of this process in its v2 hierarchy (/proc/self/cgroup's "0::/path"), or in v1's
// memory controller ("4:memory:/path"), into path (PATH_MAX bytes). 0, or -1 when none.
static int own_cgroup(int v2, char *path) {
    char file[PATH_MAX], line[PATH_MAX + 64];
    if (system_path(file, "/proc/self/cgroup") != 0) return -1;
    FILE *fp = fopen(file, "r");
    int found = 0;
    while (!found && fp && fgets(line, sizeof(line), fp)) {
        // hierarchy:controllers:path
        char *controllers = strchr(line, ':'), *where = controllers ? strchr(controllers + 1, ':') : NULL;
        if (!where) continue;
        *controllers++ = '\0', *where++ = '\0';
        found = v2 ? strcmp(line, "0") == 0 && controllers[0] == '\0' : has_token(controllers, "memory");
        if (found) snprintf(path, PATH_MAX, "%.*s", (int)strcspn(where, "\n"), where);
    }
    if (fp) fclose(fp);
    return found ? 0 : -1;
}

// Decodes mountinfo's octal escapes (\040 for a space) in place.
static void unescape_octal(char *s) {
    char *to = s;
    for (const char *from = s; *from; to++) {
        if (from[0] == '\\' && from[1] >= '0' && from[1] <= '3' && from[2] >= '0' && from[2] <= '7' &&
            from[3] >= '0' && from[3] <= '7') {
            *to = (char)((from[1] - '0') * 64 + (from[2] - '0') * 8 + (from[3] - '0'));
            from += 4;
        } else {
            *to = *from++;
        }
    }
    *to = '\0';
}

// Where the cgroup hierarchy is mounted (/proc/self/mountinfo: v2's "cgroup2" file system, or
// a "cgroup" one with the memory controller among its options): its mount point in point and
// the cgroup it shows at that point in root (both PATH_MAX bytes). 0, or -1 when it is not.
static int cgroup_mount(int v2, char *point, char *root) {
    char file[PATH_MAX], line[3 * PATH_MAX];
    if (system_path(file, "/proc/self/mountinfo") != 0) return -1;
    FILE *fp = fopen(file, "r");
    int found = 0;
    while (!found && fp && fgets(line, sizeof(line), fp)) {
        // id parent major:minor root point options [optional fields] - type source super-options
        char *field[6] = {NULL}, *save = NULL, *tok = strtok_r(line, " \n", &save);
        int n = 0;
        for (; tok && n < 5; tok = strtok_r(NULL, " \n", &save)) field[n++] = tok;
        while (tok && strcmp(tok, "-") != 0) tok = strtok_r(NULL, " \n", &save);
        char *type = tok ? strtok_r(NULL, " \n", &save) : NULL, *source = type ? strtok_r(NULL, " \n", &save) : NULL;
        char *options = source ? strtok_r(NULL, " \n", &save) : NULL;
        if (n < 5 || !options) continue;
        found = v2 ? strcmp(type, "cgroup2") == 0 : strcmp(type, "cgroup") == 0 && has_token(options, "memory");
        if (found) {
            snprintf(root, PATH_MAX, "%s", field[3]);
            snprintf(point, PATH_MAX, "%s", field[4]);
            unescape_octal(root);
            unescape_octal(point);
        }
    }
    if (fp) fclose(fp);
    return found ? 0 : -1;
}

// The tightest limit of this process's memory cgroup (v2 or v1) over its hierarchy, from its
// own cgroup up to the top of the mount: at each level with a limit, the limit less the use
// (the page cache it may reclaim, inactive_file, not counted as used). 0 with *bound, or -1
// when no level has a limit.
static int cgroup_bound(int v2, MemoryBound *bound) {
    char own[PATH_MAX], point[PATH_MAX], mount_root[PATH_MAX], dir[PATH_MAX], top[PATH_MAX];
    if (own_cgroup(v2, own) != 0 || cgroup_mount(v2, point, mount_root) != 0) return -1;
    // the process's cgroup below the mount's root (the whole path when the mount shows the
    // hierarchy from its top; nothing when the mount shows the process's cgroup itself)
    size_t root_len = strcmp(mount_root, "/") == 0 ? 0 : strlen(mount_root);
    const char *below = strncmp(own, mount_root, root_len) == 0 && (own[root_len] == '/' || own[root_len] == '\0')
                            ? own + root_len : "";
    if (system_path(top, point) != 0 || snprintf(dir, sizeof(dir), "%s%s", top, below) >= (int)sizeof(dir)) return -1;
    size_t top_len = strlen(top), len = strlen(dir);
    while (len > top_len && dir[len - 1] == '/') dir[--len] = '\0';
    double least = INFINITY, total = 0.0;
    for (;;) {
        double limit = cgroup_value(dir, v2 ? "memory.max" : "memory.limit_in_bytes");
        double used = cgroup_value(dir, v2 ? "memory.current" : "memory.usage_in_bytes");
        if (limit > 0 && isfinite(limit) && used >= 0) {
            char stat_path[PATH_MAX];
            snprintf(stat_path, sizeof(stat_path), "%s/memory.stat", dir);
            double cache = file_field(stat_path, v2 ? "inactive_file " : "total_inactive_file ");
            double room = limit - (cache > 0 && cache < used ? used - cache : used);
            if (room < least) {
                least = room > 0 ? room : 0.0;
                total = limit;
            }
        }
        char *slash = strrchr(dir, '/');
        if (strlen(dir) <= top_len || !slash || (size_t)(slash - dir) < top_len) break;
        *slash = '\0';
    }
    if (!isfinite(least)) return -1;
    *bound = (MemoryBound){least, total, 1, v2 ? "cgroup memory.max less its use"
                                               : "cgroup memory.limit_in_bytes less its use"};
    return 0;
}

// RLIMIT_AS less the address space the process maps now (VmSize): 0 with *bound, or -1 when
// it has no such limit.
static int address_space_bound(MemoryBound *bound) {
    struct rlimit limit;
    char status[PATH_MAX];
    if (getrlimit(RLIMIT_AS, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY ||
        system_path(status, "/proc/self/status") != 0)
        return -1;
    double mapped = file_field(status, "VmSize:") * 1024.0, cur = (double)limit.rlim_cur;
    *bound = (MemoryBound){mapped > 0 && mapped < cur ? cur - mapped : mapped > 0 ? 0.0 : cur, cur, 0,
                           "RLIMIT_AS less the address space in use"};
    return 0;
}

int platform_memory_bounds(MemoryBound bounds[PLATFORM_MEMORY_BOUNDS], const char **unknown) {
    int n = 0;
    char meminfo[PATH_MAX];
    double available = system_path(meminfo, "/proc/meminfo") == 0 ? file_field(meminfo, "MemAvailable:") : -1.0;
    if (available > 0) bounds[n++] = (MemoryBound){available * 1024.0, file_field(meminfo, "MemTotal:") * 1024.0, 1,
                                                   "MemAvailable"};
    for (int v2 = 1; v2 >= 0; v2--) n += cgroup_bound(v2, &bounds[n]) == 0;
    n += address_space_bound(&bounds[n]) == 0;
    *unknown = n ? "" : "unknown (/proc/meminfo has no MemAvailable, and no cgroup or RLIMIT_AS limits the memory)";
    return n;
}

int platform_executable_path(char *path, size_t size, char err[ERR_LEN]) {
    ssize_t n = readlink("/proc/self/exe", path, size - 1);
    if (n <= 0 || (size_t)n >= size - 1) {
        snprintf(err, ERR_LEN, "/proc/self/exe: %s", n < 0 ? strerror(errno) : n == 0 ? "empty" : "path too long");
        return -1;
    }
    path[n] = '\0';
    return 0;
}

long platform_max_rss_kib(long ru_maxrss) { return ru_maxrss; }

// renameat2 (Linux 3.15, glibc 2.28); a file system that does not take the flag (NFS, some
// FUSE ones) answers EINVAL, an older kernel ENOSYS
int platform_rename_new(const char *from, const char *to) {
    if (renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) == 0) return 0;
    if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP) return -1;
    return rename_by_link(from, to);
}

int platform_idle_cpus(void) {
    char path[PATH_MAX];
    if (system_path(path, "/proc/loadavg") != 0) return -1;
    FILE *fp = fopen(path, "r");
    if (!fp) return -1;
    int runnable = 0;  // "0.52 0.58 0.59 2/149 1234": runnable/all of them
    int read = fscanf(fp, "%*f %*f %*f %d/%*d", &runnable);
    fclose(fp);
    if (read != 1 || runnable < 1) return -1;
    int idle = platform_cpu_count() - runnable;
    return idle > 0 ? idle : 0;
}

int platform_cpu_has_arm_bf16(void) {
#if defined(__aarch64__)
#ifndef HWCAP2_BF16
#define HWCAP2_BF16 (1UL << 14)  // Linux's arch/arm64/include/uapi/asm/hwcap.h
#endif
    return (getauxval(AT_HWCAP2) & HWCAP2_BF16) != 0;
#else
    return 0;
#endif
}

// ----------------------------------------------------------------------------
// macOS

#elif defined(PLATFORM_MACOS)

const char *platform_name(void) { return "macos"; }

void platform_init(int argc, char **argv) {}  // the C library keeps the program's name
const char *program_name(void) { return getprogname(); }
const char *program_invocation(void) { return (*_NSGetArgv())[0]; }

// Free pages and inactive ones (which the system reclaims without swapping), as vm_stat
// counts them, of the machine's hw.memsize.
int platform_memory_bounds(MemoryBound bounds[PLATFORM_MEMORY_BOUNDS], const char **unknown) {
    vm_statistics64_data_t vm;
    mach_msg_type_number_t count = HOST_VM_INFO64_COUNT;
    long page = sysconf(_SC_PAGESIZE);
    if (host_statistics64(mach_host_self(), HOST_VM_INFO64, (host_info64_t)&vm, &count) != KERN_SUCCESS || page <= 0) {
        *unknown = "unknown (host_statistics64 failed)";
        return 0;
    }
    uint64_t memsize = 0;
    size_t size = sizeof(memsize);
    if (sysctlbyname("hw.memsize", &memsize, &size, NULL, 0) != 0) memsize = 0;
    bounds[0] = (MemoryBound){((double)vm.free_count + (double)vm.inactive_count) * (double)page, (double)memsize, 1,
                              "free and inactive pages"};
    *unknown = "";
    return 1;
}

int platform_executable_path(char *path, size_t size, char err[ERR_LEN]) {
    char found[4096];
    uint32_t found_size = sizeof(found);
    if (_NSGetExecutablePath(found, &found_size) != 0) {
        snprintf(err, ERR_LEN, "_NSGetExecutablePath: the path is longer than %zu bytes", sizeof(found));
        return -1;
    }
    char resolved[PATH_MAX];
    if (!realpath(found, resolved)) {
        snprintf(err, ERR_LEN, "%s: %s", found, strerror(errno));
        return -1;
    }
    if (strlen(resolved) >= size) {
        snprintf(err, ERR_LEN, "%s: path too long", resolved);
        return -1;
    }
    strcpy(path, resolved);
    return 0;
}

long platform_max_rss_kib(long ru_maxrss) { return ru_maxrss / 1024; }

// renamex_np (macOS 10.12); a file system without it answers ENOTSUP
int platform_rename_new(const char *from, const char *to) {
    if (renamex_np(from, to, RENAME_EXCL) == 0) return 0;
    if (errno != ENOTSUP && errno != EINVAL) return -1;
    return rename_by_link(from, to);
}

int platform_idle_cpus(void) { return -1; }  // no count of running threads to ask

int platform_cpu_has_arm_bf16(void) {
#if defined(__aarch64__)
    int has = 0;
    size_t size = sizeof(has);
    return sysctlbyname("hw.optional.arm.FEAT_BF16", &has, &size, NULL, 0) == 0 && has;
#else
    return 0;
#endif
}

// ----------------------------------------------------------------------------
// WebAssembly (emscripten): one process of one thread, in a Web Worker or in node, its files
// in emscripten's file system (in memory in the page; node's own under the tests)

#elif defined(PLATFORM_WASM)

const char *platform_name(void) { return "wasm"; }

static const char *invoked = "chargpt";  // before platform_init
static char short_name[64] = "chargpt";

// argv[0] is the script node runs ("build-wasm/run_tests.js": its name without ".js"), or the
// name the page gives the program ("train")
void platform_init(int argc, char **argv) {
    if (argc < 1 || !argv[0] || !argv[0][0]) return;
    invoked = argv[0];
    const char *slash = strrchr(argv[0], '/'), *name = slash ? slash + 1 : argv[0];
    size_t n = strlen(name);
    if (n > 3 && strcmp(name + n - 3, ".js") == 0) n -= 3;
    snprintf(short_name, sizeof(short_name), "%.*s", (int)n, name);
}

const char *program_name(void) { return short_name; }
const char *program_invocation(void) { return invoked; }

// The module's memory may grow to emscripten_get_heap_max() (the build's MAXIMUM_MEMORY, or
// what the engine allows): what it may still take is that less what the heap holds now, plus
// what the allocator holds free inside it. The page has it to itself: not shared.
int platform_memory_bounds(MemoryBound bounds[PLATFORM_MEMORY_BOUNDS], const char **unknown) {
    double max = (double)emscripten_get_heap_max(), size = (double)emscripten_get_heap_size();
    double free_inside = (double)mallinfo().fordblks, available = max - size + free_inside;
    bounds[0] = (MemoryBound){available > 0 ? available : 0.0, max, 0, "WebAssembly memory less its use"};
    *unknown = "";
    return 1;
}

int platform_executable_path(char *path, size_t size, char err[ERR_LEN]) {
    snprintf(err, ERR_LEN, "WebAssembly does not say where the running module is (it has no file of its own)");
    return -1;
}

long platform_max_rss_kib(long ru_maxrss) { return ru_maxrss; }

// One process of one thread: nothing can take the name between the look and the rename.
// (emscripten's file system has no hard links for rename_by_link.)
int platform_rename_new(const char *from, const char *to) {
    struct stat st;
    if (lstat(to, &st) == 0) {
        errno = EEXIST;
        return -1;
    }
    return rename(from, to);
}

int platform_idle_cpus(void) { return -1; }  // one thread: no team to try

// The only process is this one, so the locks are its own: a file's lock is held by the
// descriptor that took it until that descriptor is closed (or names another file), as
// flock's are (emscripten has none).
#define WASM_LOCKS 16
static struct {
    int holder;  // its descriptor + 1 (0: a free entry)
    uint64_t volume, index;
} locks[WASM_LOCKS];

int platform_lock(int fd) {
    PlatformFileInfo file, held;
    if (platform_fd_info(fd, &file) != 0) return PLATFORM_LOCK_FAILED;
    int free_entry = -1;
    for (int i = 0; i < WASM_LOCKS; i++) {
        int holder = locks[i].holder - 1;
        if (holder >= 0 && (platform_fd_info(holder, &held) != 0 || held.volume != locks[i].volume ||
                            held.index != locks[i].index))
            locks[i].holder = 0, holder = -1;  // its descriptor was closed
        if (holder >= 0 && locks[i].volume == file.volume && locks[i].index == file.index)
            return holder == fd ? PLATFORM_LOCK_HELD : PLATFORM_LOCK_BUSY;
        if (holder < 0 && free_entry < 0) free_entry = i;
    }
    if (free_entry < 0) {
        errno = ENOLCK;
        return PLATFORM_LOCK_FAILED;
    }
    locks[free_entry].holder = fd + 1, locks[free_entry].volume = file.volume, locks[free_entry].index = file.index;
    return PLATFORM_LOCK_HELD;
}

// emscripten's kill says EPERM, "another user's process", for any id but this one's
int platform_process_running(long pid) { return pid > 0 && pid == (long)getpid(); }

// The page's signal, or 0 (web/platform_library.js): the page's worker may suspend the program
// there (asyncify) while it is paused. Under node nothing arrives.
extern int platform_wasm_page_signal(void);

void platform_signals_poll(void) {
    int sig = platform_wasm_page_signal();
    if (sig > 0) raise(sig);  // emscripten runs the handler sigaction installed
}

int platform_cpu_has_arm_bf16(void) { return 0; }

// ----------------------------------------------------------------------------
// any other POSIX system: what POSIX cannot ask is unknown

#elif !defined(PLATFORM_WINDOWS)

const char *platform_name(void) { return "posix"; }

static const char *invoked = "chargpt", *short_name = "chargpt";  // before platform_init

void platform_init(int argc, char **argv) {
    if (argc < 1 || !argv[0] || !argv[0][0]) return;
    invoked = argv[0];
    const char *slash = strrchr(argv[0], '/');
    short_name = slash ? slash + 1 : argv[0];
}

const char *program_name(void) { return short_name; }
const char *program_invocation(void) { return invoked; }

int platform_memory_bounds(MemoryBound bounds[PLATFORM_MEMORY_BOUNDS], const char **unknown) {
    *unknown = "unknown on this system";
    return 0;
}

int platform_executable_path(char *path, size_t size, char err[ERR_LEN]) {
    snprintf(err, ERR_LEN, "this system does not say where the running program is");
    return -1;
}

long platform_max_rss_kib(long ru_maxrss) { return ru_maxrss; }  // as most systems count it

int platform_rename_new(const char *from, const char *to) { return rename_by_link(from, to); }

int platform_idle_cpus(void) { return -1; }

int platform_cpu_has_arm_bf16(void) { return 0; }

#endif

// ----------------------------------------------------------------------------
// every POSIX system

#if !defined(PLATFORM_WINDOWS)

// TIOCGWINSZ is what Linux, macOS and the BSDs answer (POSIX.1-2024 names the same query
// tcgetwinsize); a system without it has no size to give.
int platform_terminal_width(int fd) {
#if defined(TIOCGWINSZ)
    struct winsize ws;
    if (isatty(fd) && ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
#endif
    return 0;
}

int platform_is_terminal(int fd) { return isatty(fd); }

void *platform_aligned_alloc(size_t alignment, size_t size) { return aligned_alloc(alignment, size); }
void platform_aligned_free(void *p) { free(p); }

FILE *platform_memory_stream(const void *bytes, size_t n) { return fmemopen((void *)bytes, n, "rb"); }

int platform_cpu_count(void) {
#if defined(_SC_NPROCESSORS_ONLN)
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n >= 1 ? (int)(n < 1 << 20 ? n : 1 << 20) : 1;
#else
    return 1;
#endif
}

int platform_open(const char *path, int how) {
    int access = how & PLATFORM_READ ? (how & PLATFORM_WRITE ? O_RDWR : O_RDONLY) : O_WRONLY;
    int flags = access | O_CLOEXEC | (how & PLATFORM_CREATE ? O_CREAT : 0) | (how & PLATFORM_EXCLUSIVE ? O_EXCL : 0) |
                (how & PLATFORM_TRUNCATE ? O_TRUNC : 0) | (how & PLATFORM_APPEND ? O_APPEND : 0) |
                (how & PLATFORM_NO_FOLLOW ? O_NOFOLLOW : 0) | (how & PLATFORM_NO_WAIT ? O_NONBLOCK : 0);
    return open(path, flags, 0666);  // 0666 less the umask, the mode fopen gives
}

int platform_fd_set_nonblocking(int fd, int nonblocking) {
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, nonblocking ? flags | O_NONBLOCK : flags & ~O_NONBLOCK) != 0) return -1;
    return (flags & O_NONBLOCK) != 0;
}

int platform_waiting_start(FILE *fp) {
    struct stat st;
    int fd = fileno(fp);
    return fd < 0 || fstat(fd, &st) != 0 || S_ISREG(st.st_mode) ? -1 : platform_fd_set_nonblocking(fd, 1);
}

// A nonblocking descriptor's short read sets the stream's error (EAGAIN): cleared, as no error
long platform_waiting_read(FILE *fp, void *buf, size_t n, int ms, int *end) {
    size_t got = fread(buf, 1, n, fp);
    if (feof(fp)) {
        *end = 1;
    } else if (ferror(fp)) {
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return -1;
        clearerr(fp);
    }
    if (got > 0 || *end) return (long)got;
    struct pollfd wait = {fileno(fp), POLLIN, 0};
    return poll(&wait, 1, ms) < 0 && errno != EINTR ? -1 : 0;  // a signal ends the wait at once
}

void platform_waiting_end(FILE *fp, int saved) {
    if (saved >= 0) platform_fd_set_nonblocking(fileno(fp), saved);  // as it was (it may be shared)
}

static void info_of_stat(const struct stat *st, PlatformFileInfo *info) {
    info->kind = S_ISREG(st->st_mode)    ? PLATFORM_FILE_REGULAR
                 : S_ISDIR(st->st_mode)  ? PLATFORM_FILE_DIRECTORY
                 : S_ISFIFO(st->st_mode) ? PLATFORM_FILE_PIPE
                 : S_ISLNK(st->st_mode)  ? PLATFORM_FILE_LINK
                 : S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode) ? PLATFORM_FILE_DEVICE
                 : S_ISSOCK(st->st_mode) ? PLATFORM_FILE_SOCKET
                                         : PLATFORM_FILE_OTHER;
    info->size = st->st_size > 0 ? (uint64_t)st->st_size : 0;
    info->volume = (uint64_t)st->st_dev;
    info->index = (uint64_t)st->st_ino;
}

int platform_fd_info(int fd, PlatformFileInfo *info) {
    struct stat st;
    if (fstat(fd, &st) != 0) return -1;
    info_of_stat(&st, info);
    return 0;
}

int platform_path_info(const char *path, int follow_links, PlatformFileInfo *info) {
    struct stat st;
    if ((follow_links ? stat(path, &st) : lstat(path, &st)) != 0) return -1;
    info_of_stat(&st, info);
    return 0;
}

long platform_read_at(int fd, void *buf, size_t n, uint64_t offset) { return (long)pread(fd, buf, n, (off_t)offset); }

long platform_write_at(int fd, const void *buf, size_t n, uint64_t offset) {
    return (long)pwrite(fd, buf, n, (off_t)offset);
}

int platform_file_sync(int fd) { return fsync(fd); }

int platform_replace_file(const char *from, const char *to) { return rename(from, to); }

void platform_sync_dir(const char *dir) {
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd);  // a file system that cannot sync a directory has still renamed
        close(fd);
    }
}

#if !defined(PLATFORM_WASM)
// link(2) fails with EEXIST when `to` exists, so the new name is taken only if it was free;
// the old name is then removed (a failure there leaves both names, the file published).
static int rename_by_link(const char *from, const char *to) {
    if (link(from, to) != 0) return -1;
    unlink(from);
    return 0;
}
#endif

int platform_remove_file(const char *path) { return unlink(path); }

int platform_make_dir(const char *path) { return mkdir(path, 0777); }

long platform_name_max(const char *dir) {
    long n = pathconf(dir, _PC_NAME_MAX);
    return n > 0 ? n : 255;
}

int platform_free_space(const char *path, double *bytes) {
    struct statvfs fs;
    if (statvfs(path, &fs) != 0) return -1;
    *bytes = (double)fs.f_bavail * (double)fs.f_frsize;
    return 0;
}

int platform_real_path(const char *path, char *out, size_t size) {
    char resolved[PATH_MAX];
    if (!realpath(path, resolved)) return -1;
    if (strlen(resolved) >= size) {
        errno = ENAMETOOLONG;
        return -1;
    }
    strcpy(out, resolved);
    return 0;
}

int platform_is_path_separator(char c) { return c == '/'; }

int platform_path_is_absolute(const char *path) { return path[0] == '/'; }

#if !defined(PLATFORM_WASM)  // (WebAssembly's is in its part above, with platform_process_running)
int platform_lock(int fd) {
    int rc;
    while ((rc = flock(fd, LOCK_EX | LOCK_NB)) != 0 && errno == EINTR) continue;
    if (rc == 0) return PLATFORM_LOCK_HELD;
    if (errno == EWOULDBLOCK) return PLATFORM_LOCK_BUSY;
    return errno == ENOLCK || errno == EOPNOTSUPP || errno == ENOSYS ? PLATFORM_LOCK_UNSUPPORTED : PLATFORM_LOCK_FAILED;
}
#endif

long platform_process_id(void) { return (long)getpid(); }

#if !defined(PLATFORM_WASM)
// kill(pid, 0) fails with EPERM for another user's process, which runs
int platform_process_running(long pid) { return pid > 0 && (kill((pid_t)pid, 0) == 0 || errno == EPERM); }
#endif

int platform_random_bytes(void *buf, size_t n) {
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    int got = fd >= 0 && read(fd, buf, n) == (ssize_t)n;
    if (fd >= 0) close(fd);
    return got ? 0 : -1;
}

void platform_signals_catch(PlatformSignals set, void (*handler)(int sig), int restart) {
    static const int stop[] = {SIGINT, SIGTERM, SIGHUP}, fatal[] = {SIGQUIT, SIGPIPE, SIGALRM, SIGUSR1, SIGUSR2};
    const int *sigs = set == PLATFORM_STOP_SIGNALS ? stop : fatal;
    int n = set == PLATFORM_STOP_SIGNALS ? 3 : 5;
    struct sigaction action;
    memset(&action, 0, sizeof(action));
    action.sa_handler = handler;
    action.sa_flags = restart ? SA_RESTART : 0;
    sigemptyset(&action.sa_mask);
    for (int i = 0; i < n; i++) sigaction(sigs[i], &action, NULL);
    if (set == PLATFORM_FATAL_SIGNALS) signal(SIGXFSZ, SIG_IGN);
}

#if !defined(PLATFORM_WASM)  // (WebAssembly's is in its part above)
void platform_signals_poll(void) {}  // signals arrive by themselves
#endif

// In a handler of sig, sig is blocked: unblocked after raise, it ends the process at once.
_Noreturn void platform_end_by_signal(int sig) {
    signal(sig, SIG_DFL);
    raise(sig);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    pthread_sigmask(SIG_UNBLOCK, &set, NULL);
    _exit(128 + sig);  // not reached: the signal's default action ends the process
}

#endif

const char *platform_path_last_separator(const char *path) {
    const char *last = NULL;
    for (const char *p = path; *p; p++)
        if (platform_is_path_separator(*p)) last = p;
    return last;
}

const char *platform_path_extension(const char *path) {
    const char *base = platform_path_last_separator(path);
    base = base ? base + 1 : path;
    const char *dot = strrchr(base, '.');
    return dot ? dot + 1 : "";
}

int platform_same_file(const PlatformFileInfo *a, const PlatformFileInfo *b) {
    return a->volume == b->volume && a->index == b->index;
}

const char *platform_signal_name(int sig) {
    switch (sig) {
        case SIGINT: return "SIGINT";
        case SIGTERM: return "SIGTERM";
#if defined(SIGHUP)  // Windows has none
        case SIGHUP: return "SIGHUP";
#endif
        default: return "a signal";
    }
}

// ----------------------------------------------------------------------------
// Windows: Win32's calls, their paths in UTF-16 converted from the UTF-8 everything else uses

#if defined(PLATFORM_WINDOWS)

const char *platform_name(void) { return "windows"; }

static const char *invoked = "chargpt";
static char short_name[256] = "chargpt";  // argv[0]'s file name without ".exe"
// the console's code pages and its output's mode as they were before (0: not changed)
static UINT console_output_cp, console_input_cp;
static DWORD console_mode[2];

static void restore_console(void) {
    if (console_output_cp) SetConsoleOutputCP(console_output_cp);
    if (console_input_cp) SetConsoleCP(console_input_cp);
    for (int i = 0; i < 2; i++)
        if (console_mode[i]) SetConsoleMode(GetStdHandle(i == 0 ? STD_OUTPUT_HANDLE : STD_ERROR_HANDLE), console_mode[i]);
}

// A console shows UTF-8 (the bytes the programs write) and reads escape sequences as a
// terminal does (the progress line's "erase the line": Windows 10 1511 and later); both as
// they were once the program ends.
static void set_up_console(void) {
    console_output_cp = GetConsoleOutputCP(), console_input_cp = GetConsoleCP();
    if (!console_output_cp || !SetConsoleOutputCP(CP_UTF8) || !SetConsoleCP(CP_UTF8))
        console_output_cp = console_input_cp = 0;
    for (int i = 0; i < 2; i++) {
        HANDLE h = GetStdHandle(i == 0 ? STD_OUTPUT_HANDLE : STD_ERROR_HANDLE);
        DWORD mode;
        if (GetConsoleMode(h, &mode) && SetConsoleMode(h, mode | ENABLE_VIRTUAL_TERMINAL_PROCESSING)) console_mode[i] = mode;
    }
    if (console_output_cp || console_mode[0] || console_mode[1]) atexit(restore_console);
}

void platform_init(int argc, char **argv) {
    // binary: what the programs write and read are the same bytes as on other systems
    *__p__fmode() = _O_BINARY;  // _fmode: fopen's default mode
    for (int fd = 0; fd < 3; fd++) _setmode(fd, _O_BINARY);
    set_up_console();
    if (argc < 1 || !argv[0] || !argv[0][0]) return;
    invoked = argv[0];
    const char *sep = platform_path_last_separator(argv[0]);
    snprintf(short_name, sizeof(short_name), "%s", sep ? sep + 1 : argv[0]);
    size_t n = strlen(short_name);
    if (n > 4 && _stricmp(short_name + n - 4, ".exe") == 0) short_name[n - 4] = '\0';
}

const char *program_name(void) { return short_name; }
const char *program_invocation(void) { return invoked; }

// errno for a Win32 error, as the C library would set it.
static int errno_of(DWORD error) {
    switch (error) {
        case ERROR_FILE_NOT_FOUND: case ERROR_PATH_NOT_FOUND: case ERROR_INVALID_DRIVE: case ERROR_BAD_NETPATH:
        case ERROR_BAD_NET_NAME: return ENOENT;
        case ERROR_ACCESS_DENIED: case ERROR_SHARING_VIOLATION: case ERROR_NETWORK_ACCESS_DENIED: return EACCES;
        case ERROR_LOCK_VIOLATION: return EWOULDBLOCK;
        case ERROR_FILE_EXISTS: case ERROR_ALREADY_EXISTS: return EEXIST;
        case ERROR_DISK_FULL: case ERROR_HANDLE_DISK_FULL: return ENOSPC;
        case ERROR_NOT_ENOUGH_MEMORY: case ERROR_OUTOFMEMORY: return ENOMEM;
        case ERROR_FILENAME_EXCED_RANGE: return ENAMETOOLONG;
        case ERROR_DIRECTORY: return ENOTDIR;
        case ERROR_DIR_NOT_EMPTY: return ENOTEMPTY;
        case ERROR_WRITE_PROTECT: return EROFS;
        case ERROR_NOT_SUPPORTED: case ERROR_INVALID_FUNCTION: return ENOTSUP;
        case ERROR_INVALID_NAME: case ERROR_BAD_PATHNAME: case ERROR_INVALID_PARAMETER: return EINVAL;
        case ERROR_INVALID_HANDLE: return EBADF;
        case ERROR_BROKEN_PIPE: case ERROR_NO_DATA: return EPIPE;
        default: return EIO;
    }
}

// -1 with errno set from GetLastError().
static int failed(void) {
    errno = errno_of(GetLastError());
    return -1;
}

#define WIDE_PATH 4096  // UTF-16 units of a path, with its terminating 0

// path (UTF-8) as UTF-16 into wide; 0, or -1 with errno (EILSEQ: not UTF-8).
static int to_wide(const char *path, wchar_t wide[WIDE_PATH]) {
    if (!path[0]) {
        errno = ENOENT;  // as POSIX answers an empty path
        return -1;
    }
    if (MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, path, -1, wide, WIDE_PATH) > 0) return 0;
    errno = GetLastError() == ERROR_INSUFFICIENT_BUFFER ? ENAMETOOLONG : EILSEQ;
    return -1;
}

// wide as UTF-8 with '/' between its directories, without the "\\?\" of a long path, into out.
static int from_wide(const wchar_t *wide, char *out, size_t size) {
    const char *prefix = "";
    if (wcsncmp(wide, L"\\\\?\\UNC\\", 8) == 0) wide += 8, prefix = "//";  // \\?\UNC\server\x is \\server\x
    else if (wcsncmp(wide, L"\\\\?\\", 4) == 0) wide += 4;
    size_t p = strlen(prefix);
    int n = size > p ? WideCharToMultiByte(CP_UTF8, 0, wide, -1, out + p, size - p > INT_MAX ? INT_MAX : (int)(size - p),
                                           NULL, NULL)
                     : 0;
    if (n <= 0) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(out, prefix, p);
    for (char *c = out; *c; c++)
        if (*c == '\\') *c = '/';
    return 0;
}

// The limits of the job object this process runs in (a Windows container's, or one a batch
// system sets), as the cgroup's on Linux: its process memory limit less what this process has
// committed, and its job memory limit less the most the job has committed (Windows says no
// less); each counted only when set. Returns how many, into bounds.
static int job_bounds(MemoryBound *bounds) {
    BOOL in_job = FALSE;
    JOBOBJECT_EXTENDED_LIMIT_INFORMATION job;
    if (!IsProcessInJob(GetCurrentProcess(), NULL, &in_job) || !in_job ||
        !QueryInformationJobObject(NULL, JobObjectExtendedLimitInformation, &job, sizeof(job), NULL))
        return 0;
    int n = 0;
    DWORD flags = job.BasicLimitInformation.LimitFlags;
    PROCESS_MEMORY_COUNTERS_EX own = {.cb = sizeof(own)};
    if ((flags & JOB_OBJECT_LIMIT_PROCESS_MEMORY) &&
        GetProcessMemoryInfo(GetCurrentProcess(), (PROCESS_MEMORY_COUNTERS *)&own, sizeof(own))) {
        double limit = (double)job.ProcessMemoryLimit, used = (double)own.PrivateUsage;
        bounds[n++] = (MemoryBound){used < limit ? limit - used : 0.0, limit, 0,
                                    "job object's process memory limit less this process's commit"};
    }
    if (flags & JOB_OBJECT_LIMIT_JOB_MEMORY) {
        double limit = (double)job.JobMemoryLimit, used = (double)job.PeakJobMemoryUsed;
        bounds[n++] = (MemoryBound){used < limit ? limit - used : 0.0, limit, 1,
                                    "job object's memory limit less its peak commit"};
    }
    return n;
}

// Physical memory free now and in the standby list, which Windows gives back without paging,
// of the machine's physical memory; and the job object's limits.
int platform_memory_bounds(MemoryBound bounds[PLATFORM_MEMORY_BOUNDS], const char **unknown) {
    int n = 0;
    MEMORYSTATUSEX status = {.dwLength = sizeof(status)};
    if (GlobalMemoryStatusEx(&status))
        bounds[n++] = (MemoryBound){(double)status.ullAvailPhys, (double)status.ullTotalPhys, 1,
                                    "available physical memory"};
    n += job_bounds(&bounds[n]);
    *unknown = n ? "" : "unknown (GlobalMemoryStatusEx failed, and no job object limits the memory)";
    return n;
}

int platform_executable_path(char *path, size_t size, char err[ERR_LEN]) {
    static wchar_t wide[32768];  // the longest path Windows has
    DWORD n = GetModuleFileNameW(NULL, wide, sizeof(wide) / sizeof(wide[0]));
    if (n == 0 || n >= sizeof(wide) / sizeof(wide[0])) {
        snprintf(err, ERR_LEN, "GetModuleFileNameW failed (error %lu)", (unsigned long)GetLastError());
        return -1;
    }
    if (from_wide(wide, path, size) != 0) {
        snprintf(err, ERR_LEN, "the program's path is longer than %zu bytes", size - 1);
        return -1;
    }
    return 0;
}

static HANDLE handle_of(int fd) { return (HANDLE)_get_osfhandle(fd); }

int platform_terminal_width(int fd) {
    CONSOLE_SCREEN_BUFFER_INFO info;
    if (!GetConsoleScreenBufferInfo(handle_of(fd), &info)) return 0;
    int width = info.srWindow.Right - info.srWindow.Left + 1;
    return width > 0 ? width : 0;
}

// _isatty says yes for any character device, the null device included: a console has a mode
int platform_is_terminal(int fd) {
    DWORD mode;
    return GetConsoleMode(handle_of(fd), &mode) != 0;
}

long platform_max_rss_kib(long ru_maxrss) { return ru_maxrss; }  // Windows has no getrusage: unused

void *platform_aligned_alloc(size_t alignment, size_t size) { return _aligned_malloc(size, alignment); }
void platform_aligned_free(void *p) { _aligned_free(p); }

FILE *platform_memory_stream(const void *bytes, size_t n) {
    FILE *fp = tmpfile();
    if (fp && (fwrite(bytes, 1, n, fp) != n || fseek(fp, 0, SEEK_SET) != 0)) {
        fclose(fp);
        errno = EIO;
        return NULL;
    }
    return fp;
}

int platform_cpu_count(void) {
    DWORD n = GetActiveProcessorCount(ALL_PROCESSOR_GROUPS);
    return n >= 1 ? (int)n : 1;
}

int platform_idle_cpus(void) { return -1; }  // no count of running threads to ask

int platform_cpu_has_arm_bf16(void) { return 0; }  // Windows on ARM: neither built nor tested

// CreateFileW, every handle sharing reading, writing and deletion (so that a file being read
// can still be replaced, as on POSIX), wrapped in a C library file descriptor. Without a
// reparse point's flag, a symbolic link is followed; with it (PLATFORM_NO_FOLLOW) the link itself
// opens, and is refused; a link there before a file is created or truncated is refused first.
int platform_open(const char *path, int how) {
    wchar_t wide[WIDE_PATH];
    if (to_wide(path, wide) != 0) return -1;
    int create = how & PLATFORM_CREATE, truncate = how & PLATFORM_TRUNCATE;
    DWORD disposition = create && (how & PLATFORM_EXCLUSIVE) ? CREATE_NEW
                        : create && truncate                 ? CREATE_ALWAYS
                        : create                             ? OPEN_ALWAYS
                        : truncate                           ? TRUNCATE_EXISTING
                                                             : OPEN_EXISTING;
    DWORD access = (how & PLATFORM_READ ? GENERIC_READ : 0) | (how & PLATFORM_WRITE ? GENERIC_WRITE : 0);
    DWORD attributes = GetFileAttributesW(wide);
    int no_follow = how & PLATFORM_NO_FOLLOW;
    if (no_follow && attributes != INVALID_FILE_ATTRIBUTES && (attributes & FILE_ATTRIBUTE_REPARSE_POINT)) {
        errno = ELOOP;
        return -1;
    }
    // FILE_FLAG_BACKUP_SEMANTICS opens a directory too, for platform_fd_info
    DWORD flags = FILE_ATTRIBUTE_NORMAL | FILE_FLAG_BACKUP_SEMANTICS | (no_follow ? FILE_FLAG_OPEN_REPARSE_POINT : 0);
    HANDLE h = CreateFileW(wide, access, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, NULL, disposition,
                           flags, NULL);
    if (h == INVALID_HANDLE_VALUE) return failed();
    BY_HANDLE_FILE_INFORMATION info;
    if (no_follow && GetFileInformationByHandle(h, &info) && (info.dwFileAttributes & FILE_ATTRIBUTE_REPARSE_POINT)) {
        CloseHandle(h);  // a link made since it was looked at
        errno = ELOOP;
        return -1;
    }
    int fd_flags = (how & PLATFORM_READ ? (how & PLATFORM_WRITE ? _O_RDWR : _O_RDONLY) : _O_WRONLY) |
                   (how & PLATFORM_APPEND ? _O_APPEND : 0);
    int fd = _open_osfhandle((intptr_t)h, fd_flags);
    if (fd < 0) CloseHandle(h);
    return fd;
}

// Windows's reads of a file or a pipe wait: nothing to clear, and no way to stop it.
int platform_fd_set_nonblocking(int fd, int nonblocking) {
    if (!nonblocking) return 0;
    errno = ENOTSUP;
    return -1;
}

// A pipe (PeekNamedPipe answers for it) is read unbuffered, no more than it holds.
int platform_waiting_start(FILE *fp) {
    int fd = fileno(fp);
    DWORD avail;
    if (fd < 0 || GetFileType(handle_of(fd)) != FILE_TYPE_PIPE || !PeekNamedPipe(handle_of(fd), NULL, 0, NULL, &avail, NULL))
        return -1;
    return setvbuf(fp, NULL, _IONBF, 0) == 0 ? 0 : -1;
}

long platform_waiting_read(FILE *fp, void *buf, size_t n, int ms, int *end) {
    HANDLE h = handle_of(fileno(fp));
    DWORD avail = 0;
    for (int waited = 0;; waited += 10) {
        if (!PeekNamedPipe(h, NULL, 0, NULL, &avail, NULL)) {
            if (GetLastError() != ERROR_BROKEN_PIPE) return failed();
            *end = 1;  // the writer has closed it, and it is empty
            return 0;
        }
        if (avail > 0) break;
        if (waited >= ms) return 0;
        Sleep(10);
    }
    size_t got = fread(buf, 1, n < avail ? n : avail, fp);
    if (got == 0 && ferror(fp)) return -1;
    return (long)got;
}

void platform_waiting_end(FILE *fp, int saved) {}  // unbuffered it stays: setvbuf comes before any read

static int info_of_handle(HANDLE h, PlatformFileInfo *info) {
    memset(info, 0, sizeof(*info));
    DWORD type = GetFileType(h);
    if (type == FILE_TYPE_UNKNOWN && GetLastError() != NO_ERROR) return failed();
    if (type != FILE_TYPE_DISK) {
        info->kind = type == FILE_TYPE_PIPE ? PLATFORM_FILE_PIPE
                     : type == FILE_TYPE_CHAR ? PLATFORM_FILE_DEVICE  // a console, NUL, a port
                                              : PLATFORM_FILE_OTHER;
        return 0;
    }
    BY_HANDLE_FILE_INFORMATION file;
    if (!GetFileInformationByHandle(h, &file)) return failed();
    int directory = (file.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY) != 0;
    info->kind = directory ? PLATFORM_FILE_DIRECTORY : PLATFORM_FILE_REGULAR;
    info->size = directory ? 0 : (uint64_t)file.nFileSizeHigh << 32 | file.nFileSizeLow;
    info->volume = file.dwVolumeSerialNumber;
    info->index = (uint64_t)file.nFileIndexHigh << 32 | file.nFileIndexLow;
    return 0;
}

int platform_fd_info(int fd, PlatformFileInfo *info) { return info_of_handle(handle_of(fd), info); }

int platform_path_info(const char *path, int follow_links, PlatformFileInfo *info) {
    wchar_t wide[WIDE_PATH];
    if (to_wide(path, wide) != 0) return -1;
    HANDLE h = CreateFileW(wide, FILE_READ_ATTRIBUTES, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, NULL,
                           OPEN_EXISTING, FILE_FLAG_BACKUP_SEMANTICS | (follow_links ? 0 : FILE_FLAG_OPEN_REPARSE_POINT),
                           NULL);
    if (h == INVALID_HANDLE_VALUE) return failed();
    BY_HANDLE_FILE_INFORMATION file;
    int link = !follow_links && GetFileInformationByHandle(h, &file) &&
               (file.dwFileAttributes & FILE_ATTRIBUTE_REPARSE_POINT);
    int rc = info_of_handle(h, info);
    if (rc == 0 && link) info->kind = PLATFORM_FILE_LINK;
    CloseHandle(h);
    return rc;
}

// ReadFile and WriteFile at an offset (the OVERLAPPED's, on a handle opened for synchronous use).
long platform_read_at(int fd, void *buf, size_t n, uint64_t offset) {
    OVERLAPPED at = {.Offset = (DWORD)offset, .OffsetHigh = (DWORD)(offset >> 32)};
    DWORD got = 0;
    if (!ReadFile(handle_of(fd), buf, n > 1u << 30 ? 1u << 30 : (DWORD)n, &got, &at))
        return GetLastError() == ERROR_HANDLE_EOF ? 0 : failed();
    return (long)got;
}

long platform_write_at(int fd, const void *buf, size_t n, uint64_t offset) {
    OVERLAPPED at = {.Offset = (DWORD)offset, .OffsetHigh = (DWORD)(offset >> 32)};
    DWORD put = 0;
    if (!WriteFile(handle_of(fd), buf, n > 1u << 30 ? 1u << 30 : (DWORD)n, &put, &at)) return failed();
    return (long)put;
}

int platform_file_sync(int fd) { return FlushFileBuffers(handle_of(fd)) ? 0 : failed(); }

// MoveFileExW, tried again for up to a second while another process holds the target or the
// source open without sharing their deletion (a virus scanner, an indexer: briefly).
static int move_file(const char *from, const char *to, DWORD flags) {
    wchar_t wide_from[WIDE_PATH], wide_to[WIDE_PATH];
    if (to_wide(from, wide_from) != 0 || to_wide(to, wide_to) != 0) return -1;
    for (int tries = 0;; tries++) {
        if (MoveFileExW(wide_from, wide_to, flags | MOVEFILE_WRITE_THROUGH)) return 0;
        DWORD error = GetLastError();
        if ((error != ERROR_SHARING_VIOLATION && error != ERROR_ACCESS_DENIED) || tries == 40) return failed();
        Sleep(25);
    }
}

int platform_replace_file(const char *from, const char *to) { return move_file(from, to, MOVEFILE_REPLACE_EXISTING); }

int platform_rename_new(const char *from, const char *to) { return move_file(from, to, 0); }

void platform_sync_dir(const char *dir) {}  // MOVEFILE_WRITE_THROUGH returns once the rename is on disk

int platform_remove_file(const char *path) {
    wchar_t wide[WIDE_PATH];
    if (to_wide(path, wide) != 0) return -1;
    return DeleteFileW(wide) ? 0 : failed();
}

int platform_make_dir(const char *path) {
    wchar_t wide[WIDE_PATH];
    if (to_wide(path, wide) != 0) return -1;
    if (CreateDirectoryW(wide, NULL)) return 0;
    int error = failed();
    DWORD attributes = GetFileAttributesW(wide);  // "C:" is no directory to create, but is there
    if (attributes != INVALID_FILE_ATTRIBUTES) errno = EEXIST;
    return error;
}

long platform_name_max(const char *dir) { return 255; }  // UTF-16 units: at least as many bytes of UTF-8

int platform_free_space(const char *path, double *bytes) {
    wchar_t wide[WIDE_PATH];
    ULARGE_INTEGER available;
    if (to_wide(path, wide) != 0) return -1;
    if (!GetDiskFreeSpaceExW(wide, &available, NULL, NULL)) return failed();
    *bytes = (double)available.QuadPart;
    return 0;
}

// GetFullPathNameW of a path that exists (Windows's links are left as they are).
int platform_real_path(const char *path, char *out, size_t size) {
    wchar_t wide[WIDE_PATH], full[WIDE_PATH];
    if (to_wide(path, wide) != 0) return -1;
    if (GetFileAttributesW(wide) == INVALID_FILE_ATTRIBUTES) return failed();
    DWORD n = GetFullPathNameW(wide, WIDE_PATH, full, NULL);
    if (n == 0) return failed();
    if (n >= WIDE_PATH) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return from_wide(full, out, size);
}

int platform_is_path_separator(char c) { return c == '/' || c == '\\'; }

// "C:\x" and "C:/x", "\\server\x", and "\x" (the current drive's root)
int platform_path_is_absolute(const char *path) {
    int drive = ((path[0] >= 'A' && path[0] <= 'Z') || (path[0] >= 'a' && path[0] <= 'z')) && path[1] == ':';
    return platform_is_path_separator(path[drive ? 2 : 0]);
}

// A byte far past any content is locked: Windows's locks are mandatory, and the lock file's
// content (its holder's process id) must stay readable by the run that is refused.
#define LOCKED_BYTE_HIGH 0x7fffffffu
int platform_lock(int fd) {
    OVERLAPPED at = {.Offset = 0, .OffsetHigh = LOCKED_BYTE_HIGH};
    if (LockFileEx(handle_of(fd), LOCKFILE_EXCLUSIVE_LOCK | LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, &at))
        return PLATFORM_LOCK_HELD;
    DWORD error = GetLastError();
    failed();
    if (error == ERROR_LOCK_VIOLATION || error == ERROR_IO_PENDING) return PLATFORM_LOCK_BUSY;
    return error == ERROR_NOT_SUPPORTED || error == ERROR_INVALID_FUNCTION ? PLATFORM_LOCK_UNSUPPORTED
                                                                         : PLATFORM_LOCK_FAILED;
}

long platform_process_id(void) { return (long)GetCurrentProcessId(); }

// OpenProcess fails with ERROR_ACCESS_DENIED for a process this user may not query, which runs
int platform_process_running(long pid) {
    if (pid <= 0) return 0;
    HANDLE h = OpenProcess(SYNCHRONIZE | PROCESS_QUERY_LIMITED_INFORMATION, FALSE, (DWORD)pid);
    if (!h) return GetLastError() == ERROR_ACCESS_DENIED;
    int running = WaitForSingleObject(h, 0) == WAIT_TIMEOUT;
    CloseHandle(h);
    return running;
}

int platform_random_bytes(void *buf, size_t n) {
    return BCryptGenRandom(NULL, buf, (ULONG)n, BCRYPT_USE_SYSTEM_PREFERRED_RNG) == 0 ? 0 : -1;
}

// Every console event arrives as SIGINT (platform.h): no POSIX signal of the fatal set exists here.
static void (*volatile console_handler)(int sig);

static BOOL WINAPI on_console_event(DWORD event) {
    void (*handler)(int) = console_handler;
    if (!handler) return FALSE;  // the next handler: the system's, which ends the process
    handler(SIGINT);
    if (event != CTRL_C_EVENT && event != CTRL_BREAK_EVENT) Sleep(INFINITE);  // until the program ends itself
    return TRUE;
}

void platform_signals_catch(PlatformSignals set, void (*handler)(int sig), int restart) {
    if (set != PLATFORM_STOP_SIGNALS) return;
    static int installed;
    console_handler = handler;
    SetConsoleCtrlHandler(NULL, FALSE);  // Ctrl-C reaches this process even when its parent ignored it
    if (!installed) installed = SetConsoleCtrlHandler(on_console_event, TRUE);
}

void platform_signals_poll(void) {}  // console events arrive by themselves

// as the system's own handler ends a process at Ctrl-C, at once, from the event's thread
_Noreturn void platform_end_by_signal(int sig) {
    TerminateProcess(GetCurrentProcess(), (UINT)STATUS_CONTROL_C_EXIT);
    _exit(128 + sig);  // not reached
}

#endif
