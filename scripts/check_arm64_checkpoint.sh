#!/usr/bin/env bash
# scripts/check_arm64_checkpoint.sh: a checkpoint written by this machine's ./train (the x86-64
# build) read by the AArch64 ./generate of build-arm64/ under qemu-aarch64 (scripts/qemu_arm64.sh,
# a cortex-a72: the neon kernels): the same greedy text for a fixed prompt, and that text scored
# alike (scripts/checkpoint_readers.sh).
# Usage: scripts/check_arm64_checkpoint.sh [WORK_DIR] (default build-arm64/checkpoint;
# emptied first, and refused when it holds files no run of these scripts made:
# scripts/work_dir.sh). Exit status 0 when both hold, 2 when the directory is refused, else 1.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/checkpoint_readers.sh
work="${1:-build-arm64/checkpoint}"
generate_x86() { ./generate "$@"; }
generate_arm64() { QEMU_CPU=cortex-a72 scripts/qemu_arm64.sh build-arm64/bin/generate "$@"; }
if [ ! -x ./train ] || [ ! -x ./generate ] || [ ! -x build-arm64/bin/generate ]; then
    readers_fail "build both first (make test-arm64)"
    exit 1
fi
. scripts/work_dir.sh
work_dir_fresh "$work" "$(($# > 0))" || exit $?
./train --steps 300 --n-layer 2 --n-head 4 --n-embd 64 --block-size 64 --batch-size 16 --lr 3e-3 \
    --eval-every 300 --eval-batches 4 --out "$work/run" > "$work/train.log" 2>&1 ||
    { readers_fail "./train failed: see $work/train.log"; exit 1; }
compare_readers "$work" "$work/run/ckpt.safetensors" x86 arm64
