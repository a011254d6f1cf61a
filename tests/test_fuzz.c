// Replays through the fuzz targets (tests/fuzz/) their committed seeds and every input that
// ever crashed one of them (tests/fuzz/crashers/<target>/), each in a child process so that a
// crash is a failure here rather than the end of the test run.
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fuzz/fuzz.h"
#include "test.h"

typedef int (*FuzzTarget)(const uint8_t *data, size_t size);

// Runs every file in dir through target; returns how many there were.
static int replay_dir(const char *dir, FuzzTarget target) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    int count = 0;
    struct dirent *e;
    char path[1024];
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.' || strcmp(e->d_name, "README.md") == 0) continue;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        size_t n;
        char *bytes = test_read_file(path, &n);
        if (!CHECK(bytes != NULL, "cannot read %s", path)) continue;
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) _exit(target((const uint8_t *)bytes, n) == 0 ? 0 : 3);
        int status = -1;
        waitpid(pid, &status, 0);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: %s %d", path,
              WIFSIGNALED(status) ? "killed by signal" : "exit status",
              WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
        free(bytes);
        count++;
    }
    closedir(d);
    return count;
}

TEST(fuzz_seeds_and_crashers_replay) {
    static const struct { const char *name; FuzzTarget target; } targets[] = {
        {"checkpoint", fuzz_checkpoint}, {"safetensors", fuzz_safetensors}, {"json", fuzz_json},
        {"corpus", fuzz_corpus},         {"prompt", fuzz_prompt},           {"probe_file", fuzz_probe_file},
    };
    for (size_t i = 0; i < sizeof(targets) / sizeof(targets[0]); i++) {
        char dir[256];
        snprintf(dir, sizeof(dir), "tests/fuzz/seeds/%s", targets[i].name);
        int seeds = replay_dir(dir, targets[i].target);
        snprintf(dir, sizeof(dir), "tests/fuzz/crashers/%s", targets[i].name);
        int crashers = replay_dir(dir, targets[i].target);
        printf("    fuzz_%s: %d seeds, %d past crashers replayed\n", targets[i].name, seeds, crashers);
        CHECK(seeds > 0, "fuzz_%s has no seeds in tests/fuzz/seeds/%s", targets[i].name, targets[i].name);
    }
}
