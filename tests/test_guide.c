// The learner's guide, docs/how-a-step-runs.md, cannot go stale silently: every
// `path: function()` it names in code quotes must be a file that defines the function (or, a
// header, declares it), and every path it names in code quotes must exist. Its list of hops
// from train.c's main to a multiply-add must be the code's path: each function defined in its
// file and calling the next, the last holding the statement the list quotes, and the sentence
// after the list counting them right. The README links it near the top. A checker that could
// not fail would prove nothing, so each is also run on texts that name what is not there.
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

// Checks the hop list of the markdown text `what` (HOPS_START to HOPS_END, a numbered line
// per hop, `file: function()` first, the last line's second quote the statement the last
// function holds) against the code, and the sentence after it, "That is N calls from `main`
// through M files". Returns the problems (each printed); *hops and *files count the list.
static int check_hops(const char *what, const char *text, int *hops, int *files) {
    char paths[MAX_HOPS][128], names[MAX_HOPS][64], statement[256] = "";
    const char *start = strstr(text, HOPS_START), *stop = start ? strstr(start, HOPS_END) : NULL;
    int problems = 0;
    *hops = *files = 0;
    if (!stop) {
        printf("    %s has no list of hops (%s ... %s)\n", what, HOPS_START, HOPS_END);
        return 1;
    }
    for (const char *line = strchr(start, '\n') + 1; line < stop && *hops < MAX_HOPS; line = strchr(line, '\n') + 1) {
        const char *end = strchr(line, '\n');
        char quote[256];
        const char *after = isdigit((unsigned char)line[0]) ? next_quote(line, end, quote, sizeof(quote)) : NULL;
        const char *colon = after ? strstr(quote, ": ") : NULL;
        if (!colon || !ends_with(quote, strlen(quote), "()")) continue;
        snprintf(paths[*hops], sizeof(paths[0]), "%.*s", (int)(colon - quote), quote);
        snprintf(names[*hops], sizeof(names[0]), "%.*s", (int)(strlen(colon + 2) - 2), colon + 2);
        if (!next_quote(after, end, statement, sizeof(statement))) statement[0] = '\0';
        int seen = 0;
        for (int i = 0; i < *hops; i++) seen |= strcmp(paths[i], paths[*hops]) == 0;
        *files += !seen;
        (*hops)++;
    }
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
