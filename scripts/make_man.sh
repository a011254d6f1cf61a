#!/usr/bin/env bash
# Writes a section-1 man page (roff) from a program's --help text, so that the page and
# --help always say the same thing. The program runs with argv[0] set to NAME, the name it
# is installed under, which its usage line shows.
#
# usage: scripts/make_man.sh NAME PROGRAM [SEE_ALSO_NAME...] > NAME.1
#   e.g. scripts/make_man.sh chargpt-train ./train chargpt-generate > chargpt-train.1
#
# The --help layout read: line 1 "usage: NAME ARGS", line 2 a one-line summary, then option
# lines ("  -x, --long ARG   text", the text starting at the same column on every option
# line and continued on lines indented to it), headings ("model:") and plain paragraphs.
set -euo pipefail

if [ $# -lt 2 ]; then
    echo "usage: $0 NAME PROGRAM [SEE_ALSO_NAME...]" >&2
    exit 2
fi
name=$1
program=$2
shift 2
help=$(exec -a "$name" "$program" --help)

awk -v name="$name" -v see_also="$*" '
# roff text: backslashes, minus signs (so options copy and paste), no control character first
function roff(s) {
    gsub(/\\/, "\\e", s)
    gsub(/-/, "\\-", s)
    if (s ~ /^[.\047]/) s = "\\&" s
    return s
}
function trim(s) { sub(/^ +/, "", s); sub(/ +$/, "", s); return s }
# an option line starts with "-" after an indent of 1 to 8 spaces (deeper: continued text)
function is_option(s) { return match(s, /^ +-/) && RLENGTH <= 9 }
{ line[NR] = $0 }
END {
    if (line[1] !~ ("^usage: " name "( |$)")) {
        print "make_man.sh: the help does not start with \"usage: " name "\"" > "/dev/stderr"
        exit 1
    }
    # the description column: where the text after an option starts on most option lines
    for (i = 3; i <= NR; i++) {
        if (!is_option(line[i])) continue
        tag = line[i]
        sub(/^ +/, "", tag)
        gap = index(tag, "  ")  # the first double space ends the tag
        if (!gap) continue
        text = substr(tag, gap)
        sub(/^ +/, "", text)
        column[length(line[i]) - length(text) + 1]++
    }
    best = 0
    for (c in column) if (column[c] > best) { best = column[c]; desc_col = c + 0 }

    printf ".TH %s 1 \"\" \"chargpt\" \"User Commands\"\n", roff(toupper(name))
    printf ".SH NAME\n%s \\- %s\n", roff(name), roff(line[2])
    printf ".SH SYNOPSIS\n.B %s\n%s\n", roff(name), roff(trim(substr(line[1], length("usage: " name) + 1)))
    printf ".SH DESCRIPTION\n%s\n.SH OPTIONS\n", roff(line[2])
    paragraph = 0
    for (i = 3; i <= NR; i++) {
        s = line[i]
        if (s ~ /^ *$/) { paragraph = 0; continue }
        if (is_option(s) && desc_col) {
            # an option: the tag before the description column, the text from it on
            printf ".TP\n.B %s\n%s\n", roff(trim(substr(s, 1, desc_col - 1))), roff(trim(substr(s, desc_col)))
            paragraph = 0
        } else if (s ~ /^ +/) {
            print roff(trim(s))  # an option text continued
        } else if (s ~ /:$/) {
            heading = substr(s, 1, length(s) - 1)
            printf ".SS %s\n", roff(toupper(substr(heading, 1, 1)) substr(heading, 2))
            paragraph = 0
        } else {
            if (!paragraph) print ".PP"
            print roff(s)
            paragraph = 1
        }
    }
    if (see_also != "") {
        n = split(see_also, names, " ")
        print ".SH SEE ALSO"
        for (k = 1; k <= n; k++) printf ".BR %s (1)%s\n", roff(names[k]), k < n ? "," : ""
    }
}' <<<"$help"
