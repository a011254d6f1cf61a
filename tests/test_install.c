// Tests of `make install`: installs into a DESTDIR under tests/tmp, then runs the installed
// chargpt-train from another directory (it must find the installed corpus), chargpt-generate
// on what it wrote, checks the man pages against --help and the program name in messages,
// and uninstalls.
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/platform.h"
#include "../kernels/kernels.h"
#include "test.h"

#define PREFIX "/opt/chargpt"
#ifdef CHARGPT_PLATFORM_POSIX
#define PLATFORM_ARG "PLATFORM=posix"  // the nested make installs this build: the plain-POSIX platform
#else
#define PLATFORM_ARG NULL
#endif

// Runs argv (argv[0] looked up in PATH) in cwd (NULL: here) with stdout and stderr into log;
// returns its exit status, or -1 when it did not exit normally. A nested make must not
// inherit the jobserver of a `make test` running us.
static int run_in(const char *cwd, const char *log, char *const *argv) {
    static const char *const make_variables[] = {"MAKEFLAGS", "MFLAGS", "MAKELEVEL", NULL};
    TestSpawn how = {.out_path = log, .cwd = cwd, .search_path = 1, .unset_env = make_variables};
    TestChild c;
    TestEnd end = {-1, 0, 0};
    if (test_child_start(&c, (const char *const *)argv, &how) == 0) test_child_wait(&c, 1e9, &end);
    return end.status;
}

// 1 when the run exited with want; otherwise a failure quoting its output.
static int ran(int status, int want, const char *what, const char *log) {
    size_t n;
    char *out = test_read_file(log, &n);
    int ok = CHECK(status == want, "%s: exit status %d, want %d; output:\n%s", what, status, want, out ? out : "");
    free(out);
    return ok;
}

static int output_has(const char *log, const char *text, const char *what) {
    size_t n;
    char *out = test_read_file(log, &n);
    int ok = CHECK(out && strstr(out, text), "%s: the output lacks \"%s\"; it is:\n%s", what, text, out ? out : "");
    free(out);
    return ok;
}

static int same_file(const char *a, const char *b) {
    size_t na, nb;
    char *x = test_read_file(a, &na), *y = test_read_file(b, &nb);
    int same = x && y && na == nb && memcmp(x, y, na) == 0;
    free(x);
    free(y);
    return same;
}

// Every long option in the help (a line "  --name" or "  -x, --name") appears in the man
// page, in roff's spelling ("\-\-name").
static void check_man_page(const char *man_path, const char *help_log, const char *title) {
    size_t n;
    char *man = test_read_file(man_path, &n), *help = test_read_file(help_log, &n);
    if (!CHECK(man && help, "cannot read %s or %s", man_path, help_log)) goto done;
    CHECK(strstr(man, title) != NULL, "%s lacks \"%s\"", man_path, title);
    int options = 0;
    for (char *save, *line = strtok_r(help, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *dashes = strstr(line, "--");
        if (line[0] != ' ' || !dashes || dashes - line > 8) continue;  // not an option line
        char roff[80] = "\\-\\-";
        size_t k = 4;
        for (const char *c = dashes + 2; (*c == '-' || (*c >= 'a' && *c <= 'z')) && k + 3 < sizeof(roff); c++) {
            if (*c == '-') roff[k++] = '\\';
            roff[k++] = *c;
        }
        roff[k] = '\0';
        options++;
        CHECK(strstr(man, roff) != NULL, "%s lacks the option %s of --help", man_path, roff);
    }
    CHECK(options >= 5, "only %d options found in %s", options, help_log);
done:
    free(man);
    free(help);
}

// Trains 10 steps with chargpt-train from run_dir, which has no data/, on the corpus it
// installed (at corpus, under DESTDIR). Where the system says where the program is
// (common/platform.h), the program finds it beside itself; else it looks in the install prefix
// the build was made for and in ./data, and says where it looked, so --data names it.
// On the plain kernels (CHARGPT_KERNELS=plain), whose textbook loops take minutes over the
// whole validation split and the samples, a run skips both (the options into tail[0, 4), else
// left NULL): what the test checks is where the program found its corpus and put its files.
static void skip_slow_parts_on_plain(char **tail) {
    if (!test_plain(kernels_name())) return;
    tail[0] = "--final-val-chars", tail[1] = "0", tail[2] = "--sample-chars", tail[3] = "0";
}

static int train_installed_corpus(const char *train, const char *corpus, const char *run_dir, const char *log) {
    char self[PATH_MAX], why[ERR_LEN];
    if (platform_executable_path(self, sizeof(self), why) == 0) {
        char *args[] = {(char *)train, "--steps", "10", "--eval-batches", "2", NULL, NULL, NULL, NULL, NULL};
        skip_slow_parts_on_plain(args + 5);
        if (!ran(run_in(run_dir, log, args), 0, "chargpt-train --steps 10", log)) return 0;
        return output_has(log, PREFIX "/share/chargpt/tinyshakespeare.txt.gz, 1115394 characters", "installed corpus");
    }
    char *no_data[] = {(char *)train, "--steps", "1", "--out", "probe", NULL};
    int status = run_in(run_dir, log, no_data);
    if (status != 0 && ran(status, 1, "chargpt-train without --data, on a system that does not say its path", log))
        output_has(log, "tinyshakespeare.txt.gz is neither in", "where the default corpus was looked for");
    char *args[] = {(char *)train, "--data", (char *)corpus, "--steps", "10", "--eval-batches", "2",
                    NULL, NULL, NULL, NULL, NULL};
    skip_slow_parts_on_plain(args + 7);
    if (!ran(run_in(run_dir, log, args), 0, "chargpt-train --data CORPUS --steps 10", log)) return 0;
    return output_has(log, "tinyshakespeare.txt.gz, 1115394 characters", "installed corpus");
}

TEST(install_runs_from_another_directory) {
    char tmp[PATH_MAX];
    if (!test_system_has(TEST_MAKE_INSTALL)) {
        test_skip("make install is for Unix systems (docs/platforms.md: the programs run where they are unpacked)");
        return;
    }
    test_make_dir("tests/tmp");
    if (!CHECK(platform_real_path("tests/tmp", tmp, sizeof(tmp)) == 0, "tests/tmp: %s", strerror(errno))) return;
    char dest[PATH_MAX], destdir_arg[PATH_MAX + 16], bin[PATH_MAX + 64], train[PATH_MAX + 96],
        generate[PATH_MAX + 96], corpus[PATH_MAX + 96], man_train[PATH_MAX + 96], man_generate[PATH_MAX + 96],
        run_dir[PATH_MAX + 16], log[PATH_MAX + 32], help_log[PATH_MAX + 32], ckpt[PATH_MAX + 64];
    snprintf(dest, sizeof(dest), "%s/install", tmp);
    snprintf(destdir_arg, sizeof(destdir_arg), "DESTDIR=%s", dest);
    snprintf(bin, sizeof(bin), "%s" PREFIX "/bin", dest);
    snprintf(train, sizeof(train), "%s/chargpt-train", bin);
    snprintf(generate, sizeof(generate), "%s/chargpt-generate", bin);
    snprintf(corpus, sizeof(corpus), "%s" PREFIX "/share/chargpt/tinyshakespeare.txt.gz", dest);
    snprintf(man_train, sizeof(man_train), "%s" PREFIX "/share/man/man1/chargpt-train.1", dest);
    snprintf(man_generate, sizeof(man_generate), "%s" PREFIX "/share/man/man1/chargpt-generate.1", dest);
    snprintf(run_dir, sizeof(run_dir), "%s/elsewhere", tmp);
    snprintf(log, sizeof(log), "%s/install.log", tmp);
    snprintf(help_log, sizeof(help_log), "%s/install_help.log", tmp);
    snprintf(ckpt, sizeof(ckpt), "%s/out/ckpt.safetensors", run_dir);

    char *clean[] = {"rm", "-rf", dest, run_dir, NULL};
    if (!ran(run_in(NULL, log, clean), 0, "rm -rf", log)) return;
    char *install[] = {"make", "--no-print-directory", "install", destdir_arg, "PREFIX=" PREFIX, PLATFORM_ARG, NULL};
    if (!ran(run_in(NULL, log, install), 0, "make install", log)) return;
    CHECK(access(train, X_OK) == 0 && access(generate, X_OK) == 0, "no executable chargpt-train or chargpt-generate in %s", bin);
    CHECK(same_file(corpus, "data/tinyshakespeare.txt.gz"), "%s is not data/tinyshakespeare.txt.gz", corpus);

    // man pages: the same options as --help
    char *help[] = {train, "--help", NULL};
    if (ran(run_in(NULL, help_log, help), 0, "chargpt-train --help", help_log))
        check_man_page(man_train, help_log, ".TH CHARGPT\\-TRAIN 1");
    help[0] = generate;
    if (ran(run_in(NULL, help_log, help), 0, "chargpt-generate --help", help_log))
        check_man_page(man_generate, help_log, ".TH CHARGPT\\-GENERATE 1");

    // from a directory without data/: the installed corpus, out/ written here
    if (!CHECK(platform_make_dir(run_dir) == 0, "cannot create %s: %s", run_dir, strerror(errno))) return;
    if (!train_installed_corpus(train, corpus, run_dir, log)) return;
    CHECK(access(ckpt, R_OK) == 0, "no %s", ckpt);
    char *generate_args[] = {generate, "out/ckpt.safetensors", "ROMEO:", "-n", "5", "-t", "0", NULL};
    if (ran(run_in(run_dir, log, generate_args), 0, "chargpt-generate", log)) output_has(log, "ROMEO:", "generated text");

    // messages and usage name the program as invoked
    char usage[PATH_MAX + 128];
    snprintf(usage, sizeof(usage), "usage: %s [options]\n", train);
    help[0] = train;
    if (ran(run_in(NULL, help_log, help), 0, "chargpt-train --help", help_log)) output_has(help_log, usage, "usage line");
    char *bad[] = {train, "--steps", "ten", NULL};
    if (ran(run_in(NULL, log, bad), 2, "chargpt-train --steps ten", log))
        output_has(log, "chargpt-train: --steps expects a whole number", "error message");
    char *no_ckpt[] = {generate, NULL};
    if (ran(run_in(NULL, log, no_ckpt), 2, "chargpt-generate", log))
        output_has(log, "chargpt-generate: no checkpoint given", "error message");

    char *uninstall[] = {"make", "--no-print-directory", "uninstall", destdir_arg, "PREFIX=" PREFIX, PLATFORM_ARG,
                         NULL};
    if (ran(run_in(NULL, log, uninstall), 0, "make uninstall", log)) {
        CHECK(access(train, F_OK) != 0 && access(generate, F_OK) != 0 && access(corpus, F_OK) != 0 &&
                  access(man_train, F_OK) != 0 && access(man_generate, F_OK) != 0,
              "make uninstall left files behind");
    }
}
