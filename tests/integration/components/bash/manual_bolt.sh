#!/usr/bin/env bash
# A manual bolt: keeps tuples until told, then acks or fails them by id.
source "$MULTILANG_SH"

# Scripts often have their own `error`; the library must keep reporting through its own.
error() { echo "component's own error: $*" >&2; }

held=()
hold() {
    case $1 in
        keep) held+=("$MULTILANG_TUPLE_ID"); emit "kept" ;;
        ack-held) local id; for id in "${held[@]}"; do ack "$id"; done; held=(); ack ;;
        fail-held) local id; for id in "${held[@]}"; do fail "$id"; done; held=(); fail ;;
        fail-now) fail; return 4 ;;
        bad) return 5 ;;
    esac
}

run_bolt -m hold
