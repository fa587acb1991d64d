#!/usr/bin/env bash
# A bolt driven by its input, for the client-library tests: the first value names what to do with
# the rest. Runs under `set -euo pipefail` to show that the library copes with strict scripts.
set -euo pipefail
source "$MULTILANG_SH"

on_init() {
    log "init task=$MULTILANG_TASKID component=$MULTILANG_COMPONENTID name=${MULTILANG_CONF[topology.name]} task1=${MULTILANG_TASK_COMPONENT[1]} conf_is_json=${1:0:1} context_is_json=${2:0:1}"
}

on_tick() {
    if [[ $1 == 99 ]]; then
        return 1
    fi
    log "tick freq=$1 id=$MULTILANG_TUPLE_ID comp=$MULTILANG_TUPLE_COMPONENT stream=$MULTILANG_TUPLE_STREAM"
}

act() {
    local what=$1
    shift
    case $what in
        emit) emit "$@" ;;
        each) emit_each "$@" ;;
        json) emit_json "$1" ;;
        quote) local q; json_quote q "$1"; emit_json "[$q, 7]" ;;
        stream) emit_with --stream "$1" -- "${@:2}" ;;
        direct) emit_with -d "$1" -- "${@:2}" ;;
        unanchored) emit_with -u -- "$@" ;;
        anchors) emit_with -a "$1" -a "$2" -- "${@:3}" ;;
        taskids) emit_with --task-ids -- "$@"; log "tasks: ${MULTILANG_TASK_IDS[*]}" ;;
        vars) emit "$MULTILANG_TUPLE_ID" "$MULTILANG_TUPLE_COMPONENT" "$MULTILANG_TUPLE_STREAM" \
                   "$MULTILANG_TUPLE_TASK" "$#" ;;
        fail) emit "before failing"; return "${1:-3}" ;;
        log) log "$1" "${2-}" ;;
        error) error "$1" ;;
        metrics) metrics "$1" "${2-}" ;;
        echo) echo "to stdout, must not reach the protocol"; emit "after echo" ;;
        selfack) ack; emit "late emit is still anchored" ;;
        exit) exit "$1" ;;
        badopt) emit_with --nope -- "$@" ;;
        *) return 9 ;;
    esac
}

run_bolt act
