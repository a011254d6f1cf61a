#!/usr/bin/env bash
# scripts/check_arm64_checkpoint.sh: a checkpoint written by this machine's ./train (the x86-64
# build) read by the AArch64 ./generate of build-arm64/ under qemu-aarch64 (scripts/qemu_arm64.sh,
# a cortex-a72: the neon kernels). Both must give the same greedy text for a fixed prompt, and
# score that text alike: each character's loss in their --surprisal CSVs within TOLERANCE bits
# (the two builds' sums differ in their last bits, so their logits differ by float rounding).
# Usage: scripts/check_arm64_checkpoint.sh [WORK_DIR] (default build-arm64/checkpoint). Exit
# status 0 when both hold, else 1.
set -uo pipefail
cd "$(dirname "$0")/.."
work="${1:-build-arm64/checkpoint}"
TOLERANCE=1e-5  # bits: a probability within 0.0007% of the other build's
arm_generate() { QEMU_CPU=cortex-a72 scripts/qemu_arm64.sh build-arm64/bin/generate "$@"; }
fail() {
    echo "check_arm64_checkpoint: $*" >&2
    exit 1
}
if [ ! -x ./train ] || [ ! -x ./generate ] || [ ! -x build-arm64/bin/generate ]; then
    fail "build both first (make test-arm64)"
fi
rm -rf "$work"
mkdir -p "$work"
ckpt="$work/run/ckpt.safetensors"
./train --steps 300 --n-layer 2 --n-head 4 --n-embd 64 --block-size 64 --batch-size 16 --lr 3e-3 \
    --eval-every 300 --eval-batches 4 --out "$work/run" > "$work/train.log" 2>&1 || fail "./train failed: see $work/train.log"

prompt="ROMEO:"
./generate "$ckpt" "$prompt" -t 0 -n 200 > "$work/x86.txt" 2> "$work/x86.err" || fail "./generate failed: $(cat "$work/x86.err")"
arm_generate "$ckpt" "$prompt" -t 0 -n 200 > "$work/arm64.txt" 2> "$work/arm64.err" ||
    fail "the AArch64 ./generate failed: $(cat "$work/arm64.err")"
kernels() { sed -n 's/.*kernels \([a-z0-9_]*\).*/\1/p' "$1"; }
echo "greedy text of '$prompt' from $ckpt: x86-64 ($(kernels "$work/x86.err") kernels) and AArch64" \
    "($(kernels "$work/arm64.err") kernels under qemu)"
if ! cmp -s "$work/x86.txt" "$work/arm64.txt"; then
    echo "x86-64:  $(head -c 120 "$work/x86.txt" | tr '\n' '|')"
    echo "AArch64: $(head -c 120 "$work/arm64.txt" | tr '\n' '|')"
    fail "the greedy texts differ ($(cmp "$work/x86.txt" "$work/arm64.txt"))"
fi
echo "  the same $(wc -c < "$work/x86.txt") bytes: $(head -c 60 "$work/x86.txt" | tr '\n' '|')..."

# the x86 text scored by both: each character's loss in bits, the CSV's third field (the second,
# the character, may be quoted and hold a comma or a newline: a record goes on over lines that
# start with the quote closing a field)
./generate "$ckpt" --score "$work/x86.txt" --surprisal "$work/x86.csv" > "$work/x86.score" 2>&1 ||
    fail "./generate --score failed: $(cat "$work/x86.score")"
arm_generate "$ckpt" --score "$work/x86.txt" --surprisal "$work/arm64.csv" > "$work/arm64.score" 2>&1 ||
    fail "the AArch64 ./generate --score failed: $(cat "$work/arm64.score")"
losses() {
    awk 'function loss(r) { if (match(r, /^[0-9]+,("([^"]|"")*"|[^,]*),/)) { split(substr(r, RLENGTH + 1), f, ","); print f[1] } }
         NR == 1 { next }
         /^"/ { record = record " " $0; next }
         { if (record != "") loss(record); record = $0 }
         END { if (record != "") loss(record) }' "$1"
}
losses "$work/x86.csv" > "$work/x86.loss"
losses "$work/arm64.csv" > "$work/arm64.loss"
rows=$(wc -l < "$work/x86.loss")
scored=$(sed -n 's/^surprisal of \([0-9]*\) characters.*/\1/p' "$work/x86.score")
[ "$rows" -gt 0 ] && [ "$rows" = "$scored" ] && [ "$rows" -eq "$(wc -l < "$work/arm64.loss")" ] ||
    fail "of $scored scored characters the CSVs hold $rows and $(wc -l < "$work/arm64.loss")"
paste -d ' ' "$work/x86.loss" "$work/arm64.loss" | awk -v tol="$TOLERANCE" -v rows="$rows" '
    { d = $1 - $2; if (d < 0) d = -d; if (d > worst) { worst = d; at = NR } }
    END {
        printf "  scored alike: %d characters, the largest difference in loss %.2g bits (at character %d; tolerance %g)\n",
            rows, worst, at, tol
        exit worst > tol
    }' || fail "the two builds score the text differently (see $work/x86.csv, $work/arm64.csv)"
