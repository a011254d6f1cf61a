#include "probe_baselines.h"

#include <stdio.h>
#include <stdlib.h>

int probe_pattern_on_repeated(HeadPattern pattern) {
    return pattern == HEAD_INDUCTION || pattern == HEAD_SAME_CHARACTER;
}

int probe_passage_words(const ProbeHeader *h, int *word_start, int *last_space) {
    uint32_t *chars = calloc((size_t)h->probe_len + 1, sizeof(uint32_t));
    if (!chars) return -1;
    for (int i = 0; i < h->probe_len; i++) chars[i] = h->vocab[h->passage[i]];
    head_word_starts(chars, h->probe_len, word_start, last_space);
    free(chars);
    return 0;
}

int probe_baselines(const ProbeHeader *h, float reach[HEAD_PATTERNS], float chance[HEAD_PATTERNS],
                    char err[ERR_LEN]) {
    int t = h->probe_len, *word_start = malloc((size_t)t * sizeof(int)), *last_space = malloc((size_t)t * sizeof(int));
    if (!word_start || !last_space || probe_passage_words(h, word_start, last_space) != 0) {
        free(word_start), free(last_space);
        snprintf(err, ERR_LEN, "out of memory for the probe's passage");
        return -1;
    }
    HeadText passage = {h->passage, word_start, last_space, t}, repeated = {h->repeated, NULL, NULL, h->repeat_len};
    for (int p = 0; p < HEAD_PATTERNS; p++) {
        const HeadText *text = probe_pattern_on_repeated((HeadPattern)p) ? &repeated : &passage;
        reach[p] = text->t > 0 ? (float)head_pattern_reach((HeadPattern)p, text) : 0.0f;
        chance[p] = text->t > 0 ? (float)head_pattern_chance((HeadPattern)p, text) : 0.0f;
    }
    free(word_start), free(last_space);
    return 0;
}
