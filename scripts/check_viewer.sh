#!/usr/bin/env bash
# Checks an attention page written by attention_export (.html) in headless Chromium, in
# four views, each loaded once to read the DOM and once for a screenshot into OUT_DIR:
#   model_view.png     the page as it opens (1400 x 1000)
#   chosen_head.png    the last layer's last head with query 12 pinned, from the address
#                      (#layer=L-1&head=H-1&query=12)
#   scores.png         the same with the heatmap showing the scores (&values=scores), the
#                      window tall enough for the attention math below it (1400 x 2400)
#   narrow_800x600.png an 800 x 600 window
# The page must draw every view without a script error (window.onerror sets data-failed,
# and the console must show no uncaught error). With #selftest in the address the page
# reads back what it drew (see viewer/attention_html.c); the counts must match the sizes
# the page's title states ("N characters, L layers x H heads"): L x H model-view heatmaps
# and N x N heatmap cells showing their weights' colours, N characters coloured by
# surprisal with their code points in the hover text, and, when the page has a logit lens,
# (L + 1) x N lens cells in the colours of their probabilities; the chosen view must be the
# address's; at 800 x 600 the panels must stack, the heatmap keep cells of at least 10
# pixels, and the page not be wider than the window. A page with the vectors (./generate writes
# them) must open on the view it names as its default (the head with the strongest label), draw
# a row of the attention math for every character, and its math, run over every head and
# query, must give the model's own weights and outputs within 1e-4; a page with the heads'
# labels must caption every thumbnail with its head's, and with its importance (the loss change
# when it alone is knocked out, and replaced by its mean) when the page has the heads' importance.
# A page with the logit attribution must draw a bar for each of its parts (the embeddings, every
# head, every MLP, the biases), and its parts must sum to its totals within 1e-4 at every
# position; a page with activation patching must draw a cell for every head and for the stream
# entering every block and ln_f at every position.
#
# usage: scripts/check_viewer.sh PAGE.html OUT_DIR
# e.g. after `make test`: scripts/check_viewer.sh tests/tmp/viewer_sample.html tests/tmp/viewer_shots
set -u

USAGE="PAGE.html OUT_DIR" SAMPLE=tests/tmp/viewer_sample.html
source "$(dirname "$0")/headless_browser.sh"  # the arguments checked; $browser and its $flags
page=$1
out=$2
title=$(grep -o '<title>[^<]*</title>' "$page" | head -n 1)
read -r chars layers heads < <(echo "$title" |
    sed -n 's/.*: \([0-9]*\) characters\?, \([0-9]*\) layers\? &times; \([0-9]*\) heads\?<.*/\1 \2 \3/p')
if [ -z "${heads:-}" ]; then
    echo "check_viewer: $page: no sizes in the title ($title)" >&2
    exit 1
fi
RENDERED="model,text,heatmap,lines(,lens)?(,math)?(,attribution)?(,patching)?"
vectors=$(grep -c '"head_size":' "$page")
labelled=$(grep -c '"heads":{' "$page")
important=$(grep -c '"importance":\[' "$page")
attributed=$(grep -c '"logit_attribution": {' "$page")
patched=$(grep -c '"patching": {' "$page")
source "$(dirname "$0")/page_checks.sh"  # view, attribute, expect, fail

# the counts every view must show; a page with a logit lens (./generate writes one) must show
# each of its layers + 1 rows of cells in their colours
expect_cells() {
    expect "$1" model-heatmaps $((layers * heads))
    expect "$1" heatmap-cells $((chars * chars))
    expect "$1" text-cells "$chars"
    if [ "$(attribute lens-rows)" != 0 ]; then
        expect "$1" lens-rows $((layers + 1))
        expect "$1" lens-cells $(((layers + 1) * chars))
    fi
    if [ "$vectors" != 0 ]; then
        expect "$1" math-rows "$chars"
        for error in math-weight-error math-output-error; do
            if ! awk -v e="$(attribute $error)" 'BEGIN { exit !(e != "" && e + 0 <= 1e-4) }'; then
                fail "$1: data-$error is '$(attribute $error)', want at most 1e-4"
            fi
        done
    fi
    if [ "$labelled" != 0 ]; then
        expect "$1" labels $((layers * heads))
    fi
    if [ "$important" != 0 ]; then
        expect "$1" importance $((layers * heads))
    fi
    if [ "$attributed" != 0 ]; then
        expect "$1" attribution-bars $((2 + layers * heads + layers))
        if ! awk -v e="$(attribute attribution-error)" 'BEGIN { exit !(e != "" && e + 0 <= 1e-4) }'; then
            fail "$1: data-attribution-error is '$(attribute attribution-error)', want at most 1e-4"
        fi
    fi
    if [ "$patched" != 0 ]; then
        expect "$1" patch-cells $((layers * heads + (layers + 1) * chars))
    fi
}

view model_view 1400,1000 ""
expect_cells model_view
if [ "$labelled" != 0 ]; then
    expect model_view view "$(attribute default-view)"
    [ -n "$(attribute default-view)" ] || fail "model_view: no data-default-view"
else
    expect model_view view "0,0,"
fi
expect model_view stacked 0

query=$((chars > 12 ? 12 : chars - 1))
view chosen_head 1400,1000 "layer=$((layers - 1))&head=$((heads - 1))&query=$query"
expect_cells chosen_head
expect chosen_head view "$((layers - 1)),$((heads - 1)),query=$query"
expect chosen_head values weights

if [ "$vectors" != 0 ]; then
    view scores 1400,2400 "layer=$((layers - 1))&head=$((heads - 1))&query=$query&values=scores"
    expect_cells scores
    expect scores values scores
    expect scores math-query "$query"
fi

view narrow_800x600 800,600 ""
expect_cells narrow_800x600
expect narrow_800x600 stacked 1
expect narrow_800x600 page-overflow 0
cell=$(attribute cell-px)
if [ "${cell:-0}" -lt 10 ]; then
    fail "narrow_800x600: heatmap cells of ${cell:-?} pixels, want at least 10"
fi

if [ $status -eq 0 ]; then
    shots="model_view.png chosen_head.png$([ "$vectors" != 0 ] && echo " scores.png") narrow_800x600.png"
    echo "check_viewer: $page ($chars characters, $layers x $heads heads) drawn and checked in" \
        "$(echo "$shots" | wc -w) views; screenshots in $out: $shots"
fi
exit $status
