#!/usr/bin/env bash
# scripts/test_windows.sh: the whole test suite of the Windows build (`make test-windows`
# cross-builds it into build-windows/ first) under wine64. It runs in build-windows/run/, which
# links to the tree's files and has a tests/tmp/ of its own (apart from the Linux suite's, whose
# symbolic links Windows would meet): the suite's ./train and ./generate are build-windows/bin/'s
# .exe programs (CHARGPT_BIN), and it starts them, itself (a child of its own: a writer into a
# pipe, a process that leaves a file behind) and the sender of its Ctrl-C as Windows processes.
# Wine runs the programs on this machine's CPU: the per-backend tests run on every backend it
# has. Wine's own files go to build-windows/wine (scripts/wine_windows.sh). The
# suite's output goes to build-windows/tests.log; this prints its kernels line, its skipped
# tests, its last line and its time, and for a failed run the failed tests' checks.
# Usage: scripts/test_windows.sh [TEST-NAME-SUBSTRING]. Exit status 0 when the suite passed.
set -uo pipefail
cd "$(dirname "$0")/.."
win=build-windows
if [ ! -x "$win/run_tests.exe" ] || [ ! -x "$win/bin/train.exe" ] || [ ! -x "$win/bin/generate.exe" ]; then
    echo "test_windows: build the Windows programs and tests first (make test-windows)" >&2
    exit 1
fi
root=$PWD
run="$win/run"
rm -rf "$run"
mkdir -p "$run/tests/tmp"
for f in * .[!.]*; do  # .gitignore and .ci/ too: the README's checker reads them
    [ "$f" = tests ] || [ "$f" = "$win" ] || [ "$f" = .git ] || [ ! -e "$f" ] || ln -s "$root/$f" "$run/$f"
done
for f in tests/*; do
    [ "$f" = tests/tmp ] || ln -s "$root/$f" "$run/$f"
done
start=$(date +%s)
(cd "$run" && CHARGPT_BIN="$root/$win/bin" "$root/scripts/wine_windows.sh" "$root/$win/run_tests.exe" "$@") \
    > "$win/tests.log" 2>&1
status=$?
# Wine's server, which the suite started, ends a few seconds after it
WINEPREFIX="$root/$win/wine" "$(dirname "$(command -v wine64 || echo /usr/lib/wine/wine64)")/wineserver" -w
echo "wine64: $(head -n 1 "$win/tests.log")"
grep -a -E '^skip ' "$win/tests.log"
echo "$(tail -n 1 "$win/tests.log") (in $(( $(date +%s) - start )) s)"
if [ $status -ne 0 ]; then
    grep -a -B 12 '^FAIL' "$win/tests.log"
    exit 1
fi
