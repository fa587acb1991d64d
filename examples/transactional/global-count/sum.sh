#!/usr/bin/env bash
# The sum in bash, a committer: adds each batch's partial counts to the totals in total.json,
# which also holds the txid that last changed them (written to a temporary file, then renamed);
# a replayed txid that was applied already is skipped, so every number counts once.
source "$MULTILANG_SH"

file=${TOTAL_FILE:-total.json}
declare -A counts=() totals=()

add() {  # $1: a partial count, $2: its sum
    counts[$MULTILANG_BATCH_KEY]=$(( ${counts[$MULTILANG_BATCH_KEY]:-0} + $1 ))
    totals[$MULTILANG_BATCH_KEY]=$(( ${totals[$MULTILANG_BATCH_KEY]:-0} + $2 ))
}

store() {
    local txid=0 count=0 sum=0
    if [[ -f $file ]]; then
        read -r txid count sum < <(jq -r '"\(.txid) \(.count) \(.sum)"' "$file")
    fi
    if (( MULTILANG_TXID > txid )); then
        count=$(( count + ${counts[$MULTILANG_BATCH_KEY]:-0} ))
        sum=$(( sum + ${totals[$MULTILANG_BATCH_KEY]:-0} ))
        printf '{"txid": %d, "count": %d, "sum": %d}\n' "$MULTILANG_TXID" "$count" "$sum" \
            > "$file.tmp"
        sync "$file.tmp"
        mv "$file.tmp" "$file"
    fi  # else: applied before this replay
    on_abort
}

on_abort() { unset 'counts[$MULTILANG_BATCH_KEY]' 'totals[$MULTILANG_BATCH_KEY]'; }

run_committer add store
