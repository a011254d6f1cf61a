// What the programs share (./train, ./generate and scripts/bench; the tests use it too): a
// fatal error's message and exit status, option values checked against their range, standard
// output's writes checked, the signals that end a program, and the memory a program may plan
// to use. Library code never calls what exits (die, option_long, option_double,
// stdout_flush_or_die): it returns errors instead (common/errors.h), and a program turns them
// into one of these; the stages of a training run (training/run.h) use the rest.
#ifndef CHARGPT_PROGRAM_H
#define CHARGPT_PROGRAM_H

#include <stdio.h>

#include "errors.h"

// Prints "<program>: <message>" on stderr, after flushing standard output so that what the
// program printed comes first, and exits with status. The message's control characters (but
// newline and tab) and bytes that are not UTF-8 are shown as \xNN (common/utf8.h), so that no
// name or checkpoint metadata in it drives the terminal. When a meeting is set, die first meets
// the program's other processes there, which decides the status and whether this process is
// the one to print (./train under MPI: dist_agree).
_Noreturn void die(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
// A meeting of the processes for die: returns the status every process exits with, and sets
// *report to 1 in the process that prints the message.
typedef int DieMeeting(int status, int *report);
void die_meets_others(DieMeeting *meet);

// Option values: the number in s, checked to be a whole number (or a finite number) within
// [min, max] (or [min, max) when !max_inclusive); else die(EXIT_USAGE) with a message naming
// flag ("--steps must be between 0 and 1099511627776, got -1"). A whole number may be written
// as a person would: "2000", "2e3", "1.5e3" (see whole_number_parse).
long option_long(const char *flag, const char *s, long min, long max);
double option_double(const char *flag, const char *s, double min, double max, int max_inclusive);
// An option given a second time (the programs' rule: each option once, but those that add a
// value each time they are given): die(EXIT_USAGE) naming it, with its two values (first and
// second, NULL for a flag's) and `again`, what may be given again ("--data may be given once
// per path").
_Noreturn void option_given_twice(const char *flag, const char *first, const char *second, const char *again);
// Reads the whole number s spells, in decimal alone: digits, or digits with a fraction or an
// exponent whose value is a whole number within long's range ("0x10", "inf", " 16" are no
// numbers: option_double takes the same decimal forms). Returns 0 with *value; -1
// when s is not a number; -2 when it is one but not a whole number ("1.5"); -3 when it is a
// whole number beyond long's range ("1e30").
int whole_number_parse(const char *s, long *value);

// Flushes standard output and tells whether every write to it so far succeeded (stdio keeps
// a failed write's error until asked). Returns 0, or -1 with err "cannot write to standard
// output: why" (a full disk or /dev/full, a closed pipe, a file-size limit).
int stdout_flush(char err[ERR_LEN]);
// The same, ending the program (exit 1) when a write failed, so no output is lost unsaid.
void stdout_flush_or_die(void);

// The signals that would end the program (common/platform.h's: SIGQUIT, SIGPIPE, SIGALRM,
// SIGUSR1, SIGUSR2, and the stop signals SIGHUP, SIGINT, SIGTERM or Windows's console events
// unless stop_signals_handled: ./train stops on those itself, see training/stop_signals.h)
// first call cleanup (async-signal-safe: remove a temporary file), then end the program by
// that signal. SIGXFSZ is ignored: a write past the file-size limit fails with EFBIG, which
// the program reports, instead of killing it.
void fatal_signals_install(void (*cleanup)(void), int stop_signals_handled);

// The memory a program may plan to use, in bytes: max_memory (--max-memory) when above 0,
// else the least that the system's bounds leave (common/platform.h: the machine's memory
// available, a cgroup's limit less its use, RLIMIT_AS less what the process maps), each less
// a margin kept free for the rest of the machine (a tenth of the bound, and at least 256 MiB
// or a quarter of it, whichever is less: program.c says why), those the run's processes on
// this machine share divided among `processes` of them; else 0: unknown, no limit. *source
// names the figure for messages: "--max-memory", "available (MemAvailable, less 2.35 GiB kept
// free)", "available (cgroup memory.max less its use, less 75.0 MiB kept free) per process on
// this machine", or for 0 what is unknown.
double memory_limit(double max_memory, int processes, const char **source);

// A mebibyte, in bytes: --max-memory's unit.
#define MIB (1024.0 * 1024.0)

#endif
