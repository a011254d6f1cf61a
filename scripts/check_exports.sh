#!/usr/bin/env bash
# Checks `./generate CKPT --export` with the programs that read its files (CI runs it:
# .ci/run), on models trained here for a few seconds each: the default architecture (learned
# positions), the same with --pos rope, a small one with no qkv bias and heads that do not
# split n_embd (ONNX only: GGUF refuses it), and a tiny one whose vocabulary holds every
# character a GGUF token's text escapes (\ tab CR LF " control characters, and 2, 3 and
# 4 bytes of UTF-8).
#  - The npm packages of scripts/export_check/ are installed from its package-lock.json
#    (npm ci, exact versions, --ignore-scripts: onnxruntime-node's install script fetches GPU
#    libraries, node-llama-cpp's would build llama.cpp, which its prebuilt linux-x64 package
#    makes needless): node-llama-cpp 3.21.1, llama.cpp's prebuilt library (x86-64 Linux), and
#    onnxruntime-node 1.30.0, ONNX Runtime's CPU build. When the npm registry cannot be reached,
#    or Node.js is older than node-llama-cpp's 20, the checks that need them say SKIPPED and
#    why, loudly, and the others run; an installed package that disagrees fails.
#  - Every .onnx file is checked by Debian's python3-onnx (onnx.checker with full_check), its
#    metadata against the checkpoint's (export_check/check_onnx_model.py).
#  - llama.cpp (export_check/check_gguf.mjs): the tokens, the log-probabilities of a prompt
#    within 1e-3 of ./generate's and, for the two trained models, greedy text of 200
#    characters the same as ./generate -t 0's.
#  - ONNX Runtime (export_check/check_onnx.mjs): logits within 1e-4 of ./generate's for
#    batches of 3 prompts of 1, 24 and block_size characters.
# Each step's time is printed, and their sum at the end.
#
# usage: scripts/check_exports.sh [WORK_DIR]   (default tests/tmp/exports; emptied first, and
# refused when it holds files no run of these scripts made: scripts/work_dir.sh)
# Exit status: 0 every check that ran passed (some may say SKIPPED), 1 a check failed, 2 the
# directory refused.
set -euo pipefail
cd "$(dirname "$0")/.."
work=${1:-tests/tmp/exports}
packages=scripts/export_check
. scripts/work_dir.sh
work_dir_fresh "$work" "$(($# > 0))" || exit $?
start=$SECONDS
step_start=$SECONDS
step_done() {  # prints how long the step took
    echo "check_exports: $1 took $((SECONDS - step_start)) s"
    step_start=$SECONDS
}
skipped() {
    echo "check_exports: SKIPPED $1"
    echo "check_exports: SKIPPED $1" >> "$work/skipped.txt"
}

# 1. the packages: llama=1 and ort=1 when they can run
llama=0 ort=0
node_major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
if [ "$node_major" -eq 0 ] || ! command -v npm >/dev/null; then
    skipped "llama.cpp and ONNX Runtime checks: no Node.js and npm on this machine (apt-get install nodejs npm)"
elif [ "$(uname -m)" != x86_64 ]; then
    skipped "llama.cpp and ONNX Runtime checks: the pinned prebuilt llama.cpp is x86-64's, this machine is $(uname -m)"
elif ! (cd "$packages" && npm ci --ignore-scripts --omit=optional --no-audit --no-fund --prefer-offline) \
        > "$work/npm.log" 2>&1; then
    if grep -Eq 'E(NOTFOUND|AI_AGAIN|CONNREFUSED|CONNRESET|TIMEDOUT|NETUNREACH|HOSTUNREACH)|npm (ERR!|error) network' \
            "$work/npm.log"; then
        skipped "llama.cpp and ONNX Runtime checks: npm ci cannot reach the npm registry ($(grep -Em1 \
            'code E|network' "$work/npm.log"))"
    else
        cat "$work/npm.log"
        echo "check_exports: npm ci failed (above), and not for want of a network"
        exit 1
    fi
else
    ort=1
    if [ "$node_major" -ge 20 ]; then llama=1; else
        skipped "llama.cpp check: node-llama-cpp 3.21.1 needs Node.js 20 or later, this machine's is $(node --version)"
    fi
fi
[ $ort = 0 ] || echo "check_exports: $(du -sh "$packages/node_modules" | cut -f1) in $packages/node_modules"
step_done "installing the npm packages"

# 2. the models
train() {  # train NAME ARGS...: a model in $work/NAME
    local name=$1
    shift
    ./train "$@" --out "$work/$name" --no-probe --eval-every 1000000 --eval-batches 1 --final-val-chars 0 \
        > "$work/$name.log" 2>&1 || { cat "$work/$name.log"; exit 1; }
}
train learned --steps 200
train rope --steps 200 --pos rope
train narrow --steps 30 --n-layer 2 --n-head 3 --n-embd 48 --head-size 10 --no-qkv-bias --block-size 32
# (with the letters of "some test text here", which node-llama-cpp tokenizes when it loads a model:
# llama.cpp gives a character outside a vocabulary without an unknown token no token, -1, and
# node-llama-cpp 3.21.1 stops on it)
printf 'some test text here\\ \t \xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80 "q" \x01\x7f\r\n%.0s' $(seq 200) > "$work/escapes.txt"
train escapes --steps 5 --data "$work/escapes.txt" --keep-cr --n-layer 1 --n-head 2 --n-embd 32 --block-size 32
step_done "training 4 models"

# 3. the files, and the refusal of a model GGUF cannot carry
for m in learned rope narrow escapes; do
    ./generate "$work/$m/ckpt.safetensors" --export "$work/$m.onnx" > "$work/$m.export.txt"
    [ $m = narrow ] || ./generate "$work/$m/ckpt.safetensors" --export "$work/$m.gguf" >> "$work/$m.export.txt"
    cat "$work/$m.export.txt"
done
if ./generate "$work/narrow/ckpt.safetensors" --export "$work/narrow.gguf" 2> "$work/narrow.refused.txt" ||
        ! grep -q "cannot be written as GGUF" "$work/narrow.refused.txt" || [ -e "$work/narrow.gguf" ]; then
    echo "check_exports: the narrow model's GGUF export was not refused:"
    cat "$work/narrow.refused.txt"
    exit 1
fi
step_done "exporting"

# 4. ONNX's checker
for m in learned rope narrow escapes; do
    /usr/bin/python3 $packages/check_onnx_model.py "$work/$m.onnx" "$work/$m/ckpt.safetensors"
done
step_done "onnx.checker"

# 5. the references: ./generate's logits of prompts, 3 each of 1, 24 and block_size characters
# (and of the greedy text's prompt, the escapes' characters), and its greedy text
text="ROMEO: But soft, what light through yonder window breaks? It is the east, and Juliet is the sun."
prompt="ROMEO: But soft"
for m in learned rope narrow; do
    block=$(grep -ao '"block_size":"[0-9]*"' "$work/$m/ckpt.safetensors" | head -1 | tr -dc 0-9)
    for length in 1 24 "$block"; do
        for offset in 0 7 30; do
            ./generate "$work/$m/ckpt.safetensors" -n 0 --logits "$work/$m.prompt-$length-$offset.json" -- \
                "${text:$offset:$length}" > /dev/null 2>&1
        done
    done
    ./generate "$work/$m/ckpt.safetensors" -n 0 --logits "$work/$m.greedy-prompt.json" "$prompt" > /dev/null 2>&1
done
./generate "$work/learned/ckpt.safetensors" "$prompt" -n 200 -t 0 > "$work/learned.greedy.txt" 2> /dev/null
# past the block a RoPE model's ./generate rolls its cache; --no-cache reads the exact window, as llama.cpp does here
./generate "$work/rope/ckpt.safetensors" "$prompt" -n 200 -t 0 --no-cache > "$work/rope.greedy.txt" 2> /dev/null
head -c 41 "$work/escapes.txt" > "$work/escapes.prompt.txt"  # its every character: its first line
./generate "$work/escapes/ckpt.safetensors" -f "$work/escapes.prompt.txt" -n 0 --logits "$work/escapes.json" \
    > /dev/null 2>&1
step_done "./generate's logits and greedy text"

# 6. the programs
status=0
if [ $llama = 1 ]; then
    for m in learned rope; do
        node $packages/check_gguf.mjs "$work/$m.gguf" "$work/$m.greedy-prompt.json" "$work/$m".prompt-*.json \
            --greedy "$work/$m.greedy.txt" || status=1
    done
    node $packages/check_gguf.mjs "$work/escapes.gguf" "$work/escapes.json" || status=1
    step_done "llama.cpp"
fi
if [ $ort = 1 ]; then
    for m in learned rope narrow; do
        node $packages/check_onnx.mjs "$work/$m.onnx" "$work/$m".prompt-*.json || status=1
    done
    node $packages/check_onnx.mjs "$work/escapes.onnx" "$work/escapes.json" || status=1
    step_done "ONNX Runtime"
fi
[ -e "$work/skipped.txt" ] && cat "$work/skipped.txt"
echo "check_exports: $([ $status = 0 ] && echo passed || echo FAILED) in $((SECONDS - start)) s"
exit $status
