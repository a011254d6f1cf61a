#include "atomic_file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/platform.h"

// The temporary files this process has open, for atomic_file_remove_open (which may run in
// a signal handler: a slot's path is complete before the slot is marked used).
#define MAX_OPEN 8
static char open_paths[MAX_OPEN][4096];
static volatile sig_atomic_t open_used[MAX_OPEN];

static unsigned long temp_counter;  // the <n> of the next temporary name

// Writes the directory holding path into dir; returns path's last component.
static const char *split_path(const char *path, char dir[4096]) {
    const char *slash = strrchr(path, '/');
    if (!slash) strcpy(dir, ".");
    else if (slash == path) strcpy(dir, "/");
    else snprintf(dir, 4096, "%.*s", (int)(slash - path), path);
    return slash ? slash + 1 : path;
}

// The longest name an entry of dir may have (NAME_MAX: 255 bytes on the usual file systems).
static long name_max(const char *dir) {
    long n = pathconf(dir, _PC_NAME_MAX);
    return n > 0 ? n : 255;
}

int atomic_file_open(AtomicFile *f, const char *path, char err[ERR_LEN]) {
    memset(f, 0, sizeof(*f));
    f->slot = -1;
    if (strlen(path) + 48 > sizeof(f->path)) {
        snprintf(err, ERR_LEN, "%s: path too long", path);
        return -1;
    }
    strcpy(f->path, path);
    for (int i = 0; i < MAX_OPEN && f->slot < 0; i++)
        if (!open_used[i]) f->slot = i;
    if (f->slot < 0) {
        snprintf(err, ERR_LEN, "%s: more than %d files being written at once", path, MAX_OPEN);
        return -1;
    }
    char dir[4096];
    const char *base = split_path(path, dir);
    long longest = name_max(dir);
    if ((long)strlen(base) > longest) {
        snprintf(err, ERR_LEN, "%s: the name is longer than the %ld bytes a file name may have here", path, longest);
        return -1;
    }
    int fd = -1;
    do {
        // <target>.tmp.<pid>.<n>, the target's name cut so that the whole name fits NAME_MAX
        char suffix[64];
        int suffix_len = snprintf(suffix, sizeof(suffix), ".tmp.%ld.%lu", (long)getpid(), temp_counter++);
        int keep = (int)strlen(base);
        if (keep + suffix_len > longest) keep = longest - suffix_len > 1 ? (int)longest - suffix_len : 1;
        snprintf(f->tmp_path, sizeof(f->tmp_path), "%.*s%.*s%s", (int)(base - path), path, keep, base, suffix);
        strcpy(open_paths[f->slot], f->tmp_path);
        open_used[f->slot] = 1;
        // 0666 less the umask, the mode a plain fopen gives
        fd = open(f->tmp_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0) open_used[f->slot] = 0;
    } while (fd < 0 && errno == EEXIST);
    if (fd < 0) {
        snprintf(err, ERR_LEN, "%s: cannot create a temporary file: %s", path, strerror(errno));
        return -1;
    }
    f->fp = fdopen(fd, "wb");
    if (!f->fp) {
        snprintf(err, ERR_LEN, "%s: %s", f->tmp_path, strerror(errno));
        close(fd);
        atomic_file_abort(f);
        return -1;
    }
    return 0;
}

static void release_slot(AtomicFile *f) {
    if (f->slot >= 0) open_used[f->slot] = 0;
    f->slot = -1;
}

static void remove_temp(AtomicFile *f) {
    unlink(f->tmp_path);
    release_slot(f);
}

// fsync the directory holding `path` so the rename itself is durable
static void fsync_parent_dir(const char *path) {
    char dir[4096];
    split_path(path, dir);
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
}

// Flushes, fsyncs and closes the temporary file; 0, or -1 with err (the file removed).
static int finish_temp(AtomicFile *f, char err[ERR_LEN]) {
    int failed = ferror(f->fp) || fflush(f->fp) != 0 || fsync(fileno(f->fp)) != 0;
    int saved_errno = errno;
    if (fclose(f->fp) != 0 && !failed) {
        failed = 1;
        saved_errno = errno;
    }
    f->fp = NULL;
    if (!failed) return 0;
    snprintf(err, ERR_LEN, "%s: write failed: %s", f->path, strerror(saved_errno));
    remove_temp(f);
    return -1;
}

// Renames the finished temporary file to the target (replace: over whatever is there; else
// only while nothing is), then fsyncs the directory.
static int publish(AtomicFile *f, int replace, char err[ERR_LEN]) {
    if (finish_temp(f, err) != 0) return -1;
    if ((replace ? rename(f->tmp_path, f->path) : platform_rename_new(f->tmp_path, f->path)) != 0) {
        int exists = !replace && errno == EEXIST;
        if (exists) snprintf(err, ERR_LEN, "%s exists: another process wrote it while this one worked (give --force to replace it)", f->path);
        else snprintf(err, ERR_LEN, "%s: cannot rename the temporary file into place: %s", f->path, strerror(errno));
        remove_temp(f);
        return exists ? ATOMIC_FILE_EXISTS : -1;
    }
    release_slot(f);
    fsync_parent_dir(f->path);
    return 0;
}

int atomic_file_commit(AtomicFile *f, char err[ERR_LEN]) { return publish(f, 1, err); }

int atomic_file_commit_new(AtomicFile *f, char err[ERR_LEN]) { return publish(f, 0, err); }

void atomic_file_abort(AtomicFile *f) {
    if (f->fp) fclose(f->fp);
    f->fp = NULL;
    remove_temp(f);
}

int no_follow_open(const char *path, int flags) { return open(path, flags | O_NOFOLLOW | O_CLOEXEC, 0666); }

FILE *no_follow_fopen(const char *path, const char *mode) {
    int flags = O_WRONLY | O_CREAT | (mode[0] == 'a' ? O_APPEND : O_TRUNC);
    int fd = no_follow_open(path, flags);
    FILE *fp = fd >= 0 ? fdopen(fd, mode) : NULL;
    if (!fp && fd >= 0) {
        int saved = errno;
        close(fd);
        errno = saved;
    }
    return fp;
}

void atomic_file_remove_open(void) {
    for (int i = 0; i < MAX_OPEN; i++)
        if (open_used[i]) unlink(open_paths[i]);
}

// The process id of the temporary file of `base` called name, or -1 if name is not one: name
// is <base>.tmp.<pid>.<n>, or, where that passes NAME_MAX (`longest`), the same with base cut
// so that the name is exactly `longest` bytes.
static long temp_owner(const char *name, const char *base, long longest) {
    size_t len = strlen(name);
    const char *p = name + len;
    while (p > name && p[-1] >= '0' && p[-1] <= '9') p--;  // <n>
    if (p == name + len || p == name || p[-1] != '.') return -1;
    const char *pid_end = --p;
    while (p > name && p[-1] >= '0' && p[-1] <= '9') p--;  // <pid>
    if (p == pid_end || p - name < 5 || memcmp(p - 5, ".tmp.", 5) != 0) return -1;
    size_t kept = (size_t)(p - 5 - name), base_len = strlen(base);
    int whole = kept == base_len, cut = kept > 0 && kept < base_len && (long)len == longest;
    if (!(whole || cut) || memcmp(name, base, kept) != 0) return -1;
    char *end;
    errno = 0;
    long pid = strtol(p, &end, 10);
    return errno || end != pid_end || pid <= 0 ? -1 : pid;
}

// 1 when tmp_path is one of this process's open temporary files.
static int is_open_here(const char *tmp_path) {
    for (int i = 0; i < MAX_OPEN; i++)
        if (open_used[i] && strcmp(open_paths[i], tmp_path) == 0) return 1;
    return 0;
}

int atomic_file_remove_stale(const char *path, char err[ERR_LEN]) {
    char dir[4096], tmp_path[8192];
    const char *base = split_path(path, dir);
    long longest = name_max(dir);
    DIR *d = opendir(dir);
    if (!d) {
        snprintf(err, ERR_LEN, "%s: cannot read the directory: %s", dir, strerror(errno));
        return -1;
    }
    int removed = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        long pid = temp_owner(e->d_name, base, longest);
        if (pid < 0) continue;
        snprintf(tmp_path, sizeof(tmp_path), "%.*s%s", (int)(base - path), path, e->d_name);
        // a process that still runs keeps its files (kill fails with EPERM for another user's)
        int running = pid == (long)getpid() ? is_open_here(tmp_path) : kill((pid_t)pid, 0) == 0 || errno != ESRCH;
        if (!running && unlink(tmp_path) == 0) removed++;
    }
    closedir(d);
    return removed;
}
