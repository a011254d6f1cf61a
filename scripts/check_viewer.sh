#!/usr/bin/env bash
# Checks an attention page written by attention_export (.html) in headless Chromium:
# the page's script must have drawn both views (it sets data-rendered="heatmap,lines" on
# <body>) without any script error (window.onerror sets data-failed and fills #errors,
# and the console must show no uncaught error), and a screenshot must come out.
#
# usage: scripts/check_viewer.sh PAGE.html OUT.png
# e.g. after `make test`: scripts/check_viewer.sh tests/tmp/viewer_sample.html tests/tmp/viewer_sample.png
set -u

if [ $# -ne 2 ]; then
    echo "usage: $0 PAGE.html OUT.png" >&2
    exit 2
fi
page=$1
shot=$2
if [ ! -f "$page" ]; then
    echo "$page: no such file (run \`make test\` to write tests/tmp/viewer_sample.html)" >&2
    exit 2
fi
browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [ -z "$browser" ]; then
    echo "check_viewer: no chromium found" >&2
    exit 2
fi

url="file://$(cd "$(dirname "$page")" && pwd)/$(basename "$page")"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
flags=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run
       --disable-background-networking --disable-component-update --disable-sync)

# 1. the DOM after the page's script ran, with the console on stderr
timeout 120 "$browser" "${flags[@]}" --user-data-dir="$work/profile-dom" \
    --enable-logging=stderr --v=0 --dump-dom "$url" >"$work/dom.html" 2>"$work/console.log"
status=0
if ! grep -q 'data-rendered="heatmap,lines"' "$work/dom.html"; then
    echo "check_viewer: $page: the page did not finish drawing (no data-rendered=\"heatmap,lines\")" >&2
    status=1
fi
if grep -q 'data-failed=' "$work/dom.html"; then
    echo "check_viewer: $page: the page reported script errors:" >&2
    tr '\n' ' ' <"$work/dom.html" | sed -n 's/.*<div id="errors"[^>]*>\([^<]*\)<.*/  \1\n/p' >&2
    status=1
fi
if grep -E 'Uncaught|CONSOLE\(.*(Error|error)' "$work/console.log" >&2; then
    echo "check_viewer: $page: errors on the console (above)" >&2
    status=1
fi

# 2. a screenshot
rm -f "$shot"
timeout 120 "$browser" "${flags[@]}" --user-data-dir="$work/profile-shot" \
    --screenshot="$shot" --window-size=1400,1000 "$url" \
    >"$work/shot.log" 2>&1
size=$(stat -c %s "$shot" 2>/dev/null || echo 0)
if [ "$size" -lt 20000 ]; then
    echo "check_viewer: $shot: no screenshot or a near-empty one ($size bytes)" >&2
    status=1
fi

if [ $status -eq 0 ]; then
    ms=$(grep -o 'data-render-ms="[0-9]*"' "$work/dom.html" | grep -o '[0-9]\+')
    echo "check_viewer: $page drawn without errors in ${ms:-?} ms; screenshot $shot ($size bytes)"
fi
exit $status
