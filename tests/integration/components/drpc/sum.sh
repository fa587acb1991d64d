#!/usr/bin/env bash
# A finish-batch bolt in bash: the sum of a request's numbers, once it has all of them; a task
# that got none of them says nothing (another task of the bolt got them all). State is kept per
# request (MULTILANG_BATCH_KEY), dropped at the finish or on an abort.
source "$MULTILANG_SH"

declare -A totals=()

add() {  # $1: the request id, $2: the number
    totals[$MULTILANG_BATCH_KEY]=$(( ${totals[$MULTILANG_BATCH_KEY]:-0} + $2 ))
}

report() {
    if [[ -n ${totals[$MULTILANG_BATCH_KEY]+set} ]]; then
        emit_json "[$MULTILANG_TXID, \"bash:${totals[$MULTILANG_BATCH_KEY]}\"]"
    fi
    on_abort
}

on_abort() { unset 'totals[$MULTILANG_BATCH_KEY]'; }

run_batch_bolt add report
