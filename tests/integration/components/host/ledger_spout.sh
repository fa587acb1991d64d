#!/usr/bin/env bash
# The ledger spout in bash: emits ids 0..N-1 (conf test.messages), replays failed ids, appends
# "ack ID" / "fail ID" lines to conf test.ledger.
source "$MULTILANG_SH"

on_init() {
    todo=()
    local i
    for ((i = 0; i < ${MULTILANG_CONF[test.messages]}; i++)); do todo+=("$i"); done
    exec {ledger}>>"${MULTILANG_CONF[test.ledger]}"
}
next_tuple() {
    local n
    for ((n = 0; n < ${MULTILANG_CONF[test.per.next]:-1} && ${#todo[@]}; n++)); do
        emit_with -I "${todo[0]}" -- "message ${todo[0]} with some words in it"
        todo=("${todo[@]:1}")
    done
}
on_ack() { printf 'ack %s\n' "$1" >&"$ledger"; }
on_fail() { printf 'fail %s\n' "$1" >&"$ledger"; todo+=("$1"); }
run_spout next_tuple on_ack on_fail
