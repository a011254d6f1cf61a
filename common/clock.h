// Time as the programs, the bench, the thread tuner and the collectives measure it, and as
// the programs write a duration.
#ifndef CHARGPT_CLOCK_H
#define CHARGPT_CLOCK_H

#include <stddef.h>

// Seconds on the monotonic clock (CLOCK_MONOTONIC): for durations, never set back.
double now_seconds(void);
// A duration as "1m05s", or "2h03m" from an hour on (negative or not finite: "0m00s").
void format_duration(char *buf, size_t n, double seconds);

#endif
