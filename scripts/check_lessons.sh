#!/usr/bin/env bash
# Runs every lesson's commands (docs/lessons/*.md), shortened, so that none goes stale: each
# line of a lesson's ```sh blocks that starts with ./train or ./generate runs, in the lesson's
# order, with the repository's programs, in a scratch directory of the lesson's own
# (WORK/LESSON, WORK default tests/tmp/lessons), where its out/ and pages land. Every ./train
# gets the shortening options after its own (the later option wins): fewer steps, and an
# evaluation within them so that the timeline has a step to show. The text a lesson trains
# on of your own (my-book.txt) is, here, the repository's docs one after the other. Every
# command must exit 0, and every lesson must have one; the induction lesson's timeline is then
# checked in headless Chromium (scripts/check_timeline.sh), a task's probe being the one page
# no other check draws, and so is the circuits page of lesson 7 (scripts/check_circuits.sh).
# Lessons 7 and 8 read what a trained model does (its induction heads, a prediction that
# depends on its text), so their runs are longer: 1,200 steps (the induction heads form by
# then) and 300. About four minutes on 2 cores.
#
# usage: scripts/check_lessons.sh [WORK]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-$root/tests/tmp/lessons}
rm -rf "$work"

# lesson FILE OPTIONS...: runs FILE's commands in WORK/NAME, OPTIONS added to each ./train
lesson() {
    local file=$1 name
    name=$(basename "$1" .md)
    shift
    local dir=$work/$name commands n=0
    mkdir -p "$dir"
    cat "$root"/docs/*.md > "$dir/my-book.txt"
    commands=$(awk '/^```sh$/ { block = 1; next } /^```$/ { block = 0 } block && /^\.\/(train|generate)( |$)/' "$file")
    if [ -z "$commands" ]; then
        echo "check_lessons: $file has no ./train or ./generate command in a \`\`\`sh block" >&2
        exit 1
    fi
    while IFS= read -r line; do
        n=$((n + 1))
        line=${line%%  #*}  # a comment after the command
        local program=${line%% *} extra=""
        [ "$program" = ./train ] && extra=" $*"
        echo "check_lessons: $name: $line$extra" | cut -c1-160
        if ! (cd "$dir" && eval "$root/${program#./}${line#"$program"}$extra") >"$dir/$n.log" 2>&1; then
            echo "check_lessons: $name: '$line' failed:" >&2
            tail -n 5 "$dir/$n.log" >&2
            exit 1
        fi
    done <<<"$commands"
}

for file in "$root"/docs/lessons/*.md; do
    case $(basename "$file") in
        *reverse-engineer*) lesson "$file" --steps 1200 --sample-chars 50 --final-val-chars 0 ;;
        *which-heads*) lesson "$file" --steps 300 --eval-every 150 --sample-chars 50 --final-val-chars 0 ;;
        *induction* | *sort*) lesson "$file" --steps 200 --sample-chars 50 --final-val-chars 0 ;;
        *own-text*) lesson "$file" --steps 2 --eval-every 2 --eval-batches 1 --sample-chars 50 --final-val-chars 0 ;;
        *) lesson "$file" --steps 40 --eval-every 20 --sample-chars 50 --final-val-chars 0 ;;
    esac
done
"$root/scripts/check_timeline.sh" "$work/3-induction-heads/out-induction/timeline.html" "$work/induction-shots"
"$root/scripts/check_circuits.sh" "$work/7-reverse-engineer-induction/circuits.html" "$work/circuits-shots"
echo "check_lessons: the commands of $(ls "$root"/docs/lessons/*.md | wc -l) lessons ran"
