#include "output.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "atomic_file.h"

int output_prepare(const char *path, int *removed, char err[ERR_LEN]) {
    *removed = 0;
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        snprintf(err, ERR_LEN, "%s: %s: give the name of a file to write", path,
                 S_ISDIR(st.st_mode) ? "is a directory" : "not a regular file");
        return -1;
    }
    int n = atomic_file_remove_stale(path, err);
    if (n < 0) return -1;
    *removed = n;
    AtomicFile probe;  // the directory takes new files
    if (atomic_file_open(&probe, path, err) != 0) return -1;
    atomic_file_abort(&probe);
    return 0;
}
