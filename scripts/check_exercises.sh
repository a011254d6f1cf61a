#!/usr/bin/env bash
# CI for the exercises (`make test-exercises`, docs/exercises.md): every exercise's stub
# (exercises/NAME.c as shipped) must fail its checks with the message that says it computes
# nothing yet, and the project's own function (SOLUTION=1) must pass them and the training run,
# so that neither can go stale; a function that loops, one that crashes and one that writes
# past an array must each end in a message naming that, under the time limit; a deliberately
# wrong attention (tests/exercises/wrong/attention_no_scale.c) must be named for its missing
# 1/sqrt(hs); a GELU, and a GELU backward, right on the checks' small arrays and wrong on the
# model's must be caught by the training run (which shows the run has the learner's function
# in its loop), and right ones (tests/exercises/right/) must pass it, through the exercise
# build's tests/exercises/through/gelu.c; each solution the checker names must be defined
# where it says; and docs/exercises.md must list the exercises in the checker's order with its
# minutes. Each run's output is in build/exercises/ci/. Prints what the checker says of the
# attention, and the time taken; exits 1 when any check failed.
set -uo pipefail
cd "$(dirname "$0")/.."

check=build/exercises/check
logs=build/exercises/ci
mkdir -p "$logs"
passed=0
failed=0
start=$(date +%s)

# expect LABEL WANT PATTERN MAKE-ARGS...: runs `make exercise MAKE-ARGS` (at most 15 minutes);
# WANT is pass or fail, and its output must match the extended regular expression PATTERN.
expect() {
    local label=$1 want=$2 pattern=$3
    shift 3
    local log="$logs/$label.log" status=0
    timeout 900 make -s --no-print-directory exercise "$@" > "$log" 2>&1 || status=$?
    local ok=1
    if [ "$want" = pass ] && [ $status -ne 0 ]; then ok=0; fi
    if [ "$want" = fail ] && { [ $status -eq 0 ] || [ $status -eq 124 ]; }; then ok=0; fi
    grep -Eq -- "$pattern" "$log" || ok=0
    if [ $ok -eq 1 ]; then
        passed=$((passed + 1))
        echo "ok   $label"
    else
        failed=$((failed + 1))
        echo "FAIL $label: make exercise $* exited $status; expected to $want with output matching '$pattern':"
        sed 's/^/     /' "$log" | tail -n 20
    fi
}

table=$($check --table) || { echo "cannot run $check"; exit 1; }
for name in $(echo "$table" | cut -d' ' -f1); do
    expect "$name-stub" fail "computes nothing yet \(still the stub\?\)" NAME="$name"
    expect "$name-solution" pass "^$name: passed" NAME="$name" SOLUTION=1
done

expect loop fail "did not return within 3 seconds" NAME=gelu FILE=tests/exercises/wrong/loop.c TIME_LIMIT=3
expect crash fail "your linear_forward crashed" NAME=linear FILE=tests/exercises/wrong/crash.c
expect out-of-bounds fail "wrote out\[28\], past the end of out" NAME=layernorm FILE=tests/exercises/wrong/out_of_bounds.c
expect through-gelu pass "^gelu: passed" NAME=gelu FILE=tests/exercises/right/gelu.c
expect through-gelu-backward pass "^gelu_backward: passed" NAME=gelu_backward FILE=tests/exercises/right/gelu_backward.c
expect large-arrays fail "parts from the project's at step 1 of" NAME=gelu FILE=tests/exercises/wrong/gelu_large_arrays.c
expect backward-large-arrays fail "parts from the project's at step 1 of" NAME=gelu_backward \
    FILE=tests/exercises/wrong/gelu_backward_large_arrays.c
expect attention-no-scale fail "not divided by sqrt\(hs\)" NAME=attention FILE=tests/exercises/wrong/attention_no_scale.c
echo "what the checker says of an attention without the 1/sqrt(hs):"
sed 's/^/     /' "$logs/attention-no-scale.log"

# each exercise's solution: the file the checker names defines the function (it cannot go stale
# if the function moves)
missing=0
while read -r name function solution _; do
    grep -Eq "^[a-z].*[ *]$function\(" "$solution" && continue
    missing=$((missing + 1))
    echo "FAIL $name: $solution does not define $function, which the checker names as its solution"
done <<< "$table"
if [ $missing -eq 0 ]; then
    passed=$((passed + 1))
    echo "ok   each solution the checker names is defined in the file it names"
else
    failed=$((failed + 1))
fi

# docs/exercises.md's table, "| 1 | `gelu` | `gelu_forward` | 10 min | ...": its names and
# minutes in order, against the checker's
listed=$(echo "$table" | awk '{ print $1, $4 }')
documented=$(grep -E '^\| [0-9]+ \|' docs/exercises.md | sed -E 's/^\| [0-9]+ \| `([a-z_]+)`.*\| ([0-9]+) min.*$/\1 \2/')
if [ "$listed" = "$documented" ]; then
    passed=$((passed + 1))
    echo "ok   docs/exercises.md lists the exercises in the checker's order, with its minutes"
else
    failed=$((failed + 1))
    echo "FAIL docs/exercises.md's table differs from the checker's list (name and minutes):"
    diff <(echo "$listed") <(echo "$documented") | sed 's/^/     /'
fi

echo "exercises: $passed passed, $failed failed ($(( $(date +%s) - start )) s)"
[ $failed -eq 0 ]
