// libFuzzer's entry point for one target, chosen at build time: -DFUZZ_TARGET=fuzz_<name>.
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return FUZZ_TARGET(data, size); }
