// OpenMP's calls for the WebAssembly build (web/), which runs on one thread: the page's Web
// Worker, or node for the tests. That build is compiled without -fopenmp, with -fopenmp-simd,
// so that the `omp simd` loops are still vectorised and the other pragmas (parallel, for,
// barrier) are ignored: every parallel region runs once, on the calling thread, and every
// `omp for` loop whole there. What chargpt asks of OpenMP's runtime is then the answer of a
// team of one thread, below; kernels/parallel.c's team functions (team_barrier, team_share,
// in_team) behave as a team of one with these answers.
#ifndef CHARGPT_WEB_OMP_H
#define CHARGPT_WEB_OMP_H

static inline int omp_get_thread_num(void) { return 0; }
static inline int omp_get_num_threads(void) { return 1; }
static inline int omp_get_max_threads(void) { return 1; }
static inline int omp_get_num_procs(void) { return 1; }
// The one thread is always inside its team, of one (level 1): so kernels/parallel.h's in_team()
// is 1 everywhere and a team function does its work where it is called, rather than start a
// team, which here would be the same thread again (gpt_forward and gpt_backward call
// themselves inside the team they start: with level 0 they would call themselves for ever).
static inline int omp_get_level(void) { return 1; }
// One thread whatever is asked: --threads N is accepted and runs on one.
static inline void omp_set_num_threads(int threads) { (void)threads; }

#endif
