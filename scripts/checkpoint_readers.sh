# scripts/checkpoint_readers.sh, sourced by check_arm64_checkpoint.sh and
# check_windows_checkpoint.sh: whether two builds of ./generate read one checkpoint alike.
# compare_readers WORK CKPT A B, with the caller's shell functions generate_A and generate_B
# (each runs its build's ./generate with the arguments given): both must give the same greedy
# text for a fixed prompt, and score that text alike: each character's loss in their
# --surprisal CSVs within TOLERANCE bits (two builds' sums differ in their last bits, so their
# logits differ by float rounding). Prints what it compared; returns 0, or 1 with the reason on
# stderr.
TOLERANCE=1e-5  # bits: a probability within 0.0007% of the other build's
PROMPT="ROMEO:"

readers_fail() {
    echo "$(basename "$0" .sh): $*" >&2
    return 1
}

# The kernels a run of ./generate named in its messages.
readers_kernels() { sed -n 's/.*kernels \([a-z0-9_]*\).*/\1/p' "$1"; }

# Each character's loss in bits, the CSV's third field (the second, the character, may be
# quoted and hold a comma or a newline: a record goes on over lines that start with the quote
# closing a field).
readers_losses() {
    awk 'function loss(r) { if (match(r, /^[0-9]+,("([^"]|"")*"|[^,]*),/)) { split(substr(r, RLENGTH + 1), f, ","); print f[1] } }
         NR == 1 { next }
         /^"/ { record = record " " $0; next }
         { if (record != "") loss(record); record = $0 }
         END { if (record != "") loss(record) }' "$1"
}

compare_readers() {
    local work=$1 ckpt=$2 a=$3 b=$4
    "generate_$a" "$ckpt" "$PROMPT" -t 0 -n 200 > "$work/$a.txt" 2> "$work/$a.err" ||
        { readers_fail "the $a ./generate failed: $(cat "$work/$a.err")"; return 1; }
    "generate_$b" "$ckpt" "$PROMPT" -t 0 -n 200 > "$work/$b.txt" 2> "$work/$b.err" ||
        { readers_fail "the $b ./generate failed: $(cat "$work/$b.err")"; return 1; }
    echo "greedy text of '$PROMPT' from $ckpt: $a ($(readers_kernels "$work/$a.err") kernels) and $b" \
        "($(readers_kernels "$work/$b.err") kernels)"
    if ! cmp -s "$work/$a.txt" "$work/$b.txt"; then
        echo "$a: $(head -c 120 "$work/$a.txt" | tr '\n' '|')"
        echo "$b: $(head -c 120 "$work/$b.txt" | tr '\n' '|')"
        readers_fail "the greedy texts differ ($(cmp "$work/$a.txt" "$work/$b.txt"))"
        return 1
    fi
    echo "  the same $(wc -c < "$work/$a.txt") bytes: $(head -c 60 "$work/$a.txt" | tr '\n' '|')..."
    # A's text scored by both
    "generate_$a" "$ckpt" --score "$work/$a.txt" --surprisal "$work/$a.csv" > "$work/$a.score" 2>&1 ||
        { readers_fail "the $a ./generate --score failed: $(cat "$work/$a.score")"; return 1; }
    "generate_$b" "$ckpt" --score "$work/$a.txt" --surprisal "$work/$b.csv" > "$work/$b.score" 2>&1 ||
        { readers_fail "the $b ./generate --score failed: $(cat "$work/$b.score")"; return 1; }
    readers_losses "$work/$a.csv" > "$work/$a.loss"
    readers_losses "$work/$b.csv" > "$work/$b.loss"
    local rows scored
    rows=$(wc -l < "$work/$a.loss")
    scored=$(sed -n 's/^surprisal of \([0-9]*\) characters.*/\1/p' "$work/$a.score")
    [ "$rows" -gt 0 ] && [ "$rows" = "$scored" ] && [ "$rows" -eq "$(wc -l < "$work/$b.loss")" ] ||
        { readers_fail "of $scored scored characters the CSVs hold $rows and $(wc -l < "$work/$b.loss")"; return 1; }
    paste -d ' ' "$work/$a.loss" "$work/$b.loss" | awk -v tol="$TOLERANCE" -v rows="$rows" '
        { d = $1 - $2; if (d < 0) d = -d; if (d > worst) { worst = d; at = NR } }
        END {
            printf "  scored alike: %d characters, the largest difference in loss %.2g bits (at character %d; tolerance %g)\n",
                rows, worst, at, tol
            exit worst > tol
        }' || { readers_fail "the two builds score the text differently (see $work/$a.csv, $work/$b.csv)"; return 1; }
}
