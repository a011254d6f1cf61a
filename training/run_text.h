// A run's text, from its corpus to the tokens it trains on:
//   read       every --data (data/corpus_set.h: files, directories, standard input, joined by
//              the separator) within what the memory limit leaves beside the checkpoint being
//              read, at 4 bytes a character;
//   recognised a resumed run's text must be the one its checkpoint was trained on: the same
//              fingerprint (data/corpus_fingerprint.h), or for an older checkpoint without one,
//              the same vocabulary;
//   vocabulary a new run's is its text's characters, those rarer than --min-char-count
//              sharing the unknown token (data/char_counts.h); a resumed or fine-tuned run's is
//              its checkpoint's, which a fine-tuning text may only use, unless the checkpoint
//              has an unknown token (which the others take), --skip-unknown drops them or
//              --grow-vocab adds them (data/vocab_coverage.h);
// then the text becomes tokens in its place (corpus_encode) and is split (data/batch.h).
// A task's text (train --task, data/task.h) instead: its vocabulary is the task's characters,
// its validation split rows made from the seed (the training batches are made at each step),
// with the part its accuracy counts, and its fingerprint is the validation split's, which a
// resumed run's checkpoint must have: a chargpt whose generator makes other text would not
// continue the run's stream.
// The functions return 0 or the exit status the program ends with (common/errors.h), with a
// message in err.
#ifndef CHARGPT_RUN_TEXT_H
#define CHARGPT_RUN_TEXT_H

#include "../data/batch.h"
#include "../data/corpus.h"
#include "../data/corpus_fingerprint.h"
#include "../data/corpus_set.h"
#include "../data/task.h"
#include "../data/vocab.h"
#include "../format/checkpoint.h"

// The memory the text may take: limit bytes in all (0: no limit), named `source` in messages
// ("--max-memory", "available (MemAvailable, less 2.35 GiB kept free)"), less `held` bytes
// already taken (the checkpoint being read). limit_given: the limit is the user's (else a
// message suggests --max-memory).
typedef struct {
    double limit;
    const char *source;
    int limit_given;
    double held;
} TextBudget;

// --data's paths, which the options keep one a line (--data given several times).
#define RUN_TEXT_MAX_PATHS 64
typedef struct {
    char text[1024];
    const char *paths[RUN_TEXT_MAX_PATHS];
    int n;
} DataPaths;
// Splits data (paths one a line) into p. Returns 0, or -1 with err when there are more than
// RUN_TEXT_MAX_PATHS or none.
int data_paths_split(const char *data, DataPaths *p, char err[ERR_LEN]);
// Appends path to data (size bytes), on a line of its own. Returns 0, or -1 with err when it
// does not fit, is empty or holds a newline.
int data_paths_add(char *data, size_t size, const char *path, char err[ERR_LEN]);
// The paths for a message: "books/, notes.txt" ("standard input" for "-").
void data_paths_name(const char *data, char *name, size_t size);

// What --data names and how it is read.
typedef struct {
    const char *data;       // the paths, one a line
    const char *separator;  // between documents, as --separator takes it (escapes)
    TextOptions options;    // encoding, --keep-cr, and the command a message pipes into
} TextSource;

// Reads the corpus into corpus; *report says what the set held and skipped. Returns 0;
// EXIT_USAGE when the text needs more than the budget, the separator is not one, or standard
// input is named twice or is a terminal; EXIT_DATA when it cannot be read or is not a text.
int run_text_read(const TextSource *source, const TextBudget *budget, Corpus *corpus, CorpusSetReport *report,
                  char err[ERR_LEN]);
// A resumed run's text (data, of fingerprint) against the checkpoint at `resume`, whose
// fingerprint is `saved` ("" in checkpoints older than train.corpus_fingerprint): refused
// with EXIT_DATA when the fingerprints differ, and with EXIT_USAGE when there is no saved one
// to check --data's text against (data_given). Returns 0 otherwise.
int run_text_recognise(const char *data, const char *fingerprint, const char *resume, const char *saved,
                       int data_given, char err[ERR_LEN]);

// How the vocabulary is made.
typedef struct {
    long min_char_count;  // characters rarer than this share the unknown token (<= 1: none)
    int skip_unknown;     // a fine-tuning text's characters the checkpoint lacks are dropped
    int grow_vocab;       // ... or added to the vocabulary (checkpoint_load_model_grown)
    int resuming;         // ck is the text's own run: its rare characters take the unknown token unsaid
} VocabOptions;

// The vocabulary of a new run (ck NULL): the text's characters, those rarer than
// min_char_count sharing the unknown token; a text of one distinct character is refused. Of
// a run that resumes or fine-tunes ck: ck's, with its unknown token if it has one;
// characters of the text it lacks take that token, or are refused (EXIT_DATA, naming them
// with their counts) unless skip_unknown drops them from the text or grow_vocab adds them
// (those seen at least min_char_count times; the rarer share the unknown token). What was
// done is said in note ("" when there is nothing to say). data names the text in messages.
int run_text_vocabulary(const Checkpoint *ck, const char *data, const VocabOptions *options, Corpus *corpus,
                        Vocab *vocab, char note[ERR_LEN], char err[ERR_LEN]);
// A resumed run of an older checkpoint (no fingerprint): the text's own vocabulary must be
// the checkpoint's, vocab. Returns 0 or EXIT_DATA.
int run_text_same_vocabulary(const Corpus *corpus, const Vocab *vocab, const char *data, const char *resume,
                             char err[ERR_LEN]);

// ----------------------------------------------------------------------------
// a task's text

typedef struct {
    Task task;
    int *tokens;             // the validation split: rows of row_len characters
    unsigned char *scored;   // (len) 1 where the task's accuracy counts the character
    size_t len;
} RunTask;

// The memory run_task_make takes for `rows` rows of row_len characters, in bytes.
double run_task_memory(long rows, int row_len);
// Makes the validation split of task (rows rows of row_len characters, from seed), the
// vocabulary and the fingerprint, and points ds at the split. A resumed run (ck not NULL)
// must have the task's vocabulary and the fingerprint `saved`. Returns 0, or the exit status
// with err: EXIT_USAGE when memory runs out, EXIT_DATA when the checkpoint's text differs.
int run_task_make(RunTask *t, Task task, uint64_t seed, long rows, int row_len, const Checkpoint *ck,
                  const char *saved, Vocab *vocab, char fingerprint[CORPUS_FINGERPRINT_LEN], Dataset *ds,
                  char err[ERR_LEN]);
void run_task_free(RunTask *t);

#endif
