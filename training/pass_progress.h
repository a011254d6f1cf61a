// How far a long pass has got, for a progress line: the periodic evaluation (its batches) and
// the whole-validation pass at the end (its characters) call `report` as they go. Library
// code reports; the program decides what to show, and how often.
#ifndef CHARGPT_PASS_PROGRESS_H
#define CHARGPT_PASS_PROGRESS_H

typedef struct {
    // called before each piece of work with `done` of `total` finished (and once at the end
    // with done == total)
    void (*report)(void *context, long done, long total);
    void *context;
} PassProgress;

// Calls progress->report when there is one (progress may be NULL).
static inline void pass_progress(const PassProgress *progress, long done, long total) {
    if (progress && progress->report) progress->report(progress->context, done, total);
}

#endif
