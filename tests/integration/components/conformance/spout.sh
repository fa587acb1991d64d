#!/usr/bin/env bash
# The conformance spout on our bash client (see README.md in this directory).
source "$MULTILANG_SH"

n=0
limit=2
on_init() {
    limit=${MULTILANG_CONF[test.limit]:-2}
    log "ready $MULTILANG_COMPONENTID $MULTILANG_TASKID"
}
on_activate() { log "activated"; }
on_deactivate() { log "deactivated"; }

next_tuple() {
    if (( n < limit )); then
        n=$((n + 1))
        emit_id "m$n" "s$n"
    fi
}
acked() { log "acked $1"; }
failed() { emit_id "$1" "s${1#m}"; }  # replay

run_spout next_tuple acked failed
