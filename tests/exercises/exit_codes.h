// How the child process that runs an exercise's checks ends (check_main.c tells them apart).
#ifndef CHARGPT_EXERCISE_EXIT_CODES_H
#define CHARGPT_EXERCISE_EXIT_CODES_H

#define EXIT_PASSED 0
#define EXIT_FAILED 1  // a check failed; it said why
#define EXIT_USAGE 2
#define EXIT_CHECKER 3  // the checker itself could not go on (out of memory)
#define EXIT_CRASHED 4  // a signal in the learner's function; the handler said where
#define EXIT_ASAN 5  // AddressSanitizer stopped it (its report, then buffers.c's line)
#define EXIT_ASAN_TEXT "5"
#define EXIT_UBSAN 6  // UndefinedBehaviorSanitizer stopped it
#define EXIT_UBSAN_TEXT "6"

#endif
