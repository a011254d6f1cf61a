#include "atomic_file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

// The temporary files this process has open, for atomic_file_remove_open (which may run in
// a signal handler: a slot's path is complete before the slot is marked used).
#define MAX_OPEN 8
static char open_paths[MAX_OPEN][4096];
static volatile sig_atomic_t open_used[MAX_OPEN];

static unsigned long temp_counter;  // the <n> of the next temporary name

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
    int fd = -1;
    do {
        snprintf(f->tmp_path, sizeof(f->tmp_path), "%s.tmp.%ld.%lu", path, (long)getpid(), temp_counter++);
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

// Writes the directory holding path into dir; returns path's last component.
static const char *split_path(const char *path, char dir[4096]) {
    const char *slash = strrchr(path, '/');
    if (!slash) strcpy(dir, ".");
    else if (slash == path) strcpy(dir, "/");
    else snprintf(dir, 4096, "%.*s", (int)(slash - path), path);
    return slash ? slash + 1 : path;
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

int atomic_file_commit(AtomicFile *f, char err[ERR_LEN]) {
    int failed = ferror(f->fp) || fflush(f->fp) != 0 || fsync(fileno(f->fp)) != 0;
    int saved_errno = errno;
    if (fclose(f->fp) != 0 && !failed) {
        failed = 1;
        saved_errno = errno;
    }
    f->fp = NULL;
    if (failed) {
        snprintf(err, ERR_LEN, "%s: write failed: %s", f->path, strerror(saved_errno));
        remove_temp(f);
        return -1;
    }
    if (rename(f->tmp_path, f->path) != 0) {
        snprintf(err, ERR_LEN, "%s: cannot rename the temporary file into place: %s", f->path,
                 strerror(errno));
        remove_temp(f);
        return -1;
    }
    release_slot(f);
    fsync_parent_dir(f->path);
    return 0;
}

void atomic_file_abort(AtomicFile *f) {
    if (f->fp) fclose(f->fp);
    f->fp = NULL;
    remove_temp(f);
}

void atomic_file_remove_open(void) {
    for (int i = 0; i < MAX_OPEN; i++)
        if (open_used[i]) unlink(open_paths[i]);
}

// The process id in a temporary file name's tail "<pid>.<n>", or -1 if it is not one.
static long temp_owner(const char *tail) {
    char *end;
    errno = 0;
    long pid = strtol(tail, &end, 10);
    if (errno || end == tail || *end != '.' || pid <= 0 || *tail < '0' || *tail > '9') return -1;
    const char *n = end + 1;
    if (*n < '0' || *n > '9') return -1;
    strtoul(n, &end, 10);
    return *end == '\0' ? pid : -1;
}

// 1 when tmp_path is one of this process's open temporary files.
static int is_open_here(const char *tmp_path) {
    for (int i = 0; i < MAX_OPEN; i++)
        if (open_used[i] && strcmp(open_paths[i], tmp_path) == 0) return 1;
    return 0;
}

int atomic_file_remove_stale(const char *path, char err[ERR_LEN]) {
    char dir[4096], prefix[4200], tmp_path[8192];
    const char *base = split_path(path, dir);
    snprintf(prefix, sizeof(prefix), "%s.tmp.", base);
    size_t prefix_len = strlen(prefix);
    DIR *d = opendir(dir);
    if (!d) {
        snprintf(err, ERR_LEN, "%s: cannot read the directory: %s", dir, strerror(errno));
        return -1;
    }
    int removed = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, prefix, prefix_len) != 0) continue;
        long pid = temp_owner(e->d_name + prefix_len);
        if (pid < 0) continue;
        snprintf(tmp_path, sizeof(tmp_path), "%.*s%s", (int)(base - path), path, e->d_name);
        // a process that still runs keeps its files (kill fails with EPERM for another user's)
        int running = pid == (long)getpid() ? is_open_here(tmp_path) : kill((pid_t)pid, 0) == 0 || errno != ESRCH;
        if (!running && unlink(tmp_path) == 0) removed++;
    }
    closedir(d);
    return removed;
}
