// The exercises' checker program (docs/exercises.md). `make exercise NAME=layernorm` links it
// with exercises/layernorm.c in place of the project's layernorm_forward and runs
//
//   check layernorm --file exercises/layernorm.c --train build/exercises/layernorm/train
//         --run-dir build/exercises/layernorm/training --reference build/exercises/reference
//
// The checks run in a child process under a time limit, so that a function that crashes,
// loops or writes out of bounds ends in a message rather than a hang or a corrupted run;
// once they pass, a short training run with the learner's function in the loop is compared
// with the project's (training_run.c). Exit status: 0 all passed, 1 a check failed, 2 bad usage.
//
//   check --list               the exercises, easiest first, for `make exercises`
//   check --table              one line each: name, function, solution's file, minutes
//   check --function NAME      the function exercises/NAME.c defines
//   check --reference-run TRAIN DIR   the project's training run, which the learner's is compared with
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../common/clock.h"
#include "../../kernels/kernels.h"
#include "check.h"
#include "exit_codes.h"
#include "training_run.h"

#define DEFAULT_TIME_LIMIT 20.0  // seconds for all of an exercise's checks (under a second on a laptop)
#define TITLE_SIZE 256

static void usage(FILE *to) {
    fprintf(to,
            "usage: check NAME [--file PATH] [--time-limit SECONDS] [--train PROGRAM --run-dir DIR --reference DIR]\n"
            "       check --list | --table | --function NAME | --reference-run TRAIN DIR\n"
            "Checks the learner's function of exercise NAME (docs/exercises.md); `make exercise NAME=...` "
            "builds and runs it.\n");
}

static void list(void) {
    int total = 0;
    printf("The exercises, easiest first (docs/exercises.md). `make exercise NAME=gelu` checks exercises/gelu.c:\n");
    for (int i = 0; i < exercise_count; i++) {
        const Exercise *e = &exercise_list[i];
        printf("  %2d  %-22s %-22s about %2d min   (the project's: %s)\n", i + 1, e->name, e->function, e->minutes,
               e->solution);
        total += e->minutes;
    }
    printf("About %d h %02d min in all.\n", total / 60, total % 60);
}

static int unknown(const char *name) {
    fprintf(stderr, "check: no exercise is called '%s'; they are:", name);
    for (int i = 0; i < exercise_count; i++) fprintf(stderr, " %s", exercise_list[i].name);
    fprintf(stderr, "\n");
    return EXIT_USAGE;
}

int wait_child(int pid, double limit, int *status, void (*progress)(void *ctx), void *ctx) {
    double start = now_seconds(), end = start + limit, next = start + 1.0;
    for (;;) {
        if (progress && now_seconds() > next) {
            progress(ctx);
            next += 1.0;
        }
        pid_t r = waitpid(pid, status, WNOHANG);
        if (r == pid) return 1;
        if (r < 0) {
            *status = 0;
            return 1;
        }
        if (now_seconds() > end) {
            kill(pid, SIGKILL);
            waitpid(pid, status, 0);
            return 0;
        }
        struct timespec pause = {0, 5000000};  // 5 ms
        nanosleep(&pause, NULL);
    }
}

// A sanitizer's report (the child's standard error, in `report`), shortened to what a learner
// reads: the error, the access, and the stack down to the checker's first frame (the check
// that called the function: tests/exercises/check_*.c).
static void print_report(FILE *report) {
    char line[1024];
    int started = 0, frames = 0;
    rewind(report);
    while (fgets(line, sizeof(line), report)) {
        const char *text = line;
        if (!started && !strstr(line, "ERROR: AddressSanitizer") && !strstr(line, "runtime error:")) continue;
        if (started && (line[0] == '\n' || strstr(line, "tests/exercises/check_") || frames == 8)) break;
        if (strncmp(line, "==", 2) == 0 && strchr(line + 2, '=')) text = strchr(line + 2, '=') + 2;  // ==pid==
        while (*text == ' ') text++;
        printf("        | %s", text);
        started = 1;
        frames += text[0] == '#';
    }
}

// Copies what the child wrote on its standard error (the learner's own messages) to ours.
static void pass_on(FILE *report) {
    char buf[4096];
    size_t n;
    rewind(report);
    while ((n = fread(buf, 1, sizeof(buf), report)) > 0) fwrite(buf, 1, n, stderr);
}

// The child process: the exercise's checks, then its exit status (exit_codes.h).
static void run_child(const Exercise *e, char *title, FILE *report) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    dup2(fileno(report), STDERR_FILENO);
    buffers_share_title(title, TITLE_SIZE);
    buffers_set_function(e->function);
    buffers_catch_crashes();
    char err[ERR_LEN];
    // the textbook loops for whatever the function calls or is compared with, and for the
    // project's own function (a solution's check) the loops of its text
    if (kernels_use("plain", err) != 0) {
        fprintf(stderr, "check: %s\n", err);
        _exit(EXIT_CHECKER);
    }
    int passed = e->check();
    fflush(stdout);
    _exit(passed ? EXIT_PASSED : EXIT_FAILED);
}

// What the child's end says beyond what it printed itself: a sanitizer's report, shortened,
// the time limit, a signal or an exit of the learner's function.
static void say_end(const Exercise *e, const char *file, const char *title, FILE *report, int ended, int status,
                    double limit) {
    int code = ended && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (code == EXIT_ASAN) {
        printf("        AddressSanitizer stopped it there; its report, whose frames name the line of %s:\n", file);
        print_report(report);
    } else if (code == EXIT_UBSAN) {
        printf(
            "  FAIL  %s\n        UndefinedBehaviorSanitizer stopped your %s where C leaves the result undefined "
            "(a NULL pointer read, an int that overflows, a shift too far, an index past an array's declared "
            "size); its report names the line of %s:\n",
            title, e->function, file);
        print_report(report);
    } else {
        pass_on(report);
    }
    if (!ended)
        printf(
            "  FAIL  %s\n        your %s did not return within %.0f seconds (the checks take well under one): "
            "a loop that never ends? (a counter that never reaches its bound: j-- for j++, a bound changed "
            "inside the loop, a while loop whose condition nothing changes)\n",
            title[0] ? title : "(before the first check)", e->function, limit);
    else if (WIFSIGNALED(status))
        printf("  FAIL  %s\n        your %s crashed (signal %d)\n", title, e->function, WTERMSIG(status));
    else if (code == EXIT_CHECKER)
        printf("  the checker itself could not go on (above)\n");
    else if (code != EXIT_PASSED && code != EXIT_FAILED && code != EXIT_CRASHED && code != EXIT_ASAN &&
             code != EXIT_UBSAN)
        printf(
            "  FAIL  %s\n        the process ended with status %d while your %s ran: a function returns, it "
            "does not call exit\n",
            title, code, e->function);
}

// The checks, in a child process under the time limit. Returns 1 when all passed.
static int run_checks(const Exercise *e, const char *file, double limit) {
    FILE *report = tmpfile();  // the child's standard error: a sanitizer's report, shortened
    char *title = mmap(NULL, TITLE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    pid_t pid = -1;
    if (report && title != MAP_FAILED) {
        title[0] = '\0';
        fflush(stdout);
        pid = fork();
    }
    if (pid == 0) run_child(e, title, report);
    int status = 0, ended = 0;
    if (pid > 0) {
        ended = wait_child(pid, limit, &status, NULL, NULL);
        say_end(e, file, title, report, ended, status, limit);
    } else {
        perror("check: cannot start the checks' process");
    }
    if (title != MAP_FAILED) munmap(title, TITLE_SIZE);
    if (report) fclose(report);
    return pid > 0 && ended && WIFEXITED(status) && WEXITSTATUS(status) == EXIT_PASSED;
}

// The options after the exercise's name, in pairs: --file, --train, --run-dir, --reference,
// --time-limit (seconds, > 0).
typedef struct {
    const char *file, *train, *run_dir, *reference;
    double limit;
} Options;

static int parse_options(int argc, char **argv, Options *o) {
    if (argc % 2 != 0) return -1;
    for (int i = 0; i < argc; i += 2) {
        const char *name = argv[i], *value = argv[i + 1];
        char *end;
        if (strcmp(name, "--file") == 0)
            o->file = value;
        else if (strcmp(name, "--train") == 0)
            o->train = value;
        else if (strcmp(name, "--run-dir") == 0)
            o->run_dir = value;
        else if (strcmp(name, "--reference") == 0)
            o->reference = value;
        else if (strcmp(name, "--time-limit") != 0 || !((o->limit = strtod(value, &end)) > 0) || *end != '\0')
            return -1;
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return EXIT_USAGE;
    }
    if (strcmp(argv[1], "--list") == 0) {
        list();
        return 0;
    }
    if (strcmp(argv[1], "--table") == 0) {
        for (int i = 0; i < exercise_count; i++) {
            const Exercise *x = &exercise_list[i];
            printf("%s %s %s %d\n", x->name, x->function, x->solution, x->minutes);
        }
        return 0;
    }
    if (strcmp(argv[1], "--function") == 0 && argc == 3) {
        const Exercise *e = exercise_find(argv[2]);
        if (!e) return unknown(argv[2]);
        printf("%s\n", e->function);
        return 0;
    }
    if (strcmp(argv[1], "--reference-run") == 0 && argc == 4) return training_reference(argv[2], argv[3]);
    if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
        usage(stdout);
        return 0;
    }
    const Exercise *e = exercise_find(argv[1]);
    if (!e) return unknown(argv[1]);
    Options o = {NULL, NULL, NULL, NULL, DEFAULT_TIME_LIMIT};
    if (parse_options(argc - 2, argv + 2, &o) != 0) {
        usage(stderr);
        return EXIT_USAGE;
    }
    if (!o.train != !o.reference || !o.train != !o.run_dir) {
        fprintf(stderr, "check: --train, --run-dir and --reference go together\n");
        return EXIT_USAGE;
    }
    if (!o.file) o.file = "the project's own function (the solution)";
    printf("exercise %s: %s from %s, against the double-precision reference (tests/reference.c)\n", e->name,
           e->function, o.file);
    if (!run_checks(e, o.file, o.limit)) {
        printf("%s: not yet. Each check's line says what it tried; the training run waits until all pass.\n", e->name);
        return EXIT_FAILED;
    }
    if (!o.train) {
        printf("%s: the checks passed (no training run was asked for).\n", e->name);
        return EXIT_PASSED;
    }
    if (!training_compare(e, o.train, o.run_dir, o.reference)) {
        printf("%s: the checks passed, but the training run did not go as the project's (above).\n", e->name);
        return EXIT_FAILED;
    }
    int next = (int)(e - exercise_list) + 1;
    if (next < exercise_count)
        printf("%s: passed. Next: make exercise NAME=%s\n", e->name, exercise_list[next].name);
    else
        printf("%s: passed. That was the last one: every layer of the model is one you could write.\n", e->name);
    return EXIT_PASSED;
}
