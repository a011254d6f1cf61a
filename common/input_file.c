#include "input_file.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

int input_file_open(const char *path, int flags, PlatformFileInfo *info) {
    int fd = platform_open(path, PLATFORM_READ | PLATFORM_NO_WAIT | flags);
    if (fd < 0) return -1;
    if (platform_fd_info(fd, info) != 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    if (info->kind != PLATFORM_FILE_REGULAR) {
        close(fd);
        return -2;
    }
    platform_fd_set_nonblocking(fd, 0);  // no effect on a regular file's reads, cleared all the same
    return fd;
}

const char *input_file_kind(const PlatformFileInfo *info) {
    switch (info->kind) {
        case PLATFORM_FILE_DIRECTORY: return "a directory";
        case PLATFORM_FILE_PIPE: return "a FIFO";
        case PLATFORM_FILE_DEVICE: return "a device";
        case PLATFORM_FILE_SOCKET: return "a socket";
        default: return "not a regular file";
    }
}

FILE *input_file_fopen(const char *path, int flags, int *missing, char err[ERR_LEN]) {
    PlatformFileInfo info;
    int fd = input_file_open(path, flags, &info);
    if (missing) *missing = fd == -1 && errno == ENOENT;
    if (fd == -2) {
        snprintf(err, ERR_LEN, "%s is %s, not a regular file", path, input_file_kind(&info));
        return NULL;
    }
    FILE *fp = fd >= 0 ? fdopen(fd, "rb") : NULL;
    if (!fp) {
        int link = fd < 0 && errno == ELOOP && (flags & PLATFORM_NO_FOLLOW);
        snprintf(err, ERR_LEN, "cannot read %s: %s", path, link ? "it is a symbolic link" : strerror(errno));
        if (fd >= 0) close(fd);
    }
    return fp;
}
