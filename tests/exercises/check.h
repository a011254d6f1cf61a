// The exercises' checker (docs/exercises.md): what `make exercise NAME=...` runs on the
// learner's function, linked in place of the project's. Each exercise's checks call the
// function on small inputs and compare what it wrote with tests/reference.c's double
// precision (and a backward with central differences of the reference's forward), then
// say which element is wrong, by how much, and what that usually means. check_main.c runs
// them in a child process under a time limit, then the short training run.
#ifndef CHARGPT_EXERCISE_CHECK_H
#define CHARGPT_EXERCISE_CHECK_H

#include <stddef.h>

// ---------------------------------------------------------------------------------------
// the exercises, easiest first (exercises.c)

typedef struct {
    const char *name;  // what `make exercise NAME=` takes; exercises/<name>.c
    const char *function;  // the function exercises/<name>.c defines, in place of the project's
    const char *solution;  // the project's file that holds that function (the solution)
    int minutes;  // about how long a learner takes
    // Runs the checks (in the child process): 1 when all passed. Each prints its line.
    int (*check)(void);
} Exercise;

extern const Exercise exercise_list[];
extern const int exercise_count;
// The exercise of that name, or NULL.
const Exercise *exercise_find(const char *name);

// The checks of each exercise (check_<file>.c).
int check_gelu(void);
int check_gelu_backward(void);
int check_softmax(void);
int check_crossentropy(void);
int check_crossentropy_backward(void);
int check_linear(void);
int check_linear_backward(void);
int check_layernorm(void);
int check_layernorm_backward(void);
int check_adamw(void);
int check_attention(void);
int check_attention_backward(void);

// ---------------------------------------------------------------------------------------
// buffers (buffers.c): every array handed to the learner's function sits between two guard
// zones, so that a write past either end is seen (and with AddressSanitizer any access),
// and inputs are checked unchanged after the call

// The function under test and the title of the running check, for every message (a crash's
// too). The title is written into `slot` when buffers_share_title gave one: memory the child
// process shares with its parent (check_main.c), which names the check that stopped answering.
void buffers_set_function(const char *function);
void buffers_share_title(char *slot, size_t size);
void check_title(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
const char *running_function(void);
const char *running_title(void);

// An array of n floats (n may be 0), its guards set; values copied from `from` or, when
// NULL, uniform in [lo, hi) from the check's random numbers. `input`: the function may only
// read it (checked after the call). name is how messages call it ("inp", "dout").
float *buffer(const char *name, size_t n, const float *from, float lo, float hi, int input);
int *int_buffer(const char *name, size_t n, const int *from);
// Arrays for the checker's own use (no guards), zeroed; freed with the check's buffers.
double *doubles(size_t n);
float *floats(size_t n);
// The floats of a buffer as doubles (a new doubles()).
double *doubles_of(const float *x, size_t n);
// Uniform in [lo, hi) from the check's random numbers (seeded by buffers_reset).
double uniform(double lo, double hi);
// After a call of the learner's function: 1 when every guard and input is as it was; else
// prints the FAIL line of the running check and what was written where, and returns 0.
int buffers_intact(void);
// Frees every buffer and seeds the random numbers for the next check.
void buffers_reset(unsigned seed);
// The child's crash handlers (signals, AddressSanitizer's report): a message naming the
// function, the check and, for an access to a guard zone, the array and its element.
void buffers_catch_crashes(void);

// ---------------------------------------------------------------------------------------
// processes (check_main.c)

// Waits for child pid up to `limit` seconds: 1 with its wait status, or 0 once it has been
// killed. progress (or NULL) is called with ctx about once a second while it runs.
int wait_child(int pid, double limit, int *status, void (*progress)(void *ctx), void *ctx);

// ---------------------------------------------------------------------------------------
// comparing (compare.c)

#define CHECK_MAX_OUTPUTS 4
#define CHECK_MAX_MISTAKES 10
#define CHECK_MAX_DIMS 4

// One array the function wrote or added to, against what it should hold.
typedef struct {
    const char *name;  // "out", "dinp"
    const float *got;  // after the call
    const double *want;  // the reference
    const float *before;  // what it held before the call (a copy)
    int adds;  // 1: the function adds (+=) into it; 0: it writes (=) it
    size_t n;
    int ndim, dims[CHECK_MAX_DIMS];  // its shape, for elements' names
    const char *dim_names[CHECK_MAX_DIMS];  // "row", "channel"
} Output;

// A known wrong answer: what the output(s) hold when the function makes this mistake
// (NULL: that output is not concerned), and what to say.
typedef struct {
    const char *what;
    const double *values[CHECK_MAX_OUTPUTS];
} Mistake;

typedef struct {
    double tolerance;  // max |got - want| / max |want| allowed, for every output
    int count;
    Output out[CHECK_MAX_OUTPUTS];
    int mistakes;
    Mistake mistake[CHECK_MAX_MISTAKES];
    // Factors the whole output (or what was added to it) may be off by, and what each
    // means: "sqrt(hs)" -> "the scores were not divided by sqrt(hs)"
    int factors;
    double factor[6];
    const char *factor_means[6];
    const char *nonfinite_hint;  // what a NaN or infinity usually means here, or NULL
    const char *hint;  // said after any failure of this check (what it tests), or NULL
} Check;

// A check of the outputs named after the call: out (got) against want.
void check_init(Check *c, double tolerance);
Output *check_output(Check *c, const char *name, const float *got, const double *want, const float *before, int adds,
                     int ndim, const int *dims, const char *const *dim_names);
void check_mistake(Check *c, const char *what, const double *v0, const double *v1, const double *v2, const double *v3);
void check_factor(Check *c, double factor, const char *means);
// Compares; prints "ok" or FAIL with the diagnosis under the running check's title.
// Returns 1 when it passed.
int check_compare(const Check *c);
// Prints a FAIL line for the running check with a message of the exercise's own.
void check_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

// A copy of n floats as they are (for Output.before).
float *snapshot(const float *x, size_t n);

#endif
