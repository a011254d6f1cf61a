// The training run of an exercise (training_run.h). Both runs use the same options, seed and
// data, so a function that computes what the project's does gives the same loss and gradient
// norm at every step up to float rounding: the project's textbook loops and its AVX-512
// kernels, which sum in different orders, agree within 1e-6 in the loss and 3e-6 of the
// gradient's norm at each of these 200 steps (`CHARGPT_KERNELS=plain check --reference-run
// ./train DIR` against `check --reference-run ./train DIR`). LOSS_GAP and NORM_GAP leave some
// 300 times that, and still see a single update of 200 made with the wrong step count.
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../common/clock.h"
#include "training_run.h"

#define STEPS 200
#define STEPS_TEXT "200"
#define TIME_LIMIT 900.0  // seconds; the project's run takes about 5, a learner's plain loops up to 30 times that
#define LOSS_GAP 1e-3  // nats
#define NORM_GAP 1e-3  // of the project's gradient norm
// What the run is, for messages
#define RUN_SHAPES "8 sequences of 64 positions (N = 512 rows), n_embd 64, 2 heads of 32, vocabulary 26"

// --threads 1: the model calls each layer from every thread of a team, and the project's
// functions share the rows among them (`omp for`); a learner's function need not. --no-probe:
// no samples, whose cached generation calls attention with pos0 > 0.
static const char *const OPTIONS[] = {"--task", "induction",    "--steps",  STEPS_TEXT,    "--batch-size",
                                      "8",      "--threads",    "1",        "--no-probe",  "--log-every",
                                      "1",      "--eval-every", STEPS_TEXT, "--precision", "fp32",
                                      "--seed", "1337",         "--force",  NULL};

typedef struct {
    int rows;
    int step[STEPS];
    double loss[STEPS], norm[STEPS];
} Log;

static int make_dir(const char *path) { return mkdir(path, 0777) == 0 || errno == EEXIST ? 0 : -1; }

// On a terminal, the run's latest step (the last line of its log.csv), rewritten in place.
typedef struct {
    const char *log_csv;
    double start;
} Progress;

static void show_progress(void *ctx) {
    const Progress *p = ctx;
    FILE *f = fopen(p->log_csv, "r");
    char line[512], last[512] = "";
    while (f && fgets(line, sizeof(line), f)) memcpy(last, line, sizeof(line));
    if (f) fclose(f);
    int step = atoi(last);
    printf("\r        step %d of %d, %.0f s ", step, STEPS, now_seconds() - p->start);
    fflush(stdout);
}

// Runs train with the options into dir/run, its output in dir/train.log. Returns 1 when it
// ended with status 0; else says how it ended and returns 0.
static int run_train(const char *train, const char *dir, const char *whose, double *seconds) {
    char out[4096], log[4096];
    snprintf(out, sizeof(out), "%s/run", dir);
    snprintf(log, sizeof(log), "%s/train.log", dir);
    if (make_dir(dir) != 0 || make_dir(out) != 0) {
        printf("        cannot make %s: %s\n", out, strerror(errno));
        return 0;
    }
    const char *argv[32] = {train};
    int argc = 1;
    for (int i = 0; OPTIONS[i]; i++) argv[argc++] = OPTIONS[i];
    argv[argc++] = "--out";
    argv[argc++] = out;
    argv[argc] = NULL;
    double start = now_seconds();
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) return 0;
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0666);
        if (fd < 0 || dup2(fd, STDOUT_FILENO) < 0 || dup2(fd, STDERR_FILENO) < 0) _exit(127);
        execv(train, (char *const *)argv);
        fprintf(stderr, "cannot run %s: %s\n", train, strerror(errno));
        _exit(127);
    }
    int status, terminal = isatty(STDOUT_FILENO);
    char csv[4096];
    snprintf(csv, sizeof(csv), "%s/log.csv", out);
    Progress progress = {csv, start};
    int ended = wait_child(pid, TIME_LIMIT, &status, terminal ? show_progress : NULL, &progress);
    if (terminal) printf("\r%60s\r", "");
    *seconds = now_seconds() - start;
    if (ended && WIFEXITED(status) && WEXITSTATUS(status) == 0) return 1;
    if (!ended)
        printf(
            "        %s run did not end within %.0f seconds (it takes well under a minute): %s holds its "
            "output\n",
            whose, TIME_LIMIT, log);
    else if (WIFSIGNALED(status))
        printf("        %s run crashed (signal %d) after %.1f s; the end of its output (%s):\n", whose,
               WTERMSIG(status), *seconds, log);
    else
        printf("        %s run ended with status %d after %.1f s; the end of its output (%s):\n", whose,
               WEXITSTATUS(status), *seconds, log);
    FILE *f = fopen(log, "r");
    if (ended && f) {
        char lines[4][512] = {{0}};
        int count = 0;
        while (fgets(lines[count % 4], sizeof(lines[0]), f)) count++;
        for (int i = count > 4 ? count - 4 : 0; i < count; i++) printf("          %s", lines[i % 4]);
    }
    if (f) fclose(f);
    return 0;
}

// Reads dir/run/log.csv: each step's train loss and gradient norm. Returns 0, or -1.
static int read_log(const char *dir, Log *log) {
    char path[4096], line[1024];
    snprintf(path, sizeof(path), "%s/run/log.csv", dir);
    FILE *f = fopen(path, "r");
    memset(log, 0, sizeof(*log));
    if (!f) return -1;
    int step_col = -1, loss_col = -1, norm_col = -1;
    if (fgets(line, sizeof(line), f)) {
        int col = 0;
        for (char *name = strtok(line, ",\n"); name; name = strtok(NULL, ",\n"), col++) {
            if (strcmp(name, "step") == 0) step_col = col;
            if (strcmp(name, "train_loss") == 0) loss_col = col;
            if (strcmp(name, "grad_norm") == 0) norm_col = col;
        }
    }
    while (step_col >= 0 && loss_col >= 0 && norm_col >= 0 && log->rows < STEPS && fgets(line, sizeof(line), f)) {
        int col = 0;
        char *p = line;
        for (;;) {
            char *comma = strchr(p, ',');
            if (col == step_col) log->step[log->rows] = atoi(p);
            if (col == loss_col) log->loss[log->rows] = strtod(p, NULL);
            if (col == norm_col) log->norm[log->rows] = strtod(p, NULL);
            if (!comma) break;
            p = comma + 1, col++;
        }
        log->rows++;
    }
    fclose(f);
    return log->rows > 0 ? 0 : -1;
}

int training_reference(const char *train, const char *dir) {
    double seconds;
    Log log;
    printf("the project's training run for the exercises to compare with: %s", train);
    for (int i = 0; OPTIONS[i]; i++) printf(" %s", OPTIONS[i]);
    printf(" --out %s/run\n", dir);
    if (!run_train(train, dir, "the project's", &seconds) || read_log(dir, &log) != 0) {
        printf("the project's training run failed (above): the exercises have nothing to compare with\n");
        return 1;
    }
    printf("  %d steps in %.1f s: loss %.4f at step 1, %.4f at step %d\n", log.rows, seconds, log.loss[0],
           log.loss[log.rows - 1], log.step[log.rows - 1]);
    return 0;
}

// What a first difference at step `step` (index i) points to.
static void say_what_differs(const Exercise *e, const Log *mine, const Log *ref, int i) {
    int loss_off = !(fabs(mine->loss[i] - ref->loss[i]) <= LOSS_GAP);
    if (loss_off)
        printf("        at step %d the loss is %.6g, the project's %.6g (off by %.3g)\n", mine->step[i], mine->loss[i],
               ref->loss[i], fabs(mine->loss[i] - ref->loss[i]));
    else
        printf(
            "        at step %d the loss is %.6g as the project's, but the gradient's norm is %.6g against %.6g "
            "(%.2g%% off)\n",
            mine->step[i], mine->loss[i], mine->norm[i], ref->norm[i],
            100.0 * fabs(mine->norm[i] - ref->norm[i]) / ref->norm[i]);
    if (i == 0 && loss_off)
        printf(
            "        Step 1's loss is the untrained model's forward on the first batch, so your %s gives "
            "other values on the run's shapes (" RUN_SHAPES
            ") than on the checks' small ones: look for what "
            "changes with size (a fixed-size array, an int that overflows, a shape argument used in place of "
            "another)\n",
            e->function);
    else if (i == 0)
        printf("        The forward agrees at step 1 and the gradient does not: on the run's shapes (" RUN_SHAPES
               ") your %s gives another gradient, or another value that a backward reads (LayerNorm's mean and "
               "rstd, attention's weights): look for what changes with size\n",
               e->function);
    else
        printf(
            "        Steps 1 to %d agree, so each step's forward and backward are right; the runs part at step "
            "%d: look at what carries from one call to the next (AdamW's moments and step count, a static "
            "variable)\n",
            mine->step[i - 1], mine->step[i]);
}

int training_compare(const Exercise *e, const char *train, const char *dir, const char *reference_dir) {
    Log ref, mine;
    if (read_log(reference_dir, &ref) != 0) {
        printf("  the project's run is missing (%s/run/log.csv): `make exercise` makes it\n", reference_dir);
        return 0;
    }
    printf("  ..    training: %d steps of ./train --task induction on one thread, your %s in the loop\n", STEPS,
           e->function);
    double seconds;
    const char *title = "  FAIL  training: the run with your function";
    if (!run_train(train, dir, "your", &seconds)) {
        printf("%s did not finish (above)\n", title);
        return 0;
    }
    if (read_log(dir, &mine) != 0 || mine.rows != ref.rows) {
        printf("%s wrote %d steps of log.csv, the project's %d (%s/train.log)\n", title, mine.rows, ref.rows, dir);
        return 0;
    }
    double loss_gap = 0.0, norm_gap = 0.0;
    for (int i = 0; i < ref.rows; i++) {
        double dl = fabs(mine.loss[i] - ref.loss[i]), dn = fabs(mine.norm[i] - ref.norm[i]) / ref.norm[i];
        if (!(dl <= LOSS_GAP) || !(dn <= NORM_GAP)) {
            printf("%s parts from the project's at step %d of %d\n", title, mine.step[i], STEPS);
            say_what_differs(e, &mine, &ref, i);
            return 0;
        }
        loss_gap = fmax(loss_gap, dl);
        norm_gap = fmax(norm_gap, dn);
    }
    int last = ref.rows - 1;
    printf(
        "  ok    training: the loss fell from %.4f at step 1 to %.4f at step %d, as the project's (%.4f to %.4f); "
        "each step within %.1e of its loss and %.1e of its gradient's norm (%.0f s)\n",
        mine.loss[0], mine.loss[last], mine.step[last], ref.loss[0], ref.loss[last], loss_gap, norm_gap, seconds);
    return 1;
}
