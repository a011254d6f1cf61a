# The WebAssembly build (included by the Makefile): the same C compiled by emscripten's emcc
# into build-wasm/, for node (`make test-wasm`: the test suite) and for the page (`make web`:
# web/chargpt.html, one self-contained file). docs/web.md says why emscripten, and what runs.
#
# One thread: compiled without -fopenmp, with -fopenmp-simd (the `omp simd` loops vectorised,
# the other OpenMP pragmas ignored) and web/include/omp.h, whose omp_* answers are a team of
# one. Everything is built for WebAssembly's baseline (no SIMD) but the wasm_simd128 kernels
# (kernels/backend_wasm_simd128.c, -msimd128), as the native build keeps the x86 and ARM
# backends' instruction sets to their own files. zlib is compiled from Debian's source
# package (scripts/zlib_source.sh fetches it into build-wasm/zlib/ once).
#
# Debian's emscripten needs NODE_PATH=/usr/share/nodejs to find acorn; EMCC names another emcc.
EMCC ?= emcc
EM_ENV := NODE_PATH=$(or $(NODE_PATH),/usr/share/nodejs)
NODE ?= node
WASM := build-wasm
WASM_ZLIB_SRC := $(WASM)/zlib/zlib-1.2.13.dfsg
WASM_CFLAGS := -O3 -std=c11 $(FEATURES) -fopenmp-simd -fno-math-errno -Wall -Wextra -Wno-unused-parameter \
	-Wno-pass-failed -MMD -MP -Iweb/include -I$(GEN) -I$(WASM_ZLIB_SRC)
ISA_FLAGS_backend_wasm_simd128 := -msimd128
WASM_LIB_SRC := $(filter-out kernels/backend_avx% kernels/bf16_avx% kernels/backend_neon% kernels/bf16_neon%,$(LIB_SRC)) \
	kernels/backend_wasm_simd128.c
WASM_LIB_OBJ := $(WASM_LIB_SRC:%.c=$(WASM)/%.o)
WASM_TEST_OBJ := $(TEST_SRC:%.c=$(WASM)/%.o)
# zlib's library, less the gz* files' of other systems (none)
WASM_ZLIB_NAMES := adler32 compress crc32 deflate gzclose gzlib gzread gzwrite infback inffast inflate inftrees \
	trees uncompr zutil
WASM_ZLIB_OBJ := $(WASM_ZLIB_NAMES:%=$(WASM)/zlib/%.o)
# the module's memory grows as it allocates, up to 4 GiB (wasm32's whole address space)
WASM_LDFLAGS := -O3 -sALLOW_MEMORY_GROWTH=1 -sMAXIMUM_MEMORY=4GB -sTOTAL_STACK=1MB
# the tests under node: the files are node's own (NODERAWFS), the module inside the script
WASM_TEST_LDFLAGS := $(WASM_LDFLAGS) -sENVIRONMENT=node -sNODERAWFS=1 -sSINGLE_FILE=1 -sEXIT_RUNTIME=1 \
	--js-library web/platform_library.js
# the page's module: a factory (createChargpt) for the worker's instances, ./train's meeting
# points able to suspend it (asyncify: only the functions that call down to the page's signal,
# the kernels untouched), and what web/worker.js calls
WEB_LDFLAGS := $(WASM_LDFLAGS) -sENVIRONMENT=worker -sMODULARIZE=1 -sEXPORT_NAME=createChargpt \
	-sASYNCIFY=1 -sASYNCIFY_IMPORTS=[platform_wasm_page_signal] -sASYNCIFY_IGNORE_INDIRECT=1 \
	-sASYNCIFY_STACK_SIZE=65536 --js-library web/platform_library.js \
	-sEXPORTED_FUNCTIONS=[_main,_inspect_open,_inspect_update,_inspect_limit,_malloc,_fflush] \
	-sEXPORTED_RUNTIME_METHODS=[FS,ENV,ccall,allocateUTF8]
WEB_OBJ := $(WASM)/web/programs.o $(WASM)/web/inspect.o $(WASM)/web/train_main.o $(WASM)/web/generate_main.o

.PHONY: test-wasm web check-web-page bench-web

$(WASM)/%.o: %.c | $(WASM_ZLIB_SRC)/zlib.h
	@mkdir -p $(dir $@)
	$(EM_ENV) $(EMCC) $(WASM_CFLAGS) $(ISA_FLAGS_$(notdir $*)) -c $< -o $@
$(call embed_pages,$(WASM))
$(WASM)/data/corpus.o: override WASM_CFLAGS += -DCHARGPT_PREFIX='"$(PREFIX)"'

$(WASM_ZLIB_SRC)/zlib.h:
	scripts/zlib_source.sh $(WASM)/zlib

$(WASM)/zlib/%.o: $(WASM_ZLIB_SRC)/zlib.h
	$(EM_ENV) $(EMCC) -O3 -DHAVE_UNISTD_H -DHAVE_STDARG_H -c $(WASM_ZLIB_SRC)/$*.c -o $@

$(WASM)/libchargpt.a: $(WASM_LIB_OBJ) $(WASM_ZLIB_OBJ)
	rm -f $@
	@$(EM_ENV) emar rcs $@ $^

# the programs' main functions under the names web/programs.c calls
$(WASM)/web/%_main.o: %.c | $(WASM_ZLIB_SRC)/zlib.h
	@mkdir -p $(dir $@)
	$(EM_ENV) $(EMCC) $(WASM_CFLAGS) -Dmain=$*_main -c $< -o $@

$(WASM)/chargpt.js: $(WEB_OBJ) $(WASM)/libchargpt.a web/platform_library.js
	$(EM_ENV) $(EMCC) $(WEB_LDFLAGS) $(filter %.o %.a,$^) -o $@
# emcc writes the module beside its script (a rule of its own, for make -j to wait for it)
$(WASM)/chargpt.wasm: $(WASM)/chargpt.js ;

# the page, committed; `make check-web-page` builds it afresh beside the committed one and
# compares the two (CI)
WEB_PAGE_INPUTS := web/page.html web/page.js $(WASM)/chargpt.js web/worker.js $(WASM)/chargpt.wasm \
	data/tinyshakespeare.txt.gz
web: web/chargpt.html
web/chargpt.html: $(WEB_PAGE_INPUTS) web/make_page.sh
	web/make_page.sh $@ $(WEB_PAGE_INPUTS)
check-web-page: $(WEB_PAGE_INPUTS) web/make_page.sh
	web/make_page.sh $(WASM)/chargpt.html $(WEB_PAGE_INPUTS)
	@cmp web/chargpt.html $(WASM)/chargpt.html || { echo "web/chargpt.html is not what make web builds: \
		run make web and commit it"; exit 1; }
	@echo "web/chargpt.html is what make web builds"

# the page's speed against the native programs' (scripts/bench_web.sh: 20 to 40 minutes)
bench-web: all web/chargpt.html
	scripts/bench_web.sh

$(WASM)/run_tests.js: $(WASM_TEST_OBJ) $(WASM)/libchargpt.a web/node_env.js
	$(EM_ENV) $(EMCC) $(WASM_TEST_LDFLAGS) --pre-js web/node_env.js $(filter %.o %.a,$^) -o $@

# ./train and ./generate under node (`node build-wasm/train.js --task induction`), for
# comparisons with the native programs (scripts/check_web.sh, make bench-web)
.SECONDARY: $(WASM)/train.o $(WASM)/generate.o
$(WASM)/train.js $(WASM)/generate.js: $(WASM)/%.js: $(WASM)/%.o $(WASM)/libchargpt.a web/node_env.js
	$(EM_ENV) $(EMCC) $(WASM_TEST_LDFLAGS) --pre-js web/node_env.js $(filter %.o %.a,$^) -o $@

test-wasm: $(WASM)/run_tests.js
	$(NODE) $(WASM)/run_tests.js

clean: clean-wasm
.PHONY: clean-wasm
clean-wasm:
	rm -rf $(WASM)

-include $(WASM_LIB_OBJ:.o=.d) $(WASM_TEST_OBJ:.o=.d) $(WEB_OBJ:.o=.d)
