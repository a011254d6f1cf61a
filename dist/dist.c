// dist.h over MPI when CHARGPT_MPI is defined, else for one process alone.
#include "dist.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef CHARGPT_MPI
#include <mpi.h>
#endif

// The reduce-scatter's ring passes partial sums in pieces of at most this many floats.
#define RING_PIECE (1 << 18)

static struct {
    int rank, size, local_size;
    int initialized, finalized;
    double comm_seconds;
    int *counts, *displs;  // (size) each process's share of a buffer being reduced or gathered
    float *piece;          // (RING_PIECE) a partial sum received by the reduce-scatter
} dist = {0, 1, 1, 0, 0, 0.0, NULL, NULL, NULL};

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

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
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
    dist.piece = malloc(RING_PIECE * sizeof(float));
    if (!dist.counts || !dist.displs || !dist.piece) {
        snprintf(err, ERR_LEN, "out of memory for the table of %d processes", dist.size);
        return -1;
    }
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
    dist.finalized = 1;
    MPI_Finalize();
    free(dist.counts);
    free(dist.displs);
    free(dist.piece);
    dist.counts = dist.displs = NULL;
    dist.piece = NULL;
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

void dist_sum_floats(float *x, size_t n) {
    double t0 = now_seconds();
    MPI_Allreduce(MPI_IN_PLACE, x, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    dist.comm_seconds += now_seconds() - t0;
}

void dist_sum_doubles(double *x, int n) {
    double t0 = now_seconds();
    MPI_Allreduce(MPI_IN_PLACE, x, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    dist.comm_seconds += now_seconds() - t0;
}

// A ring: at step s (0 .. N-2) process r sends its partial sum of share (r - s - 1) mod N to
// process r + 1 and adds the one of share (r - s - 2) mod N from process r - 1 into x, so
// that after N - 1 steps its own share r holds the sum of every process's, added in ring
// order. It moves what MPI_Reduce_scatter does, 4 (N-1)/N n bytes out and in, but needs
// only one piece of memory besides x, where OpenMPI's takes a temporary of 1.5 x (OpenMPI
// 4.1 on 2 processes), which would cost more than sharding the moments saves.
void dist_reduce_scatter_floats(float *x, size_t n) {
    double t0 = now_seconds();
    fill_shares(n);
    int N = dist.size, next = (dist.rank + 1) % N, prev = (dist.rank + N - 1) % N;
    for (int s = 0; s < N - 1; s++) {
        int out = ((dist.rank - s - 1) % N + N) % N, in = ((dist.rank - s - 2) % N + N) % N;
        float *send = x + dist.displs[out], *sum = x + dist.displs[in];
        // the two shares may differ by one float: as many pieces as the longer needs
        for (int done = 0; done < dist.counts[out] || done < dist.counts[in]; done += RING_PIECE) {
            int send_n = dist.counts[out] - done, recv_n = dist.counts[in] - done;
            send_n = send_n < 0 ? 0 : send_n < RING_PIECE ? send_n : RING_PIECE;
            recv_n = recv_n < 0 ? 0 : recv_n < RING_PIECE ? recv_n : RING_PIECE;
            MPI_Sendrecv(send + done, send_n, MPI_FLOAT, next, s, dist.piece, recv_n, MPI_FLOAT, prev, s,
                         MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            for (int i = 0; i < recv_n; i++) sum[done + i] += dist.piece[i];
        }
    }
    dist.comm_seconds += now_seconds() - t0;
}

void dist_all_gather_floats(float *x, size_t n) {
    double t0 = now_seconds();
    fill_shares(n);
    MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, x, dist.counts, dist.displs, MPI_FLOAT, MPI_COMM_WORLD);
    dist.comm_seconds += now_seconds() - t0;
}

void dist_gather_floats(const float *shard, float *all, size_t n) {
    double t0 = now_seconds();
    fill_shares(n);
    MPI_Gatherv(shard, dist.counts[dist.rank], MPI_FLOAT, all, dist.counts, dist.displs, MPI_FLOAT, 0,
                MPI_COMM_WORLD);
    dist.comm_seconds += now_seconds() - t0;
}

DistAgreement dist_agree(int status, int signal) {
    // one all-reduce of two minimums: the lowest rank that failed, with its status in the low
    // byte, and the highest signal, negated
    int mine[2] = {status ? dist.rank * 256 + (status & 255) : INT_MAX, -signal}, all[2];
    double t0 = now_seconds();
    MPI_Allreduce(mine, all, 2, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    dist.comm_seconds += now_seconds() - t0;
    DistAgreement a = {0, 0, -all[1]};
    if (all[0] != INT_MAX) {
        a.status = all[0] % 256;
        a.rank = all[0] / 256;
    }
    return a;
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

void dist_sum_floats(float *x, size_t n) {}
void dist_sum_doubles(double *x, int n) {}

void dist_reduce_scatter_floats(float *x, size_t n) {}

void dist_all_gather_floats(float *x, size_t n) {}

void dist_gather_floats(const float *shard, float *all, size_t n) {
    if (all != shard) memcpy(all, shard, n * sizeof(float));
}

DistAgreement dist_agree(int status, int signal) { return (DistAgreement){status, 0, signal}; }

#endif
