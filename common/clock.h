// Time as the programs, the bench, the thread tuner and the collectives measure it.
#ifndef CHARGPT_CLOCK_H
#define CHARGPT_CLOCK_H

// Seconds on the monotonic clock (CLOCK_MONOTONIC): for durations, never set back.
double now_seconds(void);

#endif
