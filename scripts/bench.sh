#!/usr/bin/env bash
# `make bench`: builds chargpt, times its training step and generation for the tiny and small
# configs (scripts/bench), times the same model in PyTorch when it is installed
# (scripts/bench_torch.py), and prints both side by side. Then the "shared machine" rows:
# training again, both programs, with a busy process that this script starts beside them
# (one shell loop, killed when the rows are done, on failure or on Ctrl-C, and ended by
# `timeout` in any case). And the bf16 rows: both configs trained and generated with
# --precision bf16 (scripts/bench --precision bf16) beside fp32, and PyTorch's own mixed
# precision, torch.autocast("cpu", dtype=torch.bfloat16) (scripts/bench_torch.py --bf16);
# and small's bf16/fp32 ratios once more from fp32 and bf16 training steps, then generated
# characters, taken in turn in one process (scripts/bench --paired, 3 x BENCH_SECONDS of
# steps), which a shared host's changing load cannot tilt toward either. (Tiny is not
# paired: its two models would evict each other from the caches that either fits in alone,
# and the pairs would time colder steps than a run of one precision does.)
# When the MPI build exists (`make MPI=1`), an MPI line: the small
# config on 2 ranks x 1 thread against 1 process x 2 threads (BENCH_MPI_STEPS steps, default 6).
# Everything above runs on the kernels' backend the program picks (the fastest this CPU runs,
# or CHARGPT_KERNELS's); then the backends' rows: training alone, both configs, fp32 and bf16,
# once on each backend this CPU runs (CHARGPT_KERNELS=name), beside the FMA peak of the
# instruction set it uses.
#
# Environment: OMP_NUM_THREADS (default: all cores; PyTorch gets the same count),
# BENCH_SECONDS (timed training seconds per config, default 4), BENCH_GEN_CHARS (characters
# per generation run, default 500), BENCH_GEN_SECONDS (a generation run ends early after
# this long, default 20). PyTorch runs with OMP_WAIT_POLICY=passive; chargpt with whatever
# the environment says. With CHARGPT_KERNELS=avx2 (AVX2 kernels on a CPU that has more)
# PyTorch is held to AVX2 too: ATEN_CPU_CAPABILITY=avx2 for its own kernels,
# OPENBLAS_CORETYPE=Haswell for OpenBLAS's and ONEDNN_MAX_CPU_ISA=AVX2 for oneDNN's; its
# bf16 rows are then not run (oneDNN has no bf16 products on AVX2).
# Exit status: 0 done, else the status of the step that failed.
set -euo pipefail
cd "$(dirname "$0")/.."

export OMP_NUM_THREADS="${OMP_NUM_THREADS:-$(getconf _NPROCESSORS_ONLN)}"
seconds="${BENCH_SECONDS:-4}"
gen_chars="${BENCH_GEN_CHARS:-500}"
gen_seconds="${BENCH_GEN_SECONDS:-20}"
python=/usr/bin/python3
configs="tiny small"

make --no-print-directory -s all scripts/bench

out="$(mktemp -d)"
busy_pid=
stop_busy() {
    if [ -n "$busy_pid" ]; then
        kill "$busy_pid" 2>/dev/null || true
        wait "$busy_pid" 2>/dev/null || true
        busy_pid=
    fi
}
trap 'stop_busy; rm -rf "$out"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# the CPU's name: Linux's /proc/cpuinfo, else macOS's sysctl; the load from uptime, on any system
cpu_model="$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -n 1)"
[ -n "$cpu_model" ] || cpu_model="$(sysctl -n machdep.cpu.brand_string 2>/dev/null || true)"
echo "machine: ${cpu_model:-unknown CPU}, $(getconf _NPROCESSORS_ONLN) threads online; load average" \
     "$(uptime | sed 's/.*load averages*: *//; s/,* / /g')"
echo "compiler: $(${CC:-cc} --version | head -n 1); benchmark threads: OMP_NUM_THREADS=$OMP_NUM_THREADS"
echo "OMP_WAIT_POLICY: chargpt ${OMP_WAIT_POLICY:-unset, the libgomp default}, PyTorch passive"
# PyTorch on the instruction set of chargpt's kernels where they are forced to AVX2
torch_isa=()
if [ "${CHARGPT_KERNELS:-}" = avx2 ]; then
    torch_isa=(ATEN_CPU_CAPABILITY=avx2 OPENBLAS_CORETYPE=Haswell ONEDNN_MAX_CPU_ISA=AVX2)
    echo "PyTorch held to AVX2 as chargpt's kernels are: ${torch_isa[*]}"
fi
echo

./scripts/bench --seconds "$seconds" --gen-chars "$gen_chars" --gen-seconds "$gen_seconds" >"$out/chargpt.txt"
./scripts/bench --precision bf16 --no-samples --seconds "$seconds" --gen-chars "$gen_chars" \
    --gen-seconds "$gen_seconds" >"$out/bf16.txt"
./scripts/bench --paired --config small --seconds "$(awk -v s="$seconds" 'BEGIN { print 3 * s }')" \
    --gen-chars "$gen_chars" --gen-seconds "$gen_seconds" >"$out/paired.txt"
backends="$(./scripts/bench --list-backends)"
for backend in $backends; do
    for precision in fp32 bf16; do
        echo "bench: the $backend kernels, $precision" >&2
        CHARGPT_KERNELS="$backend" ./scripts/bench --train-only --precision "$precision" --seconds "$seconds" \
            >>"$out/backends.txt"
    done
done

have_torch=0
torch_failed=0
if [ -x "$python" ] && "$python" -c "import torch" 2>/dev/null; then have_torch=1; fi
# torch_train CONFIG GEN_CHARS FILE [--bf16]: PyTorch's figures for one config appended to FILE
torch_train() {
    echo "bench_torch: $1 ${4:-}" >&2
    # oneDNN has no bf16 products on AVX2 ("could not create a primitive descriptor")
    if [ "${4:-}" = --bf16 ] && [ ${#torch_isa[@]} -gt 0 ]; then
        echo "bench.sh: PyTorch's bf16 not run: held to AVX2, oneDNN has no bf16 products" >&2
        return 0
    fi
    if ! env "${torch_isa[@]}" OMP_WAIT_POLICY=passive "$python" scripts/bench_torch.py --config "$1" \
        --threads "$OMP_NUM_THREADS" --seconds "$seconds" --gen-chars "$2" \
        --gen-seconds "$gen_seconds" ${4:-} >>"$3"; then
        echo "bench.sh: scripts/bench_torch.py --config $1 ${4:-} failed" >&2
        torch_failed=1
    fi
}
if [ "$have_torch" = 1 ]; then
    for config in $configs; do
        # generation is compared on tiny only
        chars=0
        [ "$config" = tiny ] && chars="$gen_chars"
        torch_train "$config" "$chars" "$out/torch.txt"
        torch_train "$config" "$chars" "$out/torch_bf16.txt" --bf16
    done
fi

# shared machine: a busy process beside each run, chargpt and PyTorch taking turns
echo "shared machine: one busy process beside each training run" >&2
busy_limit=1800
timeout "$busy_limit" sh -c 'while :; do :; done' &
busy_pid=$!
for config in $configs; do
    ./scripts/bench --train-only --config "$config" --seconds "$seconds" >>"$out/shared_chargpt.txt"
    if [ "$have_torch" = 1 ]; then torch_train "$config" 0 "$out/shared_torch.txt"; fi
done
busy_lasted=1
kill -0 "$busy_pid" 2>/dev/null || busy_lasted=0
stop_busy
touch "$out/torch.txt" "$out/shared_torch.txt" "$out/torch_bf16.txt"

# field FILE KIND CONFIG KEY: the value of KEY on FILE's line "KIND config=CONFIG ..."
field() {
    awk -v kind="$2" -v config="$3" -v key="$4" '
        $1 == kind {
            delete f
            for (i = 2; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
            if (f["config"] == config && (key in f)) print f[key]
        }' "$1"
}
# number formatting: fmt FORMAT VALUE, or "-" when there is no value
fmt() { if [ -n "$2" ]; then awk -v v="$2" -v f="$1" 'BEGIN { printf f, v }'; else printf -- "-"; fi; }
mib() { if [ -n "$1" ]; then awk -v v="$1" 'BEGIN { printf "%.0f MiB", v / 1024 }'; else printf -- "-"; fi; }
ratio() { if [ -n "$1" ] && [ -n "$2" ]; then awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2fx", a / b }'; else printf -- "-"; fi; }

# peak PATH KEY: the value of KEY on the line "peak path=PATH ..." (one per instruction set)
peak() {
    awk -v path="$1" -v key="$2" '
        $1 == "peak" {
            delete f
            for (i = 2; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
            if (f["path"] == path && (key in f)) print f[key]
        }' "$out/chargpt.txt"
}
peak_path="$(field "$out/chargpt.txt" train tiny peak_path)"
kernel="$(field "$out/chargpt.txt" train tiny kernel)"
echo
echo "kernels: $kernel (of this CPU's: $(echo $backends | sed 's/ /, /g')); FMA peak ($peak_path loop): $(fmt %.1f "$(peak "$peak_path" gflops_1t)") GFLOP/s on 1 thread, $(fmt %.1f "$(peak "$peak_path" gflops_all)") GFLOP/s on $OMP_NUM_THREADS threads"
echo

echo "training (random tokens; ms/step is the median of the timed steps, tok/s and GFLOP/s follow from it)"
echo "| config | chargpt ms/step | tok/s | GFLOP/s | % of FMA peak | peak RSS | PyTorch tok/s | ratio | PyTorch RSS |"
echo "|---|---|---|---|---|---|---|---|---|"
for config in $configs; do
    c="$out/chargpt.txt" t="$out/torch.txt"
    tok="$(field "$c" train "$config" tok_per_s)"
    torch_tok="$(field "$t" torch_train "$config" tok_per_s)"
    printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n" "$config" \
        "$(fmt %.1f "$(field "$c" train "$config" ms_median)")" "$(fmt %.0f "$tok")" \
        "$(fmt %.1f "$(field "$c" train "$config" gflops)")" "$(fmt %.1f%% "$(field "$c" train "$config" pct_peak)")" \
        "$(mib "$(field "$c" train "$config" rss_kb)")" "$(fmt %.0f "$torch_tok")" "$(ratio "$tok" "$torch_tok")" \
        "$(mib "$(field "$t" torch_train "$config" rss_kb)")"
done
echo "reference (from the issue): llm.c ~5,800 tok/s (tiny), ~380 tok/s (small); target: chargpt >= 1.5x PyTorch tok/s"
for config in $configs; do
    printf "%s: %s GFLOP/step (6*params*tokens + attention estimate: %s); %s timed steps, mean %s ms, min %s ms; " \
        "$config" "$(field "$out/chargpt.txt" train "$config" gflop_per_step)" \
        "$(field "$out/chargpt.txt" train "$config" gflop_per_step_estimate)" \
        "$(field "$out/chargpt.txt" train "$config" steps)" "$(field "$out/chargpt.txt" train "$config" ms_mean)" \
        "$(field "$out/chargpt.txt" train "$config" ms_min)"
    printf "CPU share chargpt %s%%, PyTorch %s\n" "$(field "$out/chargpt.txt" train "$config" cpu_pct)" \
        "$(fmt %s%% "$(field "$out/torch.txt" torch_train "$config" cpu_pct)")"
done
echo "(CPU share: CPU time / (wall time x threads) over the timed steps; well below 100% means other"
echo " processes took the cores and the figures are low)"
echo

echo "generation (chars/s after an 8-token prompt; past the block the window is the last block_size characters,"
echo "a full prefill per character)"
echo "| config | chargpt cache | chargpt no cache | PyTorch full recompute | ratio cache/PyTorch | ratio no cache/PyTorch |"
echo "|---|---|---|---|---|---|"
for config in $configs; do
    c="$out/chargpt.txt" t="$out/torch.txt"
    cache="$(field "$c" generate "$config" cache_chars_per_s)"
    nocache="$(field "$c" generate "$config" nocache_chars_per_s)"
    torch_gen="$(field "$t" torch_generate "$config" nocache_chars_per_s)"
    printf "| %s | %s | %s | %s | %s | %s |\n" "$config" "$(fmt %.0f "$cache")" "$(fmt %.0f "$nocache")" \
        "$(fmt %.0f "$torch_gen")" "$(ratio "$cache" "$torch_gen")" "$(ratio "$nocache" "$torch_gen")"
done
for config in $configs; do
    counts="$(field "$out/chargpt.txt" generate "$config" cache_chars) $(field "$out/chargpt.txt" generate "$config" nocache_chars) $(field "$out/torch.txt" torch_generate "$config" nocache_chars)"
    for n in $counts; do
        if [ "$n" -lt "$gen_chars" ]; then
            echo "$config: a run stopped at BENCH_GEN_SECONDS=$gen_seconds; characters generated (cache, no cache, PyTorch): $counts"
            break
        fi
    done
done
echo

echo "shared machine (training as above, with one busy process that this benchmark starts beside"
echo "each run, as when a build runs beside training; tok/s over the whole timed run, chargpt with"
echo "its defaults, which pick its number of threads step by step)"
echo "| config | chargpt tok/s | threads (mean) | CPU share | of its idle tok/s | PyTorch tok/s | CPU share | ratio |"
echo "|---|---|---|---|---|---|---|---|"
for config in $configs; do
    c="$out/shared_chargpt.txt" t="$out/shared_torch.txt"
    tok="$(field "$c" train "$config" tok_per_s_mean)"
    idle_tok="$(field "$out/chargpt.txt" train "$config" tok_per_s_mean)"
    torch_tok="$(field "$t" torch_train "$config" tok_per_s_mean)"
    printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n" "$config" "$(fmt %.0f "$tok")" \
        "$(fmt %.1f "$(field "$c" train "$config" threads_mean)")" \
        "$(fmt %s%% "$(field "$c" train "$config" cpu_pct)")" "$(ratio "$tok" "$idle_tok")" \
        "$(fmt %.0f "$torch_tok")" "$(fmt %s%% "$(field "$t" torch_train "$config" cpu_pct)")" \
        "$(ratio "$tok" "$torch_tok")"
done
echo "target: chargpt >= 1.5x PyTorch tok/s on a shared machine too"
if [ "$busy_lasted" = 0 ]; then
    echo "warning: the busy process ended (after ${busy_limit} s) before the last run: these rows are not valid"
fi
echo
echo "bf16: --precision bf16 (matrix products on bf16 operands with fp32 sums; path: $(field "$out/bf16.txt" train tiny precision | sed 's/^bf16://; s/+/ /g'))"
echo "beside fp32, and PyTorch's torch.autocast(\"cpu\", dtype=torch.bfloat16); training tok/s from the median step,"
echo "generation chars/s with the cache (PyTorch: full recompute, tiny only)"
echo "| config | fp32 tok/s | bf16 tok/s | bf16/fp32 | PyTorch fp32 | PyTorch bf16 | chargpt bf16/PyTorch bf16 | fp32 chars/s | bf16 chars/s | bf16/fp32 | PyTorch bf16 chars/s |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for config in $configs; do
    c="$out/chargpt.txt" b="$out/bf16.txt" t="$out/torch.txt" tb="$out/torch_bf16.txt"
    tok="$(field "$c" train "$config" tok_per_s)"
    tok16="$(field "$b" train "$config" tok_per_s)"
    torch16="$(field "$tb" torch_bf16_train "$config" tok_per_s)"
    gen="$(field "$c" generate "$config" cache_chars_per_s)"
    gen16="$(field "$b" generate "$config" cache_chars_per_s)"
    printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n" "$config" "$(fmt %.0f "$tok")" \
        "$(fmt %.0f "$tok16")" "$(ratio "$tok16" "$tok")" "$(fmt %.0f "$(field "$t" torch_train "$config" tok_per_s)")" \
        "$(fmt %.0f "$torch16")" "$(ratio "$tok16" "$torch16")" "$(fmt %.0f "$gen")" "$(fmt %.0f "$gen16")" \
        "$(ratio "$gen16" "$gen")" "$(fmt %.0f "$(field "$tb" torch_bf16_generate "$config" nocache_chars_per_s)")"
done
p="$out/paired.txt"
echo "small, fp32 and bf16 steps in turn ($(field "$p" train_paired small pairs) pairs): fp32 $(fmt %.0f "$(field "$p" train_paired small fp32_tok_per_s)") tok/s," \
    "bf16 $(fmt %.0f "$(field "$p" train_paired small bf16_tok_per_s)") tok/s: bf16/fp32 $(fmt %.2fx "$(field "$p" train_paired small ratio_of_medians)")" \
    "(median of the pairs' ratios $(fmt %.2fx "$(field "$p" train_paired small median_ratio)"));" \
    "generation in turn ($(field "$p" generate_paired small chars) characters each, with the cache): fp32" \
    "$(fmt %.0f "$(field "$p" generate_paired small fp32_cache_chars_per_s)") chars/s, bf16" \
    "$(fmt %.0f "$(field "$p" generate_paired small bf16_cache_chars_per_s)") chars/s: $(fmt %.2fx "$(field "$p" generate_paired small ratio)")"
echo "targets: small trains >= 1.7x faster in bf16 than in fp32; small generates >= 1.7x fp32's chars/s"
echo

# samples FILE CONFIG N KEY: the value of KEY on FILE's line "generate_samples config=CONFIG samples=N ..."
samples() {
    awk -v config="$2" -v n="$3" -v key="$4" '
        $1 == "generate_samples" {
            delete f
            for (i = 2; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
            if (f["config"] == config && f["samples"] == n) print f[key]
        }' "$1"
}
echo "--num-samples N (chars/s over all samples): within the block, every character a cached step of the N"
echo "samples together; and $gen_chars characters at the default --stride 1, where past the block every"
echo "character of every sample needs its own prefill"
echo "| config | N | within the block | vs N = 1 | $gen_chars characters | vs N = 1 |"
echo "|---|---|---|---|---|---|"
for config in $configs; do
    c="$out/chargpt.txt"
    base_block="$(samples "$c" "$config" 1 in_block_chars_per_s)"
    base_full="$(samples "$c" "$config" 1 chars_per_s)"
    for n in 1 8 32; do
        block="$(samples "$c" "$config" "$n" in_block_chars_per_s)"
        full="$(samples "$c" "$config" "$n" chars_per_s)"
        printf "| %s | %s | %s | %s | %s | %s |\n" "$config" "$n" "$(fmt %.0f "$block")" "$(ratio "$block" "$base_block")" \
            "$(fmt %.0f "$full")" "$(ratio "$full" "$base_full")"
    done
done
for config in $configs; do
    for n in 1 8 32; do
        made="$(samples "$out/chargpt.txt" "$config" "$n" chars)"
        if [ -n "$made" ] && [ "$made" -lt $((gen_chars * n)) ]; then
            echo "$config, N = $n: stopped at BENCH_GEN_SECONDS=$gen_seconds after $((made / n)) of $gen_chars characters"
        fi
    done
done
echo

# MPI (when `make MPI=1` has built build-mpi/bin/train): the small config on 1 process x 2
# threads against 2 ranks x 1 thread, without and with --zero 1; tok/s and ms/step from the
# last progress report (the mean over the timed steps), communication from the trainer's
# summary, peak RSS of each process from /usr/bin/time.
mpi_train=build-mpi/bin/train
if [ -x "$mpi_train" ] && command -v mpirun >/dev/null && [ -x /usr/bin/time ]; then
    echo "MPI: small config, 1 process x 2 threads vs 2 ranks x 1 thread" >&2
    mpi_steps="${BENCH_MPI_STEPS:-6}"
    small=(--n-layer 6 --n-head 6 --n-embd 384 --block-size 256 --batch-size 8 --val-fraction 0 --warmup 0
           --steps "$mpi_steps" --log-every "$mpi_steps" --save-every 100000)
    # report FILE KEY: "ms/step" or "tok/s" from the last progress line of FILE
    report() { grep -a "^step " "$1" | tail -n 1 | sed -n "s#.*| \([0-9.]*\) $2 |.*#\1#p"; }
    /usr/bin/time -f "rss_kb=%M" -o "$out/mpi_one.rss" ./train "${small[@]}" --threads 2 --out "$out/mpi_one" \
        > "$out/mpi_one.log" 2>&1 || echo "bench.sh: the 1-process run failed (see below)" >&2
    for zero in 0 1; do
        OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun --oversubscribe --bind-to none -np 2 \
            sh -c '/usr/bin/time -f "rss_kb=%M" -o "$0.rss.$OMPI_COMM_WORLD_RANK" "$@"' "$out/mpi_two$zero" \
            "$mpi_train" "${small[@]}" --threads 1 --zero "$zero" --out "$out/mpi_two$zero" \
            > "$out/mpi_two$zero.log" 2>&1 || echo "bench.sh: the 2-rank run with --zero $zero failed" >&2
    done
    rss() { sed -n 's/^rss_kb=//p' "$1" 2>/dev/null | tail -n 1; }
    one_tok="$(report "$out/mpi_one.log" tok/s)"
    echo "MPI data parallelism (small config, batch 8 x 256, $mpi_steps steps; one machine, so the ranks talk"
    echo "through shared memory: the figures show the cost of splitting the batch, not of a network)"
    echo "| run | ms/step | tok/s | vs 1 process | communication ms/step | peak RSS rank 0 | peak RSS rank 1 |"
    echo "|---|---|---|---|---|---|---|"
    printf "| 1 process x 2 threads | %s | %s | 1.00x | - | %s | - |\n" "$(report "$out/mpi_one.log" ms/step)" \
        "$(fmt %.0f "$one_tok")" "$(mib "$(rss "$out/mpi_one.rss")")"
    for zero in 0 1; do
        f="$out/mpi_two$zero.log"
        tok="$(report "$f" tok/s)"
        comm="$(sed -n 's/^communication: \([0-9.]*\) ms.*/\1/p' "$f")"
        printf "| 2 ranks x 1 thread, --zero %s | %s | %s | %s | %s | %s | %s |\n" "$zero" "$(report "$f" ms/step)" \
            "$(fmt %.0f "$tok")" "$(ratio "$tok" "$one_tok")" "$(fmt %s "$comm")" \
            "$(mib "$(rss "$out/mpi_two$zero.rss.0")")" "$(mib "$(rss "$out/mpi_two$zero.rss.1")")"
    done
    echo "(peak RSS includes MPI's own buffers; with --zero 1 rank 0 also gathers the second moments of"
    echo " every parameter to write the checkpoint, the first ones into the free gradient buffer)"
    echo
fi

# long generation (issue 32): BENCH_LONG_CHARS (default 2000) characters after an 8-character
# prompt, almost all past the block, with the cache: a learned-position model prefills its
# whole window for every character there, a RoPE model's cache rolls on a position per
# character; beside PyTorch's nanoGPT generate(), a full recompute of the window (learned
# positions; RoPE would add only its rotations to that). A run ends after BENCH_LONG_SECONDS
# (default 120) with the characters it made.
long_chars="${BENCH_LONG_CHARS:-2000}"
long_seconds="${BENCH_LONG_SECONDS:-120}"
for config in $configs; do
    for pos in learned rope; do
        ./scripts/bench --long-gen --config "$config" --pos "$pos" --gen-chars "$long_chars" \
            --gen-seconds "$long_seconds" >>"$out/long_$pos.txt"
    done
    if [ "$have_torch" = 1 ] && ! env "${torch_isa[@]}" OMP_WAIT_POLICY=passive "$python" scripts/bench_torch.py \
        --config "$config" --threads "$OMP_NUM_THREADS" --steps 1 --warmup 1 --gen-chars "$long_chars" \
        --gen-seconds "$long_seconds" >>"$out/long_torch.txt"; then
        echo "bench.sh: scripts/bench_torch.py --config $config (long generation) failed" >&2
        torch_failed=1
    fi
done
touch "$out/long_torch.txt"
echo "generation of $long_chars characters after an 8-character prompt (past the block), chars/s"
echo "| config | learned, cache | RoPE, rolling cache | RoPE / learned | PyTorch, full recompute | RoPE / PyTorch |"
echo "|---|---|---|---|---|---|"
for config in $configs; do
    learned="$(field "$out/long_learned.txt" generate_long "$config" chars_per_s)"
    rope="$(field "$out/long_rope.txt" generate_long "$config" chars_per_s)"
    torch_long="$(field "$out/long_torch.txt" torch_generate "$config" nocache_chars_per_s)"
    printf "| %s | %s | %s | %s | %s | %s |\n" "$config" "$(fmt %.0f "$learned")" "$(fmt %.0f "$rope")" \
        "$(ratio "$rope" "$learned")" "$(fmt %.0f "$torch_long")" "$(ratio "$rope" "$torch_long")"
    made="$(field "$out/long_learned.txt" generate_long "$config" chars) $(field "$out/long_rope.txt" generate_long "$config" chars) $(field "$out/long_torch.txt" torch_generate "$config" nocache_chars)"
    for n in $made; do
        if [ "$n" -lt "$long_chars" ]; then
            echo "$config: a run stopped at BENCH_LONG_SECONDS=$long_seconds; characters (learned, RoPE, PyTorch): $made"
            break
        fi
    done
done
echo "targets: small RoPE >= 10x learned and >= 500 chars/s on 2 threads; tiny RoPE >= 3x PyTorch"
echo

# the backends' rows: the same training on each backend this CPU runs
peaks="$(for p in $(awk '$1 == "peak" { sub("path=", "", $2); print $2 }' "$out/chargpt.txt"); do
    printf "%s %s GFLOP/s\n" "$p" "$(fmt %.1f "$(peak "$p" gflops_all)")"; done | paste -s -d ';' | sed 's/;/; /g')"
echo "kernels' backends (CHARGPT_KERNELS=name; training as above, the median step, one run each in turn; % of the"
echo "peak of the backend's own instruction set on $OMP_NUM_THREADS threads, for bf16 on vdpbf16ps of that loop's: $peaks)"
echo "| kernels | config | fp32 tok/s | % of its peak | bf16 tok/s | % of its peak | bf16/fp32 | bf16 products |"
echo "|---|---|---|---|---|---|---|---|"
for backend in $backends; do
    for config in $configs; do
        b="$out/backends.txt"
        line() { awk -v k="$backend" -v c="$config" -v p="$1" '$1 == "train" && index($0, " kernel=" k " ") && index($0, " config=" c " ") && index($0, " precision=" p) { print; exit }' "$b"; }
        keyof() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
        fp32_line="$(line fp32)" bf16_line="$(line bf16)"
        tok="$(keyof "$fp32_line" tok_per_s)" tok16="$(keyof "$bf16_line" tok_per_s)"
        path="$(keyof "$bf16_line" precision | sed 's/^bf16://; s/+/ /g')"
        # pct LINE PATH: LINE's GFLOP/s as a share of PATH's peak on every thread
        pct() { awk -v g="$(keyof "$1" gflops)" -v p="$(peak "$2" gflops_all)" \
            'BEGIN { if (p > 0 && g != "") printf "%.1f%%", 100 * g / p; else printf "-" }'; }
        path16="$(keyof "$fp32_line" peak_path)"
        case "$path" in *vdpbf16ps*) path16=vdpbf16ps ;; esac
        printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n" "$backend" "$config" "$(fmt %.0f "$tok")" \
            "$(pct "$fp32_line" "$(keyof "$fp32_line" peak_path)")" "$(fmt %.0f "$tok16")" "$(pct "$bf16_line" "$path16")" \
            "$(ratio "$tok16" "$tok")" "${path:--}"
    done
done
echo

if [ "$have_torch" = 0 ]; then
    echo "PyTorch is not installed for $python (import torch failed): chargpt's figures only."
    echo
fi
echo "raw results:"
cat "$out/chargpt.txt" "$out/bf16.txt" "$out/paired.txt" "$out/backends.txt" "$out/torch.txt" "$out/torch_bf16.txt" \
    "$out/long_learned.txt" "$out/long_rope.txt" "$out/long_torch.txt"
echo "raw results, shared machine:"
cat "$out/shared_chargpt.txt" "$out/shared_torch.txt"
exit "$torch_failed"
