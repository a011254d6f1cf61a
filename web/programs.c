// The page's programs: ./train and ./generate as their own main functions (train.c and
// generate.c, compiled for the page as train_main and generate_main: web/web.mk), one module
// running the one its name says, argv[0], as a multi-call binary does. The page's worker
// (web/worker.js) starts each run in a fresh instance of the module, its own process as it
// were, with the files it reads and writes in that instance's file system.
#include <stdio.h>
#include <string.h>

#include "../common/errors.h"

int train_main(int argc, char **argv);
int generate_main(int argc, char **argv);

int main(int argc, char **argv) {
    const char *name = argc > 0 ? argv[0] : "";
    if (strcmp(name, "train") == 0) return train_main(argc, argv);
    if (strcmp(name, "generate") == 0) return generate_main(argc, argv);
    fprintf(stderr, "chargpt: the page has no program '%s' (train, generate)\n", name);
    return EXIT_USAGE;
}
