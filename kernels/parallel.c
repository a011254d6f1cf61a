// The team barrier (parallel.h): a counter and a generation number, a short spin on the
// generation, then a sleep on a condition variable that the last thread to arrive signals.
// And the thread tuner, which picks a team size from the times of the passes it ran.
#include "parallel.h"

#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "../common/clock.h"
#include "../common/platform.h"

// How long a thread spins before it sleeps: a barrier reached by running threads within
// this much of each other costs no system call.
#define SPIN_NS 50000L
#define SPINS_PER_CLOCK_READ 64

static struct {
    atomic_int arrived;       // threads at the barrier of the current generation
    atomic_uint generation;   // advanced by the last thread to arrive, which frees the others
    atomic_int sleepers;      // threads asleep (or about to be) on `wake`
    pthread_mutex_t lock;
    pthread_cond_t wake;
} barrier = {.lock = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER};

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static long elapsed_ns(const struct timespec *since) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (now.tv_sec - since->tv_sec) * 1000000000L + (now.tv_nsec - since->tv_nsec);
}

// Spins until the generation moves past gen or SPIN_NS pass; returns whether it moved.
static int spin_until_released(unsigned gen) {
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (;;) {
        for (int i = 0; i < SPINS_PER_CLOCK_READ; i++) {
            if (atomic_load_explicit(&barrier.generation, memory_order_acquire) != gen) return 1;
            cpu_relax();
        }
        if (elapsed_ns(&start) >= SPIN_NS) return 0;
    }
}

int in_team(void) { return omp_get_level() > 0; }

// team_tasks_begin's ranges: for each thread and list, the tasks not yet taken, [first, end),
// as first << 32 | end in one word, so that the owner (from the front) and the others (from
// the back) take a task by one compare-and-swap. A thread's words share a cache line that no
// other thread's do. Threads past TEAM_TASK_OWNERS own no range and only take the others'.
#define TEAM_TASK_OWNERS 256
static struct {
    _Alignas(64) _Atomic uint64_t range[TEAM_TASK_LISTS];
} task_ranges[TEAM_TASK_OWNERS];
static int task_lists;  // the lists of the team function under way, written before its barrier

static int task_owners(void) {
    int team = omp_get_num_threads();
    return team < TEAM_TASK_OWNERS ? team : TEAM_TASK_OWNERS;
}

// A team of one (a layer called from serial code, perhaps on several threads of the program
// at once) takes its tasks in order from a count of its own thread's.
static _Thread_local int alone_next, alone_end;

void team_tasks_begin(const int *counts, int lists) {
    if (omp_get_num_threads() == 1) {
        alone_next = alone_end = 0;
        for (int l = 0; l < lists; l++) alone_end += counts[l];
        return;
    }
    int owners = task_owners(), me = omp_get_thread_num(), base = 0;
    for (int l = 0; l < lists; l++) {
        uint64_t first = (uint64_t)(base + (long)counts[l] * me / owners);
        uint64_t end = (uint64_t)(base + (long)counts[l] * (me + 1) / owners);
        if (me < owners) atomic_store_explicit(&task_ranges[me].range[l], first << 32 | end, memory_order_relaxed);
        base += counts[l];
    }
    if (me == 0) task_lists = lists;
    team_barrier();
}

// Takes one task of a range, from its front or its back: the task, or -1 when it is empty.
static int take_task(_Atomic uint64_t *range, int from_back) {
    uint64_t r = atomic_load_explicit(range, memory_order_relaxed);
    for (;;) {
        uint64_t first = r >> 32, end = r & 0xffffffffu;
        if (first >= end) return -1;
        uint64_t taken = from_back ? first << 32 | (end - 1) : (first + 1) << 32 | end;
        if (atomic_compare_exchange_weak_explicit(range, &r, taken, memory_order_relaxed, memory_order_relaxed))
            return (int)(from_back ? end - 1 : first);
    }
}

int team_task_next(void) {
    if (omp_get_num_threads() == 1) return alone_next < alone_end ? alone_next++ : -1;
    int owners = task_owners(), me = omp_get_thread_num(), task;
    if (me < owners)
        for (int l = 0; l < task_lists; l++)
            if ((task = take_task(&task_ranges[me].range[l], 0)) >= 0) return task;
    for (int d = 1; d <= owners; d++) {  // the next threads' ranges, from the back of their last list
        int other = (me + d) % owners;
        if (other == me) continue;
        for (int l = task_lists - 1; l >= 0; l--)
            if ((task = take_task(&task_ranges[other].range[l], 1)) >= 0) return task;
    }
    return -1;
}

void *team_share(void *mine) {
    static void *shared;  // one team of several threads at a time
    if (omp_get_num_threads() == 1) return mine;  // teams of one may run side by side
    if (omp_get_thread_num() == 0) shared = mine;
    team_barrier();
    void *value = shared;
    team_barrier();  // every thread has read it before the next call writes it
    return value;
}

void team_barrier(void) {
    int team = omp_get_num_threads();
    if (team == 1) return;
    unsigned gen = atomic_load_explicit(&barrier.generation, memory_order_acquire);
    if (atomic_fetch_add_explicit(&barrier.arrived, 1, memory_order_acq_rel) == team - 1) {
        // last to arrive: reset the count for the next barrier, then free the others
        atomic_store_explicit(&barrier.arrived, 0, memory_order_relaxed);
        atomic_fetch_add(&barrier.generation, 1);
        if (atomic_load(&barrier.sleepers) > 0) {
            pthread_mutex_lock(&barrier.lock);
            pthread_cond_broadcast(&barrier.wake);
            pthread_mutex_unlock(&barrier.lock);
        }
        return;
    }
    if (spin_until_released(gen)) return;
    // Sleep. A sleeper counts itself before it checks the generation, and the last thread
    // advances the generation before it checks for sleepers, so one of the two sees the
    // other: either the sleeper finds the barrier open, or it is woken.
    pthread_mutex_lock(&barrier.lock);
    atomic_fetch_add(&barrier.sleepers, 1);
    while (atomic_load(&barrier.generation) == gen) pthread_cond_wait(&barrier.wake, &barrier.lock);
    atomic_fetch_sub(&barrier.sleepers, 1);
    pthread_mutex_unlock(&barrier.lock);
}

// ----------------------------------------------------------------------------
// the thread tuner

#define FIRST_TRIAL 8      // samples before a count is first tried, and after a change
#define FIRST_TEAM_TRIAL 200  // samples (at least 0.4 s of passes) before a short pass first
                              // tries a team: beside a busy process one such trial can take
                              // 100 times the pass, which a short run must not pay
#define MAX_INTERVAL 128   // a count that keeps losing narrowly is tried every this many samples
#define MAX_PENALTY (1L << 20)  // ... one that lost by far, at most this many
#define WIN 0.97           // a count replaces the one in use if 3% faster ...
#define SLOWDOWN 1.25      // ... and one thread fewer is tried at once when the count in use
                           // is this much slower than its best (other work has started)

static void count_reset(TunerCount *c, long sample) {
    c->samples = 0;
    c->best = INFINITY;
    c->interval = FIRST_TRIAL;
    c->next_trial = sample + FIRST_TRIAL;
}

static double count_median(const TunerCount *c) {
    double a = c->secs[0], b = c->secs[1], m = c->secs[2];
    if (c->samples == 1) return a;
    if (c->samples == 2) return 0.5 * (a + b);
    return fmax(fmin(a, b), fmin(fmax(a, b), m));
}

static void count_add(TunerCount *c, double secs) {
    for (int i = TUNER_SAMPLES - 1; i > 0; i--) c->secs[i] = c->secs[i - 1];
    c->secs[0] = secs;
    if (c->samples < TUNER_SAMPLES) c->samples++;
}

// Starts the counts afresh from `threads`.
static void tuner_init_counts(ThreadTuner *t, int threads) {
    t->threads = threads < 1 ? 1 : threads > t->max_threads ? t->max_threads : threads;
    t->trial = 0;
    t->samples = 0;
    t->sample_secs = t->sample_work = 0.0;
    for (int i = 0; i < 3; i++) count_reset(&t->count[i], 0);
}

void tuner_init(ThreadTuner *t, int max_threads, int threads) {
    t->pass_kind = NULL;
    t->pass_shape = 0;
    t->max_threads = max_threads > 1 ? max_threads : 1;
    t->measuring = 0;
    t->short_pass = 0;
    t->alone = 0.0;
    tuner_init_counts(t, threads);
}

// The samples before a count that has just lost a trial by `ratio` (its time over the
// count in use's) is tried again, after `interval`: twice as many, and more the more it lost
// by, so that its trials cost about TUNER_TRIAL_COST of the time.
static long interval_after_loss(long interval, double ratio) {
    long doubled = interval * 2 < MAX_INTERVAL ? interval * 2 : MAX_INTERVAL;
    double penalty = fmin((ratio - 1.0) / TUNER_TRIAL_COST, (double)MAX_PENALTY);
    return doubled > penalty ? doubled : (long)penalty;
}

// Puts count c's next trial off from `sample` as after a loss by `ratio` (interval_after_loss).
static void put_off_trial(TunerCount *c, long sample, double ratio) {
    c->interval = interval_after_loss(c->interval, ratio);
    c->next_trial = sample + c->interval;
}

int tuner_next(ThreadTuner *t) {
    t->samples++;
    t->trial = 0;
    if (t->count[1].samples == TUNER_SAMPLES) {  // the count in use is known: try a neighbour?
        if (t->threads > 1 && t->samples >= t->count[0].next_trial) t->trial = -1;
        else if (t->threads < t->max_threads && t->samples >= t->count[2].next_trial) t->trial = 1;
    }
    if (t->trial > 0 && t->short_pass && platform_idle_cpus() == 0) {
        // no processor is idle: the larger team would share one with other work, and a short
        // pass would wait for it at every barrier (beside a busy process, 5 to 11 times the
        // pass). Put off as a narrow loss would.
        put_off_trial(&t->count[2], t->samples, 1.0);
        t->trial = 0;
    }
    return t->threads + t->trial;
}

// How many times slower than a team of n threads (n >= 2) one of n - 1 is expected to be,
// from the team's speed-up over one thread, each thread past the first adding the same speed.
static double fewer_threads_loss(double speedup, int n) {
    return speedup / (1.0 + (speedup - 1.0) * (n - 2) / (n - 1));
}

void tuner_record(ThreadTuner *t, double seconds) {
    TunerCount *cur = &t->count[1], *tried = &t->count[1 + t->trial];
    if (t->alone > 0.0) {
        // the team's first sample against the first pass alone, which was a trial of one
        // thread: a team slower than it (beside a busy process, say) gives way to it at once,
        // trying again later; a faster team puts off its trial of one thread fewer as a lost
        // trial would (else a step twice as fast on two threads tried one at the 8th step: 14%
        // of the time of a 7-step benchmark of the small model). That pass ran on cold memory,
        // so it puts the trial off by MAX_INTERVAL samples at most.
        double ratio = seconds / t->alone;
        t->alone = 0.0;
        if (ratio > 1.0) {
            tuner_init_counts(t, 1);
            t->count[2].interval = t->count[2].next_trial = interval_after_loss(FIRST_TRIAL / 2, ratio);
            return;
        }
        long wait = interval_after_loss(FIRST_TRIAL / 2, fewer_threads_loss(1.0 / ratio, t->threads));
        t->count[0].interval = t->count[0].next_trial = wait < MAX_INTERVAL ? wait : MAX_INTERVAL;
    }
    count_add(tried, seconds);
    if (t->trial == 0) {
        if (cur->samples < TUNER_SAMPLES) return;
        double m = count_median(cur);
        if (m < cur->best) {
            cur->best = m;
        } else if (m > SLOWDOWN * cur->best) {
            // slower than it was: other work has come, which a larger team would only wait for
            cur->best = m;
            t->count[0].interval = FIRST_TRIAL;
            t->count[0].next_trial = t->samples + 1;
        }
        return;
    }
    double ratio = seconds / count_median(cur);
    if (ratio < WIN) {  // the neighbour wins: it becomes the count in use
        TunerCount old = *cur;
        old.interval = FIRST_TRIAL;
        old.next_trial = t->samples + FIRST_TRIAL;
        *cur = *tried;
        cur->best = seconds;
        t->count[1 - t->trial] = old;
        count_reset(&t->count[1 + t->trial], t->samples);
        t->threads += t->trial;
    } else {  // it loses
        put_off_trial(tried, t->samples, ratio);
    }
}

// The CPU time of the calling thread: the work it did, however often it was preempted.
static double thread_cpu_seconds(void) {
    struct timespec now;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
    return now.tv_sec + 1e-9 * now.tv_nsec;
}

int tuner_start(ThreadTuner *t, const void *pass_kind, long pass_shape) {
    int max_threads = omp_get_max_threads();
    if (t->pass_kind != pass_kind || t->pass_shape != pass_shape || t->max_threads != max_threads) {
        // a new kind of pass: its first pass measures its work on one thread
        tuner_init(t, max_threads, max_threads);
        t->pass_kind = pass_kind;
        t->pass_shape = pass_shape;
        t->measuring = max_threads > 1;
    }
    int threads = t->measuring ? 1 : t->sample_work > 0.0 ? t->threads + t->trial : tuner_next(t);
    t->started_cpu = thread_cpu_seconds();
    t->started = now_seconds();
    return threads;
}

void tuner_stop(ThreadTuner *t, double work) {
    double secs = now_seconds() - t->started;
    if (t->measuring) {
        // the first pass, timed by the work it took: a short one carries on alone, trying a
        // team only after a while; a long one on every thread, whose first sample it meets
        t->measuring = 0;
        if (thread_cpu_seconds() - t->started_cpu < TUNER_SHORT_PASS) {
            tuner_init_counts(t, 1);
            t->short_pass = 1;
            t->count[2].interval = t->count[2].next_trial = FIRST_TEAM_TRIAL;
        } else {
            t->alone = secs / work;
        }
        return;
    }
    t->sample_secs += secs;
    t->sample_work += work;
    if (t->sample_secs < TUNER_SAMPLE_SECONDS) return;
    tuner_record(t, t->sample_secs / t->sample_work);
    t->sample_secs = t->sample_work = 0.0;
}
