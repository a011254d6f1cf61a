// Everything chargpt asks of the operating system, in one place: the memory it may take now,
// the program's own path and name, a terminal's width, a rename that never replaces, the
// processors and what the CPU can do beyond what the compiler knows. platform.c has three versions of each: Linux's, macOS's
// and one for any other POSIX system, which answers "unknown" where POSIX has no way to ask
// (`make PLATFORM=posix` builds that one on Linux too, so that its answers are tested).
// Nothing else in chargpt reads /proc or uses a name only GNU or one system has.
#ifndef CHARGPT_PLATFORM_H
#define CHARGPT_PLATFORM_H

#include <stddef.h>

#include "errors.h"

// "linux", "macos" or "posix": the version in use.
const char *platform_name(void);

// Called first by a program's main: the POSIX version takes the program's name from argv[0]
// (Linux and macOS keep it themselves).
void platform_init(int argc, char **argv);
// The program's name as messages begin ("train: ..."): its file name, as it was invoked.
const char *program_name(void);
// The program as it was invoked ("./train", "chargpt-train"), as usage lines show it.
const char *program_invocation(void);

// A bound on the memory this process may take now.
typedef struct {
    double available;  // bytes it may still take under this bound
    double total;      // the bound's whole size (the machine's memory, the cgroup's limit,
                       // RLIMIT_AS), from which common/program.h keeps a margin free
    int shared;        // 1: the processes of a run on this machine share it (0: each has its own)
    const char *name;  // in messages: "MemAvailable", "cgroup memory.max less its use", ...
} MemoryBound;
#define PLATFORM_MEMORY_BOUNDS 4

// The bounds this system sets on the memory this process may take now, into bounds; returns
// how many (at most PLATFORM_MEMORY_BOUNDS), 0 when this system cannot say (*unknown then
// says so: "unknown ..." and why). Linux: the machine's MemAvailable (/proc/meminfo, of its
// MemTotal); the memory cgroup's limit less its use (free of the page cache it may reclaim),
// at every level of its hierarchy, cgroup v2 (memory.max, memory.current) and v1
// (memory.limit_in_bytes, memory.usage_in_bytes), found through /proc/self/cgroup and
// /proc/self/mountinfo; and RLIMIT_AS less the address space the process maps (VmSize).
// macOS: free and inactive pages (of hw.memsize). The tests give the Linux version a tree of
// their own in place of / (/proc, the cgroup file system) in $CHARGPT_TEST_SYSTEM_ROOT.
int platform_memory_bounds(MemoryBound bounds[PLATFORM_MEMORY_BOUNDS], const char **unknown);

// The running program's own path, absolute, into path (size bytes). Returns 0, or -1 with
// err when the system cannot say (then the program looks for its files in fixed places).
int platform_executable_path(char *path, size_t size, char err[ERR_LEN]);

// Columns of the terminal on fd, or 0 when fd is not a terminal or it does not know its size.
int platform_terminal_width(int fd);

// getrusage's ru_maxrss in KiB: Linux (and the BSDs) count it in kilobytes, macOS in bytes.
long platform_max_rss_kib(long ru_maxrss);

// Renames the file `from` to `to` only while nothing is called `to`, in one step: a file
// another process publishes there first is never replaced (Linux's renameat2 with
// RENAME_NOREPLACE, macOS's renamex_np with RENAME_EXCL; where the system or the file system
// has neither, a hard link made under the new name, then the old name removed, which the
// file system also refuses when the name is taken). Returns 0, or -1 with errno (EEXIST:
// `to` exists).
int platform_rename_new(const char *from, const char *to);

// Processors online (at least 1).
int platform_cpu_count(void);
// 1 when the CPU has AArch64's FEAT_BF16 (BFDOT, BFMMLA), as the system reports it (Linux: the
// auxiliary vector's HWCAP2; macOS: sysctl hw.optional.arm.FEAT_BF16); 0 on other CPUs, or
// where the system does not say. (x86's features need no system: the kernels ask the CPU.)
int platform_cpu_has_arm_bf16(void);

#endif
