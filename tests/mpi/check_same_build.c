// A stand-in for two builds of chargpt from different sources, run under mpirun by
// tests/mpi/test_mpi.sh: rank 0 compares three facts and the other ranks two (as a build with
// one option fewer to agree on would; the broadcast of rank 0's values, their first exchange,
// used to fail there with MPI_ERR_TRUNCATE), through dist_check_same. Every rank must get the
// same message naming the build, never an MPI error: prints it and exits 1, or exits 0 if the
// comparison found no difference.
#include <stdio.h>

#include "../../dist/dist.h"

int main(int argc, char **argv) {
    char err[ERR_LEN];
    if (dist_init(&argc, &argv, err) != 0) {
        fprintf(stderr, "check_same_build: %s\n", err);
        return 2;
    }
    DistFact facts[3] = {{"corpus", "1115394 characters"}, {"--seed", "1337"}, {"--new-option", "1"}};
    int n = dist_rank() == 0 ? 3 : 2;
    int status = 0;
    if (dist_check_same(facts, n, err) != 0) {
        printf("rank %d: %s\n", dist_rank(), err);
        status = 1;
    }
    dist_finalize();
    return status;
}
