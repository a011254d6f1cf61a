#!/usr/bin/env bash
# scripts/crash_test.sh N: kills `./train --save-every 1` with SIGKILL at N random moments.
# After each kill the checkpoint must load (./generate reads it) and the run must resume to
# completion (./train --resume), after which no temporary file may remain and log.csv's steps
# must only increase. Works in tests/tmp/crash_test/ with a small model on the default corpus.
# Needs ./train and ./generate (make). CRASH_SEED sets the random moments (default: the pid).
# Exit status: 0 all passed, 1 a check failed, 2 bad usage.
set -euo pipefail
cd "$(dirname "$0")/.."

kills="${1:-}"
if ! [[ "$kills" =~ ^[1-9][0-9]*$ ]]; then
    echo "usage: scripts/crash_test.sh N   (N >= 1 kills)" >&2
    exit 2
fi
if [ ! -x ./train ] || [ ! -x ./generate ]; then
    echo "crash_test: ./train and ./generate are not built: run make" >&2
    exit 2
fi
seed="${CRASH_SEED:-$$}"
RANDOM="$seed"

work=tests/tmp/crash_test
rm -rf "$work"
mkdir -p "$work"
ckpt="$work/ckpt.safetensors"

fail() {
    echo "crash_test: $*" >&2
    exit 1
}

# the step saved in the checkpoint, from its header
saved_step() { grep -ao '"state.step":"[0-9]*"' "$ckpt" | head -n 1 | tr -dc '0-9'; }

temporaries() { find "$work" -name '*.tmp.*' | wc -l; }

./train --n-layer 2 --n-head 2 --n-embd 32 --block-size 32 --batch-size 4 --eval-every 50 \
    --eval-batches 2 --steps 2 --out "$work" > "$work/first.log" 2>&1 || fail "the first run failed: $(cat "$work/first.log")"

left_behind=0
for ((i = 1; i <= kills; i++)); do
    ./train --resume "$ckpt" --steps 100000000 --save-every 1 > "$work/killed.log" 2>&1 &
    pid=$!
    ms=$((50 + RANDOM % 700))
    sleep "$(printf '%d.%03d' $((ms / 1000)) $((ms % 1000)))"
    kill -0 "$pid" 2>/dev/null || fail "kill $i: ./train ended before it was killed: $(cat "$work/killed.log")"
    kill -9 "$pid"
    wait "$pid" 2>/dev/null || true
    left=$(temporaries)
    [ "$left" -gt 0 ] && left_behind=$((left_behind + 1))

    ./generate "$ckpt" -n 3 > "$work/generate.log" 2>&1 ||
        fail "kill $i after $ms ms: the checkpoint does not load: $(cat "$work/generate.log")"
    step=$(saved_step)
    [ -n "$step" ] || fail "kill $i: no state.step in $ckpt"
    ./train --resume "$ckpt" --steps $((step + 2)) > "$work/resumed.log" 2>&1 ||
        fail "kill $i: resuming from step $step failed: $(cat "$work/resumed.log")"
    grep -q '^done: 2 steps' "$work/resumed.log" || fail "kill $i: the resumed run did not finish: $(cat "$work/resumed.log")"
    [ "$(temporaries)" -eq 0 ] || fail "kill $i: temporary files remain after the resume: $(find "$work" -name '*.tmp.*')"
    awk -F, 'NR > 1 { if ($1 <= last) exit 1; last = $1 }' "$work/log.csv" ||
        fail "kill $i: log.csv's steps do not only increase"
    echo "kill $i after $ms ms: checkpoint at step $step loads, resumed to step $((step + 2)); $left temporary file(s) left by the kill, removed"
done
echo "crash test passed: $kills kills (seed $seed), each checkpoint loaded and resumed to completion;" \
    "$left_behind kill(s) left a temporary file, all removed on resume"
