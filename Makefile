# chargpt: `make` builds ./train and ./generate (and their man pages), `make test` builds and
# runs the tests, `make bench` measures speed, `make install` installs the programs as
# chargpt-train and chargpt-generate under PREFIX (default /usr/local; DESTDIR is honoured).
# MARCH picks the instruction set: the default uses every extension of this machine; e.g.
# `make MARCH=-march=x86-64-v3` builds the AVX2 path and `make MARCH=-march=x86-64` the
# portable one (use `make clean` when changing it).
CC ?= cc
MARCH ?= -march=native
PREFIX ?= /usr/local
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
PROGRAMS := train generate
MAN_PAGES := $(PROGRAMS:%=build/man/chargpt-%.1)

.PHONY: all test bench clean install uninstall

all: $(PROGRAMS) $(MAN_PAGES)

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

# man pages from each program's --help, under its installed name
build/man/chargpt-%.1: % scripts/make_man.sh
	@mkdir -p $(dir $@)
	scripts/make_man.sh chargpt-$* ./$* $(filter-out chargpt-$*,$(PROGRAMS:%=chargpt-%)) > $@.tmp
	mv $@.tmp $@

tests/run_tests: $(TEST_OBJ) build/libchargpt.a
	$(CC) $^ -o $@ $(LDLIBS)

test: all tests/run_tests
	./tests/run_tests

bench: all scripts/bench
	./scripts/bench.sh

scripts/bench: build/scripts/bench.o build/libchargpt.a
	$(CC) $^ -o $@ $(LDLIBS)

# The programs find the corpus in ../share/chargpt/ relative to themselves, so installing
# under another PREFIX needs no rebuild.
install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/chargpt $(DESTDIR)$(PREFIX)/share/man/man1
	for p in $(PROGRAMS); do install -m 755 $$p $(DESTDIR)$(PREFIX)/bin/chargpt-$$p || exit 1; done
	install -m 644 data/tinyshakespeare.txt.gz $(DESTDIR)$(PREFIX)/share/chargpt/
	install -m 644 $(MAN_PAGES) $(DESTDIR)$(PREFIX)/share/man/man1/

uninstall:
	rm -f $(PROGRAMS:%=$(DESTDIR)$(PREFIX)/bin/chargpt-%) $(DESTDIR)$(PREFIX)/share/chargpt/tinyshakespeare.txt.gz \
	      $(MAN_PAGES:build/man/%=$(DESTDIR)$(PREFIX)/share/man/man1/%)
	if [ -d $(DESTDIR)$(PREFIX)/share/chargpt ]; then rmdir $(DESTDIR)$(PREFIX)/share/chargpt; fi

clean:
	rm -rf build train generate tests/run_tests scripts/bench

-include $(LIB_OBJ:.o=.d) $(TEST_OBJ:.o=.d) build/train.d build/generate.d build/scripts/bench.d
