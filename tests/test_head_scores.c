// Tests of the head patterns added to analysis/head_scores.h (first character, same
// character, word start, last space), their reach and the labels they give, on hand-made attention
// patterns whose scores their definitions give by hand. (The previous-token and induction
// scores' hand-made patterns are in tests/test_probe.c.)
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../analysis/head_scores.h"
#include "../common/utf8.h"
#include "test.h"

#define MAX_T 64

// A text's tokens (its code points) and word starts.
typedef struct {
    int tokens[MAX_T];
    int word_start[MAX_T], last_space[MAX_T];
    HeadText text;
} Text;

static void text_of(Text *x, const char *s) {
    uint32_t chars[MAX_T];
    size_t bad;
    int t = (int)utf8_decode((const unsigned char *)s, strlen(s), chars, &bad);
    for (int i = 0; i < t; i++) x->tokens[i] = (int)chars[i];
    head_word_starts(chars, t, x->word_start, x->last_space);
    x->text = (HeadText){x->tokens, x->word_start, x->last_space, t};
}

// (t, t) with each row's weight 1 on key key_of(x, i) (the query itself when it gives -1).
static float *one_hot(const Text *x, int (*key_of)(const Text *x, int i)) {
    int t = x->text.t;
    float *a = calloc((size_t)t * t, sizeof(float));
    for (int i = 0; i < t; i++) {
        int j = key_of(x, i);
        a[i * t + (j < 0 || j > i ? i : j)] = 1.0f;
    }
    return a;
}
static int first(const Text *x, int i) { return 0; }
static int word_start(const Text *x, int i) { return x->word_start[i]; }
static int last_space(const Text *x, int i) { return x->last_space[i]; }
// the last earlier occurrence of the query's character, or -1
static int last_same(const Text *x, int i) {
    for (int j = i - 1; j >= 0; j--)
        if (x->tokens[j] == x->tokens[i]) return j;
    return -1;
}

TEST(head_scores_word_starts) {
    Text x;
    text_of(&x, "to be,\tor  not\n");
    // t o _ b e , \t o r _ _ n o t \n
    const int want[15] = {0, 0, -1, 3, 3, 3, -1, 7, 7, -1, -1, 11, 11, 11, -1};
    const int spaces[15] = {-1, -1, -1, 2, 2, 2, 2, 6, 6, 6, 9, 10, 10, 10, 10};
    CHECK(x.text.t == 15 && !memcmp(x.word_start, want, sizeof(want)), "word starts of \"to be,\\tor  not\\n\"");
    CHECK(!memcmp(x.last_space, spaces, sizeof(spaces)), "last spaces of \"to be,\\tor  not\\n\"");
    CHECK(head_is_space(' ') && head_is_space('\t') && head_is_space('\n') && head_is_space('\r') &&
              head_is_space(0xA0) && head_is_space(0x3000) && !head_is_space('a') && !head_is_space(0x200B),
          "whitespace");
}

static int previous(const Text *x, int i) { return i - 1; }

// (t, t) uniform causal attention: row i gives 1 / (i + 1) to keys 0..i.
static float *uniform(int t) {
    float *a = calloc((size_t)t * t, sizeof(float));
    for (int i = 0; i < t; i++)
        for (int j = 0; j <= i; j++) a[i * t + j] = 1.0f / (i + 1);
    return a;
}

TEST(head_scores_of_new_patterns) {
    // words: "ab cd ef" starts at 0, 3, 6; the spaces (2, 5) have none
    Text x;
    text_of(&x, "ab cd ef");
    float *to_first = one_hot(&x, first), *to_start = one_hot(&x, word_start), *prev = one_hot(&x, previous);
    float *flat = uniform(8), *to_space = one_hot(&x, last_space);
    const struct { const char *what; const float *att; double first, start; } cases[] = {
        {"first character", to_first, 1.0, 2.0 / 8},      // rows 0 and 1 of the first word start at 0
        {"word start", to_start, 2.0 / 8, 6.0 / 8},       // its first word's two rows are on key 0
        // rows 1, 4 and 7 look at their word's start, row 0 (on itself) too; rows 0 and 1 at key 0
        {"previous token", prev, 2.0 / 8, 4.0 / 8},
        // row i gives 1 / (i + 1) to each key: key 0 in every row; its word start in the non-space rows
        {"uniform", flat, (1 + 1. / 2 + 1. / 3 + 1. / 4 + 1. / 5 + 1. / 6 + 1. / 7 + 1. / 8) / 8,
         (1 + 1. / 2 + 1. / 4 + 1. / 5 + 1. / 7 + 1. / 8) / 8},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        double f = head_score(HEAD_FIRST_CHARACTER, cases[c].att, &x.text);
        double w = head_score(HEAD_WORD_START, cases[c].att, &x.text);
        CHECK(fabs(f - cases[c].first) < 1e-6, "%s: first character %.6f, want %.6f", cases[c].what, f, cases[c].first);
        CHECK(fabs(w - cases[c].start) < 1e-6, "%s: word start %.6f, want %.6f", cases[c].what, w, cases[c].start);
    }
    // the last-space head: rows 3 to 7 on the space before them (2 or 5); rows 0 to 2 have none
    // and look at themselves, row 0 so at its word's start
    double space = head_score(HEAD_LAST_SPACE, to_space, &x.text), start = head_score(HEAD_WORD_START, to_space, &x.text);
    double flat_space = head_score(HEAD_LAST_SPACE, flat, &x.text);
    CHECK(fabs(space - 5.0 / 8) < 1e-6 && fabs(start - 1.0 / 8) < 1e-6,
          "the last-space head: last space %.6f (want 0.625), word start %.6f (want 0.125)", space, start);
    CHECK(fabs(flat_space - (1. / 4 + 1. / 5 + 1. / 6 + 1. / 7 + 1. / 8) / 8) < 1e-6, "uniform: last space %.6f", flat_space);
    CHECK(fabs(head_pattern_reach(HEAD_LAST_SPACE, &x.text) - 5.0 / 8) < 1e-9, "the reach of last space");
    CHECK(fabs(head_pattern_reach(HEAD_WORD_START, &x.text) - 6.0 / 8) < 1e-9 &&
              head_pattern_reach(HEAD_FIRST_CHARACTER, &x.text) == 1.0 &&
              fabs(head_pattern_reach(HEAD_PREVIOUS_TOKEN, &x.text) - 7.0 / 8) < 1e-9,
          "the reach of word start, first character, previous token on \"ab cd ef\"");
    free(to_first), free(to_start), free(prev), free(flat), free(to_space);

    // "abcdabcd": in the second half each character on its earlier copy; the first half on itself
    Text y;
    text_of(&y, "abcdabcd");
    float *to_same = one_hot(&y, last_same), *flat2 = uniform(8);
    double s = head_score(HEAD_SAME_CHARACTER, to_same, &y.text), u = head_score(HEAD_SAME_CHARACTER, flat2, &y.text);
    double ind = head_score(HEAD_INDUCTION, to_same, &y.text);
    CHECK(fabs(s - 0.5) < 1e-6, "the same-character head scores %.6f, want 0.5", s);
    CHECK(fabs(u - (1. / 5 + 1. / 6 + 1. / 7 + 1. / 8) / 8) < 1e-6, "uniform: same character %.6f", u);
    CHECK(ind == 0.0, "the same-character head scores %g as induction (the key after the copy)", ind);
    CHECK(fabs(head_pattern_reach(HEAD_SAME_CHARACTER, &y.text) - 0.5) < 1e-9 &&
              fabs(head_pattern_reach(HEAD_INDUCTION, &y.text) - 0.5) < 1e-9,
          "the reach of same character and induction on a run repeated twice");
    free(to_same), free(flat2);
}

// A pattern's chance is the score of uniform attention, on every pattern and text here, and an
// untrained model's heads (the probe's step 0) are at it: no label.
TEST(head_scores_chance_is_uniform_attention) {
    const char *texts[] = {"abc abd abe", "the cat sat on the mat", "aaaa", "q", "xy xy xy\nxy"};
    for (size_t k = 0; k < sizeof(texts) / sizeof(texts[0]); k++) {
        Text x;
        text_of(&x, texts[k]);
        float *flat = uniform(x.text.t);
        float score[HEAD_PATTERNS], reach[HEAD_PATTERNS], chance[HEAD_PATTERNS];
        for (int p = 0; p < HEAD_PATTERNS; p++) {
            score[p] = (float)head_score((HeadPattern)p, flat, &x.text);
            reach[p] = (float)head_pattern_reach((HeadPattern)p, &x.text);
            chance[p] = (float)head_pattern_chance((HeadPattern)p, &x.text);
            CHECK(fabs(chance[p] - score[p]) < 1e-6, "'%s', %s: chance %.6f, uniform attention %.6f", texts[k],
                  head_pattern_names[p], chance[p], score[p]);
        }
        double strength;
        CHECK(head_label(score, reach, chance, &strength) == -1, "'%s': uniform attention labelled (%g)", texts[k],
              strength);
        free(flat);
    }
}

// A head's label is the pattern with the largest share of what it could add over chance: with
// no chance, an induction head at 0.4 of a reach of 0.5 beats a previous-token score of 0.6 of a
// reach near 1; scores that are not finite, and patterns the text cannot show, are left out;
// each hand-made head gets its own pattern's label; and a head that attends evenly, as an
// untrained one does, gets none, whatever its scores.
TEST(head_scores_labels) {
    const float reach[HEAD_PATTERNS] = {0.97f, 0.5f, 1.0f, 0.5f, 0.8f, 0.7f}, no_chance[HEAD_PATTERNS] = {0};
    double strength;
    float induction[HEAD_PATTERNS] = {0.6f, 0.4f, 0.1f, 0.05f, 0.2f, 0.1f};
    int label = head_label(induction, reach, no_chance, &strength);
    CHECK(label == HEAD_INDUCTION && fabs(strength - 0.8) < 1e-6, "induction 0.4 / 0.5: label %d, strength %g", label,
          strength);
    float unknown[HEAD_PATTERNS] = {0.2f, NAN, 0.1f, NAN, 0.3f, NAN};
    label = head_label(unknown, reach, no_chance, &strength);
    CHECK(label == HEAD_WORD_START && fabs(strength - 0.375) < 1e-6, "NaN scores: label %d, strength %g", label,
          strength);
    const float no_reach[HEAD_PATTERNS] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
    CHECK(head_label(unknown, no_reach, no_chance, &strength) == -1 && strength == 0.0,
          "no pattern can be seen: a label");
    // chance 0.3 of previous token: 0.6 is (0.6 - 0.3) / (0.97 - 0.3) = 0.45 of the way, below
    // induction's 0.8; a score at chance is no finding
    const float chance[HEAD_PATTERNS] = {0.3f, 0.0f, 0.1f, 0.05f, 0.2f, 0.1f};
    label = head_label(induction, reach, chance, &strength);
    CHECK(label == HEAD_INDUCTION && fabs(strength - 0.8) < 1e-6, "with chance: label %d, strength %g", label,
          strength);
    const float at_chance[HEAD_PATTERNS] = {0.31f, 0.01f, 0.1f, 0.05f, 0.2f, 0.1f};
    CHECK(head_label(at_chance, reach, chance, &strength) == -1 && strength == 0.0,
          "a head at chance is labelled, strength %g", strength);
    Text x;
    text_of(&x, "abc abd abe");
    float *heads[4] = {one_hot(&x, first), one_hot(&x, word_start), one_hot(&x, last_same), one_hot(&x, last_space)};
    const HeadPattern want[4] = {HEAD_FIRST_CHARACTER, HEAD_WORD_START, HEAD_SAME_CHARACTER, HEAD_LAST_SPACE};
    float text_reach[HEAD_PATTERNS], text_chance[HEAD_PATTERNS], scores[HEAD_PATTERNS];
    for (int p = 0; p < HEAD_PATTERNS; p++) {
        text_reach[p] = (float)head_pattern_reach((HeadPattern)p, &x.text);
        text_chance[p] = (float)head_pattern_chance((HeadPattern)p, &x.text);
    }
    for (int k = 0; k < 4; k++) {
        for (int p = 0; p < HEAD_PATTERNS; p++) scores[p] = (float)head_score((HeadPattern)p, heads[k], &x.text);
        label = head_label(scores, text_reach, text_chance, &strength);
        CHECK(label == (int)want[k] && strength >= 0.99, "the %s head is labelled %s (%g)", head_pattern_names[want[k]],
              label >= 0 ? head_pattern_names[label] : "none", strength);
        free(heads[k]);
    }
}
