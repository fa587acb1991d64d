#!/usr/bin/env bash
# [sentence] -> one [word] per word. Two ways to run the same splitting:
#   under the host (MULTILANG_SH set): a multilang bolt, each word anchored to its sentence;
#   `split.sh --lines`: a line filter, one sentence in, one word per line out (for rdd.pipe()).
set -f  # split on whitespace only: a word such as `*` must not become file names

if [[ ${1-} == --lines ]]; then
    while IFS= read -r line || [[ -n $line ]]; do
        # shellcheck disable=SC2086  # splitting the line into words is the point (globbing is off)
        [[ -n ${line//[[:space:]]/} ]] && printf '%s\n' $line
    done
    exit 0
fi

source "$MULTILANG_SH"
split() {
    # shellcheck disable=SC2086  # splitting $1 into words is the point (globbing is off)
    emit_each $1
}
run_bolt split
