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

// MemAvailable in /proc/meminfo: free memory and what the kernel can reclaim without swapping.
double platform_memory_available(const char **source) {
    *source = "MemAvailable";
    FILE *fp = fopen("/proc/meminfo", "r");
    char line[256];
    double kib = 0.0;
    while (fp && fgets(line, sizeof(line), fp))
        if (sscanf(line, "MemAvailable: %lf kB", &kib) == 1) break;
    if (fp) fclose(fp);
    if (kib <= 0.0) *source = "unknown (/proc/meminfo has no MemAvailable)";
    return kib * 1024.0;
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
// counts them.
double platform_memory_available(const char **source) {
    *source = "free and inactive pages";
    vm_statistics64_data_t vm;
    mach_msg_type_number_t count = HOST_VM_INFO64_COUNT;
    long page = sysconf(_SC_PAGESIZE);
    if (host_statistics64(mach_host_self(), HOST_VM_INFO64, (host_info64_t)&vm, &count) != KERN_SUCCESS || page <= 0) {
        *source = "unknown (host_statistics64 failed)";
        return 0.0;
    }
    return ((double)vm.free_count + (double)vm.inactive_count) * (double)page;
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

double platform_memory_available(const char **source) {
    *source = "unknown on this system";
    return 0.0;
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
