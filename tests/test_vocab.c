// Tests of the vocabulary beyond the corpus's characters: counting them, the unknown token that
// characters rarer than --min-char-count share, a vocabulary grown for a fine-tuning text
// (--grow-vocab), and both kept by a checkpoint: the unknown token read back, and a grown
// model's old embedding rows bit for bit with its new rows a new model's.
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../common/rng.h"
#include "../data/char_counts.h"
#include "../data/vocab.h"
#include "../data/vocab_coverage.h"
#include "../format/checkpoint.h"
#include "test.h"

// A text of random code points, a few very common and many rare, over the whole range.
static uint32_t *skewed_text(size_t n, uint64_t seed) {
    uint32_t *text = malloc(n * sizeof(uint32_t));
    Rng rng;
    rng_seed(&rng, seed);
    for (size_t i = 0; i < n; i++) {
        uint32_t r = (uint32_t)rng_below(&rng, 100);
        uint32_t cp = r < 90 ? 'a' + r % 26 : r < 98 ? 0x3B1 + r % 7 : (uint32_t)rng_below(&rng, 0x110000);
        if (cp >= 0xD800 && cp <= 0xDFFF) cp = 0xE000;
        text[i] = cp;
    }
    return text;
}

TEST(vocab_char_counts_match_a_naive_count) {
    size_t n = 100000;
    uint32_t *text = skewed_text(n, 3);
    text[0] = 0, text[1] = 0x10FFFF, text[2] = VOCAB_UNKNOWN_CHAR;
    CharCounts c;
    char err[ERR_LEN];
    if (!CHECK(char_counts_build(&c, text, n, err) == 0, "%s", err)) return;
    Vocab all;
    CHECK(vocab_build(&all, text, n, err) == 0, "%s", err);
    CHECK(c.distinct == all.size && memcmp(c.chars, all.chars, (size_t)all.size * 4) == 0,
          "%d distinct characters, vocab_build finds %d", c.distinct, all.size);
    size_t wrong = 0, total = 0;
    for (int k = 0; k < c.distinct; k++) {
        size_t naive = 0;
        if (k % 50 == 0 || c.counts[k] > 1)  // every common one, and a sample of the rare
            for (size_t i = 0; i < n; i++) naive += text[i] == c.chars[k];
        else
            naive = c.counts[k];
        wrong += naive != c.counts[k];
        total += c.counts[k];
    }
    CHECK(wrong == 0 && total == n, "%zu counts wrong; they sum to %zu of %zu", wrong, total, n);
    // min_count 1 is the whole vocabulary, with no unknown token
    Vocab v;
    CHECK(char_counts_vocab(&c, 1, &v, err) == 0 && v.size == all.size && !v.unknown &&
              memcmp(v.chars, all.chars, (size_t)v.size * 4) == 0, "min_count 1 differs from vocab_build");
    vocab_free(&v);
    vocab_free(&all);
    char_counts_free(&c);
    CHECK(char_counts_build(&c, text, 0, err) != 0, "an empty text counted");
    text[5] = 0xD800;
    CHECK(char_counts_build(&c, text, n, err) != 0 && strstr(err, "U+D800"), "a surrogate counted: %s", err);
    free(text);
}

TEST(vocab_min_count_maps_rare_characters_to_the_unknown_token) {
    // 'a' x4, 'b' x3, 'c' x1, 'é' x1, '中' x2: with min_count 2, 'c' and 'é' share U+FFFD
    const uint32_t text[] = {'a', 'b', 'a', 'c', 0x4E2D, 'b', 'a', 0xE9, 'b', 'a', 0x4E2D};
    size_t n = sizeof(text) / sizeof(text[0]);
    CharCounts c;
    char err[ERR_LEN];
    if (!CHECK(char_counts_build(&c, text, n, err) == 0, "%s", err)) return;
    int rare;
    size_t occurrences;
    char_counts_rare(&c, 2, &rare, &occurrences);
    CHECK(rare == 2 && occurrences == 2, "%d rare, %zu occurrences", rare, occurrences);
    Vocab v;
    if (!CHECK(char_counts_vocab(&c, 2, &v, err) == 0, "%s", err)) return;
    const uint32_t want[] = {'a', 'b', 0x4E2D, VOCAB_UNKNOWN_CHAR};
    CHECK(v.size == 4 && v.unknown && memcmp(v.chars, want, sizeof(want)) == 0 && char_counts_vocab_size(&c, 2) == 4,
          "vocabulary of %d, unknown %d", v.size, v.unknown);
    int tokens[11];
    size_t bad;
    CHECK(vocab_encode(&v, text, n, tokens, &bad) == 0, "encoding with the unknown token failed at %zu", bad);
    const int want_tokens[] = {0, 1, 0, 3, 2, 1, 0, 3, 1, 0, 2};
    CHECK(memcmp(tokens, want_tokens, sizeof(want_tokens)) == 0, "rare characters not mapped to U+FFFD's token");
    CHECK(vocab_token(&v, 0x1F600) == 3 && vocab_index(&v, 0x1F600) == -1, "a character never seen");
    vocab_free(&v);
    // a count above every character's leaves the unknown token alone
    CHECK(char_counts_vocab(&c, 100, &v, err) == 0 && v.size == 1 && v.chars[0] == VOCAB_UNKNOWN_CHAR, "min_count 100");
    vocab_free(&v);
    char_counts_free(&c);
    // U+FFFD itself common: it is the unknown token and a character of its own at once
    const uint32_t with_fffd[] = {'x', VOCAB_UNKNOWN_CHAR, VOCAB_UNKNOWN_CHAR, 'x', 0x1F600};
    CHECK(char_counts_build(&c, with_fffd, 5, err) == 0 && char_counts_vocab(&c, 2, &v, err) == 0, "%s", err);
    CHECK(v.size == 2 && v.chars[1] == VOCAB_UNKNOWN_CHAR && v.unknown && vocab_token(&v, 0x1F600) == 1,
          "U+FFFD in the text: vocabulary of %d", v.size);
    vocab_free(&v);
    char_counts_free(&c);
}

TEST(vocab_one_distinct_character_refused) {
    uint32_t *zeros = calloc(1000, sizeof(uint32_t));
    for (int i = 0; i < 1000; i++) zeros[i] = 'a';
    CharCounts c;
    char err[ERR_LEN];
    CHECK(char_counts_build(&c, zeros, 1000, err) == 0, "%s", err);
    CHECK(char_counts_check_varied(&c, err) == -1 && strstr(err, "one distinct character, 'a' U+0061 1000 times"),
          "one character: %s", err);
    char_counts_free(&c);
    zeros[7] = 'b';
    CHECK(char_counts_build(&c, zeros, 1000, err) == 0 && char_counts_check_varied(&c, err) == 0, "two characters");
    char_counts_free(&c);
    free(zeros);
}

TEST(vocab_grow_adds_the_new_characters) {
    const uint32_t old_chars[] = {'\n', ' ', 'a', 'b'};
    Vocab old;
    char err[ERR_LEN];
    CHECK(vocab_from_chars(&old, old_chars, 4, err) == 0, "%s", err);
    // the fine-tuning text: '<' x3, '1' x2 and '€' x1 are new
    const uint32_t text[] = {'a', '<', '1', ' ', '<', 0x20AC, '1', '<', 'b', '\n'};
    MissingChars missing, added;
    CHECK(vocab_coverage_find(&old, text, 10, &missing, err) == 0, "%s", err);
    Vocab grown;
    if (CHECK(vocab_grow(&old, &missing, 1, &grown, &added, err) == 0, "%s", err)) {
        const uint32_t want[] = {'\n', ' ', '1', '<', 'a', 'b', 0x20AC};
        CHECK(grown.size == 7 && !grown.unknown && memcmp(grown.chars, want, sizeof(want)) == 0, "grown to %d",
              grown.size);
        char listed[256];
        vocab_coverage_describe(&added, 8, listed, sizeof(listed));
        CHECK(added.distinct == 3 && strcmp(listed, "'<' U+003C 3 times, '1' U+0031 2 times, '€' U+20AC 1 time") == 0,
              "added: %s", listed);
        vocab_free(&grown);
        vocab_coverage_free(&added);
    }
    // with min_count 2, '€' shares the unknown token, which joins the vocabulary
    if (CHECK(vocab_grow(&old, &missing, 2, &grown, &added, err) == 0, "%s", err)) {
        const uint32_t want[] = {'\n', ' ', '1', '<', 'a', 'b', VOCAB_UNKNOWN_CHAR};
        CHECK(grown.size == 7 && grown.unknown && memcmp(grown.chars, want, sizeof(want)) == 0, "grown to %d",
              grown.size);
        char listed[256];
        vocab_coverage_describe(&added, 8, listed, sizeof(listed));
        CHECK(strstr(listed, "U+FFFD (the unknown token)"), "added: %s", listed);
        CHECK(vocab_token(&grown, 0x20AC) == 6, "'€' not mapped to the unknown token");
        vocab_free(&grown);
        vocab_coverage_free(&added);
    }
    vocab_coverage_free(&missing);
    vocab_free(&old);
}

#define VOCAB_DIR "tests/tmp/vocab"

// A small model of vocabulary V with random weights, saved with vocab at path.
static int save_model(const char *path, const Vocab *vocab, GPT *model) {
    const GPTConfig config = {vocab->size, 8, 1, 2, 8, 4, 1, 0.0f, POSITION_LEARNED};
    char err[ERR_LEN];
    if (!CHECK(gpt_build(model, &config, 0, err) == 0, "%s", err)) return -1;
    gpt_init_weights(model, 99);
    test_make_dir("tests/tmp");
    test_make_dir(VOCAB_DIR);
    return CHECK(checkpoint_save(path, model, vocab, NULL, NULL, 0, err) == 0, "%s", err) ? 0 : -1;
}

TEST(vocab_unknown_token_round_trips_through_a_checkpoint) {
    const uint32_t chars[] = {'a', 'b', VOCAB_UNKNOWN_CHAR};
    Vocab vocab = {(uint32_t *)chars, 3, 1};
    GPT model = {0};
    const char *path = VOCAB_DIR "/unknown.safetensors";
    if (save_model(path, &vocab, &model) != 0) return;
    Checkpoint ck;
    char err[ERR_LEN];
    if (CHECK(checkpoint_open(path, &ck, err) == 0, "%s", err)) {
        Vocab back;
        CHECK(ck.vocab_unknown == 1 && checkpoint_vocab(&ck, &back, err) == 0 && back.unknown && back.size == 3 &&
                  vocab_token(&back, 'z') == 2, "the unknown token was not read back: %s", err);
        vocab_free(&back);
        checkpoint_close(&ck);
    }
    // without it, a character outside the vocabulary has no token
    vocab.unknown = 0;
    CHECK(checkpoint_save(VOCAB_DIR "/plain.safetensors", &model, &vocab, NULL, NULL, 0, err) == 0, "%s", err);
    if (CHECK(checkpoint_open(VOCAB_DIR "/plain.safetensors", &ck, err) == 0, "%s", err)) {
        Vocab back;
        CHECK(ck.vocab_unknown == 0 && checkpoint_vocab(&ck, &back, err) == 0 && !back.unknown &&
                  vocab_token(&back, 'z') == -1, "an unknown token appeared");
        vocab_free(&back);
        checkpoint_close(&ck);
    }
    // vocab_unknown other than U+FFFD, or without U+FFFD in the vocabulary, is refused
    const uint32_t abc[] = {'a', 'b', 'c'};
    CHECK(checkpoint_save(VOCAB_DIR "/abc.safetensors", &model, &(Vocab){(uint32_t *)abc, 3, 0}, NULL, NULL, 0, err) == 0,
          "%s", err);
    static const struct {
        const char *src, *value;
    } bad[] = {{VOCAB_DIR "/unknown.safetensors", "63"}, {VOCAB_DIR "/unknown.safetensors", "x"},
               {VOCAB_DIR "/abc.safetensors", "65533"}};
    for (int i = 0; i < 3; i++) {
        if (!CHECK(test_edit_checkpoint(bad[i].src, VOCAB_DIR "/edited.safetensors",
                                        &(CheckpointEdit){.key = "vocab_unknown", .value = bad[i].value}) == 0, "edit"))
            continue;
        CHECK(checkpoint_open(VOCAB_DIR "/edited.safetensors", &ck, err) == -1 && strstr(err, "vocab_unknown"),
              "vocab_unknown '%s' accepted", bad[i].value);
    }
    gpt_free(&model);
}

TEST(vocab_grown_model_keeps_old_rows_bit_for_bit) {
    const uint32_t old_chars[] = {'\n', 'a', 'b', 'z'};
    Vocab old = {(uint32_t *)old_chars, 4, 0};
    GPT model = {0};
    const char *path = VOCAB_DIR "/small.safetensors";
    if (save_model(path, &old, &model) != 0) return;
    Checkpoint ck;
    char err[ERR_LEN];
    if (!CHECK(checkpoint_open(path, &ck, err) == 0, "%s", err)) return;
    const uint32_t grown_chars[] = {'\n', '1', '<', 'a', 'b', 'z', 0x20AC};
    Vocab grown = {(uint32_t *)grown_chars, 7, 0};
    GPT g = {0}, fresh = {0};
    uint64_t seed = 1337;
    if (CHECK(checkpoint_load_model_grown(&ck, &grown, seed, &g, 1, err) == 0, "%s", err)) {
        GPTConfig config = ck.config;
        config.vocab_size = 7;
        CHECK(gpt_build(&fresh, &config, 0, err) == 0, "%s", err);
        gpt_init_weights(&fresh, seed);
        size_t C = (size_t)config.n_embd;
        // old characters' rows: the checkpoint's, bit for bit, at their new places
        const int old_at[] = {0, 3, 4, 5}, new_at[] = {1, 2, 6};
        for (int i = 0; i < 4; i++)
            CHECK(memcmp(g.params.wte + old_at[i] * C, model.params.wte + i * C, C * 4) == 0, "old row %d changed", i);
        // new characters' rows: exactly a new model's of this vocabulary and seed
        for (int i = 0; i < 3; i++)
            CHECK(memcmp(g.params.wte + new_at[i] * C, fresh.params.wte + new_at[i] * C, C * 4) == 0,
                  "new row %d is not a fresh model's", new_at[i]);
        // every other tensor is the checkpoint's
        size_t rest = model.num_parameters - 4 * C;
        CHECK(g.num_parameters == model.num_parameters + 3 * C &&
                  memcmp(g.params.wpe, model.params.wpe, rest * sizeof(float)) == 0, "the other tensors differ");
        CHECK(g.grads_memory != NULL, "with_gradients ignored");
        gpt_free(&fresh);
        gpt_free(&g);
    }
    // a "grown" vocabulary that lost one of the checkpoint's characters is refused
    const uint32_t lost_chars[] = {'\n', 'a', 'b', 'y'};
    Vocab lost = {(uint32_t *)lost_chars, 4, 0};
    CHECK(checkpoint_load_model_grown(&ck, &lost, seed, &g, 0, err) == -1 && strstr(err, "U+007A"), "%s", err);
    checkpoint_close(&ck);
    gpt_free(&model);
}
