#!/usr/bin/env bash
# The ledger spout in bash, resuming: emits ids 0..N-1 (conf test.messages) except those its
# ledger (conf test.ledger) already records as acked, replays failed ids, appends "ack ID" /
# "fail ID" lines (and "activate" / "deactivate") to the ledger. A SIGKILLed incarnation's
# successor thus re-emits exactly the ids whose acks were never recorded.
source "$MULTILANG_SH"

on_init() {
    local n=${MULTILANG_CONF[test.messages]} ledger_file=${MULTILANG_CONF[test.ledger]}
    local -A acked=()
    local kind id i
    if [[ -f $ledger_file ]]; then
        while read -r kind id; do
            [[ $kind == ack ]] && acked[$id]=1
        done <"$ledger_file"
    fi
    todo=()
    # todo[head..tail-1] is still to emit: a queue by index (popping the front of a bash array
    # is O(n), and ${#todo[@]} counts elements, not the next index, once some are unset)
    head=0 tail=0
    for ((i = 0; i < n; i++)); do
        [[ -n ${acked[$i]-} ]] || todo[tail++]=$i
    done
    per_next=${MULTILANG_CONF[test.per.next]:-1}
    exec {ledger}>>"$ledger_file"
}
next_tuple() {
    local k
    for ((k = 0; k < per_next && head < tail; k++)); do
        emit_with -I "${todo[head]}" -- "message ${todo[head]} with some words in it"
        unset "todo[head]"
        (( ++head ))
    done
}
on_ack() { printf 'ack %s\n' "$1" >&"$ledger"; }
on_fail() { printf 'fail %s\n' "$1" >&"$ledger"; todo[tail++]=$1; }
on_activate() { printf 'activate\n' >&"$ledger"; }
on_deactivate() { printf 'deactivate\n' >&"$ledger"; }
run_spout next_tuple on_ack on_fail
