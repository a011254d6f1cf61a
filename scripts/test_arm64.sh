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
# them in the cortex-a72 run.
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
    [ $shared = 1 ] && [ "$cpu" = max ] && only=neon_bf16
    (cd "$run" && TIMEFORMAT="user %0U s, system %0S s" && {
        time QEMU_CPU="$cpu" CHARGPT_BIN="$root/$run/bin" CHARGPT_TEST_BACKENDS="$only" CHARGPT_TEST_EMULATED=1 \
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
exit $failed
