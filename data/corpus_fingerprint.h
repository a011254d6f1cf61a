// A corpus's fingerprint: its length in characters and the CRC-32 of its text (decoded and
// cleaned as corpus_load gives it, encoded as UTF-8). A checkpoint keeps it, so a resumed run
// can tell whether the file it is given holds the text the run was trained on, wherever the
// file now is and whatever it is called (gzip or not).
#ifndef CHARGPT_CORPUS_FINGERPRINT_H
#define CHARGPT_CORPUS_FINGERPRINT_H

#include <stddef.h>
#include <stdint.h>

#define CORPUS_FINGERPRINT_LEN 40

// Writes the fingerprint of text (len code points) as "<length>:<crc32 in 8 hex digits>",
// e.g. "1115394:3b1e6a1f", into out (CORPUS_FINGERPRINT_LEN bytes).
void corpus_fingerprint(const uint32_t *text, size_t len, char out[CORPUS_FINGERPRINT_LEN]);
// Describes a fingerprint for a message: "1115394 characters, CRC-32 3b1e6a1f"; the text
// itself when it is not a fingerprint.
void corpus_fingerprint_describe(const char *fingerprint, char *buf, size_t size);

#endif
