#!/usr/bin/env bash
# Runs every lesson's commands (docs/lessons/*.md), shortened, so that none goes stale: each
# line of a lesson's ```sh blocks (indented in a list too) that starts with ./train or
# ./generate runs, in the lesson's order and the lessons in theirs, as a learner runs them,
# with the repository's programs, in one scratch directory (WORK, default tests/tmp/lessons),
# where every out/ and page lands: a lesson that reads an earlier lesson's run finds it there,
# and one that writes over an earlier lesson's file fails as it would for the learner. Every
# ./train gets the shortening options in place of its own of the same names: fewer steps, and
# an evaluation within them so that the timeline has a step to show. The text a lesson trains
# on of your own (my-book.txt) is, here, the repository's docs one after the other. Every
# command must exit 0, and every lesson must have one; the induction lesson's timeline is then
# checked in headless Chromium (scripts/check_timeline.sh), a task's probe being the one page
# no other check draws, and so is lesson 7's circuits page (scripts/check_circuits.sh). Lessons
# 7 and 8 read what lesson 3's and lesson 1's models do (the induction heads; a prediction that
# depends on a word's first letters, which a model of fewer than 2,000 steps does not make), so
# those two runs are longer: 1,200 steps (the induction heads form by then) and the default
# run whole. Each command's output is in WORK/logs/. About five minutes on 2 cores.
#
# usage: scripts/check_lessons.sh [WORK]   (default tests/tmp/lessons; emptied first, and refused
# when it holds files no run of these scripts made: scripts/work_dir.sh)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-$root/tests/tmp/lessons}
. "$root/scripts/work_dir.sh"
work_dir_fresh "$work" "$(($# > 0))" || exit $?

# lesson FILE OPTIONS...: runs FILE's commands in WORK, OPTIONS added to each ./train
lesson() {
    local file=$1 name
    name=$(basename "$1" .md)
    shift
    local dir=$work commands n=0
    mkdir -p "$dir/logs"
    commands=$(awk '/^ *```sh$/ { block = 1; next } /^ *```$/ { block = 0 }
                    block && /^ *\.\/(train|generate)( |$)/ { sub(/^ +/, ""); print }' "$file")
    if [ -z "$commands" ]; then
        echo "check_lessons: $file has no ./train or ./generate command in a \`\`\`sh block" >&2
        exit 1
    fi
    while IFS= read -r line; do
        n=$((n + 1))
        line=${line%%  #*}  # a comment after the command
        local program=${line%% *} extra="" option
        if [ "$program" = ./train ]; then
            extra=" $*"
            # an option given once (./train refuses one given twice): the shortening's value
            # stands for the lesson's own
            for option in "$@"; do
                case $option in --*) line=$(sed -E "s/ $option( [^ -][^ ]*)?( |$)/\2/" <<<"$line") ;; esac
            done
        fi
        echo "check_lessons: $name: $line$extra" | cut -c1-160
        if ! (cd "$dir" && eval "$root/${program#./}${line#"$program"}$extra") >"$dir/logs/$name.$n.log" 2>&1; then
            echo "check_lessons: $name: '$line' failed:" >&2
            tail -n 5 "$dir/logs/$name.$n.log" >&2
            exit 1
        fi
    done <<<"$commands"
}

mkdir -p "$work"
cat "$root"/docs/*.md > "$work/my-book.txt"
for file in "$root"/docs/lessons/*.md; do
    case $(basename "$file") in
        *1-attention*) lesson "$file" --sample-chars 50 --final-val-chars 0 ;;
        *3-induction*) lesson "$file" --steps 1200 --sample-chars 50 --final-val-chars 0 ;;
        *induction* | *sort*) lesson "$file" --steps 200 --sample-chars 50 --final-val-chars 0 ;;
        *own-text*) lesson "$file" --steps 2 --eval-every 2 --eval-batches 1 --sample-chars 50 --final-val-chars 0 ;;
        *) lesson "$file" --steps 40 --eval-every 20 --sample-chars 50 --final-val-chars 0 ;;
    esac
done
"$root/scripts/check_timeline.sh" "$work/out-induction/timeline.html" "$work/induction-shots"
"$root/scripts/check_circuits.sh" "$work/circuits.html" "$work/circuits-shots"
echo "check_lessons: the commands of $(ls "$root"/docs/lessons/*.md | wc -l) lessons ran"
