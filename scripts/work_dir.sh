# scripts/work_dir.sh, sourced by the scripts that take a directory for the files of their run
# (bench.sh's BENCH_OUT, the checks' WORK_DIR) and empty it first: a directory is emptied only
# when a run of these scripts made it, so that a mistyped argument never deletes a person's
# files.
#
# work_dir_fresh DIR GIVEN: DIR made empty and marked as the scripts' own (created when
# missing). Refused, with a message and status 2, when DIR is a file, or when GIVEN is 1 (the
# user named DIR) and it is a directory holding files but not the mark of an earlier run: the
# scripts' default directories (under tests/tmp/ and build*/) are theirs, marked or not.
WORK_DIR_MARK=.chargpt-work
work_dir_fresh() {
    local dir=$1 given=$2
    if [ -e "$dir" ] && [ ! -d "$dir" ]; then
        echo "$(basename "$0"): $dir is a file, not a directory for this run's files; name a new or empty directory" >&2
        return 2
    fi
    if [ "$given" = 1 ] && [ -d "$dir" ] && [ ! -e "$dir/$WORK_DIR_MARK" ] && [ -n "$(ls -A "$dir")" ]; then
        echo "$(basename "$0"): $dir holds files that no run of these scripts made; name a new or empty directory" >&2
        return 2
    fi
    rm -rf "$dir" && mkdir -p "$dir" && touch "$dir/$WORK_DIR_MARK"
}
