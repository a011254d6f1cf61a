#!/usr/bin/env bash
# make bench-web: the page's speed (web/chargpt.html in headless Chromium, one Web Worker)
# against the native programs', each pair measured in turn (page, native, native, page) in one
# run, in wall seconds and in CPU seconds (the browser's: every process of it, from its start;
# the machine is shared, and a loaded one stretches wall times), and their ratios:
#   training   the induction recipe (./train --task induction: 2,000 steps, its evaluations,
#              probes and saves) through the page's hook #task=induction&seed=1337&log-every=25
#              &selftest, against ./train --task induction --seed 1337 --threads 1 with the
#              fastest kernels this CPU runs, and with CHARGPT_KERNELS=portable (the page's
#              arithmetic, bit for bit); the page's wall seconds from its Train to ./train's end
#   inspector  an update of the inspector for a 64-character text on the default model (4
#              layers of 4 heads, n_embd 128: a 20-step run of ./train), from the text to its
#              views drawn in place (after the first, which loads the inspector's page): the
#              median in wall time and the range of the updates after the first (and of the
#              median, the C's part in the worker and the drawing's in the inspector's frame), and
#              in CPU time the difference between runs of 26 and 6 updates over 20; against
#              ./generate CKPT -n 0 --attention FILE.html --threads 1 on the same text, the whole
#              program (which also measures each head's importance, as the page does only when
#              asked)
# STEPS=N shortens the training (default: the recipe's); ONLY=inspector measures the inspector
# alone (a minute or two).
set -u
cd "$(dirname "$0")/.."
work=tests/tmp/bench-web
rm -rf "$work"
mkdir -p "$work"
page="file://$PWD/web/chargpt.html"
steps=${STEPS:-}
now() { date +%s.%N; }
seconds_since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
result() { node -e 'const r = JSON.parse(JSON.parse(require("fs").readFileSync(0, "utf8")).result);
    const v = r[process.argv[1]]; console.log(v === undefined ? "" : v)' "$1"; }
echo "bench-web: $(nproc) processors, load average $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)"

page_train() {  # the page's wall seconds, and the browser's CPU seconds (all its processes, its start included)
    node scripts/headless_page.js "$page#task=induction&seed=1337${steps:+&steps=$steps}&log-every=25&selftest" 3600 \
        > "$work/page.json" || { echo "bench-web: the page did not train" >&2; exit 1; }
    [ "$(result status < "$work/page.json")" = 0 ] ||
        { echo "bench-web: the page's ./train failed: $(result error < "$work/page.json")" >&2; exit 1; }
    printf "%.1f %.1f" "$(result seconds < "$work/page.json")" \
        "$(node -e 'console.log(JSON.parse(require("fs").readFileSync(0, "utf8")).browser_cpu_seconds)' < "$work/page.json")"
}
native_train() {  # KERNELS: ./train's wall seconds, and its CPU seconds
    local start
    rm -rf "$work/native"
    start=$(now)
    env ${1:+CHARGPT_KERNELS=$1} /usr/bin/time -f "%U %S" -o "$work/native.time" ./train --task induction --seed 1337 \
        ${steps:+--steps $steps} --threads 1 --out "$work/native" > "$work/native.log" 2>&1 ||
        { echo "bench-web: ./train failed" >&2; exit 1; }
    printf "%s %s" "$(seconds_since "$start")" "$(awk '{ printf "%.1f", $1 + $2 }' "$work/native.time")"
}
if [ "${ONLY:-}" != inspector ]; then
fastest=$(./train --task induction --steps 0 --no-probe --out "$work/probe-kernels" 2>/dev/null |
          sed -n 's/.*kernels \([a-z0-9_]*\).*/\1/p' | head -n 1)
read -r p1 pc1 <<< "$(page_train)"; read -r f1 fc1 <<< "$(native_train "")"; read -r q1 qc1 <<< "$(native_train portable)"
read -r q2 qc2 <<< "$(native_train portable)"; read -r f2 fc2 <<< "$(native_train "")"; read -r p2 pc2 <<< "$(page_train)"
for what in wall CPU; do
    if [ $what = wall ]; then set -- "$p1" "$p2" "$f1" "$f2" "$q1" "$q2"; else set -- "$pc1" "$pc2" "$fc1" "$fc2" "$qc1" "$qc2"; fi
    awk -v w="$what" -v p1="$1" -v p2="$2" -v f1="$3" -v f2="$4" -v q1="$5" -v q2="$6" -v k="$fastest" -v s="${steps:-2000}" 'BEGIN {
        p = (p1 + p2) / 2; f = (f1 + f2) / 2; q = (q1 + q2) / 2
        printf "training, the induction recipe (%s steps), %s seconds: the page %s and %s; ./train --threads 1 %s and %s (%s),", s, w, p1, p2, f1, f2, k
        printf " %s and %s (portable): the page takes %.2f times ./train'"'"'s (%s), %.2f times (portable)\n", q1, q2, p / f, k, p / q }'
done

fi

# ---- the inspector
./train --steps 20 --no-probe --eval-every 1000 --final-val-chars 0 --out "$work/default" > "$work/default.log" 2>&1 ||
    { echo "bench-web: ./train failed" >&2; exit 1; }
text="ROMEO: But soft, what light through yonder window breaks? It is t"  # 64 characters
encoded=$(node -e 'console.log(encodeURIComponent(process.argv[1]))' "$text")
page_update() {  # UPDATES: the median update's ms, its C's ms, its drawing's ms, the browser's CPU seconds, and
                # the fastest and slowest update after the first (min-max)
    node scripts/headless_page.js "$page#ckpt=../$work/default/ckpt.safetensors&prompt=$encoded&updates=$1&selftest" 900 \
        > "$work/inspect.json" || { echo "bench-web: the page did not open the checkpoint" >&2; exit 1; }
    printf "%.0f %.0f %.0f %s %s" "$(result update_ms < "$work/inspect.json")" "$(result update_worker_ms < "$work/inspect.json")" \
        "$(result update_draw_ms < "$work/inspect.json")" \
        "$(node -e 'console.log(JSON.parse(require("fs").readFileSync(0, "utf8")).browser_cpu_seconds)' < "$work/inspect.json")" \
        "$(node -e 'const t = JSON.parse(JSON.parse(require("fs").readFileSync(0, "utf8")).result).update_times.slice(1);
            console.log(Math.min(...t) + "-" + Math.max(...t))' < "$work/inspect.json")"
}
native_view() {  # milliseconds, wall and CPU
    local start
    start=$(now)
    /usr/bin/time -f "%U %S" -o "$work/view.time" ./generate "$work/default/ckpt.safetensors" -n 0 \
        --attention "$work/view.html" --force --threads 1 -- "$text" > /dev/null 2>&1 ||
        { echo "bench-web: ./generate failed" >&2; exit 1; }
    awk -v a="$start" -v b="$(now)" '{ printf "%.0f %.0f", 1000 * (b - a), 1000 * ($1 + $2) }' "$work/view.time"
}
# in turn; the CPU of an update from the difference between a run of 6 updates and one of 26
read -r u1 c1 d1 cpu6 r1 <<< "$(page_update 6)"; read -r g1 gc1 <<< "$(native_view)"; read -r g2 gc2 <<< "$(native_view)"
read -r u2 c2 d2 cpu26 r2 <<< "$(page_update 26)"
awk -v u1="$u1" -v u2="$u2" -v c1="$c1" -v c2="$c2" -v d1="$d1" -v d2="$d2" -v r1="$r1" -v r2="$r2" -v g1="$g1" -v g2="$g2" \
    -v gc1="$gc1" -v gc2="$gc2" -v a="$cpu6" -v b="$cpu26" 'BEGIN {
    printf "inspector, 64 characters on the default model: an update in the page, the median of 5 and of 25, %s ms and %s ms", u1, u2
    printf " wall (ranges %s and %s ms; its C %s and %s ms, its drawing %s and %s ms),", r1, r2, c1, c2, d1, d2
    printf " %.0f ms of the browser'"'"'s CPU; ./generate --attention %s ms and %s ms wall, %s and %s ms CPU:", 1000 * (b - a) / 20, g1, g2, gc1, gc2
    printf " %.2f times its wall time, %.2f times its CPU time\n", (u1 + u2) / (g1 + g2), 1000 * (b - a) / 20 / ((gc1 + gc2) / 2) }'
