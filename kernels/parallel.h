// Threads for the passes of the model (kernels.h's room: how the work is shared, not what is
// computed). A training step (model/train_step.h), a generated character, a forward called
// on its own: each is one OpenMP parallel region. Inside it
// every layer function is a team function: all threads of the team call it, it splits its
// loops over them with orphaned `omp for ... nowait` and ends with team_barrier(). Called
// from serial code, a layer function runs on the calling thread (the matrix products and
// the model's passes start a team of their own: kernels.h, model/gpt.h).
//
// The barrier is our own rather than OpenMP's because of how long libgomp busy-waits: up
// to GOMP_SPINCOUNT spins (300,000 unless the environment says otherwise, about 12 ms on an
// AMD EPYC), read once when the program starts. On a machine whose cores are shared with
// other work, a thread whose partner was preempted then holds the core the partner needs.
// team_barrier spins for up to 50 us, enough for partners that are running, then
// sleeps and gives the core away.
#ifndef CHARGPT_PARALLEL_H
#define CHARGPT_PARALLEL_H

// The most threads a program's --threads may ask for, per core (./train and ./generate).
#define THREADS_PER_CORE 4

// Returns once every thread of the current team has called it; at once for a team of one.
// One team of several threads at a time: parallel regions that call it must not be nested or
// concurrent, but for teams of one (a thread's own nested region of one thread), which may run
// side by side.
void team_barrier(void);

// The first thread's `mine`, returned to every thread of the team once all have called it
// (a team function: a buffer one thread allocates for the team, say).
void *team_share(void *mine);

// Tasks shared out with affinity: a team function's tasks, in up to TEAM_TASK_LISTS lists
// (say, two products run as one), each list cut into one contiguous range per thread. A
// thread takes its own ranges' tasks from the front, in order, then takes what is left of
// the others' from their back. Two threads that run at the same speed so each take the same
// part of the data every time, the part the pointwise loops (`omp for schedule(static)`) give
// them: the rows a thread writes are in its own core's cache when it next reads them, where a
// shared counter handed tasks out by turns and half of every layer's input came from the other
// core (the lesson's step, 2 threads on an Intel Xeon with full-width AVX-512: 1.14-1.17x; a
// static split without the taking from the back was 8% faster, but waited 2.5 to 5 times as
// long at barriers). A thread slowed by other work still holds up at most one task: the others
// take the rest of its range.
// Which thread runs a task never changes its result.
#define TEAM_TASK_LISTS 2
// Team function: starts the lists, counts[l] tasks in list l; tasks are numbered from 0
// through the lists one after the other. Ends with team_barrier(). Not nested: a task does
// not start lists of its own.
void team_tasks_begin(const int *counts, int lists);
// The caller's next task, or -1 when none is left (every thread calls it until then).
int team_task_next(void);

// Whether the caller is inside a parallel region, that is, in a team (perhaps of one
// thread): team functions then share the work with it rather than start a team.
int in_team(void);

// How many threads a pass that is repeated many times (a training step, a generated
// character) should get. With the cores to itself a team of every thread is fastest, unless
// the pass is so short that its barriers cost what the team saves; with other work on the
// cores fewer can be, because a thread kept waiting at a barrier for a partner that the
// scheduler has preempted loses its turn too, and for a short pass that costs many times
// its work. So a new kind of pass first runs on one thread, which measures its work: one
// that takes less than TUNER_SHORT_PASS there carries on alone (and tries a team only once
// its passes have run for a while), a longer one on every thread, for which that pass was a
// trial of one thread. Then the tuner times the passes and now and then tries one thread
// fewer or more, keeping whichever count recent passes found faster; a count that lost a
// trial by a factor r waits about (r - 1) / TUNER_TRIAL_COST samples before it is tried
// again, so that trying a team beside a busy process takes at most that share of the time.
// Before it tries a larger team for a short pass it asks the system whether a processor is
// idle (platform_idle_cpus), and puts the trial off when none is: beside a busy process the
// scheduler runs such a team's threads by turns on the one processor left, and the pass
// then takes 5 to 11 times as long as alone. Results do not depend on the count, so it
// changes only the speed.
#define TUNER_SAMPLES 3
#define TUNER_SHORT_PASS 0.002
#define TUNER_TRIAL_COST 0.02  // 0.05 left generation beside a busy process at 0.97x the speed
                               // of --threads 1, 0.02 at 1.00x (scripts/bench --jobs generate
                               // --config lesson,tiny beside a shell loop, 3 runs each)
typedef struct {
    double secs[TUNER_SAMPLES];  // the latest sample times with this count, newest first
    int samples;
    double best;                 // the lowest median of them seen while the count was in use
    long interval;               // samples between trials of this count
    long next_trial;             // sample from which it is tried again
} TunerCount;
typedef struct {
    const void *pass_kind;  // what the passes are (see tuner_start)
    long pass_shape;
    int max_threads;
    int threads;            // the count in use
    int trial;              // -1, 0 or +1: the count of the sample being taken is threads + trial
    int measuring;          // 1 while the first pass of a kind runs on one thread
    int short_pass;         // 1 when it took less than TUNER_SHORT_PASS
    double alone;           // that pass's seconds per unit of work, until the team's first sample
    long samples;           // samples started so far
    double started;         // when the pass being timed started (seconds)
    double started_cpu;     // ... in the calling thread's CPU time
    double sample_secs;     // time and work of the passes of the sample being taken
    double sample_work;
    TunerCount count[3];    // threads - 1, threads, threads + 1
} ThreadTuner;

// The thread count for the next pass, whose clock starts now; passes are compared only
// with passes of the same kind and shape (say, the model and the batch size): another
// kind or shape, or another omp_get_max_threads(), starts the tuner afresh. tuner_stop
// stops the clock once the pass has run, with the pass's work (tokens, say, when passes
// of one kind differ in length). The tuner compares the time per unit of work of samples
// of consecutive passes lasting at least TUNER_SAMPLE_SECONDS, so that a sample of short
// passes (generation's) also holds the long ones in which a thread was preempted.
#define TUNER_SAMPLE_SECONDS 0.002
int tuner_start(ThreadTuner *t, const void *pass_kind, long pass_shape);
void tuner_stop(ThreadTuner *t, double work);

// The same sample by sample, with the times given (for tests): tuner_init(t, max_threads,
// threads) to start on `threads`, then for each sample tuner_next(t) and tuner_record(t,
// seconds per unit of work).
void tuner_init(ThreadTuner *t, int max_threads, int threads);
int tuner_next(ThreadTuner *t);
void tuner_record(ThreadTuner *t, double seconds);

#endif
