#!/usr/bin/env bash
# A transactional spout (run_transactional_spout) for the batch/1 tests of the bash client. Its
# metadata is the first number of a batch; a batch is 3 numbers from there. Some txids and
# metadata values make it misbehave on purpose (see the functions). BATCH_SPOUT_NO_COMMIT=1 runs
# it without a commit function.
set -euo pipefail
source "$MULTILANG_SH"

# txid 3: not ready; 4: fails (the task exits); 5: jumps to txid 7; others: after the previous
# batch.
init() {
    log "init txid=$1 prev=$2"
    case $1 in
        3) return 0 ;;
        4) batch_meta 0; return 1 ;;
        5) batch_meta '{"from":"5 is 7"}' 7 ;;
        *) if [[ $2 == null ]]; then batch_meta 0; else batch_meta "$(( $2 + 3 ))"; fi ;;
    esac
}

# meta "die": fails (the task exits); meta "id": tries a message id; meta "late": calls
# batch_meta before its emits (it is still sent after them).
emit_batch() {
    local vars="committed=$MULTILANG_COMMITTED_TXID vars=$MULTILANG_TXID/$MULTILANG_ATTEMPT"
    log "emit txid=$1 attempt=$2 meta=$3 task_meta=$4 prev_task_meta=$5 replay=$6 $vars"
    case $3 in
        '"die"') emit "partial"; return 5 ;;
        '"id"') local rc=0; emit_id m1 "with id" || rc=$?; log "emit_id status $rc"; return 0 ;;
        '"late"') batch_meta '"reported early"'; emit "after meta"; return 0 ;;
    esac
    local i
    for (( i = $3; i < $3 + 3; i++ )); do
        emit_json "[$i, \"n$i\"]"
    done
    batch_meta "{\"done\":$(( $3 + 3 )),\"txid\":$1}"
}

commit() {
    log "commit txid=$1 attempt=$2"
    if (( $1 == 13 )); then
        return 1
    fi
    local rc=0
    batch_meta 1 || rc=$?
    log "batch_meta in commit: status $rc"
}

if [[ ${BATCH_SPOUT_NO_COMMIT-} == 1 ]]; then
    run_transactional_spout init emit_batch
else
    run_transactional_spout init emit_batch commit
fi
