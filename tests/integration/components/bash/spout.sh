#!/usr/bin/env bash
# A spout: emits "s<n>" with message id "m<n>" on every next, up to a limit; nothing after it.
source "$MULTILANG_SH"

n=0
limit=3
on_init() { limit=${MULTILANG_CONF[test.limit]:-3}; log "open limit=$limit"; }
on_activate() { log "activated"; }
on_deactivate() { log "deactivated"; }

next_tuple() {
    if (( n >= limit )); then
        return 0
    fi
    n=$((n + 1))
    emit_id "m$n" "s$n"
    if (( n == 2 )); then
        emit "unreliable"
        emit_with --id-json "$n" --stream odd -- "numeric id"
    fi
    if (( n == 3 )); then
        emit_with -T -i "m3b" -- "wants task ids"
        log "tasks: ${MULTILANG_TASK_IDS[*]}"
    fi
}
acked() { log "ack $1 json=$MULTILANG_MSG_ID_JSON"; }
failed() { log "fail $1 json=$MULTILANG_MSG_ID_JSON"; return 1; }

run_spout next_tuple acked failed
