#include "corpus_set.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/platform.h"
#include "../common/utf8.h"

#define MAX_EXAMPLES 3        // files skipped as not text that the report names
#define NAME_OVERHEAD 32      // bytes an entry's name costs beyond its characters (pointer, malloc)

// The directories the walk has entered, by their identity (device and inode; Windows: volume
// and file index), over the whole walk: a hash set (open addressing, at most half full) whose
// memory counts with the entries' names (held).
typedef struct {
    uint64_t volume, index;
    int used;
} DirId;

typedef struct {
    DirId *ids;  // (cap) slots, cap a power of 2
    size_t n, cap;
} DirSet;

typedef struct {
    const CorpusSetSpec *spec;
    TextReader reader;
    CorpusSetReport *report;
    size_t held;  // bytes of entry names the walk holds, and of its set of directories
    DirSet walked;
} SetReader;

// The characters' worth of the names held, which the text may not use.
static size_t held_chars(const SetReader *s) { return (s->held + 3) / 4; }

// The text may take what the names leave of max_chars.
static void update_budget(SetReader *s) {
    size_t held = held_chars(s);
    s->reader.max_chars = s->spec->max_chars > held ? s->spec->max_chars - held : 0;
}

// Whether `bytes` more would take the walk's names and set past what the text leaves of the
// budget.
static int over_budget(const SetReader *s, size_t bytes) {
    return (s->held + bytes + 3) / 4 > s->spec->max_chars - s->reader.len;
}

static size_t dir_slot(const DirSet *set, uint64_t volume, uint64_t index) {
    uint64_t h = (volume * 0x9E3779B97F4A7C15u) ^ (index * 0xC2B2AE3D27D4EB4Fu);
    size_t i = (size_t)(h ^ (h >> 29)) & (set->cap - 1);
    while (set->ids[i].used && (set->ids[i].volume != volume || set->ids[i].index != index)) i = (i + 1) & (set->cap - 1);
    return i;
}

// Adds the directory path (info) to the walk's set. Returns 1 when it is new, 0 when the walk
// entered it already (through another link), -1 with err when memory runs out, -2 with err
// when the set would take more than the text leaves of the budget.
static int dir_set_add(SetReader *s, const char *path, const PlatformFileInfo *info, char err[ERR_LEN]) {
    DirSet *set = &s->walked;
    if (set->cap && set->ids[dir_slot(set, info->volume, info->index)].used) return 0;
    if (2 * (set->n + 1) > set->cap) {
        size_t cap = set->cap ? 2 * set->cap : 64;
        if (over_budget(s, (cap - set->cap) * sizeof(DirId))) {
            snprintf(err, ERR_LEN, "%s: the walk has entered %zu directories, more than the text's memory leaves "
                     "room to remember", path, set->n);
            return -2;
        }
        DirSet bigger = {calloc(cap, sizeof(DirId)), set->n, cap};
        if (!bigger.ids) {
            snprintf(err, ERR_LEN, "%s: out of memory after %zu directories", path, set->n);
            return -1;
        }
        for (size_t i = 0; i < set->cap; i++)
            if (set->ids[i].used) bigger.ids[dir_slot(&bigger, set->ids[i].volume, set->ids[i].index)] = set->ids[i];
        s->held += (cap - set->cap) * sizeof(DirId);
        free(set->ids);
        *set = bigger;
    }
    set->ids[dir_slot(set, info->volume, info->index)] = (DirId){info->volume, info->index, 1};
    set->n++;
    return 1;
}

// Whether a stop was asked for (TextOptions.stop_requested): the walk then ends at once.
static int stop_asked(const SetReader *s, char err[ERR_LEN]) {
    int (*asked)(void) = s->spec->options.stop_requested;
    if (!asked || !asked()) return 0;
    snprintf(err, ERR_LEN, "stopped while reading the %s", s->spec->options.noun ? s->spec->options.noun : "corpus");
    return 1;
}

static void note_skipped(SetReader *s, const char *path) {
    CorpusSetReport *r = s->report;
    size_t used = strlen(r->skipped);
    if (r->not_text > MAX_EXAMPLES || used >= sizeof(r->skipped)) return;
    snprintf(r->skipped + used, sizeof(r->skipped) - used, "%s%s: %s", used ? "; " : "", path, s->reader.not_text);
}

// Reads one document from fp (size > 0: its size in bytes). In a directory walk, a file that
// is not text is skipped and counted; named on its own it is an error.
static int read_document(SetReader *s, FILE *fp, const char *path, size_t size, int in_walk, char err[ERR_LEN]) {
    update_budget(s);
    size_t before = s->reader.len;
    TextStatus status = text_reader_add(&s->reader, fp, path, size, err);
    if (status == TEXT_OK) {
        if (s->reader.len > before) s->report->files++;
        else s->report->empty++;
        return 0;
    }
    if (status == TEXT_NOT_TEXT && in_walk) {
        s->report->not_text++;
        note_skipped(s, path);
        return 0;
    }
    return status == TEXT_TOO_LONG ? -2 : status == TEXT_STOPPED ? -4 : -1;
}

// Opens path without waiting on a FIFO; *info gets what it is. noun names it in messages.
static int open_path(const char *path, const char *noun, PlatformFileInfo *info, char err[ERR_LEN]) {
    int fd = platform_open(path, PLATFORM_READ | PLATFORM_NO_WAIT);
    if (fd < 0 || platform_fd_info(fd, info) != 0) {
        snprintf(err, ERR_LEN, "cannot open %s%s%s: %s", noun, noun[0] ? " " : "", path, strerror(errno));
        if (fd >= 0) close(fd);
        return -1;
    }
    return fd;
}

// A FIFO or pipe opened without blocking: with no process writing into it, reading would wait
// for ever, so it is refused; else it is read blocking, with the first byte (if one came)
// given back.
static FILE *open_pipe(int fd, const char *path, char err[ERR_LEN]) {
    unsigned char first;
    long got = read(fd, &first, 1);
    if (got == 0) {
        snprintf(err, ERR_LEN, "%s: a pipe (FIFO) with no process writing into it and nothing in it", path);
        return NULL;
    }
    if (got < 0 && errno != EAGAIN) {
        snprintf(err, ERR_LEN, "%s: read error: %s", path, strerror(errno));
        return NULL;
    }
    FILE *fp = platform_fd_set_nonblocking(fd, 0) < 0 ? NULL : fdopen(fd, "rb");
    if (!fp) {
        snprintf(err, ERR_LEN, "%s: cannot read: %s", path, strerror(errno));
        return NULL;
    }
    if (got == 1) ungetc(first, fp);
    return fp;
}

// Reads a file the walk found to be a regular file (it is checked again once open).
static int read_walked_file(SetReader *s, const char *path, char err[ERR_LEN]) {
    PlatformFileInfo info;
    int fd = open_path(path, "", &info, err);
    if (fd < 0) return -1;
    if (info.kind != PLATFORM_FILE_REGULAR) {  // replaced since the walk looked at it
        close(fd);
        s->report->other++;
        return 0;
    }
    FILE *fp = fdopen(fd, "rb");
    if (!fp) {
        close(fd);
        snprintf(err, ERR_LEN, "cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    int rc = read_document(s, fp, path, (size_t)info.size, 1, err);
    fclose(fp);
    return rc;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void free_names(SetReader *s, char **names, size_t n) {
    for (size_t i = 0; i < n; i++) {
        s->held -= strlen(names[i]) + NAME_OVERHEAD;
        free(names[i]);
    }
    free(names);
}

// The names in dir but "." and "..", sorted by byte order; counted in s->held as they are
// read, and refused (-2) when they would take more than the text leaves of the budget.
static int list_directory(SetReader *s, const char *dir, char ***out, size_t *count, char err[ERR_LEN]) {
    *out = NULL;
    *count = 0;
    DIR *d = opendir(dir);
    if (!d) {
        snprintf(err, ERR_LEN, "cannot open directory %s: %s", dir, strerror(errno));
        return -1;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;
    struct dirent *e;
    errno = 0;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        size_t cost = strlen(e->d_name) + NAME_OVERHEAD;
        if (over_budget(s, cost)) {
            snprintf(err, ERR_LEN, "%s: more than %zu entries, whose names (with those of the directories above it "
                     "and the %zu characters read so far) need more than the text's memory", dir, n, s->reader.len);
            rc = -2;
            break;
        }
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            char **bigger = realloc(names, cap * sizeof(char *));
            if (!bigger) {
                rc = -1;
                break;
            }
            names = bigger;
        }
        if (!(names[n] = strdup(e->d_name))) {
            rc = -1;
            break;
        }
        s->held += cost;
        n++;
        errno = 0;
    }
    if (rc == 0 && errno != 0) {
        snprintf(err, ERR_LEN, "cannot read directory %s: %s", dir, strerror(errno));
        rc = -1;
    } else if (rc == -1) {
        snprintf(err, ERR_LEN, "%s: out of memory listing its %zu entries", dir, n);
    }
    closedir(d);
    if (rc != 0) {
        free_names(s, names, n);
        return rc;
    }
    if (n > 1) qsort(names, n, sizeof(char *), by_name);  // an empty directory's names are NULL
    *out = names;
    *count = n;
    return 0;
}

static int walk(SetReader *s, const char *dir, const PlatformFileInfo *info, char err[ERR_LEN]);

// A path the walk found: a directory walked (once, however many links lead to it), a regular
// file read, anything else skipped.
static int walk_path(SetReader *s, const char *path, char err[ERR_LEN]) {
    PlatformFileInfo info;
    if (platform_path_info(path, 1, &info) != 0) {
        if (errno == ENOENT || errno == ELOOP) {  // a broken link, or one that loops
            s->report->other++;
            return 0;
        }
        snprintf(err, ERR_LEN, "cannot read %s: %s", path, strerror(errno));
        return -1;
    }
    if (info.kind == PLATFORM_FILE_REGULAR) return read_walked_file(s, path, err);
    if (info.kind != PLATFORM_FILE_DIRECTORY) {
        s->report->other++;
        return 0;
    }
    return walk(s, path, &info, err);
}

// One entry of a directory being walked: a hidden one skipped, the others by what they are.
static int walk_entry(SetReader *s, const char *dir, const char *name, char err[ERR_LEN]) {
    if (name[0] == '.') {
        s->report->hidden++;
        return 0;
    }
    // the path on the heap, not the stack: a walk as deep as PATH_MAX allows keeps one per level
    size_t dir_len = strlen(dir);
    int slash = dir_len > 0 && !platform_is_path_separator(dir[dir_len - 1]);
    if (dir_len + slash + strlen(name) >= PATH_MAX) {
        snprintf(err, ERR_LEN, "%s: a path in it is longer than %d bytes", dir, PATH_MAX - 1);
        return -1;
    }
    size_t size = dir_len + (size_t)slash + strlen(name) + 1;
    char *path = malloc(size);
    if (!path) {
        snprintf(err, ERR_LEN, "%s: out of memory for a path", dir);
        return -1;
    }
    snprintf(path, size, "%s%s%s", dir, slash ? "/" : "", name);
    int rc = walk_path(s, path, err);
    free(path);
    return rc;
}

// Walks the directory dir (info) unless the walk entered it already: a link to a directory
// walked before (an ancestor: a loop; or another branch: a tree of links whose paths would
// multiply) is skipped and counted.
static int walk(SetReader *s, const char *dir, const PlatformFileInfo *info, char err[ERR_LEN]) {
    int added = dir_set_add(s, dir, info, err);
    if (added <= 0) {
        s->report->repeated += added == 0;
        return added;
    }
    char **names;
    size_t n;
    int rc = list_directory(s, dir, &names, &n, err);
    if (rc != 0) return rc;
    s->report->directories++;
    for (size_t i = 0; i < n && rc == 0; i++)
        rc = stop_asked(s, err) ? -4 : walk_entry(s, dir, names[i], err);
    free_names(s, names, n);
    return rc;
}

static int read_stdin(SetReader *s, char err[ERR_LEN]) {
    PlatformFileInfo info;
    if (platform_fd_info(STDIN_FILENO, &info) != 0) {
        snprintf(err, ERR_LEN, "cannot read standard input: %s", strerror(errno));
        return -1;
    }
    if (platform_is_terminal(STDIN_FILENO)) {
        const char *into = s->spec->options.pipe_into;
        snprintf(err, ERR_LEN, "--data %s reads standard input, which is a terminal: pipe a text into it (%s%s)",
                 CORPUS_STDIN, into ? "cat books/*.txt | " : "cat books/*.txt | ...", into ? into : "");
        return -3;
    }
    return read_document(s, stdin, TEXT_STDIN_NAME, info.kind == PLATFORM_FILE_REGULAR ? (size_t)info.size : 0, 0,
                         err);
}

// One path of the set: standard input, a directory (walked), or a file or pipe.
static int read_path(SetReader *s, const char *path, char err[ERR_LEN]) {
    if (strcmp(path, CORPUS_STDIN) == 0) return read_stdin(s, err);
    PlatformFileInfo info;
    int fd = open_path(path, s->spec->options.noun ? s->spec->options.noun : "corpus", &info, err);
    if (fd < 0) return -1;
    if (info.kind == PLATFORM_FILE_DIRECTORY) {
        close(fd);
        return walk(s, path, &info, err);
    }
    FILE *fp = NULL;
    if (info.kind == PLATFORM_FILE_REGULAR) {
        if (!(fp = fdopen(fd, "rb"))) snprintf(err, ERR_LEN, "cannot open %s: %s", path, strerror(errno));
    } else if (info.kind == PLATFORM_FILE_PIPE) {
        fp = open_pipe(fd, path, err);
    } else {
        snprintf(err, ERR_LEN, "%s: not a regular file, directory or pipe (a device or socket cannot be a corpus)",
                 path);
    }
    if (!fp) {
        close(fd);
        return -1;
    }
    int rc = read_document(s, fp, path, info.kind == PLATFORM_FILE_REGULAR ? (size_t)info.size : 0, 0, err);
    fclose(fp);
    return rc;
}

int corpus_set_load(const CorpusSetSpec *spec, Corpus *corpus, CorpusSetReport *report, char err[ERR_LEN]) {
    memset(corpus, 0, sizeof(*corpus));
    memset(report, 0, sizeof(*report));
    int stdin_given = 0;
    for (int i = 0; i < spec->n; i++)
        if (strcmp(spec->paths[i], CORPUS_STDIN) == 0 && stdin_given++) {
            snprintf(err, ERR_LEN, "standard input (--data %s) can be read once only", CORPUS_STDIN);
            return -3;
        }
    SetReader s = {.spec = spec, .report = report};
    if (text_reader_init(&s.reader, &spec->options, spec->max_chars, spec->separator, spec->separator_len, err) != 0)
        return -1;
    int rc = 0;
    for (int i = 0; i < spec->n && rc == 0; i++) rc = stop_asked(&s, err) ? -4 : read_path(&s, spec->paths[i], err);
    if (rc == 0 && s.reader.len == 0) {
        const char *noun = spec->options.noun ? spec->options.noun : "corpus";
        if (report->directories == 0) {
            const char *name = spec->n > 1 ? "--data" : strcmp(spec->paths[0], CORPUS_STDIN) == 0 ? TEXT_STDIN_NAME
                                                                                                  : spec->paths[0];
            snprintf(err, ERR_LEN, "%s: the %s is empty (0 characters%s)", name, noun,
                     s.reader.cleanup.bom ? " after its byte-order mark" : "");
        } else {
            char found[ERR_LEN];
            corpus_set_describe(report, found, sizeof(found));
            snprintf(err, ERR_LEN, "%s: the %s holds no text: %s", spec->n == 1 ? spec->paths[0] : "--data", noun,
                     found);
        }
        rc = -1;
    }
    free(s.walked.ids);
    if (rc != 0) {
        text_reader_free(&s.reader);
        return rc;
    }
    corpus->cleanup = s.reader.cleanup;
    text_reader_take(&s.reader, &corpus->text, &corpus->len);
    return 0;
}

int corpus_separator_parse(const char *text, uint32_t out[CORPUS_SEPARATOR_MAX], size_t *len, char err[ERR_LEN]) {
    *len = 0;
    size_t n = strlen(text);
    char *bytes = malloc(n + 1);
    uint32_t *decoded = malloc((n + 1) * sizeof(uint32_t));
    int rc = -1;
    if (!bytes || !decoded) {
        snprintf(err, ERR_LEN, "out of memory reading --separator");
        goto done;
    }
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (text[i] != '\\') {
            bytes[m++] = text[i];
            continue;
        }
        char c = text[++i];
        char escaped = c == 'n' ? '\n' : c == 't' ? '\t' : c == 'r' ? '\r' : c == '\\' ? '\\' : 0;
        if (!escaped) {
            snprintf(err, ERR_LEN, "--separator: '\\%s' is not an escape it knows (\\n, \\t, \\r and \\\\ are)",
                     c ? (char[2]){c, 0} : "");
            goto done;
        }
        bytes[m++] = escaped;
    }
    size_t bad;
    long count = utf8_decode((const unsigned char *)bytes, m, decoded, &bad);
    if (count < 0) {
        snprintf(err, ERR_LEN, "--separator is not valid UTF-8 (byte offset %zu)", bad);
        goto done;
    }
    if (count > CORPUS_SEPARATOR_MAX) {
        snprintf(err, ERR_LEN, "--separator has %ld characters, more than %d", count, CORPUS_SEPARATOR_MAX);
        goto done;
    }
    memcpy(out, decoded, (size_t)count * sizeof(uint32_t));
    *len = (size_t)count;
    rc = 0;
done:
    free(bytes);
    free(decoded);
    return rc;
}

void corpus_set_describe(const CorpusSetReport *r, char *buf, size_t size) {
    size_t used = 0;
#define PUT(...)                                                                        \
    do {                                                                                \
        if (used < size) used += (size_t)snprintf(buf + used, size - used, __VA_ARGS__); \
    } while (0)
    PUT("%zu file%s", r->files, r->files == 1 ? "" : "s");
    if (r->directories)
        PUT(" in %zu director%s", r->directories, r->directories == 1 ? "y" : "ies");
    const char *sep = "; skipped ";
    if (r->hidden) {
        PUT("%s%zu hidden entr%s", sep, r->hidden, r->hidden == 1 ? "y" : "ies");
        sep = ", ";
    }
    if (r->not_text) {
        PUT("%s%zu file%s that %s not text (%s%s)", sep, r->not_text, r->not_text == 1 ? "" : "s",
            r->not_text == 1 ? "is" : "are", r->skipped, r->not_text > MAX_EXAMPLES ? "; ..." : "");
        sep = ", ";
    }
    if (r->other) {
        PUT("%s%zu entr%s that %s neither %s nor %s", sep, r->other, r->other == 1 ? "y" : "ies",
            r->other == 1 ? "is" : "are", r->other == 1 ? "a file" : "files", r->other == 1 ? "a directory" : "directories");
        sep = ", ";
    }
    if (r->repeated) {
        PUT("%s%zu link%s to a directory read already", sep, r->repeated, r->repeated == 1 ? "" : "s");
        sep = ", ";
    }
    if (r->empty) PUT("%s%zu empty file%s", sep, r->empty, r->empty == 1 ? "" : "s");
#undef PUT
}
