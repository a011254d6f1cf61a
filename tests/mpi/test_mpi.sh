#!/usr/bin/env bash
# make test-mpi: the multi-process trainer (build-mpi/bin/train, `make MPI=1`) against the
# plain one (./train), on 2 ranks of 1 thread with mpirun, on the shipped corpus:
#   - 30 steps of a small model with dropout 0.1: losses (training, and the whole validation
#     split's at the end) agree with 1 process to 1e-4 and weights to relative 1e-5, without
#     and with --zero 1; the same on 3 ranks with --zero 1 --grad-accum 2;
#   - rank 0 alone probes and writes the timeline (probe.bin, timeline.html), a record for
#     each evaluation as 1 process writes, its update ratios summed over the shards with
#     --zero 1;
#   - a 2-rank checkpoint resumes on 1 process (within 1e-5 of the uninterrupted run) and
#     on 2 ranks (bit-exact), with --zero 1, whose optimizer state is gathered and scattered;
#   - a corpus missing on one rank, a bad flag, an indivisible batch and a loss that stops
#     being finite end both ranks with the same status (1, 2, 2, 3) within 30 s, the message
#     printed once;
#   - processes built from different sources: one message naming the build, no MPI error;
#   - 2 ranks walking one directory of files agree, and --data - (standard input, which mpirun
#     gives rank 0 alone) is refused on both with status 2;
#   - ranks that read different texts (of the same vocabulary, and of another, and a directory
#     with one file more), a stale copy of the checkpoint, or are given another --seed: both
#     exit 1 at their first agreement with one message naming rank 1 and what differs, nothing
#     written (the run directory of the resumed checkpoint unchanged);
#   - rank 1 stopped (SIGSTOP): rank 0 waits without spinning a core and ends the job after
#     --mpi-timeout with a message naming the collective, leaving no rank behind;
#   - SIGINT to one rank stops both after the same step: rank 0 saves, both exit 130; SIGINT
#     to mpirun (OpenMPI passes it on to the ranks as SIGTERM) saves too.
# As root (CI) OpenMPI needs OMPI_ALLOW_RUN_AS_ROOT*, set here; --oversubscribe lets 2 ranks
# run on fewer cores. The last line is "N passed, N failed".
set -u
cd "$(dirname "$0")/../.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPI_TRAIN=build-mpi/bin/train
COMPARE=tests/mpi/compare_checkpoints
COMPARE_PROBES=tests/mpi/compare_probes
DIR=tests/tmp/mpi
rm -rf "$DIR"
mkdir -p "$DIR"
passed=0
failed=0
pass() { echo "ok   $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1"; [ -n "${2:-}" ] && [ -f "$2" ] && sed 's/^/     | /' "$2" | tail -n 30; failed=$((failed + 1)); }

for f in ./train "$MPI_TRAIN" "$COMPARE" "$COMPARE_PROBES"; do
    [ -x "$f" ] || { echo "$f is missing: run make && make MPI=1 first"; echo "0 passed, 1 failed"; exit 1; }
done

MODEL=(--n-layer 2 --n-head 4 --n-embd 64 --block-size 32 --batch-size 8 --dropout 0.1 --eval-every 10
       --eval-batches 4 --log-every 1 --warmup 5)
# MODEL without the options named (each with its value) into MODEL_BUT: ./train takes each
# option once, so a run that gives one of them itself takes MODEL's others
model_but() {
    local skip=" $* " i
    MODEL_BUT=()
    for ((i = 0; i < ${#MODEL[@]}; i += 2)); do
        [[ $skip == *" ${MODEL[i]} "* ]] || MODEL_BUT+=("${MODEL[i]}" "${MODEL[i + 1]}")
    done
}
# mpirun -np 2 of the MPI trainer, one thread per rank, @RANK@ in an argument replaced by each
# rank's number (to give the ranks different files or values); each rank's exit status goes to
# $out.status.<rank>. orte_abort_on_non_zero_status 0: mpirun lets every rank end by itself
# rather than kill the others as soon as one exits with a failure, so that each one's own
# status can be seen.
NO_ABORT=(--mca orte_abort_on_non_zero_status 0)
mpi2() {
    local out=$1
    shift
    timeout 60 mpirun "${NO_ABORT[@]}" --oversubscribe -np 2 --bind-to none bash -c \
        '"$0" "${@//@RANK@/$OMPI_COMM_WORLD_RANK}"; s=$?; echo $s > "'"$out"'.status.$OMPI_COMM_WORLD_RANK"; exit $s' \
        "$MPI_TRAIN" --threads 1 "$@"
}

# largest |a - b| of the train_loss column of two log.csv files with the same rows (each row
# the two files' rows side by side: its second half starts at field NF / 2 + 1)
loss_diff() {
    paste -d, "$1" "$2" | awk -F, 'NR > 1 { n = NF / 2; if ($1 != $(n + 1)) { print "rows differ"; exit } d = $2 - $(n + 2);
        if (d < 0) d = -d; if (d > m) m = d } END { if (NR < 2) print "empty"; else printf "%.3e\n", m }'
}

# ---- 2 ranks vs 1 process, without and with --zero 1
./train "${MODEL[@]}" --steps 30 --threads 1 --out "$DIR/one" > "$DIR/one.log" 2>&1 ||
    fail "1-process reference run" "$DIR/one.log"
for zero in 0 1; do
    name="2 ranks x 1 thread vs 1 process, 30 steps, dropout 0.1, --zero $zero"
    if ! mpi2 "$DIR/two$zero" "${MODEL[@]}" --steps 30 --zero $zero --out "$DIR/two$zero" > "$DIR/two$zero.log" 2>&1; then
        fail "$name: the run failed" "$DIR/two$zero.log"
        continue
    fi
    d=$(loss_diff "$DIR/two$zero/log.csv" "$DIR/one/log.csv")
    w=$("$COMPARE" "$DIR/two$zero/ckpt.safetensors" "$DIR/one/ckpt.safetensors" 1e-5)
    ok=$?
    # the whole validation split's loss at the end, its forwards shared by the ranks
    v1=$(sed -n 's/^whole validation split: loss \([0-9.]*\).*/\1/p' "$DIR/one.log")
    v2=$(sed -n 's/^whole validation split: loss \([0-9.]*\).*/\1/p' "$DIR/two$zero.log")
    echo "     $name: train losses differ by at most $d; whole-split val loss $v2 vs $v1; $w"
    if [ $ok -eq 0 ] && awk -v d="$d" -v a="$v1" -v b="$v2" \
        'BEGIN { e = a - b; if (e < 0) e = -e; exit !(d + 0 == d && d <= 1e-4 && a != "" && e <= 1e-4) }'; then
        pass "$name"
    else fail "$name: losses $d (want <= 1e-4), val $v2 vs $v1, $w (want parameters <= 1e-5)"; fi
done
# 3 ranks (uneven parameter shards: 106304 = 3 x 35434 + 2), --zero 1 and --grad-accum 2:
# batch 12 as 2 micro-batches of 6, 2 rows a rank
name="3 ranks x 1 thread, --zero 1 --grad-accum 2 vs 1 process, batch 12"
model_but --batch-size
./train "${MODEL_BUT[@]}" --steps 30 --batch-size 12 --threads 1 --out "$DIR/one12" > "$DIR/one12.log" 2>&1 ||
    fail "1-process reference run, batch 12" "$DIR/one12.log"
if timeout 60 mpirun "${NO_ABORT[@]}" --oversubscribe -np 3 --bind-to none "$MPI_TRAIN" "${MODEL_BUT[@]}" --steps 30 \
       --batch-size 12 --threads 1 --zero 1 --grad-accum 2 --out "$DIR/three" > "$DIR/three.log" 2>&1; then
    d=$(loss_diff "$DIR/three/log.csv" "$DIR/one12/log.csv")
    w=$("$COMPARE" "$DIR/three/ckpt.safetensors" "$DIR/one12/ckpt.safetensors" 1e-5)
    ok=$?
    echo "     $name: train losses differ by at most $d; $w"
    if [ $ok -eq 0 ] && awk -v d="$d" 'BEGIN { exit !(d + 0 == d && d <= 1e-4) }'; then pass "$name"
    else fail "$name: losses $d (want <= 1e-4), $w (want parameters <= 1e-5)"; fi
else fail "$name: the run failed" "$DIR/three.log"; fi

# not vacuous: another seed is far from the 1-process run
./train "${MODEL[@]}" --steps 30 --threads 1 --seed 7 --out "$DIR/seed7" > "$DIR/seed7.log" 2>&1
if ! "$COMPARE" "$DIR/seed7/ckpt.safetensors" "$DIR/one/ckpt.safetensors" 1e-3 > /dev/null; then
    pass "another seed differs by more than 1e-3 (the comparison can fail)"
else fail "another seed's weights are within 1e-3 of the run"; fi

# ---- the timeline: rank 0 alone probes; its probe file has a record for each evaluation, as 1
# process's does, with the same update-to-weight ratios (with --zero 1 each rank's shard's sums
# added) and head scores, up to the order of float sums
for zero in 0 1; do
    name="2 ranks, --zero $zero: rank 0 writes the timeline, its records the 1-process run's"
    w=$("$COMPARE_PROBES" "$DIR/two$zero/probe.bin" "$DIR/one/probe.bin" 1e-3)
    ok=$?
    lines=$(grep -c '^timeline: .*timeline\.html' "$DIR/two$zero.log")  # the end's line (not the plan's)
    samples=$(grep -c '^sample at step ' "$DIR/two$zero.log")
    echo "     $name: $w; $samples samples printed"
    if [ $ok -eq 0 ] && [ "$lines" = 1 ] && [ "$samples" = 4 ] && [ -f "$DIR/two$zero/timeline.html" ]; then
        pass "$name"
    else fail "$name: $w, $lines timeline lines, $samples samples (want 4: steps 0, 10, 20, 30)" "$DIR/two$zero.log"; fi
done

# ---- a 2-rank checkpoint (--zero 1) resumes on 1 process and on 2 ranks
name="2-rank --zero 1 checkpoint of step 15 resumed on 2 ranks to step 30: bit-exact"
mpi2 "$DIR/half" "${MODEL[@]}" --steps 15 --decay-steps 30 --zero 1 --out "$DIR/half" > "$DIR/half.log" 2>&1 ||
    fail "2-rank run of 15 steps" "$DIR/half.log"
mpi2 "$DIR/full" "${MODEL[@]}" --steps 30 --decay-steps 30 --zero 1 --out "$DIR/full" > "$DIR/full.log" 2>&1 ||
    fail "2-rank run of 30 steps" "$DIR/full.log"
cp -r "$DIR/half" "$DIR/half1"
mkdir -p "$DIR/stale"
cp "$DIR/half/ckpt.safetensors" "$DIR/stale/"  # of step 15, for a rank with a stale copy below
if mpi2 "$DIR/resumed2" --resume "$DIR/half/ckpt.safetensors" --steps 30 --zero 1 > "$DIR/resumed2.log" 2>&1 &&
   w=$("$COMPARE" "$DIR/half/ckpt.safetensors" "$DIR/full/ckpt.safetensors"); then
    echo "     $w"
    pass "$name"
else fail "$name: ${w:-the run failed}" "$DIR/resumed2.log"; fi
name="2-rank --zero 1 checkpoint of step 15 resumed on 1 process (plain build) to step 30: within 1e-5"
if ./train --resume "$DIR/half1/ckpt.safetensors" --steps 30 --threads 1 > "$DIR/resumed1.log" 2>&1 &&
   w=$("$COMPARE" "$DIR/half1/ckpt.safetensors" "$DIR/full/ckpt.safetensors" 1e-5); then
    echo "     $w"
    pass "$name"
else fail "$name: ${w:-the run failed}" "$DIR/resumed1.log"; fi

# ---- failures on one rank or on all end every rank with the same status, message once
# expect NAME WANT_STATUS MESSAGE LOG OUT: the ranks' statuses, the message's count, the time
expect_failure() {
    local name=$1 want=$2 message=$3 log=$4 out=$5 secs=$6
    local s0 s1 count
    s0=$(cat "$out.status.0" 2>/dev/null || echo none)
    s1=$(cat "$out.status.1" 2>/dev/null || echo none)
    count=$(grep -c -- "$message" "$log")
    echo "     $name: rank statuses $s0 $s1, message printed $count time(s), ended after $secs s"
    if [ "$s0" = "$want" ] && [ "$s1" = "$want" ] && [ "$count" = 1 ] && [ "$secs" -le 30 ]; then pass "$name"
    else fail "$name: want status $want on both ranks, the message once, within 30 s" "$log"; fi
}
mkdir -p "$DIR/rank0_only"
cp data/tinyshakespeare.txt.gz "$DIR/rank0_only/corpus0.txt.gz"
start=$SECONDS
mpi2 "$DIR/missing" "${MODEL[@]}" --steps 5 --data "$DIR/rank0_only/corpus@RANK@.txt.gz" --out "$DIR/missing" \
    > "$DIR/missing.log" 2>&1
expect_failure "corpus missing on rank 1 only" 1 "corpus1.txt.gz" "$DIR/missing.log" "$DIR/missing" $((SECONDS - start))
start=$SECONDS
mpi2 "$DIR/badflag" "${MODEL[@]}" --steps 5 --frobnicate 3 --out "$DIR/badflag" > "$DIR/badflag.log" 2>&1
expect_failure "a bad flag" 2 "unknown option '--frobnicate'" "$DIR/badflag.log" "$DIR/badflag" $((SECONDS - start))
start=$SECONDS
model_but --batch-size
mpi2 "$DIR/indivisible" "${MODEL_BUT[@]}" --steps 5 --batch-size 6 --grad-accum 2 --out "$DIR/indivisible" \
    > "$DIR/indivisible.log" 2>&1
expect_failure "--batch-size 6 not divisible by 2 processes x --grad-accum 2" 2 "not divisible by 2 processes" \
    "$DIR/indivisible.log" "$DIR/indivisible" $((SECONDS - start))

start=$SECONDS
mpi2 "$DIR/nonfinite" --n-layer 1 --n-head 2 --n-embd 16 --block-size 16 --batch-size 4 --eval-batches 2 \
    --lr 10 --min-lr 10 --weight-decay 10 --warmup 0 --eval-every 1000 --log-every 1 --steps 1000 \
    --out "$DIR/nonfinite" > "$DIR/nonfinite.log" 2>&1
expect_failure "a loss that stops being finite" 3 "is not finite; stopping" "$DIR/nonfinite.log" "$DIR/nonfinite" \
    $((SECONDS - start))

# ---- what the ranks read and are given must be the same: checked at their first agreement
# mismatch NAME OUT MESSAGE ARGS...: 2 ranks given ARGS (@RANK@ as in mpi2) exit 1 with
# MESSAGE once, and write no checkpoint in OUT
mismatch() {
    local name=$1 out=$2 message=$3
    shift 3
    local start=$SECONDS
    mpi2 "$out" "$@" > "$out.log" 2>&1
    expect_failure "$name" 1 "$message" "$out.log" "$out" $((SECONDS - start))
    if [ -e "$out/ckpt.safetensors" ]; then fail "$name: a checkpoint was written" "$out.log"; fi
}
mkdir -p "$DIR/texts"
gzip -dc data/tinyshakespeare.txt.gz > "$DIR/texts/same0.txt"
cp "$DIR/texts/same0.txt" "$DIR/texts/other0.txt"
sed '5s/a/e/' "$DIR/texts/same0.txt" > "$DIR/texts/same1.txt"  # one letter changed: the same vocabulary
{ cat "$DIR/texts/same0.txt"; echo '~'; } > "$DIR/texts/other1.txt"  # one character more: another one
mismatch "rank 1 reads another text of the same vocabulary" "$DIR/same_vocab" \
    "rank 1's corpus differs from rank 0's: rank 1 has 1115394 characters, CRC-32 [0-9a-f]*; rank 0 has 1115394" \
    "${MODEL[@]}" --steps 5 --out "$DIR/same_vocab" --data "$DIR/texts/same@RANK@.txt"
mismatch "rank 1 reads a text of another vocabulary" "$DIR/other_vocab" \
    "rank 1's corpus differs from rank 0's: rank 1 has 1115396 .*; rank 1's vocabulary differs too" \
    "${MODEL[@]}" --steps 5 --out "$DIR/other_vocab" --data "$DIR/texts/other@RANK@.txt"
# a corpus of many files: both ranks walk the same directory and agree; a directory with one
# file more on rank 1 is another corpus, its whole set in the fingerprint
mkdir -p "$DIR/sets/set0/b" "$DIR/sets/set1/b"
for r in 0 1; do
    head -c 200000 "$DIR/texts/same0.txt" > "$DIR/sets/set$r/a.txt"
    tail -c 200000 "$DIR/texts/same0.txt" > "$DIR/sets/set$r/b/c.txt"
done
head -c 1000 "$DIR/texts/same0.txt" > "$DIR/sets/set1/b/d.txt"
name="2 ranks walk the same directory of files and agree"
if mpi2 "$DIR/set_same" "${MODEL[@]}" --steps 3 --out "$DIR/set_same" --data "$DIR/sets/set0" \
    > "$DIR/set_same.log" 2>&1 && grep -q "2 files in 2 directories" "$DIR/set_same.log"; then pass "$name"
else fail "$name" "$DIR/set_same.log"; fi
mismatch "rank 1's directory holds one file more" "$DIR/set_more" \
    "rank 1's corpus differs from rank 0's: rank 1 has 401002 characters" \
    "${MODEL[@]}" --steps 5 --out "$DIR/set_more" --data "$DIR/sets/set@RANK@"
start=$SECONDS
mpi2 "$DIR/stdin" "${MODEL[@]}" --steps 5 --data - --out "$DIR/stdin" > "$DIR/stdin.log" 2>&1 < /dev/null
expect_failure "--data - under mpirun" 2 "which mpirun gives to rank 0 alone" "$DIR/stdin.log" "$DIR/stdin" \
    $((SECONDS - start))
mismatch "rank 1 is given another --seed" "$DIR/other_seed" \
    "rank 1's --seed differs from rank 0's: rank 1 has 1331; rank 0 has 1330" \
    "${MODEL[@]}" --steps 5 --out "$DIR/other_seed" --seed 133@RANK@
# processes built from different sources: rank 0 compares three facts, rank 1 two
# (tests/mpi/check_same_build.c): the message naming the build (from one rank or both: mpirun
# ends the job at the first failure), no MPI error
name="a rank built from other sources (another list of facts) is named, no MPI error"
mpirun --oversubscribe -np 2 --bind-to none build-mpi/bin/check_same_build > "$DIR/build.log" 2>&1
status=$?
count=$(grep -c "rank 1's build of chargpt (rebuild every machine's from the same sources) differs from rank 0's: rank 1 has a list of 2 facts to compare; rank 0 has a list of 3 facts to compare" "$DIR/build.log")
echo "     $name: mpirun status $status, the message printed by $count rank(s)"
if [ "$status" = 1 ] && [ "$count" -ge 1 ] && ! grep -q "MPI_ERR" "$DIR/build.log"; then pass "$name"
else fail "$name" "$DIR/build.log"; fi
# rank 0 resumes the run of step 30 (in its directory, which must not change), rank 1 a copy
# of its checkpoint of step 15: the same path on each, as on two machines, made here by links
mkdir -p "$DIR/machines"
ln -sfn ../half "$DIR/machines/0"
ln -sfn ../stale "$DIR/machines/1"
before=$(cd "$DIR/half" && ls -l --time-style=full-iso && md5sum *)
mismatch "rank 1 resumes a stale copy of the checkpoint" "$DIR/stale_resume" \
    "rank 1's checkpoint (--resume) differs from rank 0's: rank 1 has step 15, CRC-32 [0-9a-f]*; rank 0 has step 30" \
    --resume "$DIR/machines/@RANK@/ckpt.safetensors" --zero 1 --steps 40
if [ "$before" != "$(cd "$DIR/half" && ls -l --time-style=full-iso && md5sum *)" ]; then
    fail "rank 1 resumes a stale copy of the checkpoint: the run directory changed"
fi

# ---- a stalled rank: rank 1 stopped (SIGSTOP) while rank 0 goes on to its next collective
name="rank 1 stopped: rank 0 sleeps while it waits, then ends the job after --mpi-timeout 4, no rank left"
out=$DIR/stall
model_but --eval-every
timeout 60 mpirun --oversubscribe -np 2 --bind-to none sh -c 'echo $$ > "'"$out"'.pid.$OMPI_COMM_WORLD_RANK"; exec "$0" "$@"' \
    "$MPI_TRAIN" "${MODEL_BUT[@]}" --steps 100000 --save-every 100000 --eval-every 100000 --threads 1 --mpi-timeout 4 \
    --out "$out" > "$out.log" 2>&1 &
launcher=$!
waited=0
until grep -aq "step 5/" "$out.log" 2>/dev/null || [ $waited -ge 300 ]; do sleep 0.1; waited=$((waited + 1)); done
pids="$(cat "$out.pid.0" "$out.pid.1" 2>/dev/null)"
# cpu_ticks PID: the user and system clock ticks the process has used
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0; }
stopped=$EPOCHREALTIME
kill -STOP "$(cat "$out.pid.1" 2>/dev/null)" 2>/dev/null
sleep 1
ticks=$(cpu_ticks "$(cat "$out.pid.0" 2>/dev/null)")
sleep 2
ticks=$(( $(cpu_ticks "$(cat "$out.pid.0" 2>/dev/null)") - ticks ))
wait "$launcher"
status=$?
secs=$(awk -v a="$stopped" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
busy=$(awk -v t="$ticks" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.0f", 100 * t / hz / 2 }')
left=
for pid in $pids; do
    state=$(ps -o stat= -p "$pid" 2>/dev/null)
    if [ -n "$state" ] && [ "${state#Z}" = "$state" ]; then left="$left $pid"; kill -CONT "$pid"; kill -KILL "$pid"; fi
done
count=$(grep -c "rank 0 has waited [0-9.]* s for the other processes in .*longer than --mpi-timeout" "$out.log")
echo "     $name: rank 0 used ${busy}% of a core while it waited; mpirun exited with status $status ${secs} s after" \
     "the stop; the message printed $count time(s); ranks left running:${left:- none}"
if [ "$status" = 1 ] && [ "$count" = 1 ] && [ "$busy" -lt 10 ] && [ -z "$left" ] &&
   awk -v s="$secs" 'BEGIN { exit !(s >= 4 && s <= 15) }'; then pass "$name"
else fail "$name: want status 1, the message once, under 10% of a core, no rank left, 4 to 15 s" "$out.log"; fi

# ---- signals: the ranks stop after the same step, rank 0 saves
# stop_run NAME OUT SIGNAL TARGET WANT: starts a long 2-rank run, waits for step 5, sends
# SIGNAL to TARGET, then checks that rank 0 reported the step it saved, that the checkpoint
# holds it and resumes, and the exit statuses: with TARGET rank1 (that rank's process only)
# each rank's, recorded by a wrapping shell that ignores the signals so as to live to record
# it (the trainer sets its own handlers); with TARGET mpirun, which passes SIGINT and SIGTERM
# on to its direct children only, as SIGCONT, SIGTERM 1 s later and SIGKILL 1 s after that
# (5 s here, with odls_base_sigkill_timeout 5: on a loaded machine the step under way and the
# save can take more than a second), the trainers are its children, and mpirun's own status is
# 1 whatever theirs. (`timeout --foreground`: plain
# `timeout` would pass SIGINT on to mpirun twice, which makes mpirun kill the job at once.)
# mpirun stops forwarding the ranks' output soon after the signal, so with TARGET mpirun the
# report of the step saved may be lost: the checkpoint's step must then be past step 5.
stop_run() {
    local name=$1 out=$2 sig=$3 target=$4 want=$5
    model_but --eval-every
    local args=("${MODEL_BUT[@]}" --steps 100000 --save-every 100000 --eval-every 100000 --threads 1 --zero 1
                --out "$out")
    set -m  # mpirun in its own process group, where SIGINT is not ignored as in a background job
    if [ "$target" = mpirun ]; then
        timeout --foreground 60 mpirun --mca odls_base_sigkill_timeout 5 --oversubscribe -np 2 --bind-to none "$MPI_TRAIN" "${args[@]}" > "$out.log" 2>&1 &
    else
        timeout --foreground 60 mpirun "${NO_ABORT[@]}" --oversubscribe -np 2 --bind-to none sh -c \
            'trap "" INT TERM; "$0" "$@" & echo $! > "'"$out"'.pid.$OMPI_COMM_WORLD_RANK"; wait $!; s=$?;
             echo $s > "'"$out"'.status.$OMPI_COMM_WORLD_RANK"; exit $s' "$MPI_TRAIN" "${args[@]}" > "$out.log" 2>&1 &
    fi
    local launcher=$!
    set +m
    local waited=0
    until grep -aq "step 5/" "$out.log" 2>/dev/null || [ $waited -ge 300 ]; do sleep 0.1; waited=$((waited + 1)); done
    local start=$SECONDS
    if [ "$target" = mpirun ]; then kill -s "$sig" "$launcher"; else kill -s "$sig" "$(cat "$out.pid.1")"; fi
    wait "$launcher"
    local launcher_status=$? secs=$((SECONDS - start)) statuses=ok step saved
    if [ "$target" != mpirun ]; then
        statuses="$(cat "$out.status.0" 2>/dev/null || echo none) $(cat "$out.status.1" 2>/dev/null || echo none)"
        if [ "$statuses" = "$want $want" ]; then statuses=ok; else statuses="rank statuses $statuses, want $want $want"; fi
    fi
    step=$(sed -n 's/.*stopped by SIG[A-Z]* after step \([0-9]*\).*/\1/p' "$out.log")
    saved=$(tr -d '\0' < "$out/ckpt.safetensors" 2>/dev/null | grep -ao '"state.step":"[0-9]*"' | grep -o '[0-9][0-9]*')
    echo "     $name: ${statuses/#ok/rank statuses as wanted}; launcher status $launcher_status after $secs s;" \
         "rank 0 reports step ${step:-none}, the checkpoint holds ${saved:-none}"
    local message=$want
    [ "$want" = 130 ] && message=SIGINT
    local reported=0
    [ -n "$step" ] && [ "$step" = "$saved" ] && grep -aq "stopped by $message" "$out.log" && reported=1
    [ "$target" = mpirun ] && [ -z "$step" ] && [ -n "$saved" ] && [ "$saved" -ge 5 ] && reported=1
    if [ "$statuses" = ok ] && [ $reported = 1 ] && [ $secs -le 30 ] &&
       ./train --resume "$out/ckpt.safetensors" --steps $((saved + 2)) --threads 1 > "$out.resumed.log" 2>&1; then
        pass "$name"
    else fail "$name" "$out.log"; fi
}
stop_run "SIGINT to rank 1 only: both stop after the same step, rank 0 saves, both exit 130" "$DIR/sigint_rank" \
    INT rank1 130
stop_run "SIGINT to mpirun: it sends SIGTERM, rank 0 saves" "$DIR/sigint_mpirun" INT mpirun SIGTERM

echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
