// Everything chargpt asks of the operating system, in one place: the memory it may take now,
// the program's own path and name, a terminal's width, the processors and what the CPU can
// do beyond what the compiler knows; the file operations whose form differs between systems
// (opening without waiting on a FIFO, a file's identity, syncing, replacing and publishing a
// file atomically, a lock, paths' separators), the processes' ids, and the signals that stop
// or end a program. platform.c has four versions: Linux's, macOS's, one for any other POSIX
// system, which answers "unknown" where POSIX has no way to ask (`make PLATFORM=posix` builds
// that one on Linux too, so that its answers are tested), and Windows's. Nothing else in
// chargpt reads /proc, uses a name only GNU or one system has, or asks which system it is on.
#ifndef CHARGPT_PLATFORM_H
#define CHARGPT_PLATFORM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "errors.h"

// "linux", "macos", "posix" or "windows": the version in use.
const char *platform_name(void);

// Called first by a program's main: the POSIX and Windows versions take the program's name
// from argv[0] (Linux and macOS keep it themselves). On Windows it also makes the standard
// streams binary (the same bytes as on other systems: no \r added, no Ctrl-Z read as an end),
// the console's code page UTF-8 and its escape sequences on (the progress line), as they were
// again at exit; the programs' manifest makes UTF-8 the code page of their file names,
// arguments and environment (common/windows.manifest).
void platform_init(int argc, char **argv);
// The program's name as messages begin ("train: ..."): its file name, as it was invoked
// (without Windows's ".exe").
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
// macOS: free and inactive pages (of hw.memsize). Windows: the available physical memory
// (GlobalMemoryStatusEx's, of the machine's); and the limits of the job object the process
// runs in, when set: its process memory limit less the process's commit, its job memory limit
// less the job's peak commit. The tests give the Linux version a tree of
// their own in place of / (/proc, the cgroup file system) in $CHARGPT_TEST_SYSTEM_ROOT.
int platform_memory_bounds(MemoryBound bounds[PLATFORM_MEMORY_BOUNDS], const char **unknown);

// The running program's own path, absolute, into path (size bytes), its directories separated
// by '/' on every system. Returns 0, or -1 with err when the system cannot say (then the program
// looks for its files in fixed places).
int platform_executable_path(char *path, size_t size, char err[ERR_LEN]);

// Columns of the terminal (or Windows console) on fd, or 0 when fd is not one or it does not
// know its size.
int platform_terminal_width(int fd);
// 1 when fd is a terminal or a console (on Windows the null device is not, as _isatty says).
int platform_is_terminal(int fd);

// getrusage's ru_maxrss in KiB: Linux (and the BSDs) count it in kilobytes, macOS in bytes.
long platform_max_rss_kib(long ru_maxrss);

// aligned_alloc(alignment, size) (size a multiple of alignment), whose memory
// platform_aligned_free alone frees: Windows's C library has no aligned_alloc, and its
// _aligned_malloc's blocks are not free's.
void *platform_aligned_alloc(size_t alignment, size_t size);
void platform_aligned_free(void *p);

// A stream that reads the n bytes at `bytes` (fmemopen; Windows's C library has none: a
// temporary file holding them, removed when closed), or NULL with errno: how the fuzz targets
// and the tests feed a reader of files from memory.
FILE *platform_memory_stream(const void *bytes, size_t n);

// Processors online (at least 1).
int platform_cpu_count(void);
// Processors with nothing to run at this moment (the caller's own thread runs on one of them,
// so it is not idle), or -1 where the system does not say. Linux: those online less the tasks
// running or waiting to run (/proc/loadavg's fourth field), at least 0; the other systems: -1.
// The thread tuner asks it before it tries a larger team for a short pass (kernels/parallel.h).
int platform_idle_cpus(void);
// 1 when the CPU has AArch64's FEAT_BF16 (BFDOT, BFMMLA), as the system reports it (Linux: the
// auxiliary vector's HWCAP2; macOS: sysctl hw.optional.arm.FEAT_BF16); 0 on other CPUs, or
// where the system does not say. (x86's features need no system: the kernels ask the CPU.)
int platform_cpu_has_arm_bf16(void);

// ----------------------------------------------------------------------------
// files

// How platform_open opens a file (open(2)'s flags, each descriptor binary and closed in the
// programs this one starts, O_CLOEXEC). A directory opens for reading too.
enum {
    PLATFORM_READ = 1,
    PLATFORM_WRITE = 2,
    PLATFORM_CREATE = 4,      // created when absent (mode 0666 less the umask)
    PLATFORM_EXCLUSIVE = 8,   // with PLATFORM_CREATE: EEXIST when the file is there (O_EXCL)
    PLATFORM_TRUNCATE = 16,
    PLATFORM_APPEND = 32,
    PLATFORM_NO_FOLLOW = 64,  // ELOOP when path is a symbolic link (Windows: any reparse point)
    PLATFORM_NO_WAIT = 128,   // opening a FIFO does not wait for a writer (O_NONBLOCK; reads of it
                              // then do not wait either: platform_fd_set_nonblocking(fd, 0))
};
// A file descriptor of path opened as `how` says (PLATFORM_READ | PLATFORM_NO_WAIT, ...), or -1
// with errno.
int platform_open(const char *path, int how);
// Makes reads of fd return at once with what has come (nonblocking 1), or wait for it (0): a
// pipe's or a terminal's (O_NONBLOCK). Returns whether they did before (0 or 1), or -1 with
// errno; on Windows, whose pipes' reads always wait, -1 with ENOTSUP for 1.
int platform_fd_set_nonblocking(int fd, int nonblocking);

// An input that may stall (a pipe, a FIFO), read while a stop request may come: between
// platform_waiting_start and platform_waiting_end, platform_waiting_read reads into buf what fp
// has now, up to n bytes, or waits up to ms for some to come. It returns the bytes read (0:
// none came, or the end, when *end is set to 1), or -1 with errno. platform_waiting_start
// returns what platform_waiting_end restores, or -1 when fp cannot be read so (a regular file,
// a console: its reads wait as usual). POSIX: fp's descriptor nonblocking, poll(2) while nothing
// comes; Windows: a pipe looked into (PeekNamedPipe) every 10 ms, fp unbuffered (so that stdio
// asks for no more than the pipe holds).
int platform_waiting_start(FILE *fp);
long platform_waiting_read(FILE *fp, void *buf, size_t n, int ms, int *end);
void platform_waiting_end(FILE *fp, int saved);

typedef enum {
    PLATFORM_FILE_REGULAR,
    PLATFORM_FILE_DIRECTORY,
    PLATFORM_FILE_PIPE,  // a FIFO or a pipe
    PLATFORM_FILE_LINK,  // a symbolic link (Windows: any reparse point), when not followed
    PLATFORM_FILE_DEVICE,  // a character or block device (Windows: the console, NUL, a port)
    PLATFORM_FILE_SOCKET,
    PLATFORM_FILE_OTHER,
} PlatformFileKind;
// What a file is: its kind, its size in bytes (a regular file's), and its identity, the same
// for every name of one file (st_dev and st_ino; Windows: the volume's serial number and the
// file's index), which platform_same_file compares.
typedef struct {
    PlatformFileKind kind;
    uint64_t size;
    uint64_t volume, index;
} PlatformFileInfo;
// Of the open fd. Returns 0, or -1 with errno.
int platform_fd_info(int fd, PlatformFileInfo *info);
// Of path, following symbolic links (stat) or not (lstat). Returns 0, or -1 with errno.
int platform_path_info(const char *path, int follow_links, PlatformFileInfo *info);
int platform_same_file(const PlatformFileInfo *a, const PlatformFileInfo *b);

// pread and pwrite: n bytes at offset, the file's position unchanged on POSIX. Return the
// bytes read or written, or -1 with errno.
long platform_read_at(int fd, void *buf, size_t n, uint64_t offset);
long platform_write_at(int fd, const void *buf, size_t n, uint64_t offset);
// Makes what was written to fd durable (fsync; Windows: FlushFileBuffers). 0, or -1 with errno.
int platform_file_sync(int fd);

// Renames from over to (the same directory), so that readers see the old file or the new one
// (rename(2); Windows: MoveFileEx with MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH,
// retried for up to a second while another process has `to` open without sharing its deletion,
// as virus scanners do). from's data must be synced before (platform_file_sync). Returns 0, or
// -1 with errno.
int platform_replace_file(const char *from, const char *to);
// Makes the renames in dir durable (fsync of the directory; on Windows MOVEFILE_WRITE_THROUGH
// has made them so).
void platform_sync_dir(const char *dir);
// Renames the file `from` to `to` only while nothing is called `to`, in one step: a file
// another process publishes there first is never replaced (Linux's renameat2 with
// RENAME_NOREPLACE, macOS's renamex_np with RENAME_EXCL, Windows's MoveFileEx without
// MOVEFILE_REPLACE_EXISTING; where the system or the file system has neither, a hard link
// made under the new name, then the old name removed, which the file system also refuses when
// the name is taken). Returns 0, or -1 with errno (EEXIST: `to` exists, `from` left in place).
int platform_rename_new(const char *from, const char *to);
// Removes the file path: 0, or -1 with errno. Async-signal-safe (unlink). On Windows a file
// that a process has open goes once the last handle is closed (the process's end closes them).
int platform_remove_file(const char *path);
// Creates the directory path (mode 0777 less the umask): 0, or -1 with errno (EEXIST when
// something is there).
int platform_make_dir(const char *path);
// The longest name an entry of dir may have, in bytes (NAME_MAX: 255 on the usual file systems).
long platform_name_max(const char *dir);
// The bytes this user may still write on the file system that holds path, an existing file or
// directory (statvfs's f_bavail blocks; Windows: GetDiskFreeSpaceExW's free bytes available to
// the caller). Returns 0, or -1 with errno.
int platform_free_space(const char *path, double *bytes);
// The absolute path of the existing path, links resolved, '/' between its directories, into
// out (size bytes). Returns 0, or -1 with errno.
int platform_real_path(const char *path, char *out, size_t size);

// 1 when c separates a path's directories: '/' (on Windows '\\' too).
int platform_is_path_separator(char c);
// The last separator in path, or NULL.
const char *platform_path_last_separator(const char *path);
// The extension of path's last component, after its last '.' ("json" of "out/a.json"), or "".
const char *platform_path_extension(const char *path);
// 1 when path does not depend on the working directory ("/x"; on Windows "C:\x", "C:/x",
// "\\server\x" and "\x" too).
int platform_path_is_absolute(const char *path);

// Takes an exclusive lock of the whole of the open fd without waiting (flock(2); Windows:
// LockFileEx of a byte past any content, so that others can still read the file). The system
// releases it however the process ends. Returns PLATFORM_LOCK_HELD, PLATFORM_LOCK_BUSY (another
// process holds it), PLATFORM_LOCK_UNSUPPORTED (the file system has no locks) or
// PLATFORM_LOCK_FAILED, with errno.
enum { PLATFORM_LOCK_HELD, PLATFORM_LOCK_BUSY, PLATFORM_LOCK_UNSUPPORTED, PLATFORM_LOCK_FAILED };
int platform_lock(int fd);

// ----------------------------------------------------------------------------
// processes and signals

// This process's id.
long platform_process_id(void);
// 1 when a process of that id is running (another user's included), else 0.
int platform_process_running(long pid);
// n bytes from the system's random source. Returns 0, or -1 when it has none.
int platform_random_bytes(void *buf, size_t n);

// The signals that ask a program to stop: SIGINT (Ctrl-C), SIGTERM and SIGHUP (the terminal
// closed). On Windows every console event arrives as SIGINT, so that it stops a run as Ctrl-C
// does on Linux: Ctrl-C, Ctrl-Break, the console closed, a logoff or shutdown; the process ends
// when the handler of the last three returns, so there the handler's thread waits for the
// program to end itself (Windows gives it 5 s after a close, more at a shutdown).
// The other signals that would end a program: POSIX's SIGQUIT, SIGPIPE, SIGALRM, SIGUSR1,
// SIGUSR2 (Windows has none); SIGXFSZ is ignored (a write past the file-size limit fails with
// EFBIG, which the program reports).
typedef enum { PLATFORM_STOP_SIGNALS, PLATFORM_FATAL_SIGNALS } PlatformSignals;
// Calls handler(signal) when one of the set arrives (on POSIX in a signal handler, on Windows in
// a thread of its own: either way only async-signal-safe work). restart: interrupted system
// calls are restarted (SA_RESTART).
void platform_signals_catch(PlatformSignals set, void (*handler)(int sig), int restart);
// Where signals arrive only when the program lets them (WebAssembly: the page's stop and pause
// reach the Web Worker that runs the program only between the worker's tasks), lets them
// arrive now: a stop signal that has come runs its handler (platform_signals_catch's) here, and
// a pause returns once the page resumes. Elsewhere nothing: signals arrive by themselves.
void platform_signals_poll(void);
// Ends the process as sig's default action would (a shell then shows 128 + sig; on Windows the
// exit code of a process ended by Ctrl-C, STATUS_CONTROL_C_EXIT).
_Noreturn void platform_end_by_signal(int sig);
// How messages name sig, on every system: "SIGINT", "SIGTERM", "SIGHUP", else "a signal".
const char *platform_signal_name(int sig);

#endif
