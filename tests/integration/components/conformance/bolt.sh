#!/usr/bin/env bash
# The conformance bolt on our bash client (see README.md in this directory).
source "$MULTILANG_SH"
set -f  # `for w in $1` must not expand globs

on_init() { log "ready $MULTILANG_COMPONENTID $MULTILANG_TASKID"; }
on_tick() { log "tick $1"; }

act() {
    local action=$1 arg1=$2 arg2=$3 w level
    case $action in
        split) for w in $arg1; do emit "$w"; done ;;
        stream) emit_with --stream "$arg1" -- "$arg2" ;;
        direct) emit_with --direct "$arg1" -- "$arg2" ;;
        taskids)
            emit_with --task-ids -- "$arg1"
            local IFS=,
            emit got "${MULTILANG_TASK_IDS[*]}" ;;
        fail) return 1 ;;
        error) error "$arg1" ;;
        log) for level in 0 1 2 3 4; do log "level $level" "$level"; done ;;
        metrics)
            metrics calls
            metrics calls 2
            metrics state '{"phase":"x"}' ;;
    esac
}

run_bolt act
