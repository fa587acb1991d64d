#!/usr/bin/env bash
# The chaos bolt in bash: the same config keys and modes as chaos_bolt.py (see README.md here),
# plus the protocol misuse modes ack_unknown, ack_twice, anchor_acked, unknown_stream,
# wrong_fields. A manual bolt (run_bolt -m), so that it can misuse ack on purpose.
if [[ -n ${CHAOS_MUTE_MARKER-} ]] && ( set -C; : >"$CHAOS_MUTE_MARKER" ) 2>/dev/null; then
    sleep 3600  # never answer the handshake, in the one incarnation that created the marker
fi
source "$MULTILANG_SH"
set -f

on_init() {
    seen=0
    mode=${MULTILANG_CONF[chaos.mode]:-none}
    after=${MULTILANG_CONF[chaos.after]:-0}
    marker=${MULTILANG_CONF[chaos.marker]-}
    trigger=${MULTILANG_CONF[chaos.trigger]-}
    big_mb=${MULTILANG_CONF[chaos.big.mb]:-100}
    sink=${MULTILANG_CONF[chaos.sink]:-false}
    slow=$(( ${MULTILANG_CONF[chaos.slow.ms]:-0} ))
    # bash has no floats: the share as a whole number per 32768 (the range of $RANDOM)
    fail_cut=$(awk -v s="${MULTILANG_CONF[chaos.fail.share]:-0}" 'BEGIN { printf "%d", s * 32768 }')
    RANDOM=$$
    if [[ ${MULTILANG_CONF[chaos.grandchild]:-false} == true ]]; then
        # shellcheck disable=SC2217  # stdin is closed on purpose: the child must not hold the protocol pipe
        sleep 600 </dev/null >/dev/null 2>&1 {_ML_OUT}>&- &  # not holding the protocol pipe
    fi
}

claim() { ( set -C; : >"$1" ) 2>/dev/null; }

armed() {
    [[ $mode != none ]] && (( seen > after )) || return 1
    if [[ -n $trigger ]]; then
        rm "$trigger" 2>/dev/null || return 1
    fi
    if [[ -n $marker ]] && ! claim "$marker"; then
        mode=none
        return 1
    fi
}

# Raw protocol text, around the library's buffer: what a broken client would write.
raw() { multilang_flush; printf '%s' "$1" >&"$_ML_OUT"; }

misbehave() {
    local m=$mode
    mode=none
    case $m in
        crash) kill -KILL $$ ;;
        hang) sleep 3600 ;;
        garbage) raw $'this is not json\nend\n' ;;
        badutf8) multilang_flush; printf '{"command":"log","msg":"bad \xff\xfe\xc3\x28 bytes"}\nend\n' >&"$_ML_OUT" ;;
        surrogate_emit) raw '{"command":"emit","anchors":["'"$MULTILANG_TUPLE_ID"'"],"tuple":["\ud800 lone"]}'$'\nend\n' ;;
        surrogate_log) raw '{"command":"log","msg":"lone \udcff surrogate"}'$'\nend\n' ;;
        bigline) multilang_flush; head -c "$(( big_mb << 20 ))" /dev/zero | tr '\0' x >&"$_ML_OUT"; sleep 3600 ;;
        flood) local line; printf -v line '%01023d' 0; for ((i = 0; i < 1024; i++)); do printf '%s\n' "$line"; done >&2 ;;
        exit) multilang_flush; exit 0 ;;
        ack_unknown) ack 12345 ;;
        ack_twice) ack; ack ;;
        anchor_acked) ack; emit_with -a "$MULTILANG_TUPLE_ID" -- late ;;
        unknown_stream) emit_with -s nope -- x ;;
        wrong_fields) emit x y ;;
    esac
}

process() {
    (( ++seen ))
    if armed; then misbehave; fi
    (( slow )) && sleep "$(( slow / 1000 )).$(printf '%03d' $(( slow % 1000 )))"
    if (( fail_cut && RANDOM < fail_cut )); then
        return 1  # failed, with an error naming this function and the status
    fi
    if [[ $sink != true ]]; then
        # shellcheck disable=SC2086  # splitting $1 into words is the point (globbing is off)
        emit_each $1
    fi
    ack
}

run_bolt -m process
