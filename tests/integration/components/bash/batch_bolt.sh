#!/usr/bin/env bash
# A batch bolt (run_batch_bolt) for the batch/1 tests of the bash client: counts the tuples of
# each attempt in an associative array keyed by MULTILANG_BATCH_KEY (the idiom of multilang.sh's
# header) and reports the count in its finish. The first value of a tuple says what else to do.
# Runs under `set -euo pipefail` to show that the batch paths cope with strict scripts.
set -euo pipefail
source "$MULTILANG_SH"

declare -A counts=()      # attempt -> tuples seen
declare -A fail_finish=() # attempts whose finish is to fail

on_init() {
    local id=$MULTILANG_TRANSACTIONAL_ID committed=$MULTILANG_COMMITTED_TXID
    log "init role=$MULTILANG_BATCH_ROLE id=$id committed=$committed"
}

process() {
    counts[$MULTILANG_BATCH_KEY]=$(( ${counts[$MULTILANG_BATCH_KEY]:-0} + 1 ))
    case $1 in
        count) ;;
        emit) emit "${@:2}" ;;
        vars) emit "$MULTILANG_TXID" "$MULTILANG_ATTEMPT" "$MULTILANG_BATCH_KEY" \
                   "$MULTILANG_TUPLE_ID" "$MULTILANG_TUPLE_COMPONENT" "$#" ;;
        fail) emit "before failing"; return 3 ;;
        fail-finish) fail_finish[$MULTILANG_BATCH_KEY]=1 ;;
        *) return 9 ;;
    esac
}

finish() {
    local key=$MULTILANG_BATCH_KEY n=${counts[$MULTILANG_BATCH_KEY]:-0}
    unset 'counts[$key]'
    if [[ -n ${fail_finish[$key]-} ]]; then
        unset 'fail_finish[$key]'
        emit "failing finish"
        return 4
    fi
    # txid, attempt, tuples of this attempt, commit, the finish's id, attempts still held
    local tuple="[$MULTILANG_TXID, $MULTILANG_ATTEMPT, $n, $MULTILANG_COMMIT"
    emit_json "$tuple, \"$MULTILANG_TUPLE_ID\", ${#counts[@]}]"
}

on_abort() {
    log "abort $MULTILANG_BATCH_KEY had=${counts[$MULTILANG_BATCH_KEY]:-none}"
    unset 'counts[$MULTILANG_BATCH_KEY]' 'fail_finish[$MULTILANG_BATCH_KEY]'
}

run_batch_bolt process finish
