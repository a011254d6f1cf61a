// A prompt, or a text to score: characters turned into the model's tokens.
#ifndef CHARGPT_PROMPT_H
#define CHARGPT_PROMPT_H

#include <stddef.h>
#include <stdint.h>

#include "../data/vocab.h"

typedef struct {
    int *tokens;             // (len) token ids of the characters kept
    long len;
    long dropped;            // characters dropped as not in the vocabulary (skip_unknown)
    long unknown;            // or given the vocabulary's unknown token (data/vocab.h)
    uint32_t first_dropped;  // the first of either, and its position among the prompt's characters
    long first_dropped_at;
} Prompt;

// Turns the n code points at chars into tokens of vocab, in place, and takes the array over:
// chars (malloc'd, n entries) becomes p->tokens, freed by prompt_free (or here on failure), so
// a text takes 4 bytes a character once, not twice. A character the vocabulary lacks is
// dropped and counted with skip_unknown; else it takes the vocabulary's unknown token if it
// has one (counted too); else it is an error naming every such character with its count and
// code point, and the first one's position in `what` ("the prompt", a file's name). Returns 0,
// or -1 with err for an unknown character (p is then empty).
int prompt_from_chars(Prompt *p, const Vocab *vocab, uint32_t *chars, long n, int skip_unknown, const char *what,
                      char err[ERR_LEN]);
// The same from n bytes of UTF-8: -1 with err for an unknown character (bad usage); -2 with
// err when the bytes are not valid UTF-8 (bad data) or memory runs out.
int prompt_encode(Prompt *p, const Vocab *vocab, const char *bytes, size_t n, int skip_unknown, const char *what,
                  char err[ERR_LEN]);
// Reads the whole prompt file at path ("-": stdin), at most max_bytes of it, into a malloc'd,
// NUL-terminated buffer (*bytes, *len its size). Anything but a regular file or stdin is
// refused (a FIFO does not block the open). Returns 0, or -1 with err.
int prompt_read_file(const char *path, size_t max_bytes, char **bytes, size_t *len, char err[ERR_LEN]);
// Writes cp for a message: its UTF-8 when printable, else nothing.
void prompt_printable_char(uint32_t cp, char out[5]);
// Prints a warning on stderr about the characters prompt_from_chars dropped from `what`.
void prompt_warn_dropped(const Prompt *p, const char *what);
void prompt_free(Prompt *p);

#endif
