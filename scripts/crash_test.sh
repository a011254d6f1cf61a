#!/usr/bin/env bash
# scripts/crash_test.sh N: kills `./train --save-every 1` with SIGKILL at N random moments,
# each while a second run on the same directory is starting (or, one time in four, right
# after): that one must be refused by the first one's lock (exit 2, naming it) or, when it came
# after the kill, find the lock released and run (then it is killed too). After each kill the checkpoint must load (./generate reads
# it), the probe file must be readable (./generate --timeline rebuilds the page from it; a
# record the kill cut short is left out) and the run must resume to completion (./train
# --resume, which needs the lock the killed runs held: the kernel releases it), after which no
# temporary file may remain, log.csv's rows must be whole, their steps only increasing, and
# the probe file must hold one whole record for step 0 and for each row of log.csv with a
# validation loss (no duplicate: a reader stops at a record not after the one before it; no
# gap), and nothing torn. The runs evaluate, probe and sample every 3 steps, so kills land in
# the middle of appending records too. The killed runs ask for 10,000 steps: some 20 times what
# 20 kills reach, and a probe.bin of about 190 MB, which ./train checks against the disk's free
# space before it starts. Works in tests/tmp/crash_test/ with a small model on the default corpus.
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

./train --n-layer 2 --n-head 2 --n-embd 32 --block-size 32 --batch-size 4 --eval-every 3 \
    --eval-batches 2 --sample-chars 20 --steps 2 --out "$work" > "$work/first.log" 2>&1 ||
    fail "the first run failed: $(cat "$work/first.log")"

# The timeline page rebuilt from the probe file (./generate --timeline): must succeed; leaves
# its summary line in $timeline.
rebuild() {
    timeline=$(./generate --timeline "$work" --force 2>&1) || fail "kill $i: $1: the probe file cannot be read: $timeline"
}

sleep_ms() { sleep "$(printf '%d.%03d' $(($1 / 1000)) $(($1 % 1000)))"; }

# The second run, started a few ms before the first is killed: refused by the lock (exit 2,
# naming the first run), or, when it took the lock after the kill, running: then killed too.
second_run() {
    local first=$1 waiter=$2 status
    for ((t = 0; t < 300; t++)); do
        kill -0 "$waiter" 2>/dev/null || break
        grep -q '^resuming ' "$work/waiting.log" && break
        sleep 0.01
    done
    if kill -0 "$waiter" 2>/dev/null; then
        grep -q '^resuming ' "$work/waiting.log" || fail "kill $i: the second run neither ran nor ended in 3 s"
        kill -9 "$waiter"
        wait "$waiter" 2>/dev/null || true
        took_over=$((took_over + 1))
        second="the second run took the directory after the kill"
        return
    fi
    status=0
    wait "$waiter" || status=$?
    [ "$status" -eq 2 ] && grep -q "is in use by another run (pid $first)" "$work/waiting.log" ||
        fail "kill $i: the second run exited $status, not refused by the lock of pid $first: $(cat "$work/waiting.log")"
    refused=$((refused + 1))
    second="the second run was refused by the lock"
}

left_behind=0
timelines=0
refused=0
took_over=0
for ((i = 1; i <= kills; i++)); do
    ./train --resume "$ckpt" --steps 10000 --save-every 1 > "$work/killed.log" 2>&1 &
    pid=$!
    ms=$((50 + RANDOM % 700))
    sleep_ms "$ms"
    kill -0 "$pid" 2>/dev/null || fail "kill $i: ./train ended before it was killed: $(cat "$work/killed.log")"
    # the second run starts up to 8 ms before the kill, or (one time in four) right after it
    after=$((RANDOM % 4 == 0))
    [ "$after" -eq 1 ] && kill -9 "$pid"
    ./train --resume "$ckpt" --steps 10000 --save-every 1 > "$work/waiting.log" 2>&1 &
    waiter=$!
    [ "$after" -eq 0 ] && sleep_ms $((RANDOM % 8)) && kill -9 "$pid"
    wait "$pid" 2>/dev/null || true
    second_run "$pid" "$waiter"
    left=$(temporaries)
    [ "$left" -gt 0 ] && left_behind=$((left_behind + 1))

    ./generate "$ckpt" -n 3 > "$work/generate.log" 2>&1 ||
        fail "kill $i after $ms ms: the checkpoint does not load: $(cat "$work/generate.log")"
    rebuild "after the kill"
    torn=$(echo "$timeline" | grep -c 'torn record' || true)
    step=$(saved_step)
    [ -n "$step" ] || fail "kill $i: no state.step in $ckpt"
    ./train --resume "$ckpt" --steps $((step + 2)) > "$work/resumed.log" 2>&1 ||
        fail "kill $i: resuming from step $step failed: $(cat "$work/resumed.log")"
    grep -q '^done: 2 steps' "$work/resumed.log" || fail "kill $i: the resumed run did not finish: $(cat "$work/resumed.log")"
    [ "$(temporaries)" -eq 0 ] || fail "kill $i: temporary files remain after the resume: $(find "$work" -name '*.tmp.*')"
    awk -F, 'NR == 1 { n = NF } NR > 1 { if (NF != n || $1 !~ /^[0-9]+$/ || $1 <= last) exit 1; last = $1 }' "$work/log.csv" ||
        fail "kill $i: log.csv has a row that is not whole, or its steps do not only increase"
    rebuild "after the resume"
    records=$(echo "$timeline" | sed -n 's/.*: \([0-9]*\) probed steps\? of \([0-9]*\) in full, \([0-9]*\) of \([0-9]*\) records.*/\2 \4/p')
    evaluations=$(awk -F, 'NR > 1 && $3 != "" { n++ } END { print n + 1 }' "$work/log.csv")
    [ "$records" = "$evaluations $evaluations" ] && ! echo "$timeline" | grep -q 'torn' ||
        fail "kill $i: the probe file's records ($timeline) are not one for step 0 and each of log.csv's" \
            "$((evaluations - 1)) evaluations"
    timelines=$((timelines + torn))
    echo "kill $i after $ms ms: $second; checkpoint at step $step loads, resumed to step $((step + 2));" \
        "$left temporary file(s) left by the kills, removed; the probe file read$([ "$torn" -gt 0 ] &&
        echo ' (a record cut short by the kill left out, then cut)'), $evaluations records after the resume"
done
echo "crash test passed: $kills kills (seed $seed), each checkpoint loaded and resumed to completion;" \
    "$left_behind kill(s) left a temporary file, all removed on resume; the second run was refused by the" \
    "lock $refused time(s) and took the directory after the kill $took_over time(s); $timelines kill(s) cut a" \
    "probe record short, each left out by the reader and cut on resume, and every resumed timeline held one" \
    "record per evaluation"
