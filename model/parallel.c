// The team barrier (parallel.h): a counter and a generation number, a short spin on the
// generation, then a sleep on a condition variable that the last thread to arrive signals.
#include "parallel.h"

#include <omp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

// How long a thread spins before it sleeps: a barrier reached by running threads within
// this much of each other costs no system call.
#define SPIN_NS 20000L
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
