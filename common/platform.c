// The operating system's answers (platform.h), in three versions: Linux's, macOS's, and one
// for any other POSIX system, which CHARGPT_PLATFORM_POSIX (`make PLATFORM=posix`) forces.
#if !defined(CHARGPT_PLATFORM_POSIX) && defined(__linux__)
#define PLATFORM_LINUX 1
#define _GNU_SOURCE  // program_invocation_name and program_invocation_short_name: before any header
#elif !defined(CHARGPT_PLATFORM_POSIX) && defined(__APPLE__)
#define PLATFORM_MACOS 1
#endif

#include "platform.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#if defined(PLATFORM_LINUX)
#include <fcntl.h>  // AT_FDCWD
#endif

static int rename_by_link(const char *from, const char *to);

#if defined(PLATFORM_LINUX)
#include <sys/auxv.h>
#include <sys/resource.h>
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
// any other POSIX system: what POSIX cannot ask is unknown

#else

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

int platform_cpu_has_arm_bf16(void) { return 0; }

#endif

// ----------------------------------------------------------------------------
// the same on every system

// link(2) fails with EEXIST when `to` exists, so the new name is taken only if it was free;
// the old name is then removed (a failure there leaves both names, the file published).
static int rename_by_link(const char *from, const char *to) {
    if (link(from, to) != 0) return -1;
    unlink(from);
    return 0;
}

// TIOCGWINSZ is what Linux, macOS and the BSDs answer (POSIX.1-2024 names the same query
// tcgetwinsize); a system without it has no size to give.
int platform_terminal_width(int fd) {
#if defined(TIOCGWINSZ)
    struct winsize ws;
    if (isatty(fd) && ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
#endif
    return 0;
}

int platform_cpu_count(void) {
#if defined(_SC_NPROCESSORS_ONLN)
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n >= 1 ? (int)(n < 1 << 20 ? n : 1 << 20) : 1;
#else
    return 1;
#endif
}
