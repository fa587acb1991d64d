#!/usr/bin/env bash
# exclaim: appends "!" to a DRPC request's argument (Storm's BasicDRPCTopology, in bash).
#
# One script serves both forms of the topology; the handshake tells which one it is in, by the
# fields of its input (docs/drpc.md §3):
#   Flux (topology.flux.yaml): fed by DRPCSpout, whose fields are [args, return-info]; it emits
#       [args + "!", return-info], anchored to the input, for ReturnResults to answer.
#   linear (topology.yaml): fed by the host's drpc-request with [request, args]; it emits
#       [request, args + "!"], the request id first and as it came (a number), for drpc-result.
source "$MULTILANG_SH"

FORM=linear

on_init() {  # $2: the context, as JSON text
    local flux
    flux=$(jq -r '[.["source->stream->fields"][]?[]? | select(. == ["args", "return-info"])]
                  | length > 0' <<<"$2") || return 1
    if [[ $flux == true ]]; then FORM=flux; fi
    log "exclaim: the $FORM form"
}

exclaim() {
    if [[ $FORM == flux ]]; then  # $1 args, $2 return-info (a JSON text, passed on untouched)
        emit "$1!" "$2"
    else  # $1 the request id (JSON text of a number), $2 args
        local result
        json_quote result "$2!"
        emit_json "[$1, $result]"
    fi
}

run_bolt exclaim
