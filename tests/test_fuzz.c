// Replays through the fuzz targets (tests/fuzz/) their committed seeds and every input that
// ever crashed one of them (tests/fuzz/crashers/<target>/), each in a child process so that a
// crash is a failure here rather than the end of the test run.
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/fuzz.h"
#include "test.h"

typedef int (*FuzzTarget)(const uint8_t *data, size_t size);

static const struct {
    const char *name;
    FuzzTarget target;
} targets[] = {
    {"checkpoint", fuzz_checkpoint}, {"safetensors", fuzz_safetensors}, {"json", fuzz_json},
    {"corpus", fuzz_corpus},         {"prompt", fuzz_prompt},           {"probe_file", fuzz_probe_file},
};
#define NUM_TARGETS (sizeof(targets) / sizeof(targets[0]))

// `run_tests --child fuzz_replay TARGET PATH`: runs the file PATH through the fuzz target
// TARGET; exits 0, or 3 when the target says it failed (a crash ends it otherwise).
TEST_CHILD(fuzz_replay) {
    for (size_t i = 0; argc == 2 && i < NUM_TARGETS; i++) {
        if (strcmp(targets[i].name, argv[0]) != 0) continue;
        size_t n;
        char *bytes = test_read_file(argv[1], &n);
        int rc = bytes && targets[i].target((const uint8_t *)bytes, n) == 0 ? 0 : 3;
        free(bytes);
        return rc;
    }
    return 2;
}

// Runs every file in dir through the target in a child process of its own; returns how many
// there were.
static int replay_dir(const char *dir, const char *target) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    int count = 0;
    struct dirent *e;
    char path[1024];
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.' || strcmp(e->d_name, "README.md") == 0) continue;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        TestEnd end = test_run_child("fuzz_replay", (const char *[]){target, path, NULL}, 60.0);
        char text[64];
        CHECK(end.status == 0, "%s: %s", path, test_end_text(&end, text));
        count++;
    }
    closedir(d);
    return count;
}

TEST(fuzz_seeds_and_crashers_replay) {
    for (size_t i = 0; i < NUM_TARGETS; i++) {
        char dir[256];
        snprintf(dir, sizeof(dir), "tests/fuzz/seeds/%s", targets[i].name);
        int seeds = replay_dir(dir, targets[i].name);
        snprintf(dir, sizeof(dir), "tests/fuzz/crashers/%s", targets[i].name);
        int crashers = replay_dir(dir, targets[i].name);
        printf("    fuzz_%s: %d seeds, %d past crashers replayed\n", targets[i].name, seeds, crashers);
        CHECK(seeds > 0, "fuzz_%s has no seeds in tests/fuzz/seeds/%s", targets[i].name, targets[i].name);
    }
}
