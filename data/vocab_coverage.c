#include "vocab_coverage.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/utf8.h"

// Index of cp in the sorted list, or where it would go (binary search).
static int find_slot(const CharCount *chars, int n, uint32_t cp) {
    int lo = 0, hi = n;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (chars[mid].cp < cp) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

static int by_count(const void *a, const void *b) {
    const CharCount *x = a, *y = b;
    if (x->count != y->count) return x->count < y->count ? 1 : -1;
    return x->cp < y->cp ? -1 : x->cp > y->cp;
}

int vocab_coverage_find(const Vocab *vocab, const uint32_t *text, size_t len, MissingChars *missing,
                        char err[ERR_LEN]) {
    memset(missing, 0, sizeof(*missing));
    int capacity = 0;
    for (size_t i = 0; i < len; i++) {
        if (vocab_index(vocab, text[i]) >= 0) continue;
        // kept sorted by code point while counting
        int slot = find_slot(missing->chars, missing->distinct, text[i]);
        if (slot < missing->distinct && missing->chars[slot].cp == text[i]) {
            missing->chars[slot].count++;
        } else {
            if (missing->distinct == capacity) {
                capacity = capacity ? 2 * capacity : 16;
                CharCount *bigger = realloc(missing->chars, (size_t)capacity * sizeof(CharCount));
                if (!bigger) {
                    vocab_coverage_free(missing);
                    snprintf(err, ERR_LEN, "out of memory listing the characters outside the vocabulary");
                    return -1;
                }
                missing->chars = bigger;
            }
            memmove(missing->chars + slot + 1, missing->chars + slot,
                    (size_t)(missing->distinct - slot) * sizeof(CharCount));
            missing->chars[slot] = (CharCount){text[i], 1};
            missing->distinct++;
        }
        missing->total++;
    }
    if (missing->distinct > 1) qsort(missing->chars, (size_t)missing->distinct, sizeof(CharCount), by_count);
    return 0;
}

// A character as a message shows it: 'x' U+0078, or U+000D (CR) for one without a glyph.
static void describe_char(uint32_t cp, char *buf, size_t size) {
    static const struct { uint32_t cp; const char *name; } names[] = {
        {'\t', "tab"}, {'\n', "LF"}, {'\r', "CR"}, {0x0B, "vertical tab"}, {0x0C, "form feed"},
        {0xA0, "no-break space"}, {0xFEFF, "byte-order mark"}, {0x200B, "zero-width space"},
    };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (names[i].cp == cp) {
            snprintf(buf, size, "U+%04" PRIX32 " (%s)", cp, names[i].name);
            return;
        }
    if (cp < 0x20 || (cp >= 0x7F && cp < 0xA0)) {
        snprintf(buf, size, "U+%04" PRIX32 " (a control character)", cp);
        return;
    }
    char bytes[5] = {0};
    utf8_encode(cp, bytes);
    snprintf(buf, size, "'%s' U+%04" PRIX32, bytes, cp);
}

void vocab_coverage_describe(const MissingChars *missing, int max_listed, char *buf, size_t size) {
    size_t used = 0;
    buf[0] = '\0';
    int listed = missing->distinct < max_listed ? missing->distinct : max_listed;
    for (int i = 0; i < listed && used < size; i++) {
        char shown[64];
        describe_char(missing->chars[i].cp, shown, sizeof(shown));
        size_t count = missing->chars[i].count;
        if (count == 0)  // vocab_grow's unknown token, which stands for the rarer characters
            used += (size_t)snprintf(buf + used, size - used, "%s%s (the unknown token)", i ? ", " : "", shown);
        else
            used += (size_t)snprintf(buf + used, size - used, "%s%s %zu time%s", i ? ", " : "", shown, count,
                                     count == 1 ? "" : "s");
    }
    if (listed < missing->distinct && used < size)
        snprintf(buf + used, size - used, " and %d more", missing->distinct - listed);
}

static int by_code_point(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

int vocab_grow(const Vocab *old, const MissingChars *missing, size_t min_count, Vocab *grown, MissingChars *added,
               char err[ERR_LEN]) {
    memset(grown, 0, sizeof(*grown));
    memset(added, 0, sizeof(*added));
    int rare = 0;
    added->chars = malloc(((size_t)missing->distinct + 1) * sizeof(CharCount));
    uint32_t *chars = malloc(((size_t)old->size + (size_t)missing->distinct + 1) * sizeof(uint32_t));
    if (!added->chars || !chars) {
        free(chars);
        vocab_coverage_free(added);
        snprintf(err, ERR_LEN, "out of memory growing the vocabulary");
        return -1;
    }
    memcpy(chars, old->chars, (size_t)old->size * sizeof(uint32_t));
    int n = old->size, has_unknown = vocab_index(old, VOCAB_UNKNOWN_CHAR) >= 0;
    for (int i = 0; i < missing->distinct; i++) {
        const CharCount *c = &missing->chars[i];
        if (c->count < min_count) {
            rare++;
            continue;
        }
        chars[n++] = c->cp;
        added->chars[added->distinct++] = *c;
        added->total += c->count;
        has_unknown |= c->cp == VOCAB_UNKNOWN_CHAR;
    }
    if (rare > 0 && !has_unknown) {  // the rare ones' token, added with no occurrence of its own
        chars[n++] = VOCAB_UNKNOWN_CHAR;
        added->chars[added->distinct++] = (CharCount){VOCAB_UNKNOWN_CHAR, 0};
    }
    qsort(chars, (size_t)n, sizeof(uint32_t), by_code_point);
    int rc = vocab_from_chars(grown, chars, n, err);
    free(chars);
    if (rc == 0 && (old->unknown || rare > 0)) rc = vocab_set_unknown(grown, err);
    if (rc != 0) {
        vocab_free(grown);
        vocab_coverage_free(added);
    }
    return rc;
}

size_t vocab_coverage_drop(const Vocab *vocab, uint32_t *text, size_t len) {
    size_t kept = 0;
    for (size_t i = 0; i < len; i++)
        if (vocab_index(vocab, text[i]) >= 0) text[kept++] = text[i];
    return kept;
}

void vocab_coverage_free(MissingChars *missing) {
    free(missing->chars);
    memset(missing, 0, sizeof(*missing));
}
