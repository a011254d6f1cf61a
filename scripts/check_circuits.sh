#!/usr/bin/env bash
# Checks a circuits page written by ./generate CKPT --circuits PAGE.html (viewer/circuits_export.h)
# in headless Chromium, in three views, each loaded once to read the DOM and once for a
# screenshot into OUT_DIR:
#   first_head.png      the page as it opens (1400 x 1400): head 0.0, circuits from the
#                       extended embeddings, the attention its positional circuit gives
#   last_head.png       the last layer's last head, raw circuits, its positional scores and the
#                       V-composition, from the address (#layer=L-1&head=H-1&ov=raw&qkp=scores&comp=v)
#   narrow_800x600.png  an 800 x 600 window
# The page must draw every view without a script error (window.onerror sets data-failed, and
# the console must show no uncaught error). With #selftest in the address the page reads back
# what it drew; the counts must match the sizes its data states: a table row for each of the
# L x H heads, V x V cells of the OV circuit and of the QK circuit over characters, T x T of the
# one over positions (none for a RoPE model), a cell for each pair of heads in two layers in the
# composition table (H x H x L(L-1)/2); the view must be the address's, and at 800 x 600 the
# page must not be wider than the window.
#
# usage: scripts/check_circuits.sh PAGE.html OUT_DIR
# e.g. after `make test`: scripts/check_circuits.sh tests/tmp/circuits_sample.html tests/tmp/circuits_shots
set -u

USAGE="PAGE.html OUT_DIR" SAMPLE=tests/tmp/circuits_sample.html
source "$(dirname "$0")/headless_browser.sh"  # the arguments checked; $browser and its $flags
page=$1
out=$2
read -r layers heads vocab block < <(grep -o '"n_layer": [0-9]*, "n_head": [0-9]*, "vocab_size": [0-9]*, "n_embd": [0-9]*, "head_size": [0-9]*, "block_size": [0-9]*' "$page" |
    head -n 1 | sed 's/"n_layer": \([0-9]*\), "n_head": \([0-9]*\), "vocab_size": \([0-9]*\), .*"block_size": \([0-9]*\)/\1 \2 \3 \4/')
if [ -z "${block:-}" ]; then
    echo "check_circuits: $page: no sizes in its data" >&2
    exit 1
fi
positions=$((block * block))
grep -q '"qk_positions": null' "$page" && positions=0
RENDERED="circuits"
source "$(dirname "$0")/page_checks.sh"  # view, attribute, expect, fail

expect_cells() {
    expect "$1" heads $((layers * heads))
    expect "$1" ov-cells $((vocab * vocab))
    expect "$1" qkc-cells $((vocab * vocab))
    expect "$1" qkp-cells "$positions"
    expect "$1" composition-cells $((heads * heads * layers * (layers - 1) / 2))
}

view first_head 1400,1400 ""
expect_cells first_head
expect first_head view "0,0,extended,pattern,k"

view last_head 1400,1400 "layer=$((layers - 1))&head=$((heads - 1))&ov=raw&qkp=scores&comp=v"
expect_cells last_head
expect last_head view "$((layers - 1)),$((heads - 1)),raw,scores,v"

view narrow_800x600 800,600 ""
expect_cells narrow_800x600
expect narrow_800x600 page-overflow 0

if [ $status -eq 0 ]; then
    echo "check_circuits: $page ($layers x $heads heads, $vocab characters, block $block) drawn and checked in 3" \
        "views; screenshots in $out: first_head.png last_head.png narrow_800x600.png"
fi
exit $status
