// The floors of the house: each room (a directory of the sources, and the programs train.c and
// generate.c) includes only rooms on floors below its own, read from the sources' #include
// lines as tests/test_guide.c reads the guide; so common/ includes nothing of another room,
// and the arrows between rooms run one way. And viewer/ only draws: no file of it runs the
// model (a forward or backward pass, or a measure that runs one). Each checker is also run on
// texts that break its rule, so that it can fail.
#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

// The floors, from the ground up: a room may include rooms of lower floors only (its own files
// too), not those beside it on its floor. The order README.md's table and the developers'
// map give; today data/ includes only common/, and analysis/ nothing of data/ or format/, which
// their floors would allow. tests/ and scripts/ are no rooms: they may include anything.
static const struct {
    const char *room;
    int floor;
} floors[] = {
    {"common", 0},                                 // depends on nothing
    {"kernels", 1},    {"dist", 1},                // the products; MPI's processes
    {"model", 2},                                  // the network as fp32 math
    {"data", 3},                                   // the corpus, the vocabulary, batches, tasks
    {"format", 4},                                 // files: checkpoints, the probe file
    {"analysis", 5},                               // what measures the model
    {"viewer", 6},                                 // the pages and pictures
    {"generation", 7},                             // sampling, the cache, scoring, recording
    {"training", 8},                               // the machinery of a run
    {"programs", 9},                               // train.c, generate.c
    {"web", 10},                                   // the page: the programs as WebAssembly, its inspector
};
#define NUM_ROOMS ((int)(sizeof(floors) / sizeof(floors[0])))

// Directories of the tree that are no rooms (or hold no sources).
static const char *const not_rooms[] = {"tests", "scripts", "docs", "exercises"};

static int floor_of(const char *room) {
    for (int i = 0; i < NUM_ROOMS; i++)
        if (strcmp(floors[i].room, room) == 0) return floors[i].floor;
    return -1;
}

static int is_source(const char *name) {
    const char *dot = strrchr(name, '.');
    return dot && (!strcmp(dot, ".c") || !strcmp(dot, ".h") || !strcmp(dot, ".inc"));
}

// The room of the file an include line of a file of room `room` names, `included` relative to
// the room's directory ("../model/gpt.h": model; "gpt.h": the room itself), into out; 0 when it
// names no file of the tree (a generated file: build/gen's pages).
static int included_room(const char *room, const char *included, char *out, size_t size) {
    char path[512];
    int programs = strcmp(room, "programs") == 0;
    if (strncmp(included, "../", 3) == 0) snprintf(path, sizeof(path), "%s", included + 3);
    else if (programs) snprintf(path, sizeof(path), "%s", included);
    else snprintf(path, sizeof(path), "%s/%s", room, included);
    if (!test_file_exists(path)) return 0;
    const char *slash = strchr(path, '/');
    if (slash) snprintf(out, size, "%.*s", (int)(slash - path), path);
    else snprintf(out, size, "programs");
    return 1;
}

// Checks the include lines of text (the file `path` of room `room`) against the floors; returns
// the problems, each printed.
static int check_includes(const char *room, const char *path, const char *text) {
    int problems = 0, own = floor_of(room);
    for (const char *line = text; *line; line += strcspn(line, "\n") + (line[strcspn(line, "\n")] == '\n')) {
        if (strncmp(line, "#include \"", 10) != 0) continue;
        char included[256], target[64];
        snprintf(included, sizeof(included), "%.*s", (int)strcspn(line + 10, "\"\n"), line + 10);
        if (!included_room(room, included, target, sizeof(target)) || strcmp(target, room) == 0) continue;
        int theirs = floor_of(target);
        if (theirs >= 0 && theirs < own) continue;
        printf("    %s includes %s: %s/ (floor %d) may include only rooms below it, and %s/ is on floor %d\n", path,
               included, room, own, target, theirs);
        problems++;
    }
    return problems;
}

// Whether code (outside comments) calls a function whose name ends with suffix, or is name.
static int calls_name(const char *code, const char *name, int suffix) {
    size_t n = strlen(name);
    for (const char *p = strstr(code, name); p; p = strstr(p + 1, name)) {
        const char *line = p;
        while (line > code && line[-1] != '\n') line--;
        const char *comment = strstr(line, "//");
        if (comment && comment < p) continue;
        int starts = p == code || !(isalnum((unsigned char)p[-1]) || p[-1] == '_');
        if ((suffix || starts) && p[n] == '(') return 1;
    }
    return 0;
}

// Checks that text (the file `path` of viewer/) runs no pass of the model: no call of a
// layer's or the model's forward or backward (..._forward(, ..._backward(), of a step, of the
// key/value cache's passes, or of a measure that runs the forward. Returns the problems.
static int check_only_draws(const char *path, const char *text) {
    static const char *const suffixes[] = {"_forward", "_backward"};
    static const char *const names[] = {"train_step", "kvcache_prefill", "kvcache_step", "score_tokens",
                                        "head_importance", "logit_lens_compute", "attention_record"};
    int problems = 0;
    for (int i = 0; i < 2; i++)
        if (calls_name(text, suffixes[i], 1))
            printf("    %s calls a ...%s function: viewer/ only draws\n", path, suffixes[i]), problems++;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (calls_name(text, names[i], 0)) printf("    %s calls %s: viewer/ only draws\n", path, names[i]), problems++;
    return problems;
}

// Calls fn(room, path, text) for every source of a room (the programs: train.c and generate.c);
// returns the sum of what it returns.
static int each_file(const char *room, int (*fn)(const char *room, const char *path, const char *text)) {
    int problems = 0;
    if (strcmp(room, "programs") == 0) {
        static const char *const programs[] = {"train.c", "generate.c"};
        for (int i = 0; i < 2; i++) {
            size_t len;
            char *text = test_read_file(programs[i], &len);
            if (CHECK(text != NULL, "cannot read %s (run the tests from the repository root)", programs[i]))
                problems += fn(room, programs[i], text);
            free(text);
        }
        return problems;
    }
    DIR *dir = opendir(room);
    if (!CHECK(dir != NULL, "cannot read %s/ (run the tests from the repository root)", room)) return 1;
    struct dirent *e;
    while ((e = readdir(dir)) != NULL) {
        if (!is_source(e->d_name)) continue;
        char path[600];
        snprintf(path, sizeof(path), "%s/%s", room, e->d_name);
        size_t len;
        char *text = test_read_file(path, &len);
        if (CHECK(text != NULL, "cannot read %s", path)) problems += fn(room, path, text);
        free(text);
    }
    closedir(dir);
    return problems;
}

static int viewer_file(const char *room, const char *path, const char *text) { return check_only_draws(path, text); }

TEST(floors_each_room_includes_only_rooms_below) {
    int problems = 0;
    for (int i = 0; i < NUM_ROOMS; i++) problems += each_file(floors[i].room, check_includes);
    CHECK(problems == 0, "%d includes run sideways or up a floor (listed above)", problems);
    // every directory of sources is a room on a floor, or one of the tree's others
    DIR *root = opendir(".");
    if (!CHECK(root != NULL, "cannot read the repository root")) return;
    struct dirent *e;
    while ((e = readdir(root)) != NULL) {
        if (e->d_name[0] == '.' || strncmp(e->d_name, "build", 5) == 0 || strncmp(e->d_name, "out", 3) == 0) continue;
        int known = floor_of(e->d_name) >= 0;
        for (size_t k = 0; k < sizeof(not_rooms) / sizeof(not_rooms[0]); k++)
            known |= !strcmp(e->d_name, not_rooms[k]);
        DIR *sub = known ? NULL : opendir(e->d_name);
        struct dirent *f;
        int sources = 0;
        while (sub && (f = readdir(sub)) != NULL) sources += is_source(f->d_name);
        if (sub) closedir(sub);
        CHECK(sources == 0, "%s/ holds sources but has no floor in tests/test_floors.c", e->d_name);
    }
    closedir(root);
    if (problems == 0)
        printf("    %d rooms on %d floors, common/ the ground: every include runs down\n", NUM_ROOMS,
               floors[NUM_ROOMS - 1].floor + 1);
}

TEST(floors_viewer_only_draws) {
    int problems = each_file("viewer", viewer_file);
    CHECK(problems == 0, "viewer/ runs the model in %d places (listed above): measures belong in analysis/", problems);
}

TEST(floors_checkers_find_what_breaks_them) {
    // includes: common/ up to model/, kernels/ sideways to dist/, viewer/ up to generation/ (and
    // what the floors allow: analysis/ down to format/, a generated file, the programs down)
    static const struct {
        const char *room, *text;
        int problems;
    } includes[] = {
        {"common", "#include \"program.h\"\n#include \"../model/gpt.h\"\n", 1},
        {"kernels", "#include \"kernels.h\"\n#include \"../dist/dist.h\"\n#include \"../common/errors.h\"\n", 1},
        {"viewer", "#include \"../generation/score.h\"\n#include \"../analysis/head_scores.h\"\n", 1},
        {"analysis", "#include \"../model/gpt.h\"\n#include \"../format/checkpoint.h\"\n#include \"nothing.h\"\n", 0},
        {"programs", "#include \"training/run.h\"\n#include \"common/program.h\"\n", 0},
    };
    for (size_t i = 0; i < sizeof(includes) / sizeof(includes[0]); i++) {
        int found = check_includes(includes[i].room, "a test text", includes[i].text);
        CHECK(found == includes[i].problems, "text %zu of %s/: %d problems, want %d", i, includes[i].room, found,
              includes[i].problems);
    }
    static const struct {
        const char *text;
        int problems;
    } views[] = {
        {"    gpt_forward(model, tokens, NULL, 1, t, NULL);\n", 1},
        {"    layernorm_forward(ln, mean, rstd, x, w, b, t, C);\n    head_importance(m, x, t, out, err);\n", 2},
        {"// gpt_forward( runs it, in a comment\n    draw_heatmap(png, att);\n    forward(x);\n", 0},
    };
    for (size_t i = 0; i < sizeof(views) / sizeof(views[0]); i++) {
        int found = check_only_draws("a test text", views[i].text);
        CHECK(found == views[i].problems, "viewer text %zu: %d problems, want %d", i, found, views[i].problems);
    }
}
