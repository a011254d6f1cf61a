#!/usr/bin/env bash
# scripts/check_windows_checkpoint.sh: checkpoints cross between Linux and Windows. A checkpoint
# written by this machine's ./train is read by the Windows generate.exe of build-windows/bin/
# under wine64 (scripts/wine_windows.sh), and one written by the Windows train.exe is read by
# this machine's ./generate: each pair gives the same greedy text for a fixed prompt and scores
# that text alike (scripts/checkpoint_readers.sh). The two runs train the same model from the
# same seed: the same initial weights, bit for bit; the two C libraries' expf, logf, powf and cos
# (the loss, AdamW's bias correction, the schedule) differ in a last bit now and then, so the
# weights part in their last bits as training goes on, and the final train losses must agree
# within 0.001.
# Usage: scripts/check_windows_checkpoint.sh [WORK_DIR] (default build-windows/checkpoint;
# emptied first, and refused when it holds files no run of these scripts made:
# scripts/work_dir.sh). Exit status 0 when all hold, 2 when the directory is refused, else 1.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/checkpoint_readers.sh
work="${1:-build-windows/checkpoint}"
generate_linux() { ./generate "$@"; }
generate_windows() { scripts/wine_windows.sh build-windows/bin/generate.exe "$@"; }
if [ ! -x ./train ] || [ ! -x ./generate ] || [ ! -x build-windows/bin/train.exe ] ||
    [ ! -x build-windows/bin/generate.exe ]; then
    readers_fail "build both first (make test-windows)"
    exit 1
fi
. scripts/work_dir.sh
work_dir_fresh "$work" "$(($# > 0))" || exit $?
mkdir -p "$work/linux" "$work/windows"
args=(--steps 300 --n-layer 2 --n-head 4 --n-embd 64 --block-size 64 --batch-size 16 --lr 3e-3
    --eval-every 300 --eval-batches 4 --threads 2)
./train "${args[@]}" --out "$work/linux/run" > "$work/linux/train.log" 2>&1 ||
    { readers_fail "./train failed: see $work/linux/train.log"; exit 1; }
scripts/wine_windows.sh build-windows/bin/train.exe "${args[@]}" --out "$work/windows/run" \
    > "$work/windows/train.log" 2>&1 || { readers_fail "train.exe failed: see $work/windows/train.log"; exit 1; }
echo "Linux's checkpoint:"
compare_readers "$work/linux" "$work/linux/run/ckpt.safetensors" linux windows || exit 1
echo "Windows's checkpoint:"
compare_readers "$work/windows" "$work/windows/run/ckpt.safetensors" windows linux || exit 1
# the same training on both systems
linux_loss=$(sed -n 's/.*final train loss \([0-9.]*\).*/\1/p' "$work/linux/train.log")
windows_loss=$(sed -n 's/.*final train loss \([0-9.]*\).*/\1/p' "$work/windows/train.log")
echo "final train loss: $linux_loss on Linux, $windows_loss on Windows"
awk -v a="$linux_loss" -v b="$windows_loss" 'BEGIN { d = a - b; exit !(a != "" && b != "" && d < 1e-3 && d > -1e-3) }' ||
    { readers_fail "the two systems trained differently (see $work/*/train.log)"; exit 1; }
