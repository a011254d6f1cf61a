// The learner's guide, docs/how-a-step-runs.md, cannot go stale silently: every
// `path: function()` it names in code quotes must be a file that defines the function (or, a
// header, declares it), and every path it names in code quotes must exist. The README links
// it near the top. A checker that could not fail would prove nothing, so it is also run on a
// text naming a missing file and a missing function.
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
