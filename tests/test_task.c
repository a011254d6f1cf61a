// Tests of the tasks' text (data/task.h): each generator is deterministic for a seed, writes
// what its task says (a string twice, a reversal, a sort, a sum) with the right part scored,
// its splits share no example, a step's batch is its rows, and the accuracy counts what it
// should on a hand-made case.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../data/task.h"
#include "test.h"

#define ROW 65  // block 64 and the next character

// Row `index` of a split as text, with its scored flags.
static void row_text(Task task, uint64_t seed, TaskSplit split, uint64_t index, int len, char *text,
                     unsigned char *scored) {
    int tokens[1024];
    task_row(task, seed, split, index, len, tokens, scored);
    const char *alphabet = task_alphabet(task);
    for (int i = 0; i < len; i++) text[i] = alphabet[tokens[i]];
    text[len] = '\0';
}

TEST(task_names_and_alphabets) {
    const char *names[] = {"induction", "reverse", "sort", "add"};
    for (int t = 0; t < TASK_COUNT; t++) {
        CHECK(task_find(names[t]) == t, "%s is task %d", names[t], task_find(names[t]));
        CHECK(strcmp(task_name((Task)t), names[t]) == 0, "task %d is called %s", t, task_name((Task)t));
        CHECK(strstr(TASK_NAMES, names[t]) != NULL, "TASK_NAMES lists %s", names[t]);
        CHECK(strlen(names[t]) < TASK_NAME_MAX, "%s fits TASK_NAME_MAX", names[t]);
        const char *a = task_alphabet((Task)t);
        for (size_t i = 1; a[i]; i++) CHECK(a[i - 1] < a[i], "%s's alphabet is in increasing order", names[t]);
    }
    CHECK(task_find("Induction") == -1 && task_find("") == -1 && task_find("copy") == -1, "unknown names are -1");
}

TEST(task_rows_are_deterministic_for_a_seed) {
    for (int t = 0; t < TASK_COUNT; t++) {
        char a[ROW + 1], b[ROW + 1];
        unsigned char sa[ROW], sb[ROW];
        row_text((Task)t, 7, TASK_TRAIN, 12, ROW, a, sa);
        row_text((Task)t, 7, TASK_TRAIN, 12, ROW, b, sb);
        CHECK(strcmp(a, b) == 0 && memcmp(sa, sb, ROW) == 0, "%s: the same row twice", task_name((Task)t));
        row_text((Task)t, 8, TASK_TRAIN, 12, ROW, b, sb);
        CHECK(strcmp(a, b) != 0, "%s: another seed, another row", task_name((Task)t));
        row_text((Task)t, 7, TASK_TRAIN, 13, ROW, b, sb);
        CHECK(strcmp(a, b) != 0, "%s: the next row differs", task_name((Task)t));
        // a shorter row is the same row's start
        row_text((Task)t, 7, TASK_TRAIN, 12, 20, b, sb);
        CHECK(strncmp(a, b, 20) == 0 && memcmp(sa, sb, 20) == 0, "%s: a shorter row is its start", task_name((Task)t));
    }
}

// The examples of a row, each with its scored flags: "S S" for induction (S's characters
// differ, so the shortest n that makes the next 2 n characters two equal halves is S's
// length), lines for the others. The last example is left out when the row cuts it.
typedef struct {
    char text[64][ROW + 1];
    unsigned char scored[64][ROW];
    int n;
} Examples;

static void split_examples(Task task, const char *row, const unsigned char *scored, int len, Examples *e) {
    e->n = 0;
    for (int p = 0; p < len;) {
        int n = 0;
        if (task == TASK_INDUCTION) {
            for (int half = 1; p + 2 * half <= len && !n; half++)
                if (memcmp(row + p, row + p + half, (size_t)half) == 0) n = 2 * half;
        } else {
            const char *newline = memchr(row + p, '\n', (size_t)(len - p));
            n = newline ? (int)(newline - (row + p)) + 1 : 0;
        }
        if (n == 0) break;  // cut by the row's end
        memcpy(e->text[e->n], row + p, (size_t)n);
        e->text[e->n][n] = '\0';
        memcpy(e->scored[e->n], scored + p, (size_t)n);
        e->n++;
        p += n;
    }
}

// What an example must be: its text right for its task, its scored characters those after
// the copy's first (induction) or after '=' (the others).
static int example_right(Task task, const char *text, const unsigned char *scored) {
    int n = (int)strlen(text);
    if (task == TASK_INDUCTION) {
        int half = n / 2;
        for (int i = 0; i < half; i++)
            for (int j = 0; j < i; j++)
                if (text[i] == text[j]) return 0;  // the string's characters differ
        for (int i = 0; i < n; i++)
            if (scored[i] != (i > half)) return 0;
        return 1;
    }
    const char *eq = strchr(text, '=');
    if (!eq || text[n - 1] != '\n') return 0;
    int q = (int)(eq - text), a = n - 1 - (q + 1);  // question and answer lengths
    for (int i = 0; i < n; i++)
        if (scored[i] != (i > q)) return 0;
    char want[ROW + 1];
    if (task == TASK_REVERSE) {
        if (a != q) return 0;
        for (int i = 0; i < q; i++) want[i] = text[q - 1 - i];
    } else if (task == TASK_SORT) {
        if (a != q) return 0;
        memcpy(want, text, (size_t)q);
        for (int i = 1; i < q; i++)  // insertion sort
            for (int j = i; j > 0 && want[j - 1] > want[j]; j--) {
                char c = want[j];
                want[j] = want[j - 1], want[j - 1] = c;
            }
    } else {
        long x, y;
        if (sscanf(text, "%ld+%ld=", &x, &y) != 2) return 0;
        snprintf(want, sizeof(want), "%ld", x + y);
        if ((int)strlen(want) != a) return 0;
    }
    return memcmp(want, eq + 1, (size_t)a) == 0;
}

TEST(task_examples_are_right_and_scored) {
    for (int t = 0; t < TASK_COUNT; t++) {
        int examples = 0, wrong = 0;
        for (uint64_t r = 0; r < 200; r++) {
            char row[ROW + 1];
            unsigned char scored[ROW];
            row_text((Task)t, 3, r % 2 ? TASK_VALIDATION : TASK_TRAIN, r, ROW, row, scored);
            CHECK(scored[0] == 0, "%s row %d: its first character is not scored", task_name((Task)t), (int)r);
            Examples e;
            split_examples((Task)t, row, scored, ROW, &e);
            for (int i = 0; i < e.n; i++, examples++)
                if (!example_right((Task)t, e.text[i], e.scored[i]) && wrong++ < 3)
                    CHECK(0, "%s: example '%s' is wrong or wrongly scored", task_name((Task)t), e.text[i]);
        }
        CHECK(examples > 300 && wrong == 0, "%s: %d examples, %d wrong", task_name((Task)t), examples, wrong);
    }
}

static int by_text(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

// Every example of `rows` rows of each split: none is in both, and each is in its own split.
TEST(task_splits_share_no_example) {
    enum { ROWS = 2000 };
    for (int t = 0; t < TASK_COUNT; t++) {
        static char texts[2][ROWS * 32][ROW + 1];
        char *sorted[2][ROWS * 32];
        int count[2] = {0, 0}, misplaced = 0;
        for (int s = 0; s < 2; s++)
            for (uint64_t r = 0; r < ROWS; r++) {
                char row[ROW + 1];
                unsigned char scored[ROW];
                row_text((Task)t, 11, (TaskSplit)s, r, ROW, row, scored);
                Examples e;
                split_examples((Task)t, row, scored, ROW, &e);
                for (int i = 0; i < e.n && count[s] < ROWS * 32; i++) {
                    misplaced += task_example_split(e.text[i], (int)strlen(e.text[i])) != (TaskSplit)s;
                    strcpy(texts[s][count[s]], e.text[i]);
                    sorted[s][count[s]] = texts[s][count[s]];
                    count[s]++;
                }
            }
        CHECK(misplaced == 0, "%s: %d examples in the other split's share", task_name((Task)t), misplaced);
        qsort(sorted[1], (size_t)count[1], sizeof(char *), by_text);
        int shared = 0;
        for (int i = 0; i < count[0]; i++)
            shared += bsearch(&sorted[0][i], sorted[1], (size_t)count[1], sizeof(char *), by_text) != NULL;
        CHECK(shared == 0 && count[0] > ROWS && count[1] > ROWS, "%s: %d of %d training examples among %d validation "
              "ones", task_name((Task)t), shared, count[0], count[1]);
    }
    // the same example text always falls in the same split
    CHECK(task_example_split("12+34=46\n", 9) == task_example_split("12+34=46\n", 9), "split of one text");
}

TEST(task_batches_are_their_steps_rows) {
    enum { B = 3, T = 16 };
    for (int t = 0; t < TASK_COUNT; t++) {
        int inputs[B * T], targets[B * T], row[T + 1];
        unsigned char scored[T + 1];
        task_train_batch((Task)t, 5, 4, B, T, inputs, targets);
        for (int b = 0; b < B; b++) {
            task_row((Task)t, 5, TASK_TRAIN, 4 * B + (uint64_t)b, T + 1, row, scored);
            CHECK(memcmp(inputs + b * T, row, sizeof(int) * T) == 0 &&
                  memcmp(targets + b * T, row + 1, sizeof(int) * T) == 0, "%s: step 4's row %d is training row %d",
                  task_name((Task)t), b, 4 * B + b);
        }
        int *tokens;
        unsigned char *flags;
        char err[ERR_LEN];
        if (!CHECK(task_validation_text((Task)t, 5, 3, T + 1, &tokens, &flags, err) == 0, "%s", err)) continue;
        for (int r = 0; r < 3; r++) {
            task_row((Task)t, 5, TASK_VALIDATION, (uint64_t)r, T + 1, row, scored);
            CHECK(memcmp(tokens + r * (T + 1), row, sizeof(row)) == 0 &&
                  memcmp(flags + r * (T + 1), scored, sizeof(scored)) == 0, "%s: validation row %d in place",
                  task_name((Task)t), r);
        }
        free(tokens);
        free(flags);
    }
}

// Three predictions of a vocabulary of 4, the middle one unscored: the first right, the last
// wrong (its largest logit is tied between a wrong token, first, and the target).
TEST(task_accuracy_hand_made) {
    const float logits[3 * 4] = {0.1f, 2.0f, -1.0f, 0.5f,   // predicts 1
                                 5.0f, 0.0f, 0.0f, 0.0f,    // unscored
                                 1.0f, 0.0f, 3.0f, 3.0f};   // predicts 2 (first of the tie)
    const int targets[3] = {1, 2, 3};
    const unsigned char scored[3] = {1, 0, 1};
    double correct = 0.5, total = 2.0;  // added to
    task_count_correct(logits, 4, targets, scored, 3, &correct, &total);
    CHECK(correct == 1.5 && total == 4.0, "correct %g of %g, want 1.5 of 4", correct, total);
}
