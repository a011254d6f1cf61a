// The processes of a data-parallel run. Built with MPI (`make MPI=1`, which compiles this
// room with mpicc and CHARGPT_MPI) it is a thin layer over MPI's collectives on
// MPI_COMM_WORLD (the reduce-scatter a ring of its own, dist.c); built without, the same
// functions describe one process alone and every collective is a copy or nothing, so the
// rest of chargpt needs no MPI headers.
//
// Every collective must be called by every process, in the same order, from the thread that
// called dist_init and outside OpenMP parallel regions (MPI_THREAD_FUNNELED). A process that
// finds an error does not leave on its own, which would leave the others waiting in their
// next collective: it says so at the next agreement (dist_agree), which every process reaches,
// and they all leave together.
//
// Waiting: every collective is MPI's nonblocking one, tested in a loop that spins for a short
// while, then sleeps between tests with a growing interval (an eighth of the wait so far,
// from 20 us to 5 ms), so that a process waiting for a slower or stopped one does not keep a
// core busy (OpenMPI's blocking collectives poll without ever sleeping). A collective of the
// parameters' size first waits for every process to arrive (a barrier), then moves the data
// spinning for up to 0.5 s, so that sleeping never slows the transfer itself. A wait longer
// than the timeout (dist_set_timeout) is reported to the program.
#ifndef CHARGPT_DIST_H
#define CHARGPT_DIST_H

#include <stddef.h>

#include "../common/errors.h"

// Starts MPI (with argc and argv, as MPI_Init_thread wants them) or, without MPI, checks that
// the process was not started by mpirun as one of several (which needs the MPI build).
// Returns 0, or -1 with err; dist_rank() and dist_size() are valid either way.
int dist_init(int *argc, char ***argv, char err[ERR_LEN]);
// Ends MPI; every process calls it before it exits (after meeting the others, a collective
// like any other). Does nothing when called again.
void dist_finalize(void);

// Called when a collective has waited `seconds` for the other processes (time this process
// itself was stopped not counted), with a message naming this process, the collective and the
// wait; called again after each further `seconds` if it returns. MPI cannot take back a
// collective under way, so a handler that gives up ends the run with dist_abort.
typedef void DistStallHandler(const char *message);
// seconds 0 (the default): wait without limit, still sleeping. Without MPI nothing waits.
void dist_set_timeout(double seconds, DistStallHandler *on_stall);
// Ends every process of the run at once with status (MPI_Abort, which mpirun passes on as its
// own status) and does not return; without MPI it returns, and the caller exits.
void dist_abort(int status);

int dist_rank(void);        // this process, 0 .. dist_size() - 1
int dist_size(void);        // processes in the run
int dist_local_size(void);  // processes of the run on this machine (this one included)

// The share of `total` items (parameters, validation windows) that process `rank` takes:
// [*first, *end), contiguous, in rank order, sizes differing by at most one.
void dist_share(size_t total, int rank, size_t *first, size_t *end);

// x[0, n) = its sum over the processes, on every process (all-reduce).
void dist_sum_floats(float *x, size_t n);
void dist_sum_doubles(double *x, int n);
// x[first, end) = the sum over the processes of their x[first, end), [first, end) this
// process's share of n (reduce-scatter, in place); the rest of x is left undefined.
void dist_reduce_scatter_floats(float *x, size_t n);
// Every process's share of x[0, n) from that process, on every process (all-gather).
void dist_all_gather_floats(float *x, size_t n);
// all[0, n) on rank 0 = every process's share, from its shard (gather); all is not used
// on the other ranks.
void dist_gather_floats(const float *shard, float *all, size_t n);

// What the processes agree on at a point that every one of them reaches.
typedef struct {
    int status;  // the failure of the lowest-ranked process that had one (its exit status), or 0
    int rank;    // that process
    int signal;  // the highest stop signal any process had received, or 0
} DistAgreement;
// status: this process's failure (an exit status, 0 for none); signal: the stop signal it has
// received (0 for none).
DistAgreement dist_agree(int status, int signal);

// A value that every process must have the same (the corpus's fingerprint, an option), for
// dist_check_same: its name for messages ("corpus", "--seed") and its value as text.
#define DIST_FACT_LEN 96
#define DIST_BUILD_FACT 63
typedef struct {
    const char *name;
    char value[DIST_FACT_LEN];
} DistFact;
// Compares every process's facts[0, n) (n <= DIST_BUILD_FACT, the same list on every process
// built from the same sources; a process whose list has another length is reported as another
// build) with rank 0's. Returns 0 when they are all the same; else -1 on every process, with the same message
// in err on each, naming the lowest-ranked process that differs, its first differing fact with
// both values, its other differing facts, and the other processes that differ: "rank 1's corpus
// differs from rank 0's: rank 1 has ...; rank 0 has ...". Collective; its messages' sizes do
// not depend on the facts.
int dist_check_same(const DistFact *facts, int n, char err[ERR_LEN]);

// Wall seconds this process has spent in the collectives so far (waiting for the others
// included).
double dist_comm_seconds(void);

#endif
