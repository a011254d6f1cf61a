// The learner's guide, docs/how-a-step-runs.md, cannot go stale silently: every
// `path: function()` it names in code quotes must be a file that defines the function (or, a
// header, declares it), and every path it names in code quotes must exist. Its list of hops
// from train.c's main to a multiply-add must be the code's path: each function defined in its
// file and calling the next, the last holding the statement the list quotes, and the sentence
// after the list counting them right; and its debugger recipe, run under gdb on the debug
// build, must stop with a backtrace that is that list of hops. The README links it near the
// top. A checker that could not fail would prove nothing, so each is also run on texts that
// name what is not there.
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test.h"

#define GUIDE "docs/how-a-step-runs.md"

static int ends_with(const char *s, size_t n, const char *suffix) {
    size_t k = strlen(suffix);
    return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

static int is_source_path(const char *s, size_t n) {
    return ends_with(s, n, ".c") || ends_with(s, n, ".h") || ends_with(s, n, ".inc");
}

// Whether text defines function `name` (or, when declared_is_enough, declares it): a line that
// starts a declaration (not indented, not a comment, preprocessor line or closing brace)
// names it, followed by "(", and the next "{" comes before the next ";" (a definition) or, for
// a declaration, a ";" follows.
static int defines(const char *text, const char *name, int declared_is_enough) {
    size_t n = strlen(name);
    for (const char *line = text; *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : line + strlen(line)) {
        if (!isalpha((unsigned char)line[0]) && line[0] != '_') continue;
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        for (const char *p = line; p + n < line + len; p++) {
            if (memcmp(p, name, n) != 0 || p[n] != '(') continue;
            if (p > line && (isalnum((unsigned char)p[-1]) || p[-1] == '_')) continue;
            size_t brace = strcspn(p, "{;");
            if (p[brace] == '{' || (p[brace] == ';' && declared_is_enough)) return 1;
        }
    }
    return 0;
}

// Checks one code quote of the text `what`, s (n bytes): returns -1 when it is no reference
// (a name, an option, a shape), 0 when what it names is there, 1 when not (printed).
static int check_quote(const char *what, const char *s, size_t n) {
    char quote[256];
    if (n == 0 || n >= sizeof(quote)) return -1;
    memcpy(quote, s, n);
    quote[n] = '\0';
    char path[256], function[128];
    int named = 0;
    const char *colon = strstr(quote, ": ");
    if (colon && is_source_path(quote, (size_t)(colon - quote)) && ends_with(quote, n, "()")) {
        snprintf(path, sizeof(path), "%.*s", (int)(colon - quote), quote);
        snprintf(function, sizeof(function), "%.*s", (int)(n - (size_t)(colon + 2 - quote) - 2), colon + 2);
        named = 1;
    } else if (strchr(quote, '/') && !strchr(quote, ' ') && (is_source_path(quote, n) || ends_with(quote, n, ".md"))) {
        snprintf(path, sizeof(path), "%s", quote);
    } else if (!strcmp(quote, "train.c") || !strcmp(quote, "generate.c")) {
        snprintf(path, sizeof(path), "%s", quote);
    } else {
        return -1;
    }
    size_t len;
    char *text = test_read_file(path, &len);
    if (!text) {
        printf("    %s names %s, which does not exist\n", what, quote);
        return 1;
    }
    int missing = named && !defines(text, function, ends_with(path, strlen(path), ".h"));
    if (missing) printf("    %s names %s, but %s does not define %s\n", what, quote, path, function);
    free(text);
    return missing;
}

// Checks every code quote (`...`) of the markdown text `what`; returns the problems, and in
// *references how many quotes named a file or a function.
static int check_guide(const char *what, const char *text, int *references) {
    int problems = 0;
    *references = 0;
    for (const char *p = strchr(text, '`'); p; p = strchr(p, '`')) {
        const char *end = strchr(p + 1, '`');
        if (!end) break;
        int found = check_quote(what, p + 1, (size_t)(end - p - 1));
        if (found >= 0) (*references)++, problems += found;
        p = end + 1;
    }
    return problems;
}

// The body of function `name` defined in text (from its "{" to the matching "}", braces in
// comments and literals skipped), malloc'd; NULL when text does not define it.
static char *function_body(const char *text, const char *name) {
    size_t n = strlen(name);
    for (const char *line = text; *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : line + strlen(line)) {
        if (!isalpha((unsigned char)line[0]) && line[0] != '_') continue;
        const char *end = strchr(line, '\n'), *p = line;
        size_t len = end ? (size_t)(end - line) : strlen(line);
        while ((p = strstr(p, name)) && p < line + len) {
            int starts = p == line || (!isalnum((unsigned char)p[-1]) && p[-1] != '_');
            if (!starts || p[n] != '(' || p[strcspn(p, "{;")] != '{') {
                p += n;
                continue;
            }
            const char *open = p + strcspn(p, "{"), *q = open;
            int depth = 0;
            for (; *q; q++) {
                if (q[0] == '/' && q[1] == '/') q += strcspn(q, "\n");
                else if (q[0] == '/' && q[1] == '*') q = strstr(q + 2, "*/") ? strstr(q + 2, "*/") + 1 : q + strlen(q) - 1;
                else if (*q == '"' || *q == '\'') {
                    char quote = *q;
                    for (q++; *q && *q != quote; q++)
                        if (*q == '\\' && q[1]) q++;
                } else if (*q == '{') depth++;
                else if (*q == '}' && --depth == 0) break;
                if (!*q) break;
            }
            size_t size = (size_t)(q - open) + (*q ? 1 : 0);
            char *body = malloc(size + 1);
            memcpy(body, open, size);
            body[size] = '\0';
            return body;
        }
    }
    return NULL;
}

// Whether code calls function `name`: the name, not part of a longer one, then "(".
static int calls(const char *code, const char *name) {
    size_t n = strlen(name);
    for (const char *p = strstr(code, name); p; p = strstr(p + 1, name))
        if ((p == code || (!isalnum((unsigned char)p[-1]) && p[-1] != '_')) && p[n] == '(') return 1;
    return 0;
}

// The next code quote (`...`) of a line [p, end): its text into out; returns where it ends, or
// NULL when the line has none.
static const char *next_quote(const char *p, const char *end, char *out, size_t size) {
    const char *open = memchr(p, '`', (size_t)(end - p));
    const char *close = open ? memchr(open + 1, '`', (size_t)(end - open - 1)) : NULL;
    if (!close || (size_t)(close - open - 1) >= size) return NULL;
    snprintf(out, size, "%.*s", (int)(close - open - 1), open + 1);
    return close + 1;
}

#define HOPS_START "<!-- hops"
#define HOPS_END "<!-- end of hops -->"
#define MAX_HOPS 32

// The hop list of the markdown text (HOPS_START to HOPS_END, a numbered line per hop, `file:
// function()` first, the last line's second quote the statement the last function holds):
// each hop's file and function into paths and names, the statement into statement (size
// bytes); returns how many hops, or -1 when the text has no list.
static int read_hops(const char *text, char paths[MAX_HOPS][128], char names[MAX_HOPS][64], char *statement,
                     size_t size) {
    const char *start = strstr(text, HOPS_START), *stop = start ? strstr(start, HOPS_END) : NULL;
    int hops = 0;
    statement[0] = '\0';
    if (!stop) return -1;
    for (const char *line = strchr(start, '\n') + 1; line < stop && hops < MAX_HOPS; line = strchr(line, '\n') + 1) {
        const char *end = strchr(line, '\n');
        char quote[256];
        const char *after = isdigit((unsigned char)line[0]) ? next_quote(line, end, quote, sizeof(quote)) : NULL;
        const char *colon = after ? strstr(quote, ": ") : NULL;
        if (!colon || !ends_with(quote, strlen(quote), "()")) continue;
        snprintf(paths[hops], sizeof(paths[0]), "%.*s", (int)(colon - quote), quote);
        snprintf(names[hops], sizeof(names[0]), "%.*s", (int)(strlen(colon + 2) - 2), colon + 2);
        if (!next_quote(after, end, statement, size)) statement[0] = '\0';
        hops++;
    }
    return hops;
}

// Checks the hop list of the markdown text `what` (read_hops) against the code, and the
// sentence after it, "That is N calls from `main` through M files". Returns the problems (each
// printed); *hops and *files count the list.
static int check_hops(const char *what, const char *text, int *hops, int *files) {
    char paths[MAX_HOPS][128], names[MAX_HOPS][64], statement[256];
    int problems = 0;
    *files = 0;
    *hops = read_hops(text, paths, names, statement, sizeof(statement));
    if (*hops < 0) {
        *hops = 0;
        printf("    %s has no list of hops (%s ... %s)\n", what, HOPS_START, HOPS_END);
        return 1;
    }
    for (int h = 0; h < *hops; h++) {
        int seen = 0;
        for (int i = 0; i < h; i++) seen |= strcmp(paths[i], paths[h]) == 0;
        *files += !seen;
    }
    const char *stop = strstr(text, HOPS_END);
    for (int i = 0; i < *hops; i++) {
        size_t len;
        char *code = test_read_file(paths[i], &len), *body = code ? function_body(code, names[i]) : NULL;
        int last = i + 1 == *hops;
        if (!body) printf("    %s: hop %d, %s does not define %s\n", what, i + 1, paths[i], names[i]);
        else if (!last && !calls(body, names[i + 1]))
            printf("    %s: hop %d, %s: %s does not call %s\n", what, i + 1, paths[i], names[i], names[i + 1]);
        else if (last && (!statement[0] || !strstr(body, statement)))
            printf("    %s: the last hop, %s: %s, does not hold `%s`\n", what, paths[i], names[i], statement);
        else problems--;
        problems++;
        free(body), free(code);
    }
    int calls_said = -1, files_said = -1;
    const char *count = strstr(stop, "That is ");
    if (!count || sscanf(count, "That is %d calls from `main` through %d files", &calls_said, &files_said) != 2 ||
        calls_said != *hops - 1 || files_said != *files) {
        printf("    %s: after the hops, want \"That is %d calls from `main` through %d files\"\n", what, *hops - 1,
               *files);
        problems++;
    }
    return problems + (*hops < 2);
}

TEST(guide_hops_are_the_code_path) {
    size_t len;
    char *guide = test_read_file(GUIDE, &len);
    if (!CHECK(guide != NULL, "cannot read %s (run the tests from the repository root)", GUIDE)) return;
    int hops, files, problems = check_hops(GUIDE, guide, &hops, &files);
    CHECK(problems == 0, "%s: %d problems in its list of hops (listed above)", GUIDE, problems);
    if (problems == 0)
        printf("    %s: from train.c's main to the multiply-add, %d calls through %d files, each calling the next\n",
               GUIDE, hops - 1, files);
    free(guide);
}

TEST(guide_hops_checker_finds_a_broken_path) {
    static const char *const texts[] = {
        // the order of two hops swapped: take_step does not call train_step, nor train_step
        // data_parallel_step
        HOPS_START " -->\n1. `train.c: main()`\n2. `training/step.c: take_step()`\n3. `model/train_step.c: train_step()`\n"
        "4. `training/data_parallel.c: data_parallel_step()`\n" HOPS_END
        "\nThat is 3 calls from `main` through 4 files.\n",
        // the last hop without the statement it quotes
        HOPS_START " -->\n1. `model/gpt.c: block_forward()`\n2. `kernels/plain.c: linear_forward()` does "
        "`sum -= x[c] / w[c]`\n" HOPS_END "\nThat is 1 calls from `main` through 2 files.\n",
        // a function the file does not define
        HOPS_START " -->\n1. `model/gpt.c: gpt_forward()`\n2. `model/gpt.c: linear_forward()` does `sum`\n" HOPS_END
        "\nThat is 1 calls from `main` through 1 files.\n",
        // a right path, miscounted
        HOPS_START " -->\n1. `model/gpt.c: block_forward()`\n2. `kernels/plain.c: linear_forward()` does "
        "`sum += x[c] * w[c]`\n" HOPS_END "\nThat is 2 calls from `main` through 2 files.\n",
    };
    for (int i = 0; i < 4; i++) {
        int hops, files;
        CHECK(check_hops("a broken list", texts[i], &hops, &files) > 0, "broken list %d passed", i + 1);
    }
    static const char *right = HOPS_START " -->\n1. `model/gpt.c: block_forward()`\n2. `kernels/plain.c: "
                               "linear_forward()` does `sum += x[c] * w[c]`\n" HOPS_END
                               "\nThat is 1 calls from `main` through 2 files.\n";
    int hops, files, problems = check_hops("a right list", right, &hops, &files);
    CHECK(problems == 0 && hops == 2 && files == 2, "a right list of two hops: %d problems, %d hops, %d files", problems,
          hops, files);
}

TEST(guide_names_what_exists) {
    size_t len;
    char *guide = test_read_file(GUIDE, &len);
    if (!CHECK(guide != NULL, "cannot read %s (run the tests from the repository root)", GUIDE)) return;
    int references, problems = check_guide(GUIDE, guide, &references);
    CHECK(problems == 0, "%s names %d function(s) or file(s) that are not where it says (listed above)", GUIDE,
          problems);
    CHECK(references >= 40, "%s: only %d references to the code found", GUIDE, references);
    if (problems == 0) printf("    %s: %d references to files and functions, all found\n", GUIDE, references);
    free(guide);
}

TEST(guide_checker_finds_what_is_missing) {
    static const char *text = "`model/gpt.c: gpt_forward()` and `model/gpt.h: gpt_forward()` exist; "
                              "`model/gpt.c: gpt_fly()` does not, nor `model/nothing.c` or `model/gpt.c: gpt()`; "
                              "`gpt_free()` alone, `--steps` and (N, C) are not references";
    int references, problems = check_guide("the checker's test text", text, &references);
    CHECK(problems == 3 && references == 5, "a text naming a missing function, a missing file and a prefix of a "
          "name: %d problems in %d references, want 3 in 5", problems, references);
}

TEST(guide_linked_from_readme_top) {
    size_t len;
    char *readme = test_read_file("README.md", &len);
    if (!CHECK(readme != NULL, "cannot read README.md")) return;
    const char *link = strstr(readme, "(docs/how-a-step-runs.md)");
    int line = 1;
    for (const char *p = readme; link && p < link; p++) line += *p == '\n';
    CHECK(link && line <= 30, "README.md links docs/how-a-step-runs.md %s", link ? "only far down" : "nowhere");
    free(readme);
}

// ---------------------------------------------------------------------------------------
// the debugger's path: the guide's recipe run under gdb

#define RECIPE_START "**Stepping through it.**"
#define MAX_FRAMES 64

// The guide's recipe (the code block after RECIPE_START): the environment assignments before
// `gdb` (env), the program and its arguments after `--args` (words, split at spaces), the
// `(gdb) COMMAND` lines (commands); and the text after the block up to the next section
// (after, malloc'd), which names the frames the backtrace holds besides the hops.
typedef struct {
    char words[TEST_MAX_ARGS][256];
    int n_env, n_args, n_commands;
    char env[4][256], commands[8][128];
    char *after;
} Recipe;

// Reads the guide's recipe into r; returns 0, or -1 when the guide has none.
static int read_recipe(const char *text, Recipe *r) {
    memset(r, 0, sizeof(*r));
    const char *start = strstr(text, RECIPE_START), *line = start ? strstr(start, "\n    ") : NULL;
    if (!line) return -1;
    for (line++; strncmp(line, "    ", 4) == 0 && strchr(line, '\n'); line = strchr(line, '\n') + 1) {
        const char *end = strchr(line, '\n'), *p = line + 4;
        char text_line[1024];
        snprintf(text_line, sizeof(text_line), "%.*s", (int)(end - p), p);
        if (strncmp(text_line, "(gdb) ", 6) == 0 && r->n_commands < 8) {
            snprintf(r->commands[r->n_commands++], sizeof(r->commands[0]), "%s", text_line + 6);
            continue;
        }
        if (!strstr(text_line, " gdb --args ")) continue;
        int in_args = 0;
        for (char *word = strtok(text_line, " "); word; word = strtok(NULL, " ")) {
            if (in_args && r->n_args < TEST_MAX_ARGS - 1)
                snprintf(r->words[r->n_args++], sizeof(r->words[0]), "%s", word);
            else if (strcmp(word, "--args") == 0) in_args = 1;
            else if (strchr(word, '=') && r->n_env < 4) snprintf(r->env[r->n_env++], sizeof(r->env[0]), "%s", word);
        }
    }
    const char *next_heading = strstr(line, "\n## ");
    size_t n = next_heading ? (size_t)(next_heading - line) : strlen(line);
    r->after = malloc(n + 1);
    memcpy(r->after, line, n);
    r->after[n] = '\0';
    return r->n_args > 0 && r->n_commands > 0 ? 0 : -1;
}

// The function names of gdb's backtrace in output ("#0  name (...)", "#3  0x... in name ()"),
// innermost first, up to and with main; returns how many.
static int backtrace_names(const char *output, char names[MAX_FRAMES][128]) {
    int n = 0;
    for (const char *p = strstr(output, "\n#0 "); p && n < MAX_FRAMES; p = strstr(p + 1, "\n#")) {
        const char *name = p + 1 + strcspn(p + 1, " ");
        name += strspn(name, " ");
        if (strncmp(name, "0x", 2) == 0 && strstr(name, " in ") && strstr(name, " in ") < strchr(name, '\n'))
            name = strstr(name, " in ") + 4;
        snprintf(names[n], sizeof(names[0]), "%.*s", (int)strcspn(name, " \n("), name);
        if (strcmp(names[n++], "main") == 0) break;
    }
    return n;
}

// Checks a backtrace (names, innermost first) against the hops (names of the guide's list, main
// first): the frames, less those the guide's text after the recipe names in code quotes (the
// OpenMP library's and the compiler's), must be the hops from the last to main. Returns the
// problems, each printed.
static int check_backtrace(char frames[MAX_FRAMES][128], int n_frames, char hops[MAX_HOPS][64], int n_hops,
                           const char *explained) {
    int problems = 0, h = n_hops - 1;
    for (int f = 0; f < n_frames; f++) {
        if (h >= 0 && strcmp(frames[f], hops[h]) == 0) {
            h--;
            continue;
        }
        char quoted[136];
        snprintf(quoted, sizeof(quoted), "`%s`", frames[f]);
        if (strstr(explained, quoted)) continue;
        printf("    frame #%d, %s, is neither the next hop (%s) nor a frame the guide explains\n", f, frames[f],
               h >= 0 ? hops[h] : "none left");
        problems++;
    }
    if (h >= 0) printf("    the backtrace ends before hop %d, %s\n", h + 1, hops[h]), problems++;
    return problems;
}

// Whether gdb runs here: `gdb --version` exits 0.
static int gdb_runs(void) {
    const char *argv[] = {"gdb", "--version", NULL}, *log = "tests/tmp/gdb_version.txt";
    TestSpawn how = {.out_path = log, .search_path = 1};
    TestChild c;
    TestEnd end;
    if (!test_make_dir("tests/tmp") || test_child_start(&c, argv, &how) != 0) return 0;
    if (!test_child_wait(&c, 60, &end)) test_child_kill(&c, &end);
    return end.status == 0;
}

// Runs the recipe r under gdb -batch in directory dir (where the run's --out goes), with the
// recipe's environment and its program's path made absolute; gdb's output is the run's.
static TestRun run_under_gdb(Recipe *r, const char *dir) {
    char cwd[1024], program[2048], log[600];
    if (!getcwd(cwd, sizeof(cwd))) cwd[0] = '\0';
    snprintf(program, sizeof(program), "%s/%s", cwd, r->words[0]);
    snprintf(log, sizeof(log), "%s/gdb.txt", dir);
    const char *argv[TEST_MAX_ARGS];
    int n = 0;
    argv[n++] = "gdb", argv[n++] = "-batch", argv[n++] = "-nx";
    for (int i = 0; i < r->n_commands && n + 2 < TEST_MAX_ARGS; i++) argv[n++] = "-ex", argv[n++] = r->commands[i];
    argv[n++] = "--args", argv[n++] = program;
    for (int i = 1; i < r->n_args && n < TEST_MAX_ARGS - 1; i++) argv[n++] = r->words[i];
    argv[n] = NULL;
    char saved[4][256] = {{0}};
    int had[4] = {0};
    for (int i = 0; i < r->n_env; i++) {  // CHARGPT_KERNELS=plain: set for gdb, which passes it on
        char *eq = strchr(r->env[i], '=');
        *eq = '\0';
        const char *old = getenv(r->env[i]);
        if ((had[i] = old != NULL)) snprintf(saved[i], sizeof(saved[i]), "%s", old);
        test_set_env(r->env[i], eq + 1);
    }
    TestSpawn how = {.out_path = log, .cwd = dir, .search_path = 1};
    TestRun run = test_run_spawned(argv, &how, 600);
    for (int i = 0; i < r->n_env; i++) test_set_env(r->env[i], had[i] ? saved[i] : NULL);
    return run;
}

// The guide's recipe, run as it says under gdb -batch on the debug build (`make test` builds it
// and names its directory in CHARGPT_DEBUG_BIN), stops in the plain kernels' linear_forward
// with a backtrace that is exactly the guide's hops, main to the multiply-add, and frames the
// guide explains: no probe, no other path. It follows the guide: the hops and the recipe are
// read from it, so a hop that moves is checked where it moves to.
TEST(guide_debugger_backtrace_is_the_hops) {
    const char *bin = getenv("CHARGPT_DEBUG_BIN");
    if (!bin || !*bin) {
        test_skip("the debug build's directory is not given (CHARGPT_DEBUG_BIN: make test builds it and gives it)");
        return;
    }
    if (test_emulated()) {
        test_skip("the debugger runs on the native build");
        return;
    }
    if (!gdb_runs()) {
        test_skip("gdb is not installed here (Debian: apt-get install gdb)");
        return;
    }
    size_t len;
    char *guide = test_read_file(GUIDE, &len);
    if (!CHECK(guide != NULL, "cannot read %s (run the tests from the repository root)", GUIDE)) return;
    char paths[MAX_HOPS][128], hops[MAX_HOPS][64], statement[256];
    int n_hops = read_hops(guide, paths, hops, statement, sizeof(statement));
    Recipe r;
    int read = read_recipe(guide, &r);
    free(guide);
    if (!CHECK(n_hops >= 2 && read == 0, "%s: no list of hops, or no recipe after %s", GUIDE, RECIPE_START)) {
        free(r.after);
        return;
    }
    char where[64];
    snprintf(where, sizeof(where), "%s/", bin);
    CHECK(strncmp(r.words[0], where, strlen(where)) == 0, "the recipe runs %s, not a program of the debug build in %s",
          r.words[0], bin);
    CHECK(strncmp(r.commands[0], "break ", 6) == 0 && strcmp(r.commands[0] + 6, hops[n_hops - 1]) == 0,
          "the recipe's first command, '%s', is not a breakpoint in the last hop, %s", r.commands[0], hops[n_hops - 1]);
    char dir[512];
    if (!test_fresh_dir(dir, sizeof(dir), "tests/tmp", "guide_debugger")) {
        free(r.after);
        return;
    }
    TestRun run = run_under_gdb(&r, dir);
    char frames[MAX_FRAMES][128], breakpoint[160];
    int n_frames = backtrace_names(run.output, frames);
    snprintf(breakpoint, sizeof(breakpoint), "Breakpoint 1, %s (", hops[n_hops - 1]);
    if (!strstr(run.output, breakpoint) && strstr(run.output, "Operation not permitted")) {
        test_skip("gdb cannot trace a process here (a container that does not permit ptrace)");
        test_run_free(&run);
        free(r.after);
        return;
    }
    if (CHECK(run.status == 0 && strstr(run.output, breakpoint) && n_frames > 0,
              "gdb did not stop at the breakpoint in %s (exit status %d): %s", hops[n_hops - 1], run.status,
              run.output)) {
        int problems = check_backtrace(frames, n_frames, hops, n_hops, r.after);
        char path[1024] = "";
        for (int f = n_frames - 1; f >= 0; f--)
            snprintf(path + strlen(path), sizeof(path) - strlen(path), "%s%s", frames[f], f ? " -> " : "");
        CHECK(problems == 0, "the backtrace (%s) is not the guide's %d hops", path, n_hops);
        if (problems == 0) printf("    gdb's backtrace at the guide's breakpoint: %s\n", path);
    }
    test_run_free(&run);
    free(r.after);
}

// The backtrace checker on backtraces gdb could print: the hops with OpenMP's frames, which the
// guide explains, pass; the step-0 probe's path, a frame the guide does not name, and a path
// cut short do not.
TEST(guide_backtrace_checker_finds_another_path) {
    char hops[MAX_HOPS][64] = {"main", "take_step", "data_parallel_step", "train_step", "gpt_forward",
                               "block_forward", "linear_forward"};
    const char *explained = "frames of OpenMP's: `train_step._omp_fn.0` and `GOMP_parallel`";
    static const char *const outputs[] = {
        "\n#0  linear_forward (k=0x1) at kernels/plain.c:31\n#1  0x5 in block_forward (model=0x2) at model/gpt.c:1\n"
        "#2  0x6 in gpt_forward () at model/gpt.c:2\n#3  0x7 in train_step._omp_fn.0 () at model/train_step.c:17\n"
        "#4  0x8 in GOMP_parallel () from /lib/libgomp.so.1\n#5  0x9 in train_step (model=0x3) at m.c:1\n"
        "#6  0xa in data_parallel_step (dp=0x4) at t.c:1\n#7  0xb in take_step (r=0x5) at t.c:2\n"
        "#8  0xc in main (argc=12) at train.c:334\n",
        // the probe at step 0
        "\n#0  linear_forward (k=0x1) at kernels/plain.c:31\n#1  0x5 in block_forward () at model/gpt.c:1\n"
        "#2  0x6 in gpt_forward () at model/gpt.c:2\n#3  0x7 in measure_passage () at training/probe.c:3\n"
        "#4  0x8 in probe_measure () at training/probe.c:4\n#5  0x9 in run_probe_step () at training/probe.c:5\n"
        "#6  0xa in start_timeline () at training/probe.c:6\n#7  0xb in main () at train.c:1\n",
        // a frame the guide does not name (another compiler's outlined region)
        "\n#0  linear_forward () at kernels/plain.c:31\n#1  0x5 in block_forward () at model/gpt.c:1\n"
        "#2  0x6 in gpt_forward () at model/gpt.c:2\n#3  0x7 in .omp_outlined. () at model/train_step.c:17\n"
        "#4  0x9 in train_step () at m.c:1\n#5  0xa in data_parallel_step () at t.c:1\n"
        "#6  0xb in take_step () at t.c:2\n#7  0xc in main () at train.c:334\n",
        // a path cut short: another thread's stack, without main
        "\n#0  linear_forward () at kernels/plain.c:31\n#1  0x5 in block_forward () at model/gpt.c:1\n"
        "#2  0x6 in gpt_forward () at model/gpt.c:2\n#3  0x7 in train_step._omp_fn.0 () at model/train_step.c:17\n"
        "#4  0x8 in start_thread () from /lib/libc.so.6\n",
    };
    for (int i = 0; i < 4; i++) {
        char frames[MAX_FRAMES][128];
        int n = backtrace_names(outputs[i], frames), problems = check_backtrace(frames, n, hops, 7, explained);
        if (i == 0)
            CHECK(n == 9 && problems == 0, "the hops with OpenMP's frames: %d frames, %d problems", n, problems);
        else CHECK(problems > 0, "wrong backtrace %d passed", i);
    }
}
