#!/bin/sh
# Compares the training step of two builds of chargpt, taken in turn so that both see the
# same spells of a busy machine: old, new, new, old, old, new, ... one `scripts/bench
# --jobs train` run each. Prints, for each model, the median of each build's per-run median
# step and their ratio, and the fastest step of each build and theirs (a ratio above 1: the
# new build is faster).
#   scripts/bench_turns.sh OLD_DIR NEW_DIR [CONFIGS [ROUNDS [SECONDS]]]
# OLD_DIR and NEW_DIR are chargpt trees with scripts/bench built (`make scripts/bench` in each;
# `git worktree add ../old <commit>` gives a tree of an older commit). CONFIGS as bench's
# --config (default lesson,tiny), ROUNDS pairs of runs (default 6), SECONDS per run (default
# 4). CHARGPT_KERNELS and OMP_NUM_THREADS are passed on to both builds.
# `make bench-turns OLD=dir` runs it against this tree. docs/benchmarks.md has the figures.
set -eu

usage() {
    echo "usage: scripts/bench_turns.sh OLD_DIR NEW_DIR [CONFIGS [ROUNDS [SECONDS]]]" >&2
    echo "$1" >&2
    exit 2
}
[ $# -ge 2 ] && [ $# -le 5 ] || usage "two chargpt trees to compare, then optionally configs, rounds and seconds"
old=$1 new=$2 configs=${3:-lesson,tiny} rounds=${4:-6} seconds=${5:-4}
for tree in "$old" "$new"; do
    [ -x "$tree/scripts/bench" ] || usage "$tree/scripts/bench is not there: run 'make scripts/bench' in $tree"
done
# $2 is a whole number of at least 1 (digits only, one of them not 0), or usage names $1
at_least_one() {
    case $2 in '' | *[!0-9]*) usage "$1 must be a whole number of at least 1, not '$2'" ;; esac
    case $2 in *[1-9]*) ;; *) usage "$1 must be a whole number of at least 1, not '$2'" ;; esac
}
at_least_one ROUNDS "$rounds"
at_least_one SECONDS "$seconds"

results=$(mktemp) errors=$(mktemp)
trap 'rm -f "$results" "$errors"' EXIT
# one run of build $1 ("old" or "new") in tree $2: a line "build config ms_median ms_min" per config
run() {
    status=0
    out=$(cd "$2" && ./scripts/bench --jobs train --config "$configs" --seconds "$seconds" 2>"$errors") || status=$?
    if [ "$status" -ne 0 ]; then
        echo "scripts/bench failed in $2:" >&2
        cat "$errors" >&2
        exit "$status"
    fi
    echo "$out" | awk -v build="$1" '{
        for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
        print build, f["config"], f["ms_median"], f["ms_min"] }' >>"$results"
}
r=1
while [ "$r" -le "$rounds" ]; do
    if [ $((r % 2)) -eq 1 ]; then run old "$old"; run new "$new"; else run new "$new"; run old "$old"; fi
    r=$((r + 1))
done

# per config: the median of ms_median and the smallest ms_min of each build
awk '
function median(list, n,    i, j, t) {
    for (i = 2; i <= n; i++) for (j = i; j > 1 && list[j - 1] > list[j]; j--) { t = list[j]; list[j] = list[j - 1]; list[j - 1] = t }
    return n % 2 ? list[(n + 1) / 2] : (list[n / 2] + list[n / 2 + 1]) / 2
}
{
    key = $1 SUBSEP $2
    if (!($2 in seen)) { seen[$2] = 1; order[++configs] = $2 }
    runs[key]++; medians[key, runs[key]] = $3
    if (!(key in fastest) || $4 < fastest[key]) fastest[key] = $4
}
END {
    for (c = 1; c <= configs; c++) {
        name = order[c]
        for (b = 0; b < 2; b++) {
            build = b ? "new" : "old"; key = build SUBSEP name; n = runs[key]
            for (i = 1; i <= n; i++) list[i] = medians[key, i]
            med[build] = median(list, n)
        }
        printf "%s: median step %.2f -> %.2f ms (%.2fx), fastest step %.2f -> %.2f ms (%.2fx), %d runs each\n",
            name, med["old"], med["new"], med["old"] / med["new"], fastest["old" SUBSEP name],
            fastest["new" SUBSEP name], fastest["old" SUBSEP name] / fastest["new" SUBSEP name], n
    }
}' "$results"
