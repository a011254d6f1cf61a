// dist.h over MPI when CHARGPT_MPI is defined, else for one process alone.
#include "dist.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../common/clock.h"

#ifdef CHARGPT_MPI
#include <mpi.h>
#endif

// The reduce-scatter's ring passes partial sums in pieces of at most this many floats.
#define RING_PIECE (1 << 18)

// Waiting (dist.h): seconds of spinning before the first sleep, for a small collective or the
// arrival of every process, and for the transfer of a large one once all have arrived; the
// sleep between two tests, an eighth of the wait so far within these bounds; a collective
// larger than ARRIVAL_BYTES a process waits for every process to arrive first.
#define SPIN_ARRIVAL 100e-6
#define SPIN_TRANSFER 0.5
#define SLEEP_MIN 20e-6
#define SLEEP_MAX 5e-3
#define ARRIVAL_BYTES (64 * 1024)
// A gap between two tests this many seconds longer than the sleep planned means that this
// process was stopped (SIGSTOP, a suspended machine) or not scheduled: not counted as waiting.
#define SUSPENDED_GAP 1.0

static struct {
    int rank, size, local_size;
    int initialized, finalized;
    double comm_seconds;
    int *counts, *displs;  // (size) each process's share of a buffer being reduced or gathered
    uint64_t *masks;       // (size) each process's differing facts (dist_check_same)
    float *piece;          // (RING_PIECE) a partial sum received by the reduce-scatter
    double timeout;        // seconds a collective waits before on_stall is called; 0: no limit
    DistStallHandler *on_stall;
#ifdef CHARGPT_MPI
    // OpenMPI's control variable coll_libnbc_iallreduce_algorithm (MPI_T), when it has one and
    // it was left to its default: 0, libnbc's own choice
    int tool_interface, has_algorithm, default_algorithm;  // tool_interface: MPI_T started
    MPI_T_cvar_handle algorithm;
#endif
} dist = {.size = 1, .local_size = 1};

int dist_rank(void) { return dist.rank; }
int dist_size(void) { return dist.size; }
int dist_local_size(void) { return dist.local_size; }
double dist_comm_seconds(void) { return dist.comm_seconds; }

void dist_share(size_t total, int rank, size_t *first, size_t *end) {
    // total / size each, and one more for each of the first total % size processes
    size_t base = total / (size_t)dist.size, extra = total % (size_t)dist.size, r = (size_t)rank;
    *first = base * r + (r < extra ? r : extra);
    *end = *first + base + (r < extra);
}

#ifdef CHARGPT_MPI

void dist_set_timeout(double seconds, DistStallHandler *on_stall) {
    dist.timeout = seconds;
    dist.on_stall = on_stall;
}

// The sleep before the next test after `waited` seconds: none while spinning, then an eighth
// of the wait so far, within [SLEEP_MIN, SLEEP_MAX].
static double sleep_before_test(double waited, double spin) {
    if (waited < spin) return 0.0;
    double s = waited / 8;
    return s < SLEEP_MIN ? SLEEP_MIN : s > SLEEP_MAX ? SLEEP_MAX : s;
}

// Tests reqs[0, n) until every one is complete: spins for `spin` seconds of waiting, then
// sleeps between tests (dist.h). `what` names the collective and `call` the MPI call waited
// for, in the message to on_stall.
static void wait_all(MPI_Request *reqs, int n, double spin, const char *what, const char *call) {
    double last = now_seconds(), waited = 0.0, planned = 0.0, next_report = dist.timeout;
    for (;;) {
        int done;
        MPI_Testall(n, reqs, &done, MPI_STATUSES_IGNORE);
        if (done) return;
        double t = now_seconds(), gap = t - last;
        last = t;
        waited += gap > planned + SUSPENDED_GAP ? planned : gap;
        if (dist.on_stall && dist.timeout > 0 && waited >= next_report) {
            char message[ERR_LEN];
            snprintf(message, sizeof(message), "rank %d has waited %.1f s for the other processes in %s (%s)",
                     dist.rank, waited, what, call);
            dist.on_stall(message);
            next_report += dist.timeout;
        }
        planned = sleep_before_test(waited, spin);
        if (planned > 0.0) nanosleep(&(struct timespec){0, (long)(planned * 1e9)}, NULL);
    }
}

// Before a collective of `bytes` a process: when large, every process arrives first, so that
// the transfer, which moves only while MPI is called, runs with all of them there.
static void arrive(size_t bytes, const char *what) {
    if (bytes <= ARRIVAL_BYTES) return;
    MPI_Request req;
    MPI_Ibarrier(MPI_COMM_WORLD, &req);
    wait_all(&req, 1, SPIN_ARRIVAL, what, "MPI_Ibarrier: every process arriving");
}

// Waits for the requests of a collective of `bytes` a process, started after arrive().
static void transfer(MPI_Request *reqs, int n, size_t bytes, const char *what, const char *call) {
    wait_all(reqs, n, bytes <= ARRIVAL_BYTES ? SPIN_ARRIVAL : SPIN_TRANSFER, what, call);
}

// The handle of libnbc's all-reduce algorithm, when OpenMPI has it and the user did not set it.
static void find_algorithm(void) {
    int provided, index, count;
    dist.tool_interface = MPI_T_init_thread(MPI_THREAD_FUNNELED, &provided) == MPI_SUCCESS;
    if (!dist.tool_interface) return;
    dist.has_algorithm = MPI_T_cvar_get_index("coll_libnbc_iallreduce_algorithm", &index) == MPI_SUCCESS &&
                         MPI_T_cvar_handle_alloc(index, NULL, &dist.algorithm, &count) == MPI_SUCCESS &&
                         count == 1 && MPI_T_cvar_read(dist.algorithm, &dist.default_algorithm) == MPI_SUCCESS &&
                         dist.default_algorithm == 0;
}

int dist_init(int *argc, char ***argv, char err[ERR_LEN]) {
    int provided;
    MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
    dist.initialized = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &dist.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &dist.size);
    MPI_Comm node;  // the processes that share this machine's memory
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &dist.local_size);
    MPI_Comm_free(&node);
    dist.counts = malloc((size_t)dist.size * sizeof(int));
    dist.displs = malloc((size_t)dist.size * sizeof(int));
    dist.masks = malloc((size_t)dist.size * sizeof(uint64_t));
    dist.piece = malloc(RING_PIECE * sizeof(float));
    if (!dist.counts || !dist.displs || !dist.masks || !dist.piece) {
        snprintf(err, ERR_LEN, "out of memory for the table of %d processes", dist.size);
        return -1;
    }
    find_algorithm();
    if (provided < MPI_THREAD_FUNNELED) {
        snprintf(err, ERR_LEN, "the MPI library supports threads at level %d only; chargpt needs "
                 "MPI_THREAD_FUNNELED (%d): OpenMP threads, MPI called from the main thread", provided,
                 MPI_THREAD_FUNNELED);
        return -1;
    }
    return 0;
}

void dist_finalize(void) {
    if (!dist.initialized || dist.finalized) return;
    // MPI_Finalize waits for every process without a limit: meet them first
    MPI_Request req;
    MPI_Ibarrier(MPI_COMM_WORLD, &req);
    wait_all(&req, 1, SPIN_ARRIVAL, "the last meeting, before MPI_Finalize", "MPI_Ibarrier");
    dist.finalized = 1;
    if (dist.tool_interface) MPI_T_finalize();
    MPI_Finalize();
    free(dist.counts);
    free(dist.displs);
    free(dist.masks);
    free(dist.piece);
    dist.counts = dist.displs = NULL;
    dist.masks = NULL;
    dist.piece = NULL;
}

void dist_abort(int status) {
    dist.finalized = 1;  // an exit handler calling dist_finalize must not wait for the others
    MPI_Abort(MPI_COMM_WORLD, status);
}

// Fills counts and displs with every process's share of n (the caller checked that n fits
// an int: training/data_parallel.c refuses models with more parameters).
static void fill_shares(size_t n) {
    for (int r = 0; r < dist.size; r++) {
        size_t first, end;
        dist_share(n, r, &first, &end);
        dist.counts[r] = (int)(end - first);
        dist.displs[r] = (int)first;
    }
}

// An all-reduce (sum) of x[0, n) in place, of `size` bytes each. A large one asks OpenMPI's
// nonblocking collectives (libnbc) for their ring: by default they take a binomial tree below 4
// processes or in place, which sends the whole vector to one process and back, about twice
// the time of the blocking MPI_Allreduce for the small config's gradients on 2 processes,
// where the ring takes 0.7 to 0.8 times it (on this 2-core machine, with other work on it).
static void sum_in_place(void *x, size_t n, MPI_Datatype type, size_t size, const char *type_name) {
    double t0 = now_seconds();
    char what[96];
    snprintf(what, sizeof(what), "the all-reduce of %zu %s%s", n, type_name, n == 1 ? "" : "s");
    int large = n * size > ARRIVAL_BYTES, ring = 1;
    arrive(n * size, what);
    if (large && dist.has_algorithm) MPI_T_cvar_write(dist.algorithm, &ring);
    MPI_Request req;
    MPI_Iallreduce(MPI_IN_PLACE, x, (int)n, type, MPI_SUM, MPI_COMM_WORLD, &req);
    if (large && dist.has_algorithm) MPI_T_cvar_write(dist.algorithm, &dist.default_algorithm);
    transfer(&req, 1, n * size, what, "MPI_Iallreduce");
    dist.comm_seconds += now_seconds() - t0;
}

void dist_sum_floats(float *x, size_t n) { sum_in_place(x, n, MPI_FLOAT, sizeof(float), "float"); }
void dist_sum_doubles(double *x, int n) { sum_in_place(x, (size_t)n, MPI_DOUBLE, sizeof(double), "double"); }

// The start of a collective over the processes' shares of n floats: the shares filled
// (fill_shares), `what` it is for messages ("the all-gather of 1000 floats"), every process
// arrived. Returns when it started, for dist.comm_seconds.
static double begin_shared(size_t n, const char *name, const char *where, char *what, size_t size) {
    double t0 = now_seconds();
    fill_shares(n);
    snprintf(what, size, "%s of %zu floats%s", name, n, where);
    arrive(n * sizeof(float), what);
    return t0;
}

// A ring: at step s (0 .. N-2) process r sends its partial sum of share (r - s - 1) mod N to
// process r + 1 and adds the one of share (r - s - 2) mod N from process r - 1 into x, so
// that after N - 1 steps its own share r holds the sum of every process's, added in ring
// order. It moves what MPI_Reduce_scatter does, 4 (N-1)/N n bytes out and in, but needs
// only one piece of memory besides x, where OpenMPI's takes a temporary of 1.5 x (OpenMPI
// 4.1 on 2 processes), which would cost more than sharding the moments saves.
void dist_reduce_scatter_floats(float *x, size_t n) {
    char what[160];
    double t0 = begin_shared(n, "the reduce-scatter", "", what, sizeof(what));
    int N = dist.size, next = (dist.rank + 1) % N, prev = (dist.rank + N - 1) % N;
    for (int s = 0; s < N - 1; s++) {
        int out = ((dist.rank - s - 1) % N + N) % N, in = ((dist.rank - s - 2) % N + N) % N;
        float *send = x + dist.displs[out], *sum = x + dist.displs[in];
        // the two shares may differ by one float: as many pieces as the longer needs
        for (int done = 0; done < dist.counts[out] || done < dist.counts[in]; done += RING_PIECE) {
            int send_n = dist.counts[out] - done, recv_n = dist.counts[in] - done;
            send_n = send_n < 0 ? 0 : send_n < RING_PIECE ? send_n : RING_PIECE;
            recv_n = recv_n < 0 ? 0 : recv_n < RING_PIECE ? recv_n : RING_PIECE;
            MPI_Request reqs[2];
            MPI_Irecv(dist.piece, recv_n, MPI_FLOAT, prev, s, MPI_COMM_WORLD, &reqs[0]);
            MPI_Isend(send + done, send_n, MPI_FLOAT, next, s, MPI_COMM_WORLD, &reqs[1]);
            snprintf(what, sizeof(what), "the reduce-scatter of %zu floats, ring step %d of %d", n, s + 1, N - 1);
            char call[96];
            snprintf(call, sizeof(call), "MPI_Irecv from rank %d, MPI_Isend to rank %d", prev, next);
            transfer(reqs, 2, n * sizeof(float), what, call);
            for (int i = 0; i < recv_n; i++) sum[done + i] += dist.piece[i];
        }
    }
    dist.comm_seconds += now_seconds() - t0;
}

void dist_all_gather_floats(float *x, size_t n) {
    char what[96];
    double t0 = begin_shared(n, "the all-gather", "", what, sizeof(what));
    MPI_Request req;
    MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, x, dist.counts, dist.displs, MPI_FLOAT, MPI_COMM_WORLD, &req);
    transfer(&req, 1, n * sizeof(float), what, "MPI_Iallgatherv");
    dist.comm_seconds += now_seconds() - t0;
}

void dist_gather_floats(const float *shard, float *all, size_t n) {
    char what[96];
    double t0 = begin_shared(n, "the gather", " on rank 0", what, sizeof(what));
    MPI_Request req;
    MPI_Igatherv(shard, dist.counts[dist.rank], MPI_FLOAT, all, dist.counts, dist.displs, MPI_FLOAT, 0,
                 MPI_COMM_WORLD, &req);
    transfer(&req, 1, n * sizeof(float), what, "MPI_Igatherv");
    dist.comm_seconds += now_seconds() - t0;
}

DistAgreement dist_agree(int status, int signal) {
    // one all-reduce of two minimums: the lowest rank that failed, with its status in the low
    // byte, and the highest signal, negated
    int mine[2] = {status ? dist.rank * 256 + (status & 255) : INT_MAX, -signal}, all[2];
    double t0 = now_seconds();
    MPI_Request req;
    MPI_Iallreduce(mine, all, 2, MPI_INT, MPI_MIN, MPI_COMM_WORLD, &req);
    transfer(&req, 1, sizeof(mine), "the agreement on failures and stop signals", "MPI_Iallreduce of 2 ints");
    dist.comm_seconds += now_seconds() - t0;
    DistAgreement a = {0, 0, -all[1]};
    if (all[0] != INT_MAX) {
        a.status = all[0] % 256;
        a.rank = all[0] / 256;
    }
    return a;
}

// Appends item, the k-th of a list of count, to err at *len: "a", "a and b", "a, b and c".
static void append_listed(char err[ERR_LEN], int *len, int k, int count, const char *item) {
    if (*len >= ERR_LEN) return;
    *len += snprintf(err + *len, ERR_LEN - *len, "%s%s", k == 0 ? "" : k == count - 1 ? " and " : ", ", item);
}

// The message of dist_check_same: rank r, the lowest that differs from rank 0, has `value` for
// its first differing fact, rank 0 has rank0[that fact]; dist.masks[q] is rank q's differing facts.
static void describe_difference(const DistFact *facts, const char (*rank0)[DIST_FACT_LEN], int r, const char *value,
                                char err[ERR_LEN]) {
    uint64_t mask = dist.masks[r];
    int f = __builtin_ctzll(mask), others = __builtin_popcountll(mask) - 1, ranks = 0;
    const char *name = f == DIST_BUILD_FACT ? "build of chargpt (rebuild every machine's from the same sources)"
                                            : facts[f].name;
    int len = snprintf(err, ERR_LEN, "rank %d's %s differs from rank 0's: rank %d has %s; rank 0 has %s", r, name, r,
                       value, rank0[f]);
    if (others > 0 && len < ERR_LEN) len += snprintf(err + len, ERR_LEN - len, "; rank %d's ", r);
    for (int i = f + 1, k = 0; i < 64; i++)
        if (mask >> i & 1) append_listed(err, &len, k++, others, facts[i].name);
    if (others > 0 && len < ERR_LEN) len += snprintf(err + len, ERR_LEN - len, " differ%s too", others == 1 ? "s" : "");
    for (int q = r + 1; q < dist.size; q++) ranks += dist.masks[q] != 0;
    if (ranks > 0 && len < ERR_LEN) len += snprintf(err + len, ERR_LEN - len, "; rank%s ", ranks == 1 ? "" : "s");
    for (int q = r + 1, k = 0; q < dist.size; q++) {
        char number[16];
        snprintf(number, sizeof(number), "%d", q);
        if (dist.masks[q]) append_listed(err, &len, k++, ranks, number);
    }
    if (ranks > 0 && len < ERR_LEN) snprintf(err + len, ERR_LEN - len, " differ%s from rank 0 too", ranks == 1 ? "s" : "");
}

int dist_check_same(const DistFact *facts, int n, char err[ERR_LEN]) {
    double t0 = now_seconds();
    // rank 0's values, sent to every process, always all 64 of them with their count in the
    // last: a process built from other sources (another list of facts) is then told apart
    // instead of failing the broadcast (its fact DIST_BUILD_FACT)
    static char rank0[64][DIST_FACT_LEN];
    if (dist.rank == 0) {
        for (int i = 0; i < n; i++) snprintf(rank0[i], DIST_FACT_LEN, "%s", facts[i].value);
        snprintf(rank0[DIST_BUILD_FACT], DIST_FACT_LEN, "a list of %d facts to compare", n);
    }
    const char *what = "the comparison of every process's values with rank 0's";
    MPI_Request req;
    MPI_Ibcast(rank0, sizeof(rank0), MPI_CHAR, 0, MPI_COMM_WORLD, &req);
    transfer(&req, 1, sizeof(rank0), what, "MPI_Ibcast of rank 0's values");
    uint64_t mine = 0;
    char build[DIST_FACT_LEN];
    snprintf(build, sizeof(build), "a list of %d facts to compare", n);
    if (strcmp(build, rank0[DIST_BUILD_FACT]) != 0)
        mine = (uint64_t)1 << DIST_BUILD_FACT;
    else
        for (int i = 0; i < n; i++)
            if (strncmp(facts[i].value, rank0[i], DIST_FACT_LEN) != 0) mine |= (uint64_t)1 << i;
    MPI_Iallgather(&mine, 1, MPI_UINT64_T, dist.masks, 1, MPI_UINT64_T, MPI_COMM_WORLD, &req);
    transfer(&req, 1, sizeof(mine), what, "MPI_Iallgather of the differences");
    int r = 1;
    while (r < dist.size && !dist.masks[r]) r++;
    if (r < dist.size) {  // rank r's first differing value, to every process
        char value[DIST_FACT_LEN];
        if (dist.rank == r)
            snprintf(value, sizeof(value), "%s", mine >> DIST_BUILD_FACT ? build : facts[__builtin_ctzll(mine)].value);
        MPI_Ibcast(value, sizeof(value), MPI_CHAR, r, MPI_COMM_WORLD, &req);
        transfer(&req, 1, sizeof(value), what, "MPI_Ibcast of the first difference");
        describe_difference(facts, rank0, r, value, err);
    }
    dist.comm_seconds += now_seconds() - t0;
    return r < dist.size ? -1 : 0;
}

#else  // one process

// The rank and size that a launcher (mpirun, mpiexec, srun) gives the process, if any.
static void launcher_rank(int *rank, int *size) {
    static const char *names[][2] = {
        {"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK"}, {"PMI_SIZE", "PMI_RANK"}, {"PMIX_SIZE", "PMIX_RANK"},
    };
    *rank = 0;
    *size = 1;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        const char *size_text = getenv(names[i][0]), *rank_text = getenv(names[i][1]);
        if (size_text && rank_text) {
            *size = atoi(size_text);
            *rank = atoi(rank_text);
            return;
        }
    }
}

int dist_init(int *argc, char ***argv, char err[ERR_LEN]) {
    int rank, size;
    launcher_rank(&rank, &size);
    if (size > 1) {
        // keep the rank, so that the message is printed once
        dist.rank = rank;
        snprintf(err, ERR_LEN, "started as one of %d processes, but this program was built without MPI: "
                 "build it with `make MPI=1` to train on several processes", size);
        return -1;
    }
    return 0;
}

void dist_finalize(void) {}

void dist_set_timeout(double seconds, DistStallHandler *on_stall) {}
void dist_abort(int status) {}

void dist_sum_floats(float *x, size_t n) {}
void dist_sum_doubles(double *x, int n) {}

void dist_reduce_scatter_floats(float *x, size_t n) {}

void dist_all_gather_floats(float *x, size_t n) {}

void dist_gather_floats(const float *shard, float *all, size_t n) {
    if (all != shard) memcpy(all, shard, n * sizeof(float));
}

DistAgreement dist_agree(int status, int signal) { return (DistAgreement){status, 0, signal}; }

int dist_check_same(const DistFact *facts, int n, char err[ERR_LEN]) { return 0; }

#endif
