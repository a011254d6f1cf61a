// How a training run is stopped. SIGINT (Ctrl-C), SIGTERM and SIGHUP (the terminal closed)
// ask the run to stop: the handler says at once that the signal was received, the run ends
// the step under way, abandons an evaluation in progress, saves its checkpoint and exits with
// 128 + the signal. A second such signal before the run has stopped ends it at once, without
// saving: the temporary file of a save in progress is removed, a message says that nothing
// was saved, and the process ends by that signal (130 for Ctrl-C in a shell).
#ifndef CHARGPT_STOP_SIGNALS_H
#define CHARGPT_STOP_SIGNALS_H

#include "../common/errors.h"

// Installs the handlers of SIGINT, SIGTERM and SIGHUP. One of several processes (mpirun):
// a second signal does not end the process, because mpirun follows a terminal's SIGINT with a
// SIGTERM of its own, and interrupted writes are not restarted, because mpirun stops reading
// the output of a process it is about to stop (the write fails with EINTR and the run goes on
// to save).
void stop_signals_install(int one_of_several);
// The first stop signal received, or 0.
int stop_signals_received(void);
// "SIGINT", "SIGTERM" or "SIGHUP" (else "a signal").
const char *stop_signal_name(int sig);

// Meets the other processes of the run (dist.h) at a point every one of them reaches, so that
// they stop together: returns the exit status of one that has failed (it said why, common/
// program.h: die), else 0 with the stop signal any of them has received in *signal (0: none).
// Collective.
int stop_signals_agree(int *signal);
// Stopped by `signal` before the first step (while the corpus was read, or the model built):
// the run ends with 128 + the signal, before anything in --out is written. Returns that status,
// with the message in err.
int stop_before_the_run(int signal, char err[ERR_LEN]);

#endif
