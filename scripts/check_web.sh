#!/usr/bin/env bash
# Checks the page web/chargpt.html in headless Chromium (scripts/headless_page.js) against the
# native programs, through the page's hooks:
#   training   #task=induction&seed=S&steps=N&selftest against CHARGPT_KERNELS=portable ./train
#              --task induction --seed S --steps N --log-every 1: every step's loss within
#              MAX_LOSS_DIFF (1e-4), the last validation loss too (prints the largest difference),
#              and the checkpoint's tensors bit-identical (the SHA-256 of its data section)
#   a model    #ckpt=...&prompt=TEXT&selftest on that run's checkpoint: bits_per_char as
#              ./generate --score prints it for the text, and the 50 characters ./generate -t 0
#              appends to it, the same
#   bad input  a truncated checkpoint and one whose inspection would need more memory than the
#              page has (a RoPE model's block size made 65536, its CRC made good again) each
#              end in the page's message, which names the problem
# usage: scripts/check_web.sh [STEPS] [SEED]   (after make and make web; default 200 steps, seed 7)
set -u
cd "$(dirname "$0")/.."
steps=${1:-200}
seed=${2:-7}
MAX_LOSS_DIFF=1e-4
work=tests/tmp/web-check
rm -rf "$work"
mkdir -p "$work"
page="file://$PWD/web/chargpt.html"
rel=../$work  # the checkpoints as the page (in web/) reaches them
status=0
fail() {
    echo "check_web: $*" >&2
    status=1
}
for f in web/chargpt.html train generate; do
    [ -f "$f" ] || { echo "check_web: $f is missing: run make and make web" >&2; exit 2; }
done
# the value of key in the page's data-result (a JSON object inside a JSON object)
result() { node -e 'const r = JSON.parse(JSON.parse(require("fs").readFileSync(0, "utf8")).result);
    const v = r[process.argv[1]]; console.log(v === undefined ? "" : typeof v === "object" ? JSON.stringify(v) : v)' "$1"; }

# ---- training: the page's losses against ./train's
CHARGPT_KERNELS=portable ./train --task induction --seed "$seed" --steps "$steps" --log-every 1 --out "$work/native" \
    > "$work/native.log" 2>&1 || fail "./train failed: $(tail -n 3 "$work/native.log")"
if node scripts/headless_page.js "$page#task=induction&seed=$seed&steps=$steps&selftest" 900 > "$work/train.json" \
    2> "$work/train.err"; then
    echo "$(result train_loss < "$work/train.json")" > "$work/page_losses.json"
    awk -F, 'NR > 1 { print $2 }' "$work/native/log.csv" > "$work/native_losses.txt"
    report=$(node -e '
        const fs = require("fs"), page = JSON.parse(fs.readFileSync(process.argv[1], "utf8"));
        const native = fs.readFileSync(process.argv[2], "utf8").trim().split("\n").map(Number);
        let worst = 0, at = 0;
        if (page.length !== native.length) { console.log("steps " + page.length + " " + native.length); process.exit(0); }
        page.forEach((x, i) => { const d = Math.abs(x - native[i]); if (!(d <= worst)) { worst = d; at = i + 1; } });
        console.log("diff " + worst.toPrecision(3) + " " + (at ? "at step " + at : "at every step"));' \
        "$work/page_losses.json" "$work/native_losses.txt")
    read -r kind a b <<< "$report"  # "diff D at step S", or "steps PAGE NATIVE"
    if [ "$kind" = steps ]; then
        fail "the page trained $a steps, ./train $b"
    elif awk -v d="$a" -v m="$MAX_LOSS_DIFF" 'BEGIN { exit !(d <= m) }'; then
        echo "check_web: $steps steps of --task induction --seed $seed: the largest difference from ./train's losses" \
            "(log.csv's 6 decimals) is $a, $b; the page took $(printf %.1f "$(result seconds < "$work/train.json")") s"
    else
        fail "the loss differs from ./train's by $a ($b), more than $MAX_LOSS_DIFF"
    fi
    native_sha=$(node -e 'const b = require("fs").readFileSync(process.argv[1]);
        console.log(require("crypto").createHash("sha256").update(b.subarray(8 + b.readUInt32LE(0))).digest("hex"))' \
        "$work/native/ckpt.safetensors")
    page_sha=$(result tensors_sha256 < "$work/train.json")
    if [ "$page_sha" = "$native_sha" ]; then
        echo "check_web: the page's checkpoint holds ./train's tensors bit for bit (SHA-256 ${native_sha:0:16}...)"
    else
        fail "the page's checkpoint's tensors (SHA-256 $page_sha) are not ./train's ($native_sha)"
    fi
    native_val=$(awk -F, 'NR > 1 && $3 != "" { v = $3 } END { print v }' "$work/native/log.csv")
    page_val=$(result val_loss < "$work/train.json")
    awk -v a="$native_val" -v b="$page_val" -v m="$MAX_LOSS_DIFF" 'BEGIN { d = a - b; exit !(b != "" && d <= m && -d <= m) }' ||
        fail "the page's last validation loss $page_val, ./train's $native_val"
else
    fail "the page did not train: $(cat "$work/train.err")"
fi

# ---- a model: the page's score and greedy continuation against ./generate's
prompt="qwertyuiopqwertyuiopzxcvbnmasdfzxcvbnmasdf"  # the induction task's alphabet: a to z
printf '%s' "$prompt" > "$work/prompt.txt"
encoded=$(node -e 'console.log(encodeURIComponent(process.argv[1]))' "$prompt")
native_bits=$(./generate "$work/native/ckpt.safetensors" --score "$work/prompt.txt" | sed -n 's/.* \([0-9.]*\) bits\/char.*/\1/p')
native_greedy=$(./generate "$work/native/ckpt.safetensors" -n 50 -t 0 -- "$prompt" 2>/dev/null)
native_greedy=${native_greedy#"$prompt"}
if node scripts/headless_page.js "$page#ckpt=$rel/native/ckpt.safetensors&prompt=$encoded&selftest" 300 \
    > "$work/model.json" 2> "$work/model.err"; then
    page_bits=$(result bits_per_char < "$work/model.json")
    page_greedy=$(result greedy < "$work/model.json")
    [ -n "$page_bits" ] && [ "$page_bits" = "$native_bits" ] ||
        fail "bits per character: the page's '$page_bits', ./generate --score's '$native_bits'"
    [ "$page_greedy" = "$native_greedy" ] ||
        fail "greedy continuation: the page's '$page_greedy', ./generate -t 0's '$native_greedy'"
    echo "check_web: the checkpoint in the page: $page_bits bits per character (./generate --score: $native_bits)," \
        "the same 50 greedy characters; an inspector update took $(printf %.0f "$(result update_ms < "$work/model.json")") ms"
else
    fail "the page did not open the checkpoint: $(cat "$work/model.err")"
fi

# ---- bad input: each checkpoint refused with its message
head -c 5000 "$work/native/ckpt.safetensors" > "$work/truncated.safetensors"
./train --task induction --pos rope --steps 1 --no-probe --out "$work/rope" > "$work/rope.log" 2>&1 ||
    fail "./train --pos rope failed: $(tail -n 3 "$work/rope.log")"
# block_size 65536 in the metadata (a RoPE model has no table to match it), the header padded to
# 8 bytes as the writer pads it, the CRC over the file with its own value as 00000000
# (format/safetensors.h)
python3 - "$work/rope/ckpt.safetensors" "$work/huge_block.safetensors" <<'EOF' || fail "cannot make the huge-block checkpoint"
import json, struct, sys, zlib
data = open(sys.argv[1], 'rb').read()
n = struct.unpack('<Q', data[:8])[0]
header = json.loads(data[8:8 + n])
header['__metadata__']['block_size'] = '65536'
header['__metadata__']['crc32'] = '00000000'
text = json.dumps(header, separators=(',', ':')).encode()
text += b' ' * (-len(text) % 8)
body = struct.pack('<Q', len(text)) + text + data[8 + n:]
crc = '%08x' % (zlib.crc32(body) & 0xffffffff)
open(sys.argv[2], 'wb').write(body.replace(b'"crc32":"00000000"', ('"crc32":"%s"' % crc).encode(), 1))
EOF
for case in "truncated:is larger than the rest of the file" "huge_block:needs"; do
    name=${case%%:*} want=${case#*:}
    if node scripts/headless_page.js "$page#ckpt=$rel/$name.safetensors&prompt=abc&selftest" 120 > "$work/$name.json" \
        2> "$work/$name.err"; then
        rendered=$(node -e 'console.log(JSON.parse(require("fs").readFileSync(0, "utf8")).rendered)' < "$work/$name.json")
        message=$(result error < "$work/$name.json")
        if [ "$rendered" != refused ] || [[ "$message" != *"$want"* ]]; then
            fail "$name.safetensors: the page said '$rendered' '$message', want its refusal ('$want')"
        else
            echo "check_web: $name.safetensors refused: $message"
        fi
    else
        fail "$name.safetensors: the page did not answer: $(cat "$work/$name.err")"
    fi
done
exit $status
