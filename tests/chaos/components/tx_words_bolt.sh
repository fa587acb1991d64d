#!/usr/bin/env bash
# The batch bolt of the transactional chaos tier in bash: the same as tx_words_bolt.py (see its
# docstring): (rid, number of words, 1) per line `RID WORD...`, emitted at the attempt's finish
# (`tx.emit: finish`) or per tuple (`tx.emit: tuple`), and the same once-per-schedule faults,
# planned by TX_FAULTS and claimed with a noclobber marker file in TX_FAULT_DIR (tx_faults.py).
# A crash is SIGKILL of this shell (no EXIT trap runs), as a crashed process would die.
source "$MULTILANG_SH"
set -f

declare -A rows=() seen=() # attempt ("txid-attempt") -> results as JSON lines / tuples seen

on_init() {
    per_tuple=false
    [[ ${MULTILANG_CONF[tx.emit]-finish} == tuple ]] && per_tuple=true
    slow=${TX_SLOW_SECS:-3.5}
}

# claim POINT TXID: true in the one process that fires the planned fault (it creates the marker)
claim() {
    [[ ,${TX_FAULTS-}, == *",$1:$2,"* ]] && ( set -C; : >"$TX_FAULT_DIR/$1-$2" ) 2>/dev/null
}

die() {
    printf 'TX FAULT: %s at txid %s, exiting\n' "$1" "$2" >&2
    kill -KILL $$
}

process() {
    local key=$MULTILANG_BATCH_KEY txid=$MULTILANG_TXID
    seen[$key]=$(( ${seen[$key]:-0} + 1 ))
    if (( ${seen[$key]} >= 2 )); then
        if claim crash "$txid"; then die crash "$txid"; fi
        if claim fail "$txid"; then return 3; fi
        if claim hang "$txid"; then sleep 3600; fi
        if claim slow "$txid"; then sleep "$slow"; fi
    fi
    local -a words
    read -ra words <<<"$3"
    local row="[\"${words[0]}\",$(( ${#words[@]} - 1 )),1]"
    if $per_tuple; then
        emit_json "$row"
    else
        rows[$key]+="$row"$'\n'
    fi
}

finish() {
    local key=$MULTILANG_BATCH_KEY txid=$MULTILANG_TXID row
    local -a all=()
    mapfile -t all <<<"${rows[$key]-}"
    unset 'rows[$key]' 'seen[$key]'
    if claim finish "$txid"; then
        local half=$(( (${#all[@]} - 1) / 2 )) i # the last element is the empty line after \n
        for (( i = 0; i < half; i++ )); do emit_json "${all[i]}"; done
        multilang_flush
        die finish "$txid"
    fi
    for row in "${all[@]}"; do
        [[ -n $row ]] && emit_json "$row"
    done
    return 0
}

on_abort() {
    unset 'rows[$MULTILANG_BATCH_KEY]' 'seen[$MULTILANG_BATCH_KEY]'
}

run_batch_bolt process finish
