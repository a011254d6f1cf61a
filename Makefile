# chargpt: `make` builds ./train and ./generate (and their man pages), `make test` builds and
# runs the tests, `make bench` measures speed beside PyTorch's (about 3 minutes; `make
# bench-all` adds every other table, 15 to 25; `make bench-turns OLD=dir` times this tree's
# training step against another tree's, runs taken in turn), `make install` installs the
# programs as chargpt-train and chargpt-generate under PREFIX (default /usr/local; DESTDIR is
# honoured).
# The kernels' backends (kernels/backend.h) are each compiled with their instruction set's
# flags (ISA_FLAGS_* below), and the program picks the fastest the CPU runs when it starts
# (CHARGPT_KERNELS=portable|avx2|avx512|avx512_bf16|avx512_amx on x86-64,
# portable|neon|neon_bf16 on AArch64, forces one; CHARGPT_KERNELS=plain the textbook loops of
# kernels/plain.c). Everything else is compiled with MARCH, by default the architecture's
# baseline (x86-64), so that the programs run on any CPU of it; `make MARCH=-march=native`
# builds for this machine alone (use `make clean` when changing it).
#
# `make sanitize` builds everything with AddressSanitizer (and LeakSanitizer) and
# UndefinedBehaviorSanitizer into build-sanitize/ and runs the whole test suite there; the
# first report stops the program that made it, and any report fails the target.
# `make fuzz FUZZ_SECONDS=N` builds the libFuzzer targets of tests/fuzz/ with clang into
# build-fuzz/ and runs each for N seconds.
#
# `make MPI=1` builds the trainer with OpenMPI's mpicc and data parallelism into build-mpi/
# (objects, and the program as build-mpi/bin/train: `mpirun -np N build-mpi/bin/train ...`), apart
# from the plain build, which needs no MPI. `make test-mpi` runs the multi-process tests
# (tests/mpi/test_mpi.sh) on it.
#
# `make PLATFORM=posix` builds with common/platform.c's plain-POSIX answers instead of this
# system's (Linux's or macOS's): the memory available unknown (no limit unless --max-memory),
# the program's own path unknown (the shipped corpus looked for in PREFIX/share/chargpt/, then
# in ./data/), the program's name from argv[0]. It builds into build-posix/ (the programs in
# build-posix/bin/), apart from the plain build; `make PLATFORM=posix test` runs the whole
# suite on it.
#
# `make debug` builds ./train and ./generate without optimisation and with debugging information
# (-O0 -g) into build-debug/, the programs in build-debug/bin/ (the shipped corpus beside them),
# apart from the optimised build, which `make` leaves as it was: in a debugger every function of
# the path in docs/how-a-step-runs.md is a frame of its own (at -O3 gcc folds block_forward into
# gpt_forward). `make test` builds it too, for the test that runs the guide's recipe under gdb.
#
# Windows: a MinGW-w64 gcc builds train.exe and generate.exe, statically linked (each runs
# alone), with common/windows.manifest in them (UTF-8 their code page): on Windows itself,
# MSYS2's UCRT64 `make` as here; from Linux, `make windows` cross-builds them with CC_WINDOWS
# into build-windows/bin/, the shipped corpus copied beside them, and `make test-windows`
# runs the whole suite there under Wine (docs/platforms.md).
#
# WebAssembly: emscripten's emcc builds the same C into build-wasm/ (web/web.mk): `make
# test-wasm` runs the test suite under node, `make web` builds the page web/chargpt.html.
CC ?= cc
ifeq ($(MPI),1)
MPICC ?= mpicc
CC := $(MPICC)
BUILD := build-mpi
BIN := build-mpi/bin
.DEFAULT_GOAL := mpi
endif
ifeq ($(PLATFORM),posix)
BUILD := build-posix
BIN := build-posix/bin
TEST_RUNNER := build-posix/run_tests
endif
# The backends beyond the portable one for the compiler's target (x86-64, or AArch64 on Linux
# or macOS: a cross compiler such as CC=aarch64-linux-gnu-gcc picks the AArch64 ones), and
# the flags of their files
X86_KERNELS := kernels/backend_avx2.c kernels/backend_avx512.c kernels/bf16_avx512.c
ARM_KERNELS := kernels/backend_neon.c kernels/bf16_neon.c
TARGET_MACHINE := $(shell $(CC) -dumpmachine)
ifneq ($(findstring x86_64,$(TARGET_MACHINE)),)
MARCH ?= -march=x86-64
ISA_FLAGS_backend_avx2 := -mavx2 -mfma
ISA_FLAGS_backend_avx512 := -mavx512f -mavx512bw -mavx512dq -mavx512vl -mavx2 -mfma
ISA_FLAGS_bf16_avx512 := $(ISA_FLAGS_backend_avx512) -mavx512bf16 -mamx-tile -mamx-bf16
OTHER_ARCH_KERNELS := $(ARM_KERNELS)
else ifneq ($(filter aarch64% arm64%,$(TARGET_MACHINE)),)
MARCH ?=
ISA_FLAGS_bf16_neon := -march=armv8.2-a+bf16
OTHER_ARCH_KERNELS := $(X86_KERNELS)
else
MARCH ?=
OTHER_ARCH_KERNELS := $(X86_KERNELS) $(ARM_KERNELS)
endif
# the WebAssembly backend is the WebAssembly build's alone (web/web.mk)
OTHER_ARCH_KERNELS += kernels/backend_wasm_simd128.c
# Windows (a MinGW-w64 compiler): programs end in .exe; statically linked, BCryptGenRandom's
# library, the manifest compiled by windres; no man pages. MinGW's own printf and scanf, which
# are C99's (%zu, %lld; 1e+10 written as glibc writes it), not the system C library's; gcc
# checks format(printf) against the latter there, so the format checks are the other systems'
# builds' (-Wno-format). gcc
# cannot align the stack beyond the 16 bytes Windows's x64 ABI keeps (GCC bug 54412), so the
# assembler writes the aligned moves of spilled AVX registers as unaligned ones.
ifneq ($(findstring mingw32,$(TARGET_MACHINE)),)
WINDOWS := 1
EXE := .exe
WINDRES ?= $(or $(shell command -v $(TARGET_MACHINE)-windres),windres)
override LDFLAGS += -static
WINDOWS_LIBS := -lbcrypt
WINDOWS_RES = $(BUILD)/common/windows.res.o
WINDOWS_CFLAGS := -D__USE_MINGW_ANSI_STDIO=1 -Wno-format -Wa,-muse-unaligned-vector-move
endif
# MARCH=-march=native where the compiler refuses it (Apple's clang on arm64, before version
# 15): -mcpu=native if it takes that, else the compiler's default target
ifeq ($(MARCH),-march=native)
ifneq ($(shell $(CC) -march=native -E -x c /dev/null >/dev/null 2>&1 && echo yes),yes)
override MARCH := $(shell $(CC) -mcpu=native -E -x c /dev/null >/dev/null 2>&1 && echo -mcpu=native)
endif
endif
# OpenMP: -fopenmp, but Apple's clang has no such driver flag: its preprocessor's flag and
# Homebrew's libomp (brew install libomp) instead. Homebrew's llvm clang takes -fopenmp
# (make CC=$(brew --prefix llvm)/bin/clang).
OPENMP_CFLAGS := -fopenmp
OPENMP_LIBS := -fopenmp
ifneq ($(findstring Apple clang,$(shell $(CC) --version 2>/dev/null)),)
LIBOMP ?= $(shell brew --prefix libomp 2>/dev/null)
OPENMP_CFLAGS := -Xpreprocessor -fopenmp -I$(LIBOMP)/include
OPENMP_LIBS := -L$(LIBOMP)/lib -lomp
endif
PREFIX ?= /usr/local
# gcc's -Wformat-truncation flags every snprintf into a fixed buffer; clang has no such option
# and warns about it, so it is turned off only where the compiler knows it.
NO_FORMAT_TRUNCATION := $(shell $(CC) -Werror -Wformat-truncation -fsyntax-only -x c /dev/null \
                          2>/dev/null && echo -Wno-format-truncation)
# clang says when a loop marked `omp simd` does not vectorise (a softmax row's maximum, whose
# float comparisons it will not reorder: kernels/pointwise.inc); gcc does not know the option.
NO_PASS_FAILED := $(shell $(CC) -Werror -Wpass-failed -fsyntax-only -x c /dev/null 2>/dev/null && echo -Wno-pass-failed)
CFLAGS ?= -O3 $(MARCH) -Wall -Wextra -Wno-unused-parameter $(NO_FORMAT_TRUNCATION) $(NO_PASS_FAILED)
# The C library's names beyond C11: POSIX.1-2008 with X/Open's (XSI: realpath, M_PI), and the
# BSD ones (flock; usleep and wait4 in the tests, MAP_ANONYMOUS in the bench) that glibc gives
# with _DEFAULT_SOURCE and macOS with _DARWIN_C_SOURCE. Only common/platform.c asks for more
# (glibc's names of the program, with _GNU_SOURCE). Files' sizes and offsets are 64 bits where
# they are not already (MinGW's off_t and stat).
FEATURES := -D_XOPEN_SOURCE=700 -D_DEFAULT_SOURCE -D_DARWIN_C_SOURCE -D_FILE_OFFSET_BITS=64
# -fno-math-errno: sqrtf need not set errno (nothing reads it), so loops that call it can be
# vectorised as their `omp simd` asks; the values computed are the same.
override CFLAGS += -std=c11 $(FEATURES) $(OPENMP_CFLAGS) -fno-math-errno -MMD -MP -I$(GEN) $(WINDOWS_CFLAGS)
ifeq ($(MPI),1)
override CFLAGS += -DCHARGPT_MPI
endif
ifeq ($(PLATFORM),posix)
override CFLAGS += -DCHARGPT_PLATFORM_POSIX
endif
LDFLAGS ?=
LDLIBS = $(OPENMP_LIBS) -lz -lm $(WINDOWS_LIBS)
# where objects go and where the programs are made (`make sanitize` sets these)
BUILD ?= build
# files made from the sources, the same for every build: the timeline's page as a C string
GEN := build/gen
BIN ?= .
TEST_RUNNER ?= tests/run_tests$(EXE)

LIB_SRC := $(wildcard common/*.c) $(filter-out $(OTHER_ARCH_KERNELS),$(wildcard kernels/*.c)) $(wildcard model/*.c) $(wildcard format/*.c) $(wildcard generation/*.c) $(wildcard data/*.c) \
           $(wildcard analysis/*.c) $(wildcard viewer/*.c) $(wildcard training/*.c) $(wildcard dist/*.c)
TEST_SRC := $(wildcard tests/*.c) $(wildcard tests/fuzz/fuzz_*.c)
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/%.o)
TEST_OBJ := $(TEST_SRC:%.c=$(BUILD)/%.o)
BENCH_SRC := $(wildcard scripts/*.c)
PROGRAMS := train generate
MAN_PAGES := $(if $(WINDOWS),,$(PROGRAMS:%=$(BUILD)/man/chargpt-%.1))

.PHONY: all test test-backends test-arm64 bench bench-all bench-turns clean install uninstall sanitize fuzz mpi test-mpi windows test-windows \
	debug exercises exercise exercise-train test-exercises

all: $(PROGRAMS:%=$(BIN)/%$(EXE)) $(MAN_PAGES)

# a backend's file gets its instruction set's flags too (ISA_FLAGS_<file>)
$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(ISA_FLAGS_$(notdir $*)) -c $< -o $@

# the pages' HTML files (viewer/timeline_page.html, and the attention math both pages hold,
# viewer/attention_math.html) as C string literals, one per line, that viewer/timeline.c and
# viewer/attention_html.c include: they stay readable HTML files (\ " and ? escaped, the last
# so that no ?? starts a trigraph)
$(GEN)/%.inc: viewer/%.html
	@mkdir -p $(dir $@)
	sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/?/\\?/g' -e 's/^/"/' -e 's/$$/\\n"/' $< > $@.tmp
	mv $@.tmp $@
# the pages each viewer object embeds, for every build of it (here, and the page's in web/web.mk)
PAGES_timeline := $(GEN)/timeline_page.inc $(GEN)/attention_math.inc
PAGES_attention_html := $(GEN)/attention_math.inc $(GEN)/analysis_panels.inc
PAGES_circuits_export := $(GEN)/circuits_page.inc
embed_pages = $(foreach o,timeline attention_html circuits_export,$(eval $(1)/viewer/$(o).o: $(PAGES_$(o))))
$(call embed_pages,$(BUILD))

# where the shipped corpus is installed, for a system that does not say where the program is
# (data/corpus.c; `make clean` when changing PREFIX for such a system)
$(BUILD)/data/corpus.o: override CFLAGS += -DCHARGPT_PREFIX='"$(PREFIX)"'

$(BUILD)/libchargpt.a: $(LIB_OBJ)
	rm -f $@
	ar rcs $@ $^

$(BIN)/train$(EXE): $(BUILD)/train.o $(BUILD)/libchargpt.a $(WINDOWS_RES)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS)

$(BIN)/generate$(EXE): $(BUILD)/generate.o $(BUILD)/libchargpt.a $(WINDOWS_RES)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS)

$(BUILD)/common/windows.res.o: common/windows.rc common/windows.manifest
	@mkdir -p $(dir $@)
	$(WINDRES) $< -O coff -o $@

# man pages from each program's --help, under its installed name
$(BUILD)/man/chargpt-%.1: $(BIN)/% scripts/make_man.sh
	@mkdir -p $(dir $@)
	scripts/make_man.sh chargpt-$* $(BIN)/$* $(filter-out chargpt-$*,$(PROGRAMS:%=chargpt-%)) > $@.tmp
	mv $@.tmp $@

$(TEST_RUNNER): $(TEST_OBJ) $(BUILD)/libchargpt.a $(WINDOWS_RES)
	$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS)

# (CHARGPT_DEBUG_BIN: where the debug build's programs are, for the guide's recipe under gdb,
# tests/test_guide.c; a run of the tests without it skips that test); scripts/bench too in the
# plain build, whose refusals of options the tests check
test: all $(TEST_RUNNER) debug $(if $(filter build,$(BUILD)),scripts/bench)
	CHARGPT_BIN=$(BIN) CHARGPT_DEBUG_BIN=$(DEBUG)/bin ./$(TEST_RUNNER)

# the programs at -O0 -g in build-debug/ (above), whatever the build asked for (MPI, PLATFORM);
# the pages' generated files first, which the two builds share
DEBUG := build-debug
debug: $(GEN)/timeline_page.inc $(GEN)/attention_math.inc
	@mkdir -p $(DEBUG)/bin
	ln -sfn ../../data $(DEBUG)/bin/data  # the programs look for the shipped corpus in data/ beside them
	$(MAKE) MPI= PLATFORM= BUILD=$(DEBUG) BIN=$(DEBUG)/bin \
		CFLAGS="-O0 -g $(MARCH) -Wall -Wextra -Wno-unused-parameter $(NO_FORMAT_TRUNCATION) $(NO_PASS_FAILED)" \
		$(DEBUG)/bin/train$(EXE) $(DEBUG)/bin/generate$(EXE)

# the whole suite once per kernels this CPU runs, its backends and the plain loops
# (CHARGPT_KERNELS=name), each run's output in $(BUILD)/tests-<name>.log; a failure shows the
# failed tests' checks
test-backends: all $(TEST_RUNNER)
	@for k in $$(./$(TEST_RUNNER) --backends); do \
		echo "CHARGPT_KERNELS=$$k ./$(TEST_RUNNER)"; \
		CHARGPT_KERNELS=$$k CHARGPT_BIN=$(BIN) ./$(TEST_RUNNER) > $(BUILD)/tests-$$k.log 2>&1; status=$$?; \
		tail -n 1 $(BUILD)/tests-$$k.log; \
		if [ $$status -ne 0 ]; then grep -B 12 '^FAIL' $(BUILD)/tests-$$k.log; exit 1; fi; \
	done

# AArch64 without ARM hardware: the programs and the tests cross-built (CC_ARM64, Debian's
# gcc-aarch64-linux-gnu and the arm64 zlib) into build-arm64/, the whole suite run under
# qemu-aarch64 on two CPU models side by side (scripts/test_arm64.sh: cortex-a72, the neon
# kernels; max, with FEAT_BF16, the neon_bf16 kernels), then a checkpoint written by this
# machine's ./train read by the AArch64 ./generate (scripts/check_arm64_checkpoint.sh)
ARM64 := build-arm64
CC_ARM64 ?= aarch64-linux-gnu-gcc
test-arm64: all
	$(MAKE) CC=$(CC_ARM64) MARCH= BUILD=$(ARM64) BIN=$(ARM64)/bin TEST_RUNNER=$(ARM64)/run_tests \
		$(ARM64)/bin/train $(ARM64)/bin/generate $(ARM64)/run_tests
	ln -sfn ../../data $(ARM64)/bin/data  # the programs look for the shipped corpus in data/ beside them
	scripts/test_arm64.sh
	scripts/check_arm64_checkpoint.sh

# Windows from Linux: the programs and the tests cross-built with CC_WINDOWS (Debian's
# gcc-mingw-w64-x86-64-posix and libz-mingw-w64-dev) into build-windows/, the shipped corpus
# copied beside the programs (build-windows/bin/ is what a Windows user unpacks); the whole
# suite run under wine64 (scripts/test_windows.sh), then a checkpoint of each system's ./train
# read by the other's ./generate (scripts/check_windows_checkpoint.sh)
WIN := build-windows
CC_WINDOWS ?= x86_64-w64-mingw32-gcc-posix
windows:
	$(MAKE) CC=$(CC_WINDOWS) BUILD=$(WIN) BIN=$(WIN)/bin $(WIN)/bin/train.exe $(WIN)/bin/generate.exe
	mkdir -p $(WIN)/bin/data
	cp data/tinyshakespeare.txt.gz $(WIN)/bin/data/

test-windows: all windows
	$(MAKE) CC=$(CC_WINDOWS) BUILD=$(WIN) BIN=$(WIN)/bin TEST_RUNNER=$(WIN)/run_tests.exe $(WIN)/run_tests.exe
	scripts/test_windows.sh
	scripts/check_windows_checkpoint.sh

bench: all scripts/bench
	./scripts/bench.sh

bench-all: all scripts/bench
	./scripts/bench.sh --all

# this tree's training step against another tree's build (OLD=dir), runs taken in turn
bench-turns: scripts/bench
	@test -n "$(OLD)" || { echo "make bench-turns OLD=dir: dir is a chargpt tree with scripts/bench built" >&2; exit 2; }
	./scripts/bench_turns.sh "$(OLD)" .

scripts/bench: build/scripts/bench.o build/libchargpt.a
	$(CC) $^ -o $@ $(LDLIBS)

# the MPI build's trainer, with the shipped corpus in data/ beside it as the programs expect
mpi: build-mpi/bin/train build-mpi/bin/check_same_build
	ln -sfn ../../data build-mpi/bin/data

# a test's stand-in for processes built from different sources (tests/mpi/test_mpi.sh)
$(BIN)/check_same_build: $(BUILD)/tests/mpi/check_same_build.o $(BUILD)/libchargpt.a
	$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS)

tests/mpi/compare_checkpoints: build/tests/mpi/compare_checkpoints.o build/libchargpt.a
	$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS)

tests/mpi/compare_probes: build/tests/mpi/compare_probes.o build/libchargpt.a
	$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS)

test-mpi: all tests/mpi/compare_checkpoints tests/mpi/compare_probes
	$(MAKE) MPI=1 mpi
	tests/mpi/test_mpi.sh

# The programs find the corpus in ../share/chargpt/ relative to themselves, so installing
# under another PREFIX needs no rebuild.
install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/chargpt $(DESTDIR)$(PREFIX)/share/man/man1
	for p in $(PROGRAMS); do install -m 755 $(BIN)/$$p $(DESTDIR)$(PREFIX)/bin/chargpt-$$p || exit 1; done
	install -m 644 data/tinyshakespeare.txt.gz $(DESTDIR)$(PREFIX)/share/chargpt/
	install -m 644 $(MAN_PAGES) $(DESTDIR)$(PREFIX)/share/man/man1/

uninstall:
	rm -f $(PROGRAMS:%=$(DESTDIR)$(PREFIX)/bin/chargpt-%) $(DESTDIR)$(PREFIX)/share/chargpt/tinyshakespeare.txt.gz \
	      $(MAN_PAGES:$(BUILD)/man/%=$(DESTDIR)$(PREFIX)/share/man/man1/%)
	if [ -d $(DESTDIR)$(PREFIX)/share/chargpt ]; then rmdir $(DESTDIR)$(PREFIX)/share/chargpt; fi

# ---- sanitizers: reports go to files in build-sanitize/reports/, which are counted
SAN := build-sanitize
SAN_FLAGS := -fsanitize=address,undefined,float-cast-overflow -fno-sanitize-recover=all
SAN_ENV := CHARGPT_BIN=$(SAN)/bin \
	ASAN_OPTIONS=abort_on_error=1:detect_leaks=1:log_path=$(CURDIR)/$(SAN)/reports/asan \
	UBSAN_OPTIONS=abort_on_error=1:print_stacktrace=1:log_path=$(CURDIR)/$(SAN)/reports/ubsan

sanitize:
	@mkdir -p $(SAN)/bin
	ln -sfn ../../data $(SAN)/bin/data  # the programs look for the shipped corpus in data/ beside them
	$(MAKE) BUILD=$(SAN) BIN=$(SAN)/bin TEST_RUNNER=$(SAN)/run_tests LDFLAGS="$(SAN_FLAGS)" \
		CFLAGS="-O1 -g -fno-omit-frame-pointer $(MARCH) -Wall -Wextra -Wno-unused-parameter \
		$(NO_FORMAT_TRUNCATION) $(SAN_FLAGS)" $(SAN)/bin/train $(SAN)/bin/generate $(SAN)/run_tests
	rm -rf $(SAN)/reports
	mkdir -p $(SAN)/reports
	$(SAN_ENV) ./$(SAN)/run_tests; status=$$?; \
	reports=$$(ls $(SAN)/reports | wc -l); \
	for f in $(SAN)/reports/*; do [ -f "$$f" ] && cat "$$f"; done; \
	echo "sanitizer reports: $$reports"; \
	[ $$status -eq 0 ] && [ $$reports -eq 0 ]

# ---- fuzzing: tests/fuzz/fuzz_<name>.c defines fuzz_<name>(data, size)
FUZZ := build-fuzz
FUZZ_CC ?= clang
FUZZ_SECONDS ?= 60
FUZZ_TARGETS := checkpoint safetensors json corpus prompt probe_file
FUZZ_CFLAGS := -O1 -g $(MARCH) -std=c11 $(FEATURES) -fopenmp -fno-math-errno -MMD -MP -Wno-pass-failed -I$(GEN) \
	-fsanitize=address,undefined -fno-sanitize-recover=all
FUZZ_LIB_OBJ := $(LIB_SRC:%.c=$(FUZZ)/%.o)
.SECONDARY: $(FUZZ_LIB_OBJ)  # kept between runs, though only the pattern rule below names them

$(FUZZ)/viewer/timeline.o: $(GEN)/timeline_page.inc $(GEN)/attention_math.inc
$(FUZZ)/viewer/attention_html.o: $(GEN)/attention_math.inc $(GEN)/analysis_panels.inc
$(FUZZ)/viewer/circuits_export.o: $(GEN)/circuits_page.inc
$(FUZZ)/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(ISA_FLAGS_$(notdir $*)) -fsanitize=fuzzer-no-link -c $< -o $@

$(FUZZ)/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/libfuzzer_main.c $(FUZZ_LIB_OBJ)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -DFUZZ_TARGET=fuzz_$* $(filter %.c %.o,$^) -o $@ -lz -lm

fuzz: $(FUZZ_TARGETS:%=$(FUZZ)/fuzz_%)
	@for t in $(FUZZ_TARGETS); do \
		mkdir -p $(FUZZ)/corpus/$$t $(FUZZ)/crashes; \
		echo "fuzz_$$t: $(FUZZ_SECONDS) s"; \
		./$(FUZZ)/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
			-dict=tests/fuzz/$$t.dict -artifact_prefix=$(FUZZ)/crashes/$$t- \
			$(FUZZ)/corpus/$$t tests/fuzz/seeds/$$t 2> $(FUZZ)/fuzz_$$t.log \
			|| { tail -n 60 $(FUZZ)/fuzz_$$t.log; echo "fuzz_$$t found a crash: see $(FUZZ)/crashes/"; exit 1; }; \
		grep -E "stat::number_of_executed_units|stat::peak_rss_mb" $(FUZZ)/fuzz_$$t.log; \
	done

# ---- exercises (docs/exercises.md): `make exercises` lists them, easiest first; `make exercise
# NAME=gelu` builds the checker (tests/exercises/) and a ./train with exercises/gelu.c in place
# of the project's function, runs the checks, then 200 training steps with it in the loop,
# compared with the project's run (made once, in build/exercises/reference/). FILE=path checks
# another file for that exercise, SOLUTION=1 the project's own function; TIME_LIMIT=S gives the
# checks S seconds (default 20) before a function that does not return is stopped. The
# project's function is made a weak symbol in a copy of the library (objcopy -W), so that the
# learner's definition takes its place at link time: nothing in the project's sources changes.
# The checker and the checked copy of the learner's file are built with AddressSanitizer and
# UndefinedBehaviorSanitizer where the compiler has them. POSIX systems with ELF objects (Linux;
# WSL on Windows). `make exercise-train` links every exercise that has passed into one ./train;
# `make test-exercises` (scripts/check_exercises.sh) is CI's check that every stub fails, every
# solution passes, and a loop, a crash and a write out of bounds each end in a message.
EX := build/exercises
OBJCOPY ?= objcopy
NM ?= nm
# (the sanitizers' probe links a program: only when an exercise's target is asked for)
ifneq ($(filter exercise exercises exercise-train test-exercises $(EX)/%,$(MAKECMDGOALS)),)
EX_SAN := $(shell printf 'int main(void){return 0;}' | $(CC) -fsanitize=address,undefined -x c - -o /dev/null \
            2>/dev/null && echo -fsanitize=address,undefined -fno-sanitize-recover=all)
endif
EX_CFLAGS = -O1 -g -fno-omit-frame-pointer $(MARCH) -Wall -Wextra -Wno-unused-parameter $(NO_FORMAT_TRUNCATION) \
            -std=c11 $(FEATURES) $(OPENMP_CFLAGS) -fno-math-errno -MMD -MP $(EX_SAN)
EX_OBJ := $(patsubst %.c,$(EX)/%.o,$(wildcard tests/exercises/*.c))

$(EX)/tests/%.o: tests/%.c
	@mkdir -p $(dir $@)
	$(CC) $(EX_CFLAGS) -c $< -o $@

# The exercises whose function the model's training reaches through others of the project's,
# and the file of tests/exercises/through/ that takes those others' place in the exercise's
# ./train, passing the calls on to the exercise's function: GELU's forward and backward, which
# the model trains through gelu_forward_slope and gelu_backward_slope (kernels.h).
EX_THROUGH_gelu := gelu
EX_THROUGH_gelu_backward := gelu
$(EX)/through/%.o: tests/exercises/through/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@
# objcopy's -W for each function object $(1) defines: weak in the library's copy, in its favour
ex_weaken = $$($(NM) -g --defined-only $(1) | awk '{printf " -W %s", $$3}')

# the checker on the project's own functions: the solutions; it also lists the exercises
$(EX)/check: $(EX_OBJ) $(BUILD)/tests/reference.o $(BUILD)/libchargpt.a
	$(CC) $(EX_SAN) $^ -o $@ $(LDLIBS)

# the project's training run, which each learner's is compared with
$(EX)/reference/run/log.csv: $(BIN)/train$(EXE) $(EX)/tests/exercises/training_run.o | $(EX)/check
	$(EX)/check --reference-run $(BIN)/train$(EXE) $(EX)/reference

exercises: $(EX)/check
	@$(EX)/check --list

ifdef NAME
EX_FILE := $(or $(FILE),exercises/$(NAME).c)
EX_DIR := $(EX)/$(NAME)$(if $(FILE),-$(basename $(notdir $(FILE))))
EX_FUNCTION = $$($(EX)/check --function $(NAME))
EX_THROUGH := $(if $(EX_THROUGH_$(NAME)),$(EX)/through/$(EX_THROUGH_$(NAME)).o)
# the library with the exercise's function weak, and the learner's file: checked (with the
# sanitizers) and for the training run (optimised as the project is); its object must define
# the function. (-Iexercises: a file elsewhere includes "../model/layers.h" as those in
# exercises/ do.)
$(EX_DIR)/libchargpt.a: $(BUILD)/libchargpt.a $(EX)/check $(EX_THROUGH)
	@mkdir -p $(dir $@)
	$(OBJCOPY) -W $(EX_FUNCTION) $(foreach o,$(EX_THROUGH),$(call ex_weaken,$(o))) $< $@
$(EX_DIR)/mine-checked.o: $(EX_FILE) $(EX)/check
	@mkdir -p $(dir $@)
	$(CC) $(EX_CFLAGS) -Iexercises -c $< -o $@
	@$(NM) -g --defined-only $@ | grep -qw "$(EX_FUNCTION)" || \
		{ echo "$(EX_FILE) does not define $(EX_FUNCTION), the function of exercise $(NAME)" >&2; rm -f $@; exit 1; }
$(EX_DIR)/mine.o: $(EX_FILE) $(EX_DIR)/mine-checked.o
	$(CC) $(CFLAGS) -Iexercises -w -c $< -o $@  # (its warnings were the checked copy's)
$(EX_DIR)/check: $(EX_OBJ) $(EX_DIR)/mine-checked.o $(BUILD)/tests/reference.o $(EX_DIR)/libchargpt.a
	$(CC) $(EX_SAN) $^ -o $@ $(LDLIBS)
$(EX_DIR)/train: $(BUILD)/train.o $(EX_DIR)/mine.o $(EX_THROUGH) $(EX_DIR)/libchargpt.a
	$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS)
ifeq ($(SOLUTION),1)
EX_RUN = $(EX)/check $(NAME) --train $(BIN)/train$(EXE) --run-dir $(EX)/$(NAME)-solution
else
EX_RUN = $(EX_DIR)/check $(NAME) --file $(EX_FILE) --train $(EX_DIR)/train --run-dir $(EX_DIR)/training
endif
EX_RUN += $(if $(TIME_LIMIT),--time-limit $(TIME_LIMIT))
-include $(EX_DIR)/mine-checked.d $(EX_DIR)/mine.d
endif

# A learner's own exercise that passed leaves $(EX)/NAME/passed, which make exercise-train reads.
exercise: $(EX)/check
	@[ -n "$(NAME)" ] || { echo "make exercise NAME=...: which one? (make exercises lists them)" >&2; exit 2; }
	@$(EX)/check --function $(NAME) > /dev/null || exit 2
	@[ "$(SOLUTION)" = 1 ] || [ -f "$(EX_FILE)" ] || { echo "$(EX_FILE): no such file" >&2; exit 2; }
	@$(MAKE) -s --no-print-directory $(if $(filter 1,$(SOLUTION)),,$(EX_DIR)/check $(EX_DIR)/train) \
		$(EX)/reference/run/log.csv
	@rm -f $(EX_DIR)/passed
	@$(EX_RUN) --reference $(EX)/reference $(if $(FILE)$(SOLUTION),,&& touch $(EX_DIR)/passed)

# ./train with every exercise of exercises/ that has passed in place of the project's function
# (the project's for the others): $(EX)/yours/train
EX_PASSED = $(patsubst $(EX)/%/passed,%,$(wildcard $(EX)/*/passed))
EX_PASSED_THROUGH = $(sort $(foreach n,$(EX_PASSED),$(if $(EX_THROUGH_$(n)),$(EX)/through/$(EX_THROUGH_$(n)).o)))
exercise-train: $(EX)/check $(BUILD)/train.o $(BUILD)/libchargpt.a $(EX_PASSED_THROUGH)
	@[ -n "$(EX_PASSED)" ] || { echo "no exercise has passed yet: make exercise NAME=... first" >&2; exit 2; }
	@mkdir -p $(EX)/yours
	$(OBJCOPY) $(foreach n,$(EX_PASSED),-W $$($(EX)/check --function $(n))) \
		$(foreach o,$(EX_PASSED_THROUGH),$(call ex_weaken,$(o))) $(BUILD)/libchargpt.a $(EX)/yours/libchargpt.a
	$(CC) $(LDFLAGS) $(BUILD)/train.o $(EX_PASSED:%=$(EX)/%/mine.o) $(EX_PASSED_THROUGH) $(EX)/yours/libchargpt.a \
		-o $(EX)/yours/train $(LDLIBS)
	@echo "$(EX)/yours/train: ./train with your $(EX_PASSED); run it with --threads 1 --sample-chars 0 (docs/exercises.md)"

test-exercises: $(EX)/check
	scripts/check_exercises.sh

# ---- WebAssembly: `make test-wasm` (the tests under node), `make web` (web/chargpt.html)
include web/web.mk

clean:
	rm -rf build build-mpi build-posix build-debug $(ARM64) $(WIN) $(SAN) $(FUZZ) train generate tests/run_tests scripts/bench \
		tests/mpi/compare_checkpoints tests/mpi/compare_probes

-include $(LIB_OBJ:.o=.d) $(TEST_OBJ:.o=.d) $(BUILD)/train.d $(BUILD)/generate.d build/scripts/bench.d \
	$(FUZZ_LIB_OBJ:.o=.d) $(FUZZ_TARGETS:%=$(FUZZ)/fuzz_%.d) $(EX_OBJ:.o=.d)
