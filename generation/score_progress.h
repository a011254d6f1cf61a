// What `./generate --score` shows on stderr while it scores a long text: once the pace is
// known (after a second of scoring, or at the end), how long the whole will take, and what
// the fastest window (--stride block_size) would take; and on a terminal a progress line from
// the first pass on, rewritten at most twice a second, otherwise a line at each tenth of the
// work. A text that scores in less than SCORE_QUIET_SECONDS shows neither the time nor the
// tenths: its result follows at once.
//
// The work is counted as score_tokens counts it (score.h: positions run through the model),
// so the times are right however the windows fall.
#ifndef CHARGPT_SCORE_PROGRESS_H
#define CHARGPT_SCORE_PROGRESS_H

#include <stddef.h>

#define SCORE_QUIET_SECONDS 10.0

typedef struct {
    long characters;      // to score
    int terminal;         // 1: stderr is a terminal (a rewritten line)
    int threads;
    int fast_stride;      // the stride of the fastest window, and its work over this scoring's
    double fast_share;    // (1: this scoring's is the fastest)
    int estimated;        // 1: the time of the whole was said
    int tenths;           // tenths of the work reported (not on a terminal)
    double line_seconds;  // when the terminal's line was last written (< 0: never)
} ScoreProgress;

void score_progress_init(ScoreProgress *p, long characters, int terminal, int threads, int fast_stride,
                         double fast_share);
// What to show, `seconds` after scoring started, with `done` of the work's `total` done and
// `scored` characters scored: text to write to stderr as it is, or "" for nothing now.
void score_progress_text(ScoreProgress *p, double seconds, double done, double total, long scored, const char *program,
                         char *text, size_t n);

#endif
