// A run's text, from its corpus to the tokens it trains on:
//   read       the corpus (data/corpus.h) within what the memory limit leaves beside the
//              checkpoint being read, at 4 bytes a character;
//   recognised a resumed run's text must be the one its checkpoint was trained on: the same
//              fingerprint (data/corpus_fingerprint.h), or for an older checkpoint without one,
//              the same vocabulary;
//   vocabulary a new run's is its text's characters; a resumed or fine-tuned run's is its
//              checkpoint's, which a fine-tuning text may only use (data/vocab_coverage.h:
//              --skip-unknown drops the others);
// then the text becomes tokens in its place (corpus_encode) and is split (data/batch.h).
// The functions return 0 or the exit status the program ends with (common/errors.h), with a
// message in err.
#ifndef CHARGPT_RUN_TEXT_H
#define CHARGPT_RUN_TEXT_H

#include "../data/corpus.h"
#include "../data/vocab.h"
#include "../format/checkpoint.h"

// The memory the text may take: limit bytes in all (0: no limit), named `source` in messages
// ("--max-memory", "available (MemAvailable)"), less `held` bytes already taken (the
// checkpoint being read). limit_given: the limit is the user's (else a message suggests
// --max-memory).
typedef struct {
    double limit;
    const char *source;
    int limit_given;
    double held;
} TextBudget;

// Reads the corpus at path into corpus (keep_cr: corpus_load). Returns 0; EXIT_USAGE when the
// text needs more than the budget; EXIT_DATA when it cannot be read or is not a text.
int run_text_read(const char *path, int keep_cr, const TextBudget *budget, Corpus *corpus, char err[ERR_LEN]);
// A resumed run's text (data, of fingerprint) against the checkpoint at `resume`, whose
// fingerprint is `saved` ("" in checkpoints older than train.corpus_fingerprint): refused
// with EXIT_DATA when the fingerprints differ, and with EXIT_USAGE when there is no saved one
// to check --data's text against (data_given). Returns 0 otherwise.
int run_text_recognise(const char *data, const char *fingerprint, const char *resume, const char *saved,
                       int data_given, char err[ERR_LEN]);
// The vocabulary of a new run (ck NULL): the text's characters. Of a run that resumes or
// fine-tunes ck: ck's; characters of the text it lacks are refused (EXIT_DATA, naming them
// with their counts) unless skip_unknown, which drops them from the text and says so in note
// ("" when nothing was dropped). data names the text in messages.
int run_text_vocabulary(const Checkpoint *ck, const char *data, int skip_unknown, Corpus *corpus, Vocab *vocab,
                        char note[ERR_LEN], char err[ERR_LEN]);
// A resumed run of an older checkpoint (no fingerprint): the text's own vocabulary must be
// the checkpoint's, vocab. Returns 0 or EXIT_DATA.
int run_text_same_vocabulary(const Corpus *corpus, const Vocab *vocab, const char *data, const char *resume,
                             char err[ERR_LEN]);

#endif
