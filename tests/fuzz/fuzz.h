// The fuzz targets: each takes any bytes, runs one reader of untrusted input on them, checks
// what it accepted, and returns 0; a bug makes it crash or abort (under the sanitizers, a
// sanitizer report). `make fuzz` runs them under libFuzzer (libfuzzer_main.c); `make test`
// replays their seeds and every input that ever crashed through them (tests/test_fuzz.c).
#ifndef CHARGPT_FUZZ_H
#define CHARGPT_FUZZ_H

#include <stddef.h>
#include <stdint.h>

// checkpoint_parse past its CRC (the input's crc32 is recomputed before it is read), then
// the model, optimizer, training metadata and memory plan read from what it accepted.
int fuzz_checkpoint(const uint8_t *data, size_t size);
// safetensors_parse, and the invariants of what it accepts.
int fuzz_safetensors(const uint8_t *data, size_t size);
// json_parse, the node tree it builds, and JSON string writing read back.
int fuzz_json(const uint8_t *data, size_t size);
// corpus_read (plain or gzip by the magic bytes), then the vocabulary and split of the text.
int fuzz_corpus(const uint8_t *data, size_t size);
// prompt_encode against a fixed vocabulary; the first byte chooses --skip-unknown.
int fuzz_prompt(const uint8_t *data, size_t size);
// probe_reader_open and probe_reader_next past the frames' CRCs (each whole frame's CRC is
// recomputed first), and the invariants of the header and records they accept.
int fuzz_probe_file(const uint8_t *data, size_t size);

#endif
