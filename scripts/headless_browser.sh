# Sourced by scripts/check_loss_plot.sh, check_viewer.sh and check_timeline.sh, which take an
# input file and an output, after setting USAGE ("PLOT.svg OUT.png") and SAMPLE (the input
# `make test` writes): checks the arguments (exit 2 with a message), and finds the browser they
# run headless, in $browser (Chromium or Google Chrome, the first found; none: exit 2), with
# its flags in the array $flags (no sandbox, GPU, network or first-run work).
if [ $# -ne 2 ]; then
    echo "usage: $0 $USAGE" >&2
    exit 2
fi
if [ ! -f "$1" ]; then
    echo "$1: no such file (run \`make test\` to write $SAMPLE)" >&2
    exit 2
fi
browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [ -z "$browser" ]; then
    echo "$(basename "$0" .sh): no chromium found" >&2
    exit 2
fi
flags=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run
       --disable-background-networking --disable-component-update --disable-sync)
