#!/usr/bin/env bash
# scripts/check_dispatch.sh: the default build's programs (./train, ./generate) on older x86-64
# CPUs, emulated by qemu-user (Debian's qemu-user: qemu-x86_64 -cpu MODEL). On each CPU a short
# training and a generation must run to the end (no illegal instruction) and name the kernels
# the CPU should get: Nehalem (no AVX) portable, Haswell (AVX2 and FMA, no AVX-512) avx2; a
# bf16 training must say, before it starts, that the CPU has no bf16 dot-product instructions;
# and a backend the emulated CPU lacks, forced with CHARGPT_KERNELS, must be refused with exit
# status 2 and a message naming what it lacks.
# Usage: scripts/check_dispatch.sh [WORK_DIR] (default tests/tmp/dispatch;
# emptied first, and refused when it holds files no run of these scripts made:
# scripts/work_dir.sh). Exit status 0 when every check holds, 2 when the directory is refused,
# else 1.
set -uo pipefail
cd "$(dirname "$0")/.."
work="${1:-tests/tmp/dispatch}"
qemu=qemu-x86_64
if ! command -v "$qemu" >/dev/null; then
    echo "check_dispatch: $qemu not found (Debian: apt-get install qemu-user)" >&2
    exit 1
fi
if [ ! -x ./train ] || [ ! -x ./generate ]; then
    echo "check_dispatch: build the programs first (make)" >&2
    exit 1
fi
. scripts/work_dir.sh
work_dir_fresh "$work" "$(($# > 0))" || exit $?
# a short corpus: under emulation every character read and every validation window costs
gzip -dc data/tinyshakespeare.txt.gz | head -c 20000 > "$work/corpus.txt"
failed=0
fail() {
    echo "check_dispatch: $*" >&2
    failed=1
}

# cpu kernels-it-should-get kernels-it-lacks
while read -r cpu want lacks; do
    log="$work/$cpu.train.log"
    # qemu's own warnings about features its TCG does not emulate go to stderr: keep them apart
    timeout 600 "$qemu" -cpu "$cpu" ./train --data "$work/corpus.txt" --steps 3 --n-layer 1 --n-head 2 --n-embd 32 --block-size 16 \
        --batch-size 2 --eval-every 3 --eval-batches 1 --threads 2 --out "$work/$cpu" > "$log" 2> "$log.err"
    status=$?
    if [ $status -ne 0 ]; then
        fail "$cpu: ./train exited with status $status (see $log, $log.err)"
    elif ! grep -q "kernels $want\$" "$log"; then
        fail "$cpu: ./train's model line does not name the $want kernels: $(grep '^model:' "$log")"
    elif ! grep -q '^done: 3 steps' "$log"; then
        fail "$cpu: ./train did not finish its 3 steps (see $log)"
    else
        echo "$cpu: ./train ran 3 steps on the $want kernels"
    fi
    log="$work/$cpu.generate.log"
    timeout 600 "$qemu" -cpu "$cpu" ./generate "$work/$cpu/ckpt.safetensors" "ROMEO:" -n 20 > "$log" 2>&1
    status=$?
    if [ $status -ne 0 ]; then
        fail "$cpu: ./generate exited with status $status (see $log)"
    elif ! grep -q "generated 20 characters.*kernels $want)" "$log"; then
        fail "$cpu: ./generate does not name the $want kernels: $(grep '^generated' "$log")"
    else
        echo "$cpu: ./generate made 20 characters on the $want kernels"
    fi
    log="$work/$cpu.bf16.log"
    timeout 600 "$qemu" -cpu "$cpu" ./train --data "$work/corpus.txt" --precision bf16 --steps 1 --n-layer 1 \
        --n-head 2 --n-embd 32 --block-size 16 --batch-size 2 --val-fraction 0.01 --threads 2 --out "$work/$cpu-bf16" \
        > "$log" 2> "$log.err"
    status=$?
    if [ $status -ne 0 ] || ! sed -n '3p' "$log" | grep -q "^note: this CPU has no bf16 dot-product instructions"; then
        fail "$cpu: a bf16 run (status $status) does not say first what the CPU lacks (see $log)"
    else
        echo "$cpu: bf16: $(sed -n '3p' "$log" | cut -c1-100)..."
    fi
    log="$work/$cpu.refused.log"
    CHARGPT_KERNELS="$lacks" timeout 600 "$qemu" -cpu "$cpu" ./train --data "$work/corpus.txt" --steps 1 \
        --out "$work/$cpu-refused" > "$log" 2>&1
    status=$?
    if [ $status -ne 2 ] || ! grep -q "CHARGPT_KERNELS: the $lacks kernels need .* which this CPU does not have" "$log"; then
        fail "$cpu: CHARGPT_KERNELS=$lacks gave status $status, not 2 with a message (see $log)"
    else
        echo "$cpu: CHARGPT_KERNELS=$lacks refused: $(grep 'CHARGPT_KERNELS' "$log")"
    fi
done <<'EOF'
Nehalem portable avx2
Haswell avx2 avx512
EOF
exit $failed
