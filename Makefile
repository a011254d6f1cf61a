# chargpt: `make` builds ./train and ./generate, `make test` builds and runs the tests,
# `make bench` measures speed. MARCH picks the instruction set: the default uses every
# extension of this machine; e.g. `make MARCH=-march=x86-64-v3` builds the AVX2 path and
# `make MARCH=-march=x86-64` the portable one (use `make clean` when changing it).
CC ?= cc
MARCH ?= -march=native
# gcc's -Wformat-truncation flags every snprintf into a fixed buffer; clang has no such option
# and warns about it, so it is turned off only where the compiler knows it.
NO_FORMAT_TRUNCATION := $(shell $(CC) -Werror -Wformat-truncation -fsyntax-only -x c /dev/null \
                          2>/dev/null && echo -Wno-format-truncation)
CFLAGS ?= -O3 $(MARCH) -Wall -Wextra -Wno-unused-parameter $(NO_FORMAT_TRUNCATION)
# -fno-math-errno: sqrtf need not set errno (nothing reads it), so loops that call it can be
# vectorised as their `omp simd` asks; the values computed are the same.
CFLAGS += -std=c11 -D_GNU_SOURCE -fopenmp -fno-math-errno -MMD -MP
LDLIBS = -fopenmp -lz -lm

LIB_SRC := $(wildcard model/*.c) $(wildcard format/*.c) $(wildcard generation/*.c) $(wildcard data/*.c) $(wildcard viewer/*.c)
TEST_SRC := $(wildcard tests/*.c)
LIB_OBJ := $(LIB_SRC:%.c=build/%.o)
TEST_OBJ := $(TEST_SRC:%.c=build/%.o)
BENCH_SRC := $(wildcard scripts/*.c)

.PHONY: all test bench clean

all: train generate

build/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

build/libchargpt.a: $(LIB_OBJ)
	rm -f $@
	ar rcs $@ $^

train: build/train.o build/libchargpt.a
	$(CC) $^ -o $@ $(LDLIBS)

generate: build/generate.o build/libchargpt.a
	$(CC) $^ -o $@ $(LDLIBS)

tests/run_tests: $(TEST_OBJ) build/libchargpt.a
	$(CC) $^ -o $@ $(LDLIBS)

test: all tests/run_tests
	./tests/run_tests

bench: all scripts/bench
	./scripts/bench.sh

scripts/bench: build/scripts/bench.o build/libchargpt.a
	$(CC) $^ -o $@ $(LDLIBS)

clean:
	rm -rf build train generate tests/run_tests scripts/bench

-include $(LIB_OBJ:.o=.d) $(TEST_OBJ:.o=.d) build/train.d build/generate.d build/scripts/bench.d
