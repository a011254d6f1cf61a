#include "task.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/rng.h"

// The examples' sizes.
#define INDUCTION_MIN 4    // characters of a string written twice, at least
#define INDUCTION_MAX 24   // and at most (<= the alphabet's size: a string's characters differ)
#define REVERSE_MAX 8      // characters of a string to reverse, 1 to this many
#define SORT_MAX 8         // digits to sort, 1 to this many
#define ADD_DIGITS 2       // digits of each number added, 1 to this many
#define EXAMPLE_MAX 64     // characters of an example, at most

typedef struct {
    const char *name;
    const char *alphabet;  // in increasing order
    const char *scored_part;
    // Writes one example drawn from rng into text (at most EXAMPLE_MAX characters) and the
    // scored flags of its characters; returns its length.
    int (*example)(Rng *rng, char *text, unsigned char *scored);
} TaskInfo;

static const char letters[] = "abcdefghijklmnopqrstuvwxyz";
static const char digits[] = "0123456789";

// A random string of n distinct letters (a partial shuffle), then the same again.
static int induction_example(Rng *rng, char *text, unsigned char *scored) {
    char pool[sizeof(letters)];
    memcpy(pool, letters, sizeof(letters));
    int n = INDUCTION_MIN + (int)rng_below(rng, INDUCTION_MAX - INDUCTION_MIN + 1);
    for (int i = 0; i < n; i++) {
        int k = i + (int)rng_below(rng, (uint64_t)(sizeof(letters) - 1 - (size_t)i));
        char c = pool[k];
        pool[k] = pool[i], pool[i] = c;
        text[i] = text[n + i] = c;
        scored[i] = 0;
        scored[n + i] = i > 0;  // the copy's first character could be any
    }
    return 2 * n;
}

// "question=answer\n" around the question's len characters and the answer's answer_len,
// which the caller writes at text and text + len + 1; the answer and the newline are scored.
static int question_and_answer(char *text, unsigned char *scored, int len, int answer_len) {
    memset(scored, 0, (size_t)len + 1);
    text[len] = '=';
    memset(scored + len + 1, 1, (size_t)answer_len + 1);
    text[len + 1 + answer_len] = '\n';
    return len + answer_len + 2;
}

static int reverse_example(Rng *rng, char *text, unsigned char *scored) {
    int n = 1 + (int)rng_below(rng, REVERSE_MAX);
    for (int i = 0; i < n; i++) text[i] = text[2 * n - i] = letters[rng_below(rng, sizeof(letters) - 1)];
    return question_and_answer(text, scored, n, n);
}

static int sort_example(Rng *rng, char *text, unsigned char *scored) {
    int n = 1 + (int)rng_below(rng, SORT_MAX), counts[10] = {0};
    for (int i = 0; i < n; i++) {
        int d = (int)rng_below(rng, 10);
        text[i] = digits[d];
        counts[d]++;
    }
    for (int d = 0, k = n + 1; d < 10; d++)
        while (counts[d]-- > 0) text[k++] = digits[d];
    return question_and_answer(text, scored, n, n);
}

// Writes v in decimal at text; returns its length.
static int write_number(char *text, long v) {
    char reversed[24];
    int n = 0;
    do reversed[n++] = (char)('0' + v % 10), v /= 10;
    while (v > 0);
    for (int i = 0; i < n; i++) text[i] = reversed[n - 1 - i];
    return n;
}

static int add_example(Rng *rng, char *text, unsigned char *scored) {
    long limit = 1;
    for (int i = 0; i < ADD_DIGITS; i++) limit *= 10;
    long a = (long)rng_below(rng, (uint64_t)limit), b = (long)rng_below(rng, (uint64_t)limit);
    int n = write_number(text, a);
    text[n++] = '+';
    n += write_number(text + n, b);
    int answer = write_number(text + n + 1, a + b);
    return question_and_answer(text, scored, n, answer);
}

static const TaskInfo tasks[TASK_COUNT] = {
    [TASK_INDUCTION] = {"induction", letters, "the repeated half", induction_example},
    [TASK_REVERSE] = {"reverse", "\n=abcdefghijklmnopqrstuvwxyz", "the answers", reverse_example},
    [TASK_SORT] = {"sort", "\n0123456789=", "the answers", sort_example},
    [TASK_ADD] = {"add", "\n+0123456789=", "the answers", add_example},
};

int task_find(const char *name) {
    for (int t = 0; t < TASK_COUNT; t++)
        if (strcmp(name, tasks[t].name) == 0) return t;
    return -1;
}

const char *task_name(Task task) { return tasks[task].name; }
const char *task_alphabet(Task task) { return tasks[task].alphabet; }
const char *task_scored_part(Task task) { return tasks[task].scored_part; }

TaskSplit task_example_split(const char *text, int len) {
    uint64_t h = 0x243F6A8885A308D3ull;  // any fixed start
    for (int i = 0; i < len; i++) h = hash_mix64(h ^ (unsigned char)text[i]);
    return h % TASK_VALIDATION_SHARE == 0 ? TASK_VALIDATION : TASK_TRAIN;
}

// The generator of row `index` of a split.
static void row_rng(Rng *rng, uint64_t seed, TaskSplit split, uint64_t index) {
    rng_seed(rng, hash_mix64(hash_mix64(seed) ^ (2 * index + (uint64_t)split)));
}

// Where a row's characters go: tokens[i] and scored[i], or as a training pair, character i
// into inputs[i] (i < len - 1) and targets[i - 1] (i > 0). NULL: not wanted.
typedef struct {
    int *tokens, *inputs, *targets;
    unsigned char *scored;
} RowOut;

static void generate_row(Task task, uint64_t seed, TaskSplit split, uint64_t index, int len, const RowOut *out) {
    const TaskInfo *info = &tasks[task];
    Rng rng;
    row_rng(&rng, seed, split, index);
    for (int filled = 0; filled < len;) {
        char text[EXAMPLE_MAX];
        unsigned char scored[EXAMPLE_MAX];
        int n;
        do n = info->example(&rng, text, scored);
        while (task_example_split(text, n) != split);
        for (int i = 0; i < n && filled < len; i++, filled++) {
            int token = (int)(strchr(info->alphabet, text[i]) - info->alphabet);
            if (out->tokens) out->tokens[filled] = token;
            if (out->scored) out->scored[filled] = filled > 0 && scored[i];
            if (out->inputs && filled < len - 1) out->inputs[filled] = token;
            if (out->targets && filled > 0) out->targets[filled - 1] = token;
        }
    }
}

void task_row(Task task, uint64_t seed, TaskSplit split, uint64_t index, int len, int *tokens,
              unsigned char *scored) {
    RowOut out = {tokens, NULL, NULL, scored};
    generate_row(task, seed, split, index, len, &out);
}

void task_train_batch(Task task, uint64_t seed, long step, int B, int T, int *inputs, int *targets) {
    for (int b = 0; b < B; b++) {
        RowOut out = {NULL, inputs + (size_t)b * T, targets + (size_t)b * T, NULL};
        generate_row(task, seed, TASK_TRAIN, (uint64_t)step * (uint64_t)B + (uint64_t)b, T + 1, &out);
    }
}

int task_validation_text(Task task, uint64_t seed, long rows, int row_len, int **tokens, unsigned char **scored,
                         char err[ERR_LEN]) {
    size_t n = (size_t)rows * (size_t)row_len;
    *tokens = malloc(n * sizeof(int));
    *scored = malloc(n);
    if (!*tokens || !*scored) {
        free(*tokens), free(*scored);
        *tokens = NULL, *scored = NULL;
        snprintf(err, ERR_LEN, "out of memory for the %s task's validation split (%zu characters)", task_name(task), n);
        return -1;
    }
    for (long r = 0; r < rows; r++)
        task_row(task, seed, TASK_VALIDATION, (uint64_t)r, row_len, *tokens + (size_t)r * row_len,
                 *scored + (size_t)r * row_len);
    return 0;
}

void task_count_correct(const float *logits, int V, const int *targets, const unsigned char *scored, int n,
                        double *correct, double *total) {
    for (int i = 0; i < n; i++) {
        if (!scored[i]) continue;
        const float *row = logits + (size_t)i * V;
        int best = 0;
        for (int v = 1; v < V; v++)
            if (row[v] > row[best]) best = v;
        *correct += best == targets[i];
        *total += 1.0;
    }
}
