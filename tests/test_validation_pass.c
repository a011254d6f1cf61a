// Tests of the end-of-run whole-validation pass's bound and progress: scoring the first N
// characters of a split is the pass over a split of N + 1 characters, its progress reports
// rise to the total, and 0 scores nothing.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../model/gpt.h"
#include "../training/evaluation.h"
#include "test.h"

typedef struct {
    long calls, last_done, total;
    int increasing;
} Seen;

static void record(void *context, long done, long total) {
    Seen *s = context;
    s->increasing &= done >= s->last_done && done <= total;
    s->last_done = done;
    s->total = total;
    s->calls++;
}

TEST(validation_pass_bounded_prefix_and_progress) {
    const GPTConfig config = {11, 8, 1, 2, 8, 4, 1, 0.0f};
    GPT model = {0};
    char err[ERR_LEN];
    int B = 3, T = 8;
    if (!CHECK(gpt_build(&model, &config, 0, err) == 0 && gpt_alloc_activations(&model, B, err) == 0, "%s", err))
        return;
    gpt_init_weights(&model, 5);
    size_t n = 500;
    int *tokens = malloc(n * sizeof(int)), inputs[3 * 8], targets[3 * 8];
    for (size_t i = 0; i < n; i++) tokens[i] = (int)((i * 7 + i / 3) % 11);
    Dataset whole = {tokens, 0, tokens, n, NULL};
    long count;
    Seen seen = {0, 0, 0, 1};
    PassProgress progress = {record, &seen};
    double all = validation_pass(&model, &whole, -1, B, T, 0, 1, &progress, inputs, targets, &count);
    CHECK(count == (long)n - 1 && isfinite(all), "the whole split: %ld characters, loss %g", count, all);
    CHECK(seen.calls >= 2 && seen.increasing && seen.last_done == count && seen.total == count,
          "progress: %ld calls, last %ld of %ld, increasing %d", seen.calls, seen.last_done, seen.total,
          seen.increasing);
    // the first N characters are the pass over a split of N + 1, whatever N is against B and T
    const long bounds[] = {1, 7, 8, 24, 25, 100, 498, 499, 1000};
    for (size_t k = 0; k < sizeof(bounds) / sizeof(bounds[0]); k++) {
        long max_chars = bounds[k], want_count = max_chars < (long)n - 1 ? max_chars : (long)n - 1;
        Dataset prefix = {tokens, 0, tokens, (size_t)want_count + 1, NULL};
        long c1, c2;
        double bounded = validation_pass(&model, &whole, max_chars, B, T, 0, 1, NULL, inputs, targets, &c1);
        double short_split = validation_pass(&model, &prefix, -1, B, T, 0, 1, NULL, inputs, targets, &c2);
        CHECK(c1 == want_count && c2 == want_count && bounded == short_split,
              "at most %ld: %ld characters, loss %.9g; the split of %ld gives %ld, %.9g", max_chars, c1, bounded,
              want_count + 1, c2, short_split);
        CHECK(validation_pass_chars(n, max_chars) == want_count, "validation_pass_chars(%zu, %ld)", n, max_chars);
    }
    CHECK(validation_pass_chars(n, -1) == (long)n - 1 && validation_pass_chars(n, 0) == 0, "no limit, and 0");
    // parts of the pass (processes) sum to the whole, bounded too
    long c;
    double parts = 0.0;
    for (int p = 0; p < 3; p++) parts += validation_pass(&model, &whole, 100, B, T, p, 3, NULL, inputs, targets, &c);
    double one = validation_pass(&model, &whole, 100, B, T, 0, 1, NULL, inputs, targets, &c);
    CHECK(fabs(parts - one) <= 1e-12 * fabs(one), "3 parts sum to %.12g, one pass %.12g", parts, one);
    free(tokens);
    gpt_free(&model);
}
