#!/usr/bin/env bash
# [line_no, line] -> one [word] tuple per word of the line, each anchored to the line.
source "$MULTILANG_SH"

split() {
    # shellcheck disable=SC2086  # splitting $1 into words is the point (globbing is off)
    emit_each $2   # $1 is the line number; the line is already lower case, words only
}

set -f  # split on whitespace only, never expand a word as a file pattern
run_bolt split
