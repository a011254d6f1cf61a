#include "atomic_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int atomic_file_open(AtomicFile *f, const char *path, char err[ERR_LEN]) {
    memset(f, 0, sizeof(*f));
    if (strlen(path) + 16 > sizeof(f->path)) {
        snprintf(err, ERR_LEN, "%s: path too long", path);
        return -1;
    }
    strcpy(f->path, path);
    snprintf(f->tmp_path, sizeof(f->tmp_path), "%s.tmp.XXXXXX", path);
    int fd = mkstemp(f->tmp_path);
    if (fd < 0) {
        snprintf(err, ERR_LEN, "%s: cannot create a temporary file: %s", path, strerror(errno));
        return -1;
    }
    // mkstemp makes the file 0600; give it the mode a plain fopen would
    mode_t mask = umask(0);
    umask(mask);
    fchmod(fd, 0666 & ~mask);
    f->fp = fdopen(fd, "wb");
    if (!f->fp) {
        snprintf(err, ERR_LEN, "%s: %s", f->tmp_path, strerror(errno));
        close(fd);
        unlink(f->tmp_path);
        return -1;
    }
    return 0;
}

// fsync the directory holding `path` so the rename itself is durable
static void fsync_parent_dir(const char *path) {
    char dir[4096];
    strcpy(dir, path);
    char *slash = strrchr(dir, '/');
    if (slash == dir) dir[1] = '\0';
    else if (slash) *slash = '\0';
    else strcpy(dir, ".");
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
        unlink(f->tmp_path);
        return -1;
    }
    if (rename(f->tmp_path, f->path) != 0) {
        snprintf(err, ERR_LEN, "%s: cannot rename the temporary file into place: %s", f->path,
                 strerror(errno));
        unlink(f->tmp_path);
        return -1;
    }
    fsync_parent_dir(f->path);
    return 0;
}

void atomic_file_abort(AtomicFile *f) {
    if (f->fp) fclose(f->fp);
    f->fp = NULL;
    unlink(f->tmp_path);
}
