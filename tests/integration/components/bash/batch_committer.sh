#!/usr/bin/env bash
# A committer (run_committer) for the batch/1 tests of the bash client: sums the first value of
# its tuples per attempt and, in the commit phase, adds the sum to a running total kept together
# with the last txid it stored, skipping a txid it stored already (the exactly-once rule).
source "$MULTILANG_SH"

declare -A sums=()
total=0
stored_txid=0  # the txid stored with `total`; from the handshake at start

on_init() { stored_txid=${MULTILANG_COMMITTED_TXID:-0}; }

add() { sums[$MULTILANG_BATCH_KEY]=$(( ${sums[$MULTILANG_BATCH_KEY]:-0} + $1 )); }

store() {
    local sum=${sums[$MULTILANG_BATCH_KEY]:-0}
    unset 'sums[$MULTILANG_BATCH_KEY]'
    if (( MULTILANG_TXID <= stored_txid )); then
        log "skip txid $MULTILANG_TXID: stored already"
        return 0
    fi
    total=$(( total + sum ))
    stored_txid=$MULTILANG_TXID
    emit_json "[$MULTILANG_TXID, $total, $MULTILANG_COMMIT]"
}

on_abort() { unset 'sums[$MULTILANG_BATCH_KEY]'; }

run_committer add store
