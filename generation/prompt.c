#include "prompt.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../data/utf8.h"

void prompt_printable_char(uint32_t cp, char out[5]) {
    memset(out, 0, 5);
    if (cp >= 0x20 && cp != 0x7F) utf8_encode(cp, out);
}

int prompt_encode(Prompt *p, const Vocab *vocab, const char *bytes, size_t n, int skip_unknown, char err[ERR_LEN]) {
    memset(p, 0, sizeof(*p));
    // a character takes at least one byte
    uint32_t *decoded = malloc((n + 1) * sizeof(uint32_t));
    p->chars = malloc((n + 1) * sizeof(uint32_t));
    p->tokens = malloc((n + 1) * sizeof(int));
    if (!decoded || !p->chars || !p->tokens) {
        free(decoded);
        prompt_free(p);
        snprintf(err, ERR_LEN, "out of memory for a prompt of %zu bytes", n);
        return -2;
    }
    size_t bad_offset;
    long count = utf8_decode((const unsigned char *)bytes, n, decoded, &bad_offset);
    if (count < 0) {
        snprintf(err, ERR_LEN, "the prompt is not valid UTF-8 (byte offset %zu)", bad_offset);
        free(decoded);
        prompt_free(p);
        return -1;
    }
    for (long i = 0; i < count; i++) {
        int id = vocab_index(vocab, decoded[i]);
        if (id >= 0) {
            p->chars[p->len] = decoded[i];
            p->tokens[p->len++] = id;
            continue;
        }
        if (p->dropped++ == 0) {
            p->first_dropped = decoded[i];
            p->first_dropped_at = i;
        }
        if (!skip_unknown) {
            char shown[5];
            prompt_printable_char(decoded[i], shown);
            snprintf(err, ERR_LEN, "prompt character '%s' (U+%04" PRIX32 ") at position %ld is not in the checkpoint's "
                     "vocabulary (use --skip-unknown to drop such characters)", shown, decoded[i], i);
            free(decoded);
            prompt_free(p);
            return -1;
        }
    }
    free(decoded);
    return 0;
}

void prompt_free(Prompt *p) {
    free(p->tokens);
    free(p->chars);
    memset(p, 0, sizeof(*p));
}
