// The sample a run writes as it trains: at each evaluation (or every --sample-every steps),
// --sample-chars characters after a fixed prompt, drawn with the same seed every time, so
// that what changes from one sample to the next is the model alone. It is exactly the text
// ./generate prints for that step's checkpoint with the same prompt, seed and length
// (`./generate CKPT PROMPT -n S -s SEED`, temperature 0.8): the same decoding (generation/
// decoder.h) in fp32 on the same weights.
#ifndef CHARGPT_SAMPLE_H
#define CHARGPT_SAMPLE_H

#include "../format/probe_file.h"
#include "../model/gpt.h"

// Writes the header's sample_chars characters after its prompt (a newline when it has none,
// as ./generate starts an empty prompt; token 0 without one), decoded by view (gpt_view of
// the training model: its activations are reallocated for one sequence), into sample.
// Returns 0, or -1 with err when memory runs out or the model's logits are not finite.
int sample_write(GPT *view, const ProbeHeader *h, int newline, int32_t *sample, char err[ERR_LEN]);

#endif
