#!/usr/bin/env bash
# Checks a timeline page written by ./train or ./generate --timeline (viewer/timeline.h) in
# headless Chromium, in four views, each loaded once to read the DOM and once for a
# screenshot into OUT_DIR:
#   last_step.png       the page as it opens, at its last step (1400 x 1000)
#   chosen_step.png     the first step, the last layer's last head and the repeated random run
#                       chosen by the address (#step=S&layer=L-1&head=H-1&text=repeated)
#   math.png            the last step's chosen head with its scores and query 5's attention
#                       math (&values=scores&query=5), the whole page (1400 x 4200); a file
#                       whose records keep the vectors only
#   narrow_800x600.png  an 800 x 600 window at the chosen step
# The page must draw every view without a script error (window.onerror sets data-failed, and
# the console must show no uncaught error). With #selftest in the address the page reads back
# what it drew (see viewer/timeline.h); the counts must match the sizes the page's title states
# ("N steps, L layers x H heads, T characters"): N positions of the step slider, L x H
# model-view thumbnails whose every cell shows its weight's colour, (L + 1) x T logit-lens
# cells in the colour of the true next character's probability, T passage characters
# coloured by their surprisal, L x H charts of the heads' scores, and every cell of the chosen
# head's large view (T x T, or R x R for the repeated run); every thumbnail captioned and every
# chart titled with its head's label at the step shown, every thumbnail of a version 3 file
# captioned with its head's importance too, every chart with its axes' values, in a version 4
# file every cell of the attribution at the chosen character (parts x steps) in its value's
# colour with the top heads named (the chosen step's view chooses character 0 by &char=0), the
# clipping panel's verdict; the view must be the address's, or when it names no head, the head
# with the strongest label (data-default-head); at 800 x 600 the panels must stack and the page
# must not be wider than the window. With the vectors, the attention math must draw a row for
# every position whose vectors the probe keeps, and give, over every head and query of the
# text shown, the weights the file keeps within 0.005 (their quantization's error).
#
# usage: scripts/check_timeline.sh PAGE.html OUT_DIR
# e.g. after a run: scripts/check_timeline.sh out/timeline.html tests/tmp/timeline_shots
set -u

USAGE="PAGE.html OUT_DIR" SAMPLE=tests/tmp/timeline_sample.html
source "$(dirname "$0")/headless_browser.sh"  # the arguments checked; $browser and its $flags
page=$1
out=$2
title=$(grep -o '<title>[^<]*</title>' "$page" | head -n 1)
read -r steps layers heads chars < <(echo "$title" |
    sed -n 's/.*: \([0-9]*\) steps\?, \([0-9]*\) layers\? × \([0-9]*\) heads\?, \([0-9]*\) characters<.*/\1 \2 \3 \4/p')
if [ -z "${chars:-}" ]; then
    echo "check_timeline: $page: no sizes in the title ($title)" >&2
    exit 1
fi
if [ "$steps" -lt 1 ]; then
    echo "check_timeline: $page holds no probed step" >&2
    exit 1
fi
# the repeated run's length, and the positions whose vectors the records keep, from the page's data
repeat=$(grep -o '"repeat_len":[0-9]*' "$page" | head -n 1 | tr -dc '0-9')
vectors=$(grep -o '"vector_len":[0-9]*' "$page" | head -n 1 | tr -dc '0-9')
vectors_repeated=$(grep -o '"vector_repeat_len":[0-9]*' "$page" | head -n 1 | tr -dc '0-9')
version=$(grep -o '"version":[0-9]*' "$page" | head -n 1 | tr -dc '0-9')
RENDERED="loss,sample,passage,model,head,math,lens,attribution,scores,clipping,health"
source "$(dirname "$0")/page_checks.sh"  # view, attribute, expect, fail

# the counts every view must show; $2: the length of the chosen head's text
expect_cells() {
    expect "$1" steps "$steps"
    expect "$1" model-cells $((layers * heads))
    expect "$1" lens-cells $(((layers + 1) * chars))
    expect "$1" text-cells "$chars"
    expect "$1" score-charts $((layers * heads))
    expect "$1" head-cells $(($2 * $2))
    expect "$1" labels $((layers * heads))
    [ "${version:-0}" -lt 3 ] || expect "$1" importance $((layers * heads))
    if [ "${version:-0}" -ge 4 ]; then  # the attribution: parts x steps, and the top heads named
        expect "$1" attribution-cells $(((layers * heads + layers + 2) * steps))
        top=$(attribute attribution-top)
        [ "$(echo "$top" | wc -w)" -eq $((layers * heads < 3 ? layers * heads : 3)) ] ||
            fail "$1: data-attribution-top is '$top', want the top heads named"
    fi
    expect "$1" chart-axes $((layers * heads))
    [ -n "$(attribute clipping)" ] || fail "$1: the clipping panel gives no verdict"
    # $3: the positions whose vectors the text shown keeps
    expect "$1" math-rows "${3:-0}"
    if [ "${3:-0}" -gt 0 ] && ! awk -v e="$(attribute math-weight-error)" 'BEGIN { exit !(e != "" && e + 0 <= 0.005) }'; then
        fail "$1: data-math-weight-error is '$(attribute math-weight-error)', want at most 0.005"
    fi
}

view last_step 1400,1000 ""
expect_cells last_step "$chars" "$vectors"
last=$(attribute step)
expect last_step view "$last,$(attribute default-head),passage"
expect last_step stacked 0

# the slider's first step, as the first view read it
first=$(attribute first-step)
text=passage
[ "${repeat:-0}" -gt 0 ] && text=repeated
view chosen_step 1400,1000 "step=$first&layer=$((layers - 1))&head=$((heads - 1))&text=$text&char=0"
expect_cells chosen_step "$([ "$text" = repeated ] && echo "$repeat" || echo "$chars")" \
    "$([ "$text" = repeated ] && echo "$vectors_repeated" || echo "$vectors")"
expect chosen_step view "$first,$((layers - 1)),$((heads - 1)),$text"
[ "${version:-0}" -lt 4 ] || expect chosen_step attribution-char 0

if [ "${vectors:-0}" -gt 5 ]; then
    view math 1400,4200 "step=$last&values=scores&query=5"
    expect_cells math "$chars" "$vectors"
    expect math values scores
    expect math math-query 5
fi

view narrow_800x600 800,600 "step=$first"
expect_cells narrow_800x600 "$chars" "$vectors"
expect narrow_800x600 stacked 1
expect narrow_800x600 page-overflow 0

if [ $status -eq 0 ]; then
    shots="last_step.png chosen_step.png$([ "${vectors:-0}" -gt 5 ] && echo " math.png") narrow_800x600.png"
    echo "check_timeline: $page ($steps steps, $layers x $heads heads, $chars characters) drawn and checked in" \
        "$(echo "$shots" | wc -w) views; screenshots in $out: $shots"
fi
exit $status
