#!/usr/bin/env bash
# The partial count in bash, a batch bolt: how many numbers, and their sum, this task got of an
# attempt, sent on to the committer once the task has all of them. State is kept per attempt in
# associative arrays keyed by MULTILANG_BATCH_KEY, and dropped at the finish or on an abort.
source "$MULTILANG_SH"

declare -A counts=() totals=()

add() {  # $1: the number
    counts[$MULTILANG_BATCH_KEY]=$(( ${counts[$MULTILANG_BATCH_KEY]:-0} + 1 ))
    totals[$MULTILANG_BATCH_KEY]=$(( ${totals[$MULTILANG_BATCH_KEY]:-0} + $1 ))
}

report() {
    emit_json "[${counts[$MULTILANG_BATCH_KEY]:-0}, ${totals[$MULTILANG_BATCH_KEY]:-0}]"
    on_abort
}

on_abort() { unset 'counts[$MULTILANG_BATCH_KEY]' 'totals[$MULTILANG_BATCH_KEY]'; }

run_batch_bolt add report
