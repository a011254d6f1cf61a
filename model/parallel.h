// Threads for the passes of the model. A forward or backward pass is one OpenMP parallel
// region; inside it every layer function is a team function: all threads of the team call
// it, it splits its loops over them with orphaned `omp for ... nowait` and ends with
// team_barrier(). Called from serial code, a team function runs on the calling thread.
//
// The barrier is our own rather than OpenMP's because of how long libgomp busy-waits: up
// to GOMP_SPINCOUNT spins (300,000 unless the environment says otherwise, about 12 ms on an
// AMD EPYC), read once when the program starts. On a machine whose cores are shared with
// other work, a thread whose partner was preempted then holds the core the partner needs.
// team_barrier spins for a few microseconds, enough for partners that are running, then
// sleeps and gives the core away.
#ifndef CHARGPT_PARALLEL_H
#define CHARGPT_PARALLEL_H

// Returns once every thread of the current team has called it; at once for a team of one.
// One team at a time: parallel regions that call it must not be nested or concurrent.
void team_barrier(void);

#endif
