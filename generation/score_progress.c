#include "score_progress.h"

#include <stdio.h>

#include "../common/clock.h"

void score_progress_init(ScoreProgress *p, long characters, int terminal, int threads, int fast_stride,
                         double fast_share) {
    *p = (ScoreProgress){characters, terminal, threads, fast_stride, fast_share, 0, 0, -1.0};
}

// The first report: the whole's time at the pace so far, and the fastest window's.
static size_t estimate(const ScoreProgress *p, double seconds, double whole, const char *program, char *text,
                       size_t n) {
    char time[32];
    format_duration(time, sizeof(time), whole);
    size_t used = (size_t)snprintf(text, n, "%s: scoring %ld characters takes about %s on %d thread%s (the pace of "
                                   "the first %.1f s)", program, p->characters, time, p->threads,
                                   p->threads == 1 ? "" : "s", seconds);
    if (p->fast_share < 1.0 && used < n) {
        double fast = whole * p->fast_share;
        format_duration(time, sizeof(time), fast);
        used += (size_t)snprintf(text + used, n - used, "; --stride %d would take %s%s", p->fast_stride,
                                 fast < 1.0 ? "under a second" : "about ", fast < 1.0 ? "" : time);
    }
    if (used < n) used += (size_t)snprintf(text + used, n - used, "\n");
    return used < n ? used : n;
}

void score_progress_text(ScoreProgress *p, double seconds, double done, double total, long scored, const char *program,
                         char *text, size_t n) {
    text[0] = '\0';
    if (done <= 0.0) return;
    double whole = seconds * total / done;
    int long_task = (seconds >= 1.0 || done >= total) && whole >= SCORE_QUIET_SECONDS;  // the pace known, and slow
    size_t used = 0;
    if (long_task && !p->estimated) {
        if (p->terminal) used = (size_t)snprintf(text, n, "\r\033[K");  // over the progress line
        used += estimate(p, seconds, whole, program, text + used, n - used);
        p->estimated = 1;
    }
    char left[32];
    format_duration(left, sizeof(left), whole - seconds);
    if (p->terminal && (p->line_seconds < 0.0 || seconds - p->line_seconds >= 0.5)) {
        snprintf(text + used, n - used, "\r\033[Kscoring: %ld/%ld characters | %d%% | ETA %s", scored, p->characters,
                 (int)(100.0 * done / total), left);
        p->line_seconds = seconds;
    } else if (!p->terminal && long_task && done < total && (int)(10.0 * done / total) > p->tenths) {
        p->tenths = (int)(10.0 * done / total);
        snprintf(text + used, n - used, "scoring: %ld/%ld characters (%d%%), %.0f s, about %s left\n", scored,
                 p->characters, 10 * p->tenths, seconds, left);
    }
}
