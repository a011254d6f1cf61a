#!/usr/bin/env bash
# `make bench` (scripts/bench.sh): how fast chargpt trains and generates on this machine,
# beside PyTorch running the same models the same way, in one run of about 3 minutes.
# `make bench-all` (scripts/bench.sh --all) adds every other table: generation past the
# block, bf16, --num-samples, each kernels' backend this CPU runs, the step on one thread and
# the products beside OpenBLAS's, and MPI when the MPI build exists (15 to 25 minutes).
#
# What it measures (scripts/bench.c and scripts/bench_torch.py say how):
# - training, fp32, for three models, each as ./train trains it (the options are printed):
#   lesson (2 layers, n_embd 64, batch 32), tiny (./train's default) and small (6 layers,
#   n_embd 384, block 256); ms/step is the timed steps' wall time over their count, as
#   ./train's progress line and summary count it, so its figure and ./train's agree on the
#   same machine (both pick their team of threads as the step runs);
# - generation, characters per second after an 8-character prompt, as ./generate makes them:
#   with the key/value cache on the team it picks, with --threads 1, with --no-cache, and
#   PyTorch's (nanoGPT's generate: the whole window for every character);
# - the same training and generation beside one busy process that this script starts (as when
#   a build runs beside training) and stops;
# - with --all, the tables the first lines name, and two that say where the FMA peak goes:
#   the training step on one thread beside the team's (a step's share of the peak without the
#   team's costs, the share a perfect team would keep), and each linear layer's products alone
#   (scripts/bench --jobs products) beside OpenBLAS's sgemm on the same shapes, the two in turn
#   config by config (scripts/bench_blas.py: the library behind PyTorch's fp32 products).
# chargpt and PyTorch take each model in turn, in BENCH_ROUNDS rounds (default 2; beside the
# busy process BENCH_BUSY_ROUNDS, default 1, 2 with --all), and each figure is the mean over
# the rounds, so that a shared machine's slow minutes fall on both.
# Each ratio is chargpt's speed over PyTorch's in the same run; beside each figure its share
# of the FMA peak (a loop of independent fused multiply-adds held in registers, on the kernels'
# instruction set, measured in the same run by each thread's CPU time: the cores' limit, even
# while other processes share them) and its CPU share (CPU time over wall time x threads:
# well below 100% means other processes took the cores and the figure is low).
#
# PyTorch (/usr/bin/python3 with torch; skipped when missing) runs on the instruction set of
# chargpt's kernels: ATEN_CPU_CAPABILITY for its own kernels, OPENBLAS_CORETYPE for OpenBLAS's
# products, ONEDNN_MAX_CPU_ISA for oneDNN's (printed in the header), so that a ratio compares
# code, not instruction sets. With OMP_WAIT_POLICY=passive, as it then gives up the cores
# when it waits; chargpt with the environment's.
#
# Environment: CHARGPT_KERNELS (the backend to measure; default the fastest this CPU runs),
# OMP_NUM_THREADS (default: all cores; PyTorch gets the same count), BENCH_SECONDS (timed
# training seconds per model and round, default 3), BENCH_ROUNDS (default 2), BENCH_BUSY_ROUNDS
# (default 1, with --all 2), BENCH_GEN_CHARS
# (characters per generation run, default 300), BENCH_GEN_SECONDS (a generation run ends early
# after this long, default 10), BENCH_LONG_CHARS, BENCH_LONG_SECONDS and
# BENCH_LONG_TORCH_SECONDS (generation past the block: characters, default 2000, and the
# seconds a chargpt run may take, default 180, and a PyTorch run, default 5), BENCH_OUT (where
# the raw results go, emptied first: default build/bench, with --all build/bench-all, so that
# one does not empty the other's; a directory of yours only when it is empty or a run of these
# scripts made it: scripts/work_dir.sh). Exit status: 0 done, else the status of the step
# that failed.
set -euo pipefail
cd "$(dirname "$0")/.."

all=0
case "${1:-}" in
    --all) all=1 ;;
    "") ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench.sh: unknown argument '$1' (--all runs every table)" >&2; exit 2 ;;
esac
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-$(getconf _NPROCESSORS_ONLN)}"
seconds="${BENCH_SECONDS:-3}"
gen_chars="${BENCH_GEN_CHARS:-300}"
gen_seconds="${BENCH_GEN_SECONDS:-10}"
rounds="${BENCH_ROUNDS:-2}"
busy_rounds="${BENCH_BUSY_ROUNDS:-$((1 + all))}"
for r in "BENCH_ROUNDS=$rounds" "BENCH_BUSY_ROUNDS=$busy_rounds"; do
    case "${r#*=}" in
        "" | *[!0-9]* | 0*) echo "bench.sh: ${r%%=*} must be a whole number from 1 (it is '${r#*=}')" >&2; exit 2 ;;
    esac
done
default_out=build/bench
[ "$all" = 1 ] && default_out=build/bench-all
out="${BENCH_OUT:-$default_out}"
python=/usr/bin/python3
configs="lesson tiny small"
shared_configs="tiny small"

. scripts/work_dir.sh
given_out=0
[ -n "${BENCH_OUT:-}" ] && given_out=1
work_dir_fresh "$out" "$given_out" || exit $?
make --no-print-directory -s all scripts/bench
started=$SECONDS

busy_pid=
stop_busy() {
    if [ -n "$busy_pid" ]; then
        kill "$busy_pid" 2>/dev/null || true
        wait "$busy_pid" 2>/dev/null || true
        busy_pid=
    fi
}
trap stop_busy EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

backends="$(./scripts/bench --list-backends)"
backend="${CHARGPT_KERNELS:-$(echo "$backends" | head -n 1)}"

# torch_isa BACKEND: the environment that holds PyTorch to BACKEND's instruction set
torch_isa() {
    case "$1" in
        avx512_amx) echo "ATEN_CPU_CAPABILITY=avx512 OPENBLAS_CORETYPE=Cooperlake ONEDNN_MAX_CPU_ISA=AVX512_CORE_AMX" ;;
        avx512_bf16) echo "ATEN_CPU_CAPABILITY=avx512 OPENBLAS_CORETYPE=Cooperlake ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16" ;;
        avx512) echo "ATEN_CPU_CAPABILITY=avx512 OPENBLAS_CORETYPE=SkylakeX ONEDNN_MAX_CPU_ISA=AVX512_CORE" ;;
        avx2) echo "ATEN_CPU_CAPABILITY=avx2 OPENBLAS_CORETYPE=Haswell ONEDNN_MAX_CPU_ISA=AVX2" ;;
        portable) case "$(uname -m)" in
                      x86_64) echo "ATEN_CPU_CAPABILITY=default OPENBLAS_CORETYPE=Nehalem ONEDNN_MAX_CPU_ISA=SSE41" ;;
                      *) echo "ATEN_CPU_CAPABILITY=default" ;;
                  esac ;;
        *) echo "" ;;  # NEON: PyTorch's own choice
    esac
}

have_torch=0
if [ -x "$python" ] && "$python" -c "import torch" 2>/dev/null; then have_torch=1; fi
failed=0
# run_chargpt FILE BACKEND ARGS...: ./scripts/bench on BACKEND's kernels, its results appended to FILE
run_chargpt() {
    local file="$1" kernels="$2"
    shift 2
    if ! CHARGPT_KERNELS="$kernels" ./scripts/bench --seconds "$seconds" --gen-chars "$gen_chars" \
        --gen-seconds "$gen_seconds" "$@" >>"$out/$file"; then
        echo "bench.sh: scripts/bench $* (kernels $kernels) failed" >&2
        failed=1
    fi
}
# run_torch FILE BACKEND CONFIG GEN_CHARS [--bf16]: PyTorch's figures, held to BACKEND's instruction set
run_torch() {
    [ "$have_torch" = 1 ] || return 0
    local file="$1" isa="$2" config="$3" chars="$4"
    shift 4
    # oneDNN has no bf16 products below AVX-512
    if [ "${1:-}" = --bf16 ] && { [ "$isa" = avx2 ] || [ "$isa" = portable ]; }; then return 0; fi
    echo "bench: PyTorch: $config ${1:-}" >&2
    if ! env $(torch_isa "$isa") OMP_WAIT_POLICY=passive "$python" scripts/bench_torch.py --config "$config" \
        --threads "$OMP_NUM_THREADS" --seconds "$seconds" --gen-chars "$chars" --gen-seconds "$gen_seconds" \
        "$@" >>"$out/$file"; then
        echo "bench.sh: scripts/bench_torch.py --config $config $* failed" >&2
        failed=1
    fi
}
start_busy() {
    timeout 1800 sh -c 'while :; do :; done' &
    busy_pid=$!
}

# ---------------------------------------------------------------------------------------
# the measurements

# each model by chargpt then PyTorch, in each of the rounds (the top of this file says why)
echo "bench: the $backend kernels" >&2
more=
[ "$all" = 1 ] && more=,samples
for round in $(seq "$rounds"); do
    for config in $configs; do
        if [ "$config" = small ]; then
            run_chargpt main.txt "$backend" --jobs "train${more:+,generate$more}" --config small
            run_torch torch.txt "$backend" small 0
        else
            run_chargpt main.txt "$backend" --jobs "train,generate$more" --config "$config"
            run_torch torch.txt "$backend" "$config" "$gen_chars"
        fi
    done
done
echo "bench: beside a busy process ($((SECONDS - started)) s so far)" >&2
start_busy
for round in $(seq "$busy_rounds"); do
    for config in $shared_configs; do
        jobs=train
        [ "$config" = tiny ] && jobs=train,generate
        run_chargpt shared.txt "$backend" --jobs "$jobs" --config "$config"
        run_torch shared_torch.txt "$backend" "$config" 0
    done
done
busy_alive=1
kill -0 "$busy_pid" 2>/dev/null || busy_alive=0
stop_busy

if [ "$all" = 1 ]; then
    run_chargpt bf16.txt "$backend" --precision bf16 --jobs train,generate
    run_chargpt paired.txt "$backend" --paired --config small --seconds "$((3 * seconds))"
    for config in $configs; do run_torch torch_bf16.txt "$backend" "$config" 0 --bf16; done
    for b in $backends; do
        echo "bench: the $b kernels" >&2
        for precision in fp32 bf16; do
            run_chargpt "backend_${b}_$precision.txt" "$b" --precision "$precision" --jobs train
        done
        if [ "$b" != "$backend" ]; then for config in $configs; do run_torch "torch_$b.txt" "$b" "$config" 0; done; fi
    done
    echo "bench: one thread, and the products alone" >&2
    OMP_NUM_THREADS=1 run_chargpt one_thread.txt "$backend" --jobs train,peak
    # chargpt's products and OpenBLAS's on the shapes chargpt's job printed, config by config in
    # turn in each round, so that a busy spell of the machine falls on both
    for round in $(seq "$rounds"); do
        for config in $configs; do
            : >"$out/products_last.txt"
            run_chargpt products_last.txt "$backend" --jobs products --config "$config"
            cat "$out/products_last.txt" >>"$out/products.txt"
            if [ "$have_torch" = 1 ] && ! env $(torch_isa "$backend") "$python" scripts/bench_blas.py \
                "$out/products_last.txt" --threads "$OMP_NUM_THREADS" >>"$out/blas.txt"; then
                echo "bench.sh: scripts/bench_blas.py failed" >&2
                failed=1
            fi
        done
    done
    rm -f "$out/products_last.txt"
fi
touch "$out/one_thread.txt" "$out/products.txt" "$out/blas.txt"
# generation past the block (issue 32), with --all: BENCH_LONG_CHARS (default 2000)
# characters after an 8-character prompt with the cache: a learned-position model prefills its
# whole window for every character past the block, a RoPE model's cache rolls on a position
# per character; beside PyTorch's full recompute of the window. chargpt's runs make all the
# characters (the learned small model spends about a minute on them), so that the rates are
# those of the whole text, its part within the block and its part past it;
# BENCH_LONG_SECONDS only bounds them. PyTorch's end after BENCH_LONG_TORCH_SECONDS with the
# characters they made.
long_chars="${BENCH_LONG_CHARS:-2000}"
long_seconds="${BENCH_LONG_SECONDS:-180}"
long_torch_seconds="${BENCH_LONG_TORCH_SECONDS:-5}"
if [ "$all" = 1 ]; then
    echo "bench: generation past the block" >&2
    for config in tiny small; do
        for pos in learned rope; do
            run_chargpt "long_$pos.txt" "$backend" --long-gen --config "$config" --pos "$pos" --gen-chars "$long_chars" \
                --gen-seconds "$long_seconds"
        done
        run_torch long_torch.txt "$backend" "$config" "$long_chars" --steps 1 --warmup 1 --gen-seconds "$long_torch_seconds"
    done
fi
touch "$out/long_torch.txt"
# the FMA peaks last (scripts/bench.c says why): the loop of each backend and precision measured
echo "bench: the FMA peaks" >&2
run_chargpt peaks.txt "$backend" --jobs peak
if [ "$all" = 1 ]; then
    for b in $backends; do
        for precision in fp32 bf16; do run_chargpt peaks.txt "$b" --precision "$precision" --jobs peak; done
    done
fi
touch "$out/torch.txt" "$out/shared_torch.txt" "$out/torch_bf16.txt"

# ---------------------------------------------------------------------------------------
# the tables

# field FILE KIND CONFIG KEY [NAME=VALUE]: the value of KEY on FILE's lines "KIND
# config=CONFIG ..." (CONFIG - for a line without a config, such as a peak), and NAME=VALUE
# when given (say layer=c_fc, samples=8): a number's mean over the lines (the rounds), else the
# first line's
field() {
    [ -f "$1" ] || return 0
    awk -v kind="$2" -v config="$3" -v key="$4" -v also="${5:-}" 'BEGIN { OFMT = "%.10g"; split(also, want, "=") }
        $1 == kind {
            delete f
            for (i = 2; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
            if ((config != "-" && f["config"] != config) || !(key in f)) next
            if (also != "" && f[want[1]] != want[2]) next
            if (f[key] !~ /^-?[0-9]+(\.[0-9]*)?([eE][-+]?[0-9]+)?$/) { print f[key]; exit }
            sum += f[key]; n++
        }
        END { if (n > 0) print (n == 1 ? sum : sum / n) }' "$1"
}
# round_trips FILE CONFIG: each train line's core-to-core round trips (scripts/bench.c), "before/after"
# its steps in ns, the runs' joined by ", "
round_trips() {
    awk -v config="$2" '$1 == "train" {
            delete f
            for (i = 2; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
            if (f["config"] != config || !("round_trip_ns_before" in f)) next
            out = out (out == "" ? "" : ", ") f["round_trip_ns_before"] "/" f["round_trip_ns_after"]
        }
        END { print out == "" ? "-" : out }' "$1"
}
# fmt FORMAT VALUE: VALUE formatted, or "-" when there is none
fmt() { if [ -n "$2" ]; then awk -v v="$2" -v f="$1" 'BEGIN { printf f, v }'; else printf -- "-"; fi; }
mib() { if [ -n "$1" ]; then awk -v v="$1" 'BEGIN { printf "%.0f MiB", v / 1024 }'; else printf -- "-"; fi; }
# ratio A B: A / B as "1.23x", or "-"
ratio() { if [ -n "$1" ] && [ -n "$2" ]; then awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2fx", a / b }'; else printf -- "-"; fi; }
# share GFLOP_PER_STEP MS_PER_STEP PEAK: the share of PEAK GFLOP/s that GFLOP_PER_STEP in MS_PER_STEP is
share() {
    if [ -n "$1" ] && [ -n "$2" ] && [ -n "$3" ]; then
        awk -v g="$1" -v ms="$2" -v p="$3" 'BEGIN { printf "%.1f%%", 100 * g / (ms / 1000) / p }'
    else printf -- "-"; fi
}
# peak LOOP [KEY]: GFLOP/s of LOOP's FMA peak (a train line's peak_path): on every thread
# (at least the one-thread figure), or KEY's
peak() {
    awk -v path="$1" -v key="${2:-}" '$1 == "peak" {
            for (i = 2; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
            if (f["path"] != path) next
            print key != "" ? f[key] : (f["gflops_all"] > f["gflops_1t"] ? f["gflops_all"] : f["gflops_1t"]); exit
        }' "$out/peaks.txt"
}
# train_options CONFIG: the ./train options of the model (scripts/bench.c's configs)
train_options() {
    local c="$out/main.txt"
    echo "--n-layer $(field "$c" train "$1" layers) --n-head $(field "$c" train "$1" heads)" \
         "--n-embd $(field "$c" train "$1" n_embd) --block-size $(field "$c" train "$1" block)" \
         "--batch-size $(field "$c" train "$1" batch)"
}

cpu_model="$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -n 1)"
[ -n "$cpu_model" ] || cpu_model="$(sysctl -n machdep.cpu.brand_string 2>/dev/null || true)"
peak_path="$(field "$out/main.txt" train tiny peak_path)"
peak="$(peak "$peak_path")"
echo "chargpt benchmark: ${cpu_model:-unknown CPU}, $(getconf _NPROCESSORS_ONLN) cores, $OMP_NUM_THREADS threads" \
     "(OMP_NUM_THREADS); load average before the run $(cut -d ' ' -f 1-3 /proc/loadavg 2>/dev/null ||
     uptime | sed 's/.*load averages*: *//')"
echo "kernels: $backend (this CPU runs $(echo $backends | sed 's/ /, /g'); CHARGPT_KERNELS=name picks one);" \
     "FMA peak of their instruction set ($peak_path loop): $(fmt %.1f "$(peak "$peak_path" gflops_1t)")" \
     "GFLOP/s on 1 thread, $(fmt %.1f "$peak") on $OMP_NUM_THREADS"
if [ "$have_torch" = 1 ]; then
    echo "PyTorch $(field "$out/torch.txt" torch_train tiny torch) on the same instruction set:" \
         "$(torch_isa "$backend") (ATen: $(field "$out/torch.txt" torch_train tiny isa))"
else
    echo "PyTorch: not installed for $python (import torch failed), so no PyTorch columns"
fi
echo

echo "Training, fp32, random tokens (ms/step: the timed steps' wall time over their count, as ./train reports it)"
echo "| model | chargpt ms/step | tok/s | % of FMA peak | threads | CPU share | peak RSS | PyTorch ms/step | tok/s | % of FMA peak | CPU share | chargpt / PyTorch |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
for config in $configs; do
    c="$out/main.txt" t="$out/torch.txt"
    gflop="$(field "$c" train "$config" gflop_per_step)"
    ms="$(field "$c" train "$config" ms_per_step)" torch_ms="$(field "$t" torch_train "$config" ms_per_step)"
    printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n" "$config" "$(fmt %.1f "$ms")" \
        "$(fmt %.0f "$(field "$c" train "$config" tok_per_s)")" "$(share "$gflop" "$ms" "$peak")" \
        "$(fmt %.1f "$(field "$c" train "$config" threads_mean)")" "$(fmt %s%% "$(field "$c" train "$config" cpu_pct)")" \
        "$(mib "$(field "$c" train "$config" rss_kb)")" "$(fmt %.1f "$torch_ms")" \
        "$(fmt %.0f "$(field "$t" torch_train "$config" tok_per_s)")" "$(share "$gflop" "$torch_ms" "$peak")" \
        "$(fmt %s%% "$(field "$t" torch_train "$config" cpu_pct)")" "$(ratio "$torch_ms" "$ms")"
done
for config in $configs; do
    echo "$config: ./train $(train_options "$config"); $(field "$out/main.txt" train "$config" gflop_per_step)" \
         "GFLOP a step; median step $(fmt %.1f "$(field "$out/main.txt" train "$config" ms_median)") ms;" \
         "core-to-core round trip before/after the steps $(round_trips "$out/main.txt" "$config") ns"
done
echo "(threads: the mean team the thread tuner picked; CPU share: CPU time over wall time x threads, well below"
echo " 100% when other processes took the cores; chargpt / PyTorch: chargpt's speed over PyTorch's, 2.00x = twice as fast;"
echo " core-to-core round trip: a cache line from thread 0 to thread 1 and back, each run's before and after its steps:"
echo " on a virtual machine the host may move the two processors apart, which slows the step on 2 threads)"
case "$backend" in  # the goals of issue 47, in % of the FMA peak of the kernels' own instruction set
    avx2) echo "goals on these kernels: tiny >= 55% and small >= 75% of the FMA peak, tiny >= 1.50x PyTorch" ;;
    avx512*) echo "goals on these kernels: lesson >= 50%, tiny >= 65%, small >= 80% of the FMA peak" ;;
esac
echo

gen_configs="lesson tiny"
[ "$all" = 1 ] && gen_configs="$configs"
echo "Generation, characters/s after an 8-character prompt ($gen_chars characters, chargpt's runs repeated for at least"
echo "a second; past the block every character needs a prefill of the whole window)"
echo "| model | chargpt, cache | --threads 1 | default / --threads 1 | --no-cache | PyTorch (no cache) | chargpt cache / PyTorch |"
echo "|---|---|---|---|---|---|---|"
for config in $gen_configs; do
    c="$out/main.txt"
    cache="$(field "$c" generate "$config" cache_chars_per_s)" one="$(field "$c" generate "$config" cache_1t_chars_per_s)"
    torch_gen="$(field "$out/torch.txt" torch_generate "$config" nocache_chars_per_s)"
    printf "| %s | %s | %s | %s | %s | %s | %s |\n" "$config" "$(fmt %.0f "$cache")" "$(fmt %.0f "$one")" \
        "$(ratio "$cache" "$one")" "$(fmt %.0f "$(field "$c" generate "$config" nocache_chars_per_s)")" \
        "$(fmt %.0f "$torch_gen")" "$(ratio "$cache" "$torch_gen")"
done
echo

if [ "$all" = 1 ]; then
    echo "Generation past the block: $long_chars characters after an 8-character prompt, characters/s (characters"
    echo "made in brackets; PyTorch's runs end after ${long_torch_seconds} s)"
    echo "| model | learned, cache | RoPE, rolling cache | RoPE / learned | PyTorch, full recompute | RoPE / PyTorch |"
    echo "|---|---|---|---|---|---|"
    for config in tiny small; do
        learned="$(field "$out/long_learned.txt" generate_long "$config" chars_per_s)"
        rope="$(field "$out/long_rope.txt" generate_long "$config" chars_per_s)"
        torch_long="$(field "$out/long_torch.txt" torch_generate "$config" nocache_chars_per_s)"
        printf "| %s | %s (%s) | %s (%s) | %s | %s (%s) | %s |\n" "$config" \
            "$(fmt %.0f "$learned")" "$(field "$out/long_learned.txt" generate_long "$config" chars)" \
            "$(fmt %.0f "$rope")" "$(field "$out/long_rope.txt" generate_long "$config" chars)" \
            "$(ratio "$rope" "$learned")" "$(fmt %.0f "$torch_long")" \
            "$(field "$out/long_torch.txt" torch_generate "$config" nocache_chars)" "$(ratio "$rope" "$torch_long")"
    done
    echo "targets (issue 32): small RoPE >= 10x learned and >= 500 characters/s on 2 threads; tiny RoPE >= 3x PyTorch"
    echo
fi

echo "Beside one busy process (started by this benchmark: a shell loop on one core, as a build would be)"
echo "| model | chargpt ms/step | tok/s | threads | CPU share | PyTorch ms/step | tok/s | CPU share | chargpt / PyTorch | slowdown beside it |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for config in $shared_configs; do
    c="$out/shared.txt" t="$out/shared_torch.txt"
    ms="$(field "$c" train "$config" ms_per_step)" torch_ms="$(field "$t" torch_train "$config" ms_per_step)"
    printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n" "$config" "$(fmt %.1f "$ms")" \
        "$(fmt %.0f "$(field "$c" train "$config" tok_per_s)")" "$(fmt %.1f "$(field "$c" train "$config" threads_mean)")" \
        "$(fmt %s%% "$(field "$c" train "$config" cpu_pct)")" "$(fmt %.1f "$torch_ms")" \
        "$(fmt %.0f "$(field "$t" torch_train "$config" tok_per_s)")" "$(fmt %s%% "$(field "$t" torch_train "$config" cpu_pct)")" \
        "$(ratio "$torch_ms" "$ms")" "$(ratio "$ms" "$(field "$out/main.txt" train "$config" ms_per_step)")"
done
c="$out/shared.txt"
echo "generation beside it, tiny: $(fmt %.0f "$(field "$c" generate tiny cache_chars_per_s)") characters/s by default," \
     "$(fmt %.0f "$(field "$c" generate tiny cache_1t_chars_per_s)") with --threads 1" \
     "($(ratio "$(field "$c" generate tiny cache_chars_per_s)" "$(field "$c" generate tiny cache_1t_chars_per_s)"));" \
     "without the cache $(fmt %.0f "$(field "$c" generate tiny nocache_chars_per_s)") and" \
     "$(fmt %.0f "$(field "$c" generate tiny nocache_1t_chars_per_s)")"
[ "$busy_alive" = 1 ] || echo "(the busy process ended before the last of these runs: they are not valid)"
echo

if [ "$all" = 1 ]; then
    b16="$out/bf16.txt"
    echo "bf16 (--precision bf16: bf16 operands, fp32 sums; products on" \
         "$(field "$b16" train tiny precision | sed 's/^bf16://; s/+/ /g')), beside fp32 and PyTorch's" \
         "torch.autocast(\"cpu\", dtype=torch.bfloat16); FMA peak of the bf16 products' loop" \
         "($(field "$b16" train tiny peak_path)): $(fmt %.1f "$(peak "$(field "$b16" train tiny peak_path)")") GFLOP/s"
    echo "| model | fp32 tok/s | bf16 tok/s | % of bf16 peak | bf16 / fp32 | PyTorch bf16 tok/s | chargpt bf16 / PyTorch bf16 | fp32 chars/s | bf16 chars/s |"
    echo "|---|---|---|---|---|---|---|---|---|"
    for config in $configs; do
        tok="$(field "$out/main.txt" train "$config" tok_per_s)" tok16="$(field "$b16" train "$config" tok_per_s)"
        torch16="$(field "$out/torch_bf16.txt" torch_bf16_train "$config" tok_per_s)"
        printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n" "$config" "$(fmt %.0f "$tok")" "$(fmt %.0f "$tok16")" \
            "$(share "$(field "$b16" train "$config" gflop_per_step)" "$(field "$b16" train "$config" ms_per_step)" \
                "$(peak "$(field "$b16" train "$config" peak_path)")")" \
            "$(ratio "$tok16" "$tok")" "$(fmt %.0f "$torch16")" "$(ratio "$tok16" "$torch16")" \
            "$(fmt %.0f "$(field "$out/main.txt" generate "$config" cache_chars_per_s)")" \
            "$(fmt %.0f "$(field "$b16" generate "$config" cache_chars_per_s)")"
    done
    p="$out/paired.txt"
    echo "small, fp32 and bf16 steps in turn in one process ($(field "$p" train_paired small pairs) pairs, so that both" \
         "meet the same load): bf16 $(fmt %.2fx "$(field "$p" train_paired small ratio_of_medians)") fp32's speed;" \
         "characters in turn with the cache: $(fmt %.2fx "$(field "$p" generate_paired small ratio)")"
    echo

    echo "--num-samples N, characters/s over all samples: within the block (every character a cached step of the"
    echo "N samples together), and $gen_chars characters (past the block a prefill per sample and character)"
    echo "| model | N | within the block | vs N = 1 | $gen_chars characters | vs N = 1 |"
    echo "|---|---|---|---|---|---|"
    m="$out/main.txt"
    for config in $configs; do
        for n in 1 8 32; do
            block="$(field "$m" generate_samples "$config" in_block_chars_per_s "samples=$n")"
            full="$(field "$m" generate_samples "$config" chars_per_s "samples=$n")"
            printf "| %s | %s | %s | %s | %s | %s |\n" "$config" "$n" "$(fmt %.0f "$block")" \
                "$(ratio "$block" "$(field "$m" generate_samples "$config" in_block_chars_per_s samples=1)")" \
                "$(fmt %.0f "$full")" "$(ratio "$full" "$(field "$m" generate_samples "$config" chars_per_s samples=1)")"
        done
    done
    echo

    echo "Each kernels' backend this CPU runs (CHARGPT_KERNELS=name), training; % of the FMA peak of the backend's"
    echo "own instruction set (bf16 on vdpbf16ps: of that loop's), measured in the same run; PyTorch held to the"
    echo "same instruction set (fp32)"
    echo "| kernels | model | fp32 tok/s | % of its peak | PyTorch tok/s | chargpt / PyTorch | bf16 tok/s | % of its peak | bf16 / fp32 |"
    echo "|---|---|---|---|---|---|---|---|---|"
    for b in $backends; do
        f32="$out/backend_${b}_fp32.txt" f16="$out/backend_${b}_bf16.txt" t="$out/torch_$b.txt"
        [ "$b" = "$backend" ] && t="$out/torch.txt"
        for config in $configs; do
            ms="$(field "$f32" train "$config" ms_per_step)" ms16="$(field "$f16" train "$config" ms_per_step)"
            torch_ms="$(field "$t" torch_train "$config" ms_per_step)"
            printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n" "$b" "$config" \
                "$(fmt %.0f "$(field "$f32" train "$config" tok_per_s)")" \
                "$(share "$(field "$f32" train "$config" gflop_per_step)" "$ms" "$(peak "$(field "$f32" train "$config" peak_path)")")" \
                "$(fmt %.0f "$(field "$t" torch_train "$config" tok_per_s)")" "$(ratio "$torch_ms" "$ms")" \
                "$(fmt %.0f "$(field "$f16" train "$config" tok_per_s)")" \
                "$(share "$(field "$f16" train "$config" gflop_per_step)" "$ms16" "$(peak "$(field "$f16" train "$config" peak_path)")")" \
                "$(ratio "$ms" "$ms16")"
        done
    done
    echo

    one="$out/one_thread.txt"
    one_peak="$(field "$one" peak - gflops_1t)"
    echo "Where the FMA peak goes, $backend kernels. The step on one thread (OMP_NUM_THREADS=1), % of the one-thread"
    echo "peak ($(fmt %.1f "$one_peak") GFLOP/s in that run): the share a team of $OMP_NUM_THREADS without any cost of its own would keep"
    echo "| model | 1 thread ms/step | % of 1-thread peak | $OMP_NUM_THREADS threads ms/step | % of peak | speed-up |"
    echo "|---|---|---|---|---|---|"
    for config in $configs; do
        ms1="$(field "$one" train "$config" ms_per_step)" ms="$(field "$out/main.txt" train "$config" ms_per_step)"
        gflop="$(field "$one" train "$config" gflop_per_step)"
        printf "| %s | %s | %s | %s | %s | %s |\n" "$config" "$(fmt %.1f "$ms1")" "$(share "$gflop" "$ms1" "$one_peak")" \
            "$(fmt %.1f "$ms")" "$(share "$gflop" "$ms" "$peak")" "$(ratio "$ms1" "$ms")"
    done
    echo
    pct() { if [ -n "$1" ]; then awk -v g="$1" -v p="$peak" 'BEGIN { printf "%.0f (%.0f%%)", g, 100 * g / p }'; else printf -- "-"; fi; }
    echo "The linear layers' products alone, GFLOP/s (% of the FMA peak) on $OMP_NUM_THREADS threads: chargpt's"
    echo "(scripts/bench --jobs products: forward, and backward = input and weight gradients) beside OpenBLAS's"
    echo "sgemm on the same shapes, held to the same instruction set (scripts/bench_blas.py), the two in turn"
    echo "| model | layer | rows x in x out | forward | OpenBLAS | backward | OpenBLAS |"
    echo "|---|---|---|---|---|---|---|"
    p="$out/products.txt" o="$out/blas.txt"
    for config in $configs; do
        for layer in c_attn attn_proj c_fc mlp_proj head; do
            printf "| %s | %s | %s x %s x %s | %s | %s | %s | %s |\n" "$config" "$layer" \
                "$(field "$p" products "$config" N "layer=$layer")" "$(field "$p" products "$config" C "layer=$layer")" \
                "$(field "$p" products "$config" OC "layer=$layer")" \
                "$(pct "$(field "$p" products "$config" forward_gflops "layer=$layer")")" \
                "$(pct "$(field "$o" blas_products "$config" forward_gflops "layer=$layer")")" \
                "$(pct "$(field "$p" products "$config" backward_gflops "layer=$layer")")" \
                "$(pct "$(field "$o" blas_products "$config" backward_gflops "layer=$layer")")"
        done
    done
    echo

    # MPI (when `make MPI=1` has built build-mpi/bin/train): the small model on 1 process x 2
    # threads against 2 ranks x 1 thread, without and with --zero 1; ms/step and tok/s from
    # the last progress report, communication from the trainer's summary, peak RSS of each
    # process from /usr/bin/time.
    mpi_train=build-mpi/bin/train
    if [ -x "$mpi_train" ] && command -v mpirun >/dev/null && [ -x /usr/bin/time ]; then
        echo "bench: MPI" >&2
        mpi_steps="${BENCH_MPI_STEPS:-6}"
        small=(--n-layer 6 --n-head 6 --n-embd 384 --block-size 256 --batch-size 8 --val-fraction 0 --warmup 0
               --steps "$mpi_steps" --log-every "$mpi_steps" --save-every 100000)
        # report FILE KEY: "ms/step" or "tok/s" from the last progress line of FILE
        report() { grep -a "^step " "$1" | tail -n 1 | sed -n "s#.*| \([0-9.]*\) $2 |.*#\1#p"; }
        rss() { sed -n 's/^rss_kb=//p' "$1" 2>/dev/null | tail -n 1; }
        /usr/bin/time -f "rss_kb=%M" -o "$out/mpi_one.rss" ./train "${small[@]}" --threads 2 --out "$out/mpi_one" \
            >"$out/mpi_one.log" 2>&1 || echo "bench.sh: the 1-process MPI comparison run failed" >&2
        for zero in 0 1; do
            OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun --oversubscribe --bind-to none -np 2 \
                sh -c '/usr/bin/time -f "rss_kb=%M" -o "$0.rss.$OMPI_COMM_WORLD_RANK" "$@"' "$out/mpi_two$zero" \
                "$mpi_train" "${small[@]}" --threads 1 --zero "$zero" --out "$out/mpi_two$zero" \
                >"$out/mpi_two$zero.log" 2>&1 || echo "bench.sh: the 2-rank run with --zero $zero failed" >&2
        done
        one_tok="$(report "$out/mpi_one.log" tok/s)"
        echo "MPI data parallelism, small, $mpi_steps steps on one machine (the ranks talk through shared memory:"
        echo "this is the cost of splitting the batch, not of a network)"
        echo "| run | ms/step | tok/s | vs 1 process | communication ms/step | peak RSS rank 0 | rank 1 |"
        echo "|---|---|---|---|---|---|---|"
        printf "| 1 process x 2 threads | %s | %s | 1.00x | - | %s | - |\n" "$(report "$out/mpi_one.log" ms/step)" \
            "$(fmt %.0f "$one_tok")" "$(mib "$(rss "$out/mpi_one.rss")")"
        for zero in 0 1; do
            f="$out/mpi_two$zero.log"
            tok="$(report "$f" tok/s)"
            printf "| 2 ranks x 1 thread, --zero %s | %s | %s | %s | %s | %s | %s |\n" "$zero" "$(report "$f" ms/step)" \
                "$(fmt %.0f "$tok")" "$(ratio "$tok" "$one_tok")" \
                "$(fmt %s "$(sed -n 's/^communication: \([0-9.]*\) ms.*/\1/p' "$f")")" \
                "$(mib "$(rss "$out/mpi_two$zero.rss.0")")" "$(mib "$(rss "$out/mpi_two$zero.rss.1")")"
        done
        echo
    fi
fi

echo "$((SECONDS - started)) s; the raw results (one line per measurement, key=value) are in $out/"
exit "$failed"
