#include "sample.h"

#include <stdlib.h>

#include "../generation/decoder.h"

int sample_write(GPT *view, const ProbeHeader *h, int newline, int32_t *sample, char err[ERR_LEN]) {
    int start = newline >= 0 ? newline : 0;
    long prompt_len = h->prompt_len > 0 ? h->prompt_len : 1;
    int *prompt = malloc((size_t)prompt_len * sizeof(int));
    if (!prompt) {
        snprintf(err, ERR_LEN, "out of memory for the sample's prompt");
        return -1;
    }
    for (long i = 0; i < prompt_len; i++) prompt[i] = h->prompt_len > 0 ? h->prompt[i] : start;
    DecoderConfig config = {1, 1, 1, {h->temperature, 0, 1.0f}, h->sample_seed};
    Decoder d;
    int rc = decoder_init(&d, view, prompt, prompt_len, h->sample_chars, &config, err);
    free(prompt);
    for (int n = 0; rc == 0 && n < h->sample_chars; n++) {
        const int *next = decoder_step(&d, err);
        if (!next) rc = -1;
        else sample[n] = next[0];
    }
    decoder_free(&d);  // decoder_init clears it first, so this is safe after its failure too
    return rc;
}
