#!/usr/bin/env bash
# scripts/test_arm64.sh: the whole test suite of the AArch64 build (`make test-arm64` builds it
# into build-arm64/ first) under qemu-aarch64 (scripts/qemu_arm64.sh), once per CPU model given
# (default: cortex-a72, without FEAT_BF16, and max, with it), the runs side by side, one a core.
# Each run has a directory of its own, build-arm64/run-CPU/: links to the tree's files, its own
# tests/tmp/, and bin/ with the programs the suite starts (CHARGPT_BIN), scripts that run the
# AArch64 ./train, ./generate and the test program itself (which re-executes itself to measure
# a program's memory: tests/test_helpers.c) under the same CPU model. Each run's output goes to
# build-arm64/tests-CPU.log; this prints its kernels line, its last line and the CPU time its
# processes took, and for a failed run the failed tests' checks.
# Run by default on both models, the runs share out the per-backend tests (tests/test.h's
# test_backends): max, whose kernels are neon_bf16, runs them on neon_bf16 alone
# (CHARGPT_TEST_BACKENDS), as neon, portable and plain, the same code on any AArch64 CPU, run
# them in the cortex-a72 run. They share out too the tests of processes, signals, files and
# formats, which no CPU model changes (their fp32 products are the same code on neon and
# neon_bf16, and none asks for bf16): each runs on one model (CHARGPT_TEST_LEAVE_OUT leaves out
# the other's), by the prefixes of their names below; every other test (the kernels', the
# model's, training's bits and bf16) runs on both. The runs being side by side, the wall time is
# the longer one's: the split balances them. At the end it checks that every test of
# `run_tests --list` ran on one model at least, and fails the run if one did not.
# CHARGPT_TEST_EMULATED=1 tells the tests that train for minutes natively (an emulated step takes
# some 300 times a native one) to train a few steps instead.
# Usage: scripts/test_arm64.sh [CPU...]. Exit status 0 when every run passed, else 1.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
arm=build-arm64
if [ ! -x "$arm/run_tests" ] || [ ! -x "$arm/bin/train" ] || [ ! -x "$arm/bin/generate" ]; then
    echo "test_arm64: build the AArch64 programs and tests first (make test-arm64)" >&2
    exit 1
fi
shared=0
[ $# -gt 0 ] || { set -- cortex-a72 max; shared=1; }
# the model-independent tests, by name prefix: those each model runs alone, chosen so that the
# two runs take about as long (their tests' seconds are in build-arm64/tests-CPU.log)
only_cortex_a72="runs_,bounds_,hardening_"
only_max="generate_,score_,corpora_,timeline_,viewer_,install_,corpus_,data_,safetensors_,probe_,export_,fuzz_"

start=$(date +%s)
pids=()
for cpu in "$@"; do
    run="$arm/run-$cpu"
    rm -rf "$run"
    mkdir -p "$run/tests/tmp" "$run/bin"
    for f in * .[!.]*; do  # .gitignore and .ci/ too: the README's checker reads them
        [ "$f" = tests ] || [ "$f" = "$arm" ] || [ "$f" = .git ] || [ ! -e "$f" ] || ln -s "$root/$f" "$run/$f"
    done
    for f in tests/*; do
        [ "$f" = tests/tmp ] || ln -s "$root/$f" "$run/$f"
    done
    for p in bin/train bin/generate run_tests; do
        printf '#!/bin/sh\nQEMU_CPU=%s exec %s/scripts/qemu_arm64.sh %s/%s/%s "$@"\n' "$cpu" "$root" "$root" "$arm" "$p" \
            > "$run/bin/${p#bin/}"
        chmod +x "$run/bin/${p#bin/}"
    done
    only=
    leave_out=
    if [ $shared = 1 ]; then
        [ "$cpu" = max ] && only=neon_bf16 && leave_out=$only_cortex_a72
        [ "$cpu" = cortex-a72 ] && leave_out=$only_max
    fi
    (cd "$run" && TIMEFORMAT="user %0U s, system %0S s" && {
        time QEMU_CPU="$cpu" CHARGPT_BIN="$root/$run/bin" CHARGPT_TEST_BACKENDS="$only" \
            CHARGPT_TEST_LEAVE_OUT="$leave_out" CHARGPT_TEST_EMULATED=1 \
            "$root/scripts/qemu_arm64.sh" "$root/$arm/run_tests" > "$root/$arm/tests-$cpu.log" 2>&1
    } 2> "$root/$arm/cpu-time-$cpu") &
    pids+=($!)
done

failed=0
i=0
for cpu in "$@"; do
    wait "${pids[$i]}"
    status=$?
    i=$((i + 1))
    log="$arm/tests-$cpu.log"
    echo "qemu-aarch64 -cpu $cpu: $(head -n 1 "$log"); $(tail -n 1 "$log") (CPU time:" \
        "$(cat "$arm/cpu-time-$cpu"))"
    if [ $status -ne 0 ]; then
        grep -B 12 '^FAIL' "$log"
        failed=1
    fi
done
echo "test_arm64: $# runs side by side in $(( $(date +%s) - start )) s"

# every test ran under emulation: on one model at least (a test that the split left out of
# both, or that a run never reached, is a failure)
all=$(QEMU_CPU="$1" "$root/scripts/qemu_arm64.sh" "$root/$arm/run_tests" --list) || {
    echo "test_arm64: run_tests --list failed"
    exit 1
}
ran=$(for cpu in "$@"; do sed -n 's/^\(ok  \|FAIL\|skip\) \([^ ]*\) .*/\2/p' "$arm/tests-$cpu.log"; done | sort -u)
missed=$(comm -23 <(echo "$all" | sort) <(echo "$ran"))
for cpu in "$@"; do
    echo "test_arm64: $cpu ran $(grep -cE '^(ok  |FAIL|skip) ' "$arm/tests-$cpu.log") of the $(echo "$all" | wc -l) tests$(
        sed -n 's/^[0-9]* left out: their names start with \(.*\) (CHARGPT_TEST_LEAVE_OUT)$/, not those whose names start with \1/p' \
            "$arm/tests-$cpu.log")"
done
if [ -n "$missed" ]; then
    echo "test_arm64: tests that ran on no CPU model:" $missed
    failed=1
fi
exit $failed
