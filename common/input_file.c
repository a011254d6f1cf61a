#include "input_file.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

int input_file_open(const char *path, int flags, struct stat *st) {
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | flags);
    if (fd < 0) return -1;
    int status = fcntl(fd, F_GETFL);
    if (fstat(fd, st) != 0 || status < 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    if (!S_ISREG(st->st_mode)) {
        close(fd);
        return -2;
    }
    fcntl(fd, F_SETFL, status & ~O_NONBLOCK);  // no effect on a regular file's reads, cleared all the same
    return fd;
}

const char *input_file_kind(const struct stat *st) {
    if (S_ISDIR(st->st_mode)) return "a directory";
    if (S_ISFIFO(st->st_mode)) return "a FIFO";
    if (S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode)) return "a device";
    if (S_ISSOCK(st->st_mode)) return "a socket";
    return "not a regular file";
}

FILE *input_file_fopen(const char *path, int flags, int *missing, char err[ERR_LEN]) {
    struct stat st;
    int fd = input_file_open(path, flags, &st);
    if (missing) *missing = fd == -1 && errno == ENOENT;
    if (fd == -2) {
        snprintf(err, ERR_LEN, "%s is %s, not a regular file", path, input_file_kind(&st));
        return NULL;
    }
    FILE *fp = fd >= 0 ? fdopen(fd, "rb") : NULL;
    if (!fp) {
        int link = fd < 0 && errno == ELOOP && (flags & O_NOFOLLOW);
        snprintf(err, ERR_LEN, "cannot read %s: %s", path, link ? "it is a symbolic link" : strerror(errno));
        if (fd >= 0) close(fd);
    }
    return fp;
}
