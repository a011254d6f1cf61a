# Sourced by scripts/check_viewer.sh and check_timeline.sh after headless_browser.sh, with
# $page and $out set and RENDERED the extended regular expression that the <body> tag's
# data-rendered must match once the page has drawn everything: the helpers that load a page
# in $browser and read back what its #selftest hook wrote on <body>.
#   view NAME SIZE FRAGMENT  loads the page at the window size with the fragment plus
#                            selftest, leaves the <body> tag in $body, and takes the
#                            screenshot $out/NAME.png (from a second load, without selftest)
#   attribute NAME           the value of data-NAME in $body
#   expect VIEW NAME WANT    data-NAME must be WANT
#   fail MESSAGE             says what is wrong; the script's $status becomes 1
mkdir -p "$out"
url="file://$(cd "$(dirname "$page")" && pwd)/$(basename "$page")"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
status=0
fail() {
    echo "$(basename "$0" .sh): $page: $*" >&2
    status=1
}

view() {
    local name=$1 size=$2 fragment=$3
    timeout 120 "$browser" "${flags[@]}" --user-data-dir="$work/profile-$name-dom" \
        --window-size="$size" --enable-logging=stderr --v=0 \
        --dump-dom "$url#$fragment${fragment:+&}selftest" >"$work/$name.html" 2>"$work/$name.log"
    body=$(grep -o '<body[^>]*>' "$work/$name.html" | head -n 1)
    if ! echo "$body" | grep -Eq "data-rendered=\"$RENDERED\""; then
        fail "$name: the page did not finish drawing (no data-rendered on <body>)"
    fi
    if echo "$body" | grep -q 'data-failed='; then
        fail "$name: the page reported script errors:"
        tr '\n' ' ' <"$work/$name.html" | sed -n 's/.*<div id="errors"[^>]*>\([^<]*\)<.*/  \1\n/p' >&2
    fi
    if grep -E 'Uncaught|CONSOLE\(.*(Error|error)' "$work/$name.log" >&2; then
        fail "$name: errors on the console (above)"
    fi
    rm -f "$out/$name.png"
    timeout 120 "$browser" "${flags[@]}" --user-data-dir="$work/profile-$name-shot" \
        --window-size="$size" --screenshot="$out/$name.png" "$url${fragment:+#}$fragment" \
        >"$work/$name-shot.log" 2>&1
    local bytes
    bytes=$(stat -c %s "$out/$name.png" 2>/dev/null || echo 0)
    if [ "$bytes" -lt 20000 ]; then
        fail "$name: no screenshot or a near-empty one ($bytes bytes)"
    fi
}

attribute() {
    echo "$body" | grep -o "data-$1=\"[^\"]*\"" | sed 's/.*="\(.*\)"/\1/'
}

expect() {
    local got
    got=$(attribute "$2")
    if [ "$got" != "$3" ]; then
        fail "$1: data-$2 is '$got', want '$3'"
    fi
}
