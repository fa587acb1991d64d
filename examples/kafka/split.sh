#!/usr/bin/env bash
# The split bolt (a copy of examples/wordcount/split.sh): [sentence] -> one [word] tuple per word.
# Each word is anchored to its sentence; the sentence is acked when split returns.
source "$MULTILANG_SH"

split() {
    # shellcheck disable=SC2086  # splitting $1 into words is the point (globbing is off)
    emit_each $1  # = for w in $1; do emit "$w"; done, in one call (this bolt is benchmarked)
}

set -f  # split words on whitespace only: a word such as `*` must not become file names
run_bolt split
