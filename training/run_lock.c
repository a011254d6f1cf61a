#include "run_lock.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../common/platform.h"

// The process id written in the lock file, or 0 when there is none (yet) or it is not running.
static long holder_pid(int fd) {
    char text[32];
    long n = platform_read_at(fd, text, sizeof(text) - 1, 0);
    if (n <= 0) return 0;
    text[n] = '\0';
    char *end;
    long pid = strtol(text, &end, 10);
    if (end == text || *end != '\n' || pid <= 0) return 0;
    return platform_process_running(pid) ? pid : 0;
}

// The holder writes its pid right after it takes the lock: wait up to a second for it.
static long wait_for_holder_pid(int fd) {
    long pid = 0;
    for (int i = 0; i < 100 && (pid = holder_pid(fd)) == 0; i++) nanosleep(&(struct timespec){0, 10000000}, NULL);
    return pid;
}

int run_lock_take(RunLock *lock, const char *dir, char err[ERR_LEN]) {
    char path[4200];
    snprintf(path, sizeof(path), "%s/%s", dir, RUN_LOCK_NAME);
    lock->held = 0;
    lock->fd = platform_open(path, PLATFORM_READ | PLATFORM_WRITE | PLATFORM_CREATE | PLATFORM_NO_FOLLOW);
    if (lock->fd < 0) {
        snprintf(err, ERR_LEN, "cannot create %s: %s", path, strerror(errno));
        return RUN_LOCK_FAILED;
    }
    int locked = platform_lock(lock->fd);
    if (locked != PLATFORM_LOCK_HELD) {
        int error = errno, busy = locked == PLATFORM_LOCK_BUSY;
        if (busy) {
            long pid = wait_for_holder_pid(lock->fd);
            char holder[64] = "another process (its pid is not written in the lock)";
            if (pid) snprintf(holder, sizeof(holder), "another run (pid %ld)", pid);
            snprintf(err, ERR_LEN, "%s is in use by %s, which holds %s: wait for it to end or stop it, or give "
                     "another --out", dir, holder, path);
        } else {
            snprintf(err, ERR_LEN, "cannot lock %s: %s", path, strerror(error));
        }
        close(lock->fd);
        return busy ? RUN_LOCK_BUSY : locked == PLATFORM_LOCK_UNSUPPORTED ? RUN_LOCK_UNSUPPORTED : RUN_LOCK_FAILED;
    }
    lock->held = 1;
    char text[32];
    int n = snprintf(text, sizeof(text), "%ld\n", platform_process_id());
    if (ftruncate(lock->fd, 0) != 0 || platform_write_at(lock->fd, text, (size_t)n, 0) != n) {
        snprintf(err, ERR_LEN, "cannot write %s: %s", path, strerror(errno));
        run_lock_release(lock);
        return RUN_LOCK_FAILED;
    }
    return RUN_LOCK_HELD;
}

void run_lock_release(RunLock *lock) {
    if (!lock->held) return;
    int emptied = ftruncate(lock->fd, 0);  // an empty file: no holder (a failure here changes nothing)
    (void)emptied;
    close(lock->fd);
    lock->held = 0;
}
