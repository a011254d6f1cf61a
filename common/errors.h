// Definitions every layer shares: the size of an error message buffer, the programs' exit
// statuses, the bound of a count held in a long, and how a message writes an amount of memory.
//
// Library functions that can fail return 0 or -1 and write one line saying why into a
// caller's buffer of ERR_LEN bytes; they never print a failure, nor exit. Those whose failures
// are of more than one kind (training/out_dir.h, training/run_text.h, and the stages of a
// training run, training/run.h) return the exit status below that the program should end with
// instead of -1. The programs turn a failure into a message and one of these statuses.
#ifndef CHARGPT_ERRORS_H
#define CHARGPT_ERRORS_H

#include <limits.h>
#include <stddef.h>

// Long enough for a message naming two paths of up to 1023 bytes (the programs' limit) and a
// list: the programs print what a function wrote whole.
#define ERR_LEN 4096

#define EXIT_DATA 1        // bad data or I/O: a corpus, checkpoint or file that cannot be used
#define EXIT_USAGE 2       // bad usage, or a run too large for the memory
#define EXIT_NONFINITE 3   // training stopped: the loss or the gradient is not finite

// Writes the message of a failure into err from a printf format, and returns status: for the
// functions that return the exit status of their failures.
int error_status(char err[ERR_LEN], int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

// x, or LONG_MAX where C's long is too narrow for x: 32 bits on Windows (LLP64), where the
// counts held in a long (steps, --max-new, --min-char-count) stop at 2^31 - 1.
#define LONG_AT_MOST(x) ((long long)(x) < LONG_MAX ? (long)(x) : LONG_MAX)

// An amount of memory (or of a file) as a message writes it, in bytes or binary units: "512
// bytes", "832 KiB", "40.5 MiB", "3.20 TiB" (three significant figures from 1 KiB on).
void format_bytes(double bytes, char *text, size_t n);

#endif
