#include "stop_signals.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "../common/platform.h"
#include "../dist/dist.h"
#include "../format/atomic_file.h"

// Signals may arrive together on different threads: the counter decides which is the first.
static atomic_int signals_received = 0;
static volatile sig_atomic_t first_signal = 0;

// write(2) is async-signal-safe, stdio is not
static void say(const char *a, const char *b, const char *c) {
    const char *parts[] = {"\n", program_name(), ": ", a, b, c, "\n"};
    for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
        if (write(STDERR_FILENO, parts[i], strlen(parts[i])) < 0) return;
}

static int several_processes = 0;

static void on_stop_signal(int sig) {
    int saved_errno = errno;
    if (several_processes) {  // every process has one; rank 0 reports the stop when it comes
        if (!first_signal) first_signal = sig;
        return;
    }
    if (atomic_fetch_add(&signals_received, 1) == 0) {
        first_signal = sig;
        say(platform_signal_name(sig), ": stopping: the step under way ends, an evaluation in progress is abandoned, ",
            sig == SIGINT ? "the checkpoint is saved (Ctrl-C again exits without saving)"
                          : "the checkpoint is saved");
        errno = saved_errno;
        return;
    }
    atomic_file_remove_open();
    say(platform_signal_name(sig), " again: exiting without saving ",
        "(the last checkpoint saved before is unchanged)");
    platform_end_by_signal(sig);
}

void stop_signals_install(int one_of_several) {
    several_processes = one_of_several;
    platform_signals_catch(PLATFORM_STOP_SIGNALS, on_stop_signal, !one_of_several);
}

int stop_signals_received(void) { return first_signal; }

int stop_signals_agree(int *signal) {
    platform_signals_poll();  // where signals arrive only when let (the page's Web Worker)
    DistAgreement a = dist_agree(0, stop_signals_received());
    *signal = a.signal;
    return a.status;
}

int stop_before_the_run(int signal, char err[ERR_LEN]) {
    return error_status(err, 128 + signal, "stopped by %s before the first step: no run was started, nothing was "
                        "written in --out", platform_signal_name(signal));
}
