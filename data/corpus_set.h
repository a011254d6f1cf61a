// The corpus of a run: every text --data names, read one after another into one text
// (data/text_reader.h), their documents joined by a separator.
//
//   a file       one document (plain or gzip; FIFOs and pipes such as bash's <(...) too);
//   a directory  every file under it, walked in a fixed order: each directory's entries in
//                the byte order of their names (as `LC_ALL=C ls` lists them), a subdirectory's
//                files where its name falls; symbolic links followed, each directory
//                walked once (a link to one walked already, a loop or another branch of the
//                tree, is skipped and counted: a tree of links is no longer than its
//                directories). Hidden entries (names that start with
//                '.', such as .git) are skipped, and so are files that are not text (binary,
//                not in the encoding, compressed in a format chargpt does not read) and
//                entries that are neither files nor directories: all counted, the first few
//                files skipped as not text named with why;
//   "-"          standard input, read to its end (a pipe: `xz -dc corpus.xz | ./train --data -`).
//
// A file or standard input named on its own that is not text is an error, as one corpus is.
// Empty files add nothing. The text's fingerprint (data/corpus_fingerprint.h) is of the whole
// set, separators included, so the same files in the same order give the same fingerprint
// whether named one by one, in a directory or concatenated with the separator between them.
//
// Memory: the text takes 4 bytes a character, at most max_chars of them; the names of the
// entries of the directories being walked are held too (one directory's at a time, and its
// parents'), and so is the set of the directories walked (device and inode); both count
// against the same budget, at 4 bytes a character's worth per 4 bytes, so that a directory of
// a million files is refused like a text too large, before its names outgrow the memory.
//
// A stop request (TextOptions.stop_requested: ./train's SIGINT or SIGTERM) ends the walk, and
// the reading of a pipe or standard input that waits for its writer, at once.
#ifndef CHARGPT_CORPUS_SET_H
#define CHARGPT_CORPUS_SET_H

#include <stddef.h>
#include <stdint.h>

#include "../common/errors.h"
#include "corpus.h"
#include "text_reader.h"

#define CORPUS_STDIN "-"               // the path that names standard input
#define CORPUS_SEPARATOR_MAX 256       // code points a separator may have
#define CORPUS_DEFAULT_SEPARATOR "\\n"  // between documents: a newline (as --separator takes it)

typedef struct {
    const char *const *paths;  // n of them: files, directories, or CORPUS_STDIN (at most once)
    int n;
    const uint32_t *separator;  // (separator_len) code points between two documents
    size_t separator_len;
    TextOptions options;       // encoding, CR handling, and the command a message pipes into
    size_t max_chars;          // the text's characters, less the walk's names (see above)
} CorpusSetSpec;

typedef struct {
    size_t files;             // documents that held text
    size_t empty;             // files that held no character
    size_t hidden;            // hidden entries skipped in directories (files and directories)
    size_t not_text;          // files skipped in directories as not text
    size_t other;             // entries skipped in directories that are neither files nor directories
                              // (FIFOs, devices, sockets, broken links, links that loop)
    size_t repeated;          // links to a directory walked already, skipped
    size_t directories;       // directories walked
    char skipped[ERR_LEN];    // the first files skipped as not text, each with why
} CorpusSetReport;

// Reads the set into corpus (corpus->cleanup sums the documents'). Returns 0; -1 with err when
// a path cannot be read, a file named on its own is not text or its gzip stream is damaged, a
// FIFO has no writer, or the set holds no text at all; -2 with err when the text (with the
// walk's names) would need more than max_chars characters; -3 with err when standard input is
// named twice or is a terminal (a usage error); -4 with err when a stop was asked for. On
// failure corpus is left empty; report counts what was read until then.
int corpus_set_load(const CorpusSetSpec *spec, Corpus *corpus, CorpusSetReport *report, char err[ERR_LEN]);

// Reads a separator as --separator takes it: UTF-8 text in which \n, \t, \r and \\ stand for
// a newline, a tab, a CR and a backslash ("" for none). Writes at most CORPUS_SEPARATOR_MAX
// code points to out, their count to *len. Returns 0, or -1 with err (another escape, invalid
// UTF-8, a NUL, too long).
int corpus_separator_parse(const char *text, uint32_t out[CORPUS_SEPARATOR_MAX], size_t *len, char err[ERR_LEN]);

// What was read and skipped, for the run's output: "312 files in 14 directories; skipped 4
// hidden entries, 2 files that are not text (a/cover.jpg: binary data, ...) and 1 empty file".
void corpus_set_describe(const CorpusSetReport *report, char *buf, size_t size);

#endif
