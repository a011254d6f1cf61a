// The README and the docs/ pages cannot go stale silently: README.md stays within 300 lines
// (a learner reads it to the end), and what README.md and every .md page under docs/ (its
// folders too: docs/lessons/) point at exists:
// each link's target (relative to the page, as a browser follows it) and its #anchor (a heading
// of the target page), and each path of the tree the text names. A path of the tree starts
// with one of the repository's top-level directories (data/, model/, .ci/, ...: whatever the
// root holds, but what .gitignore's anchored entries say the build or a run makes) and ends in
// a file name with an extension or a '/', or fills a code quote on its own (`tests/mpi`);
// paths under an ignored entry (tests/tmp/, out/), patterns (`tests/test_*.c`), URLs and prose
// such as "training/generation" are not names of the tree. A checker that could not fail would
// prove nothing, so it is also run on a text with broken paths, links and anchors.
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "test.h"

#define README "README.md"
#define README_MAX_LINES 300
#define MAX_ENTRIES 64

// The repository root's top-level directories, and .gitignore's anchored entries ("/out/",
// "/tests/tmp/", "/train"): what a path of the tree may start with, and what it may not.
typedef struct {
    char dirs[MAX_ENTRIES][64];
    int n_dirs;
    char ignored[MAX_ENTRIES][64];
    int n_ignored;
} Tree;

// Whether path (relative to the root) is an ignored entry or lies under one.
static int is_ignored(const Tree *t, const char *path, size_t n) {
    for (int i = 0; i < t->n_ignored; i++) {
        const char *e = t->ignored[i];
        size_t k = strlen(e);
        if (k > 0 && e[k - 1] == '/') k--;
        if (n >= k && memcmp(path, e, k) == 0 && (n == k || path[k] == '/')) return 1;
    }
    return 0;
}

static void read_tree(Tree *t) {
    memset(t, 0, sizeof(*t));
    size_t len;
    char *ignore = test_read_file(".gitignore", &len);
    for (char *line = ignore ? strtok(ignore, "\n") : NULL; line; line = strtok(NULL, "\n"))
        if (line[0] == '/' && !strpbrk(line, "*?[") && strlen(line) < sizeof(t->ignored[0]) &&
            t->n_ignored < MAX_ENTRIES)
            strcpy(t->ignored[t->n_ignored++], line + 1);
    free(ignore);
    DIR *d = opendir(".");
    if (!CHECK(d != NULL, "cannot list the repository root")) return;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        struct stat st;
        size_t n = strlen(e->d_name);
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || !strcmp(e->d_name, ".git") ||
            n >= sizeof(t->dirs[0]) || stat(e->d_name, &st) != 0 || !S_ISDIR(st.st_mode) ||
            is_ignored(t, e->d_name, n) || t->n_dirs == MAX_ENTRIES)
            continue;
        strcpy(t->dirs[t->n_dirs++], e->d_name);
    }
    closedir(d);
}

static int is_path_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
           c == '/' || c == '-';
}

static int line_of(const char *text, const char *p) {
    int line = 1;
    for (const char *q = text; q < p; q++) line += *q == '\n';
    return line;
}

// GitHub's anchor for a heading's text: lower case, spaces as '-', other ASCII punctuation but
// '-' and '_' dropped, letters beyond ASCII kept.
static void heading_anchor(const char *s, size_t n, char *out, size_t size) {
    size_t k = 0;
    for (size_t i = 0; i < n && k + 1 < size; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 'A' && c <= 'Z') out[k++] = (char)(c - 'A' + 'a');
        else if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c >= 0x80) out[k++] = (char)c;
        else if (c == ' ') out[k++] = '-';
    }
    out[k] = '\0';
}

// Whether the markdown text has a heading (outside code blocks) whose anchor is anchor.
static int has_anchor(const char *text, const char *anchor) {
    int fenced = 0;
    for (const char *line = text; *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        if (len >= 3 && !strncmp(line, "```", 3)) fenced = !fenced;
        size_t hashes = strspn(line, "#");
        if (!fenced && hashes >= 1 && hashes <= 6 && hashes < len && line[hashes] == ' ') {
            char got[256];
            heading_anchor(line + hashes + 1, len - hashes - 1, got, sizeof(got));
            if (!strcmp(got, anchor)) return 1;
        }
        line += len + (end != NULL);
    }
    return 0;
}

// A link's target from page `what` (whose text is text): the file, relative to the page's
// directory (none: the page itself), and the anchor in it. Returns 0 when both are there, 1
// when not (printed).
static int check_link(const char *what, const char *text, const char *p, const char *target, size_t n) {
    char file[512], dir[256] = "";
    const char *hash = memchr(target, '#', n), *slash = strrchr(what, '/');
    size_t file_len = hash ? (size_t)(hash - target) : n;
    if (slash) snprintf(dir, sizeof(dir), "%.*s", (int)(slash - what + 1), what);
    const char *rel = target;
    while (file_len >= 3 && !strncmp(rel, "../", 3) && dir[0]) {  // up from the page's directory
        rel += 3, file_len -= 3;
        char *cut = strrchr(dir, '/');
        *cut = '\0';
        cut = strrchr(dir, '/');
        if (cut) cut[1] = '\0';
        else dir[0] = '\0';
    }
    if (file_len > 0) snprintf(file, sizeof(file), "%s%.*s", dir, (int)file_len, rel);
    else snprintf(file, sizeof(file), "%s", what);
    if (file_len > 0 && !test_file_exists(file)) {
        printf("    %s:%d links to %.*s, which does not exist\n", what, line_of(text, p), (int)n, target);
        return 1;
    }
    size_t k = strlen(file);
    if (!hash || (file_len > 0 && (k < 3 || strcmp(file + k - 3, ".md") != 0))) return 0;
    char anchor[256];
    snprintf(anchor, sizeof(anchor), "%.*s", (int)(n - (size_t)(hash + 1 - target)), hash + 1);
    size_t len;
    char *page = file_len > 0 ? test_read_file(file, &len) : NULL;
    int found = has_anchor(page ? page : text, anchor);
    free(page);
    if (!found) printf("    %s:%d links to %.*s, which has no such heading\n", what, line_of(text, p), (int)n, target);
    return !found;
}

// A token of path characters at p (n bytes): returns -1 when it names no path of the tree, 0
// when the path it names exists, 1 when not (printed).
static int check_token(const Tree *t, const char *what, const char *text, const char *p, size_t n) {
    while (n > 0 && p[n - 1] == '.') n--;  // a sentence's full stop
    char path[512];
    snprintf(path, sizeof(path), "%.*s", (int)n, p);
    const char *slash = strchr(path, '/');
    int link_target = p - text >= 2 && p[-1] == '(' && p[-2] == ']';  // checked as a link
    if (!slash || link_target || (p > text && p[-1] == ':') || strstr(path, "..") || strchr("{*<$", p[n]))
        return -1;
    slash = p + (slash - path);
    int top = 0;
    for (int i = 0; i < t->n_dirs && !top; i++)
        top = (size_t)(slash - p) == strlen(t->dirs[i]) && !memcmp(p, t->dirs[i], (size_t)(slash - p));
    const char *last = p + n;
    while (last > p && last[-1] != '/') last--;
    int quoted = p > text && p[-1] == '`' && p[n] == '`';
    if (!top || is_ignored(t, p, n) || !(last == p + n || memchr(last + 1, '.', (size_t)(p + n - last - 1)) || quoted))
        return -1;
    if (test_file_exists(path)) return 0;
    printf("    %s:%d names %s, which does not exist\n", what, line_of(text, p), path);
    return 1;
}

// Checks the markdown text of page `what`; returns the problems, and in *references how many
// links and paths of the tree it checked.
static int check_page(const Tree *t, const char *what, const char *text, int *references) {
    int problems = 0;
    *references = 0;
    for (const char *p = text; (p = strstr(p, "](")) != NULL;) {
        const char *target = p + 2, *end = strchr(target, ')');
        if (!end) break;
        size_t n = (size_t)(end - target);
        char url[16];  // a scheme and "://" within its first bytes
        snprintf(url, sizeof(url), "%.*s", (int)n, target);
        if (n > 0 && !strstr(url, "://") && strncmp(target, "mailto:", 7) != 0)
            (*references)++, problems += check_link(what, text, target, target, n);
        p = end;
    }
    for (const char *p = text; *p;) {
        if (!is_path_char(*p) || (p > text && is_path_char(p[-1]))) {
            p++;
            continue;
        }
        size_t n = 0;
        while (is_path_char(p[n])) n++;
        int found = check_token(t, what, text, p, n);
        if (found >= 0) (*references)++, problems += found;
        p += n;
    }
    return problems;
}

static int count_lines(const char *text, size_t len) {
    int lines = 0;
    for (size_t i = 0; i < len; i++) lines += text[i] == '\n';
    return lines + (len > 0 && text[len - 1] != '\n');
}

TEST(readme_fits_in_300_lines) {
    size_t len;
    char *readme = test_read_file(README, &len);
    if (!CHECK(readme != NULL, "cannot read %s (run the tests from the repository root)", README)) return;
    int lines = count_lines(readme, len);
    CHECK(lines <= README_MAX_LINES, "%s has %d lines: a learner's README stays within %d (move the rest into docs/)",
          README, lines, README_MAX_LINES);
    printf("    %s: %d lines\n", README, lines);
    free(readme);
}

// Adds the .md pages under dir (docs/ and its folders, docs/lessons/) to pages; -1 when a
// folder cannot be listed.
static int list_pages(const char *dir, char pages[][300], int *n_pages) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    int status = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL && *n_pages < MAX_ENTRIES;) {
        char path[300];
        struct stat st;
        size_t n = strlen(e->d_name);
        if (e->d_name[0] == '.' || snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >= (int)sizeof(path) ||
            stat(path, &st) != 0)
            continue;
        if (S_ISDIR(st.st_mode)) status |= list_pages(path, pages, n_pages);
        else if (n > 3 && !strcmp(e->d_name + n - 3, ".md")) strcpy(pages[(*n_pages)++], path);
    }
    closedir(d);
    return status;
}

TEST(readme_and_docs_name_what_exists) {
    Tree tree;
    read_tree(&tree);
    char pages[MAX_ENTRIES][300];
    int n_pages = 0;
    strcpy(pages[n_pages++], README);
    if (!CHECK(list_pages("docs", pages, &n_pages) == 0, "cannot list docs/")) return;
    CHECK(n_pages >= 7, "README.md and only %d docs/ pages", n_pages - 1);
    int all_references = 0, all_problems = 0;
    for (int i = 0; i < n_pages; i++) {
        size_t len;
        char *text = test_read_file(pages[i], &len);
        if (!CHECK(text != NULL, "cannot read %s", pages[i])) continue;
        int references, problems = check_page(&tree, pages[i], text, &references);
        CHECK(problems == 0, "%s names %d path(s), link(s) or anchor(s) that are not there (listed above)", pages[i],
              problems);
        all_references += references, all_problems += problems;
        free(text);
    }
    CHECK(all_references >= 100, "only %d links and paths found in %d pages", all_references, n_pages);
    if (all_problems == 0) printf("    %d pages: %d links and paths of the tree, all found\n", n_pages, all_references);
}

TEST(readme_checker_finds_what_is_missing) {
    Tree tree;
    read_tree(&tree);
    static const char *text =
        "# A heading\n"
        "`tests/test.h`, tests/test_readme.c and `tests/fuzz/` exist; `tests/nothing.c` and tests/gone/ do not.\n"
        "[a](#a-heading) [b](#no-heading) [c](tests/test.h) [d](docs/nothing.md) [e](README.md#no-such-heading)\n"
        "Not paths of the tree: out/ckpt.safetensors, tests/tmp/x.html, `tests/test_*.c`, training/generation,\n"
        "https://example.org/tests/x.c, [f](https://example.org/docs/y.md), ../model/x.c.\n";
    int references, problems = check_page(&tree, "the checker's test text", text, &references);
    CHECK(problems == 5 && references == 10, "a text with 2 missing paths, a missing link target and 2 missing "
          "anchors: %d problems in %d references, want 5 in 10", problems, references);
}
