# shellcheck shell=bash
# multilang.sh: write Storm multilang bolts and spouts as bash functions.
#
# The host sets MULTILANG_SH to this file. A component sources it, defines a function and hands
# it to a runner; the library owns the loop, the handshake, heartbeats, acks and all protocol I/O.
#
#   #!/usr/bin/env bash
#   source "$MULTILANG_SH"
#   split() {                    # once per tuple; $1.. are the tuple's values
#     local w
#     for w in $1; do emit "$w"; done
#   }
#   set -f                       # `for w in $1` must not glob-expand a word such as `*`
#   run_bolt split
#
# RUNNERS (none returns: they exit 0 when the host closes stdin)
#   run_bolt FN        "Basic" bolt: FN is called once per tuple with the tuple's values as $1..;
#                      every emit made meanwhile is anchored to that tuple; the tuple is acked when
#                      FN returns 0, failed when it returns non-zero (and an `error` naming FN and
#                      the status is sent). The bolt keeps running either way.
#   run_bolt -m FN     Manual bolt: emits are still anchored to the current tuple, but acking is
#                      yours (`ack` / `fail`, now or later by id). A non-zero return still sends an
#                      `error` and fails the current tuple unless you acked or failed it already.
#   run_spout NEXT_FN [ACK_FN] [FAIL_FN]
#                      NEXT_FN is called for every `next` and emits zero or more tuples (usually
#                      with `emit_id`); with nothing to emit it just returns (the host backs off).
#                      ACK_FN / FAIL_FN get the message id as $1. Every command is answered with
#                      sync after the function returns; a non-zero return sends an `error`.
#
# BATCH RUNNERS (transactional batches, exactly-once: docs/transactional.md). They announce the
# batch/1 extension and need a host that declared the component `batch: bolt | committer | spout`
# (context.batch); without it they exit 1 at once ("batch components need a host that speaks
# batch/1"), as they do when the runner does not fit the declared role.
#   run_batch_bolt PROCESS_FN FINISH_FN
#                      PROCESS_FN is called per tuple of an attempt, with the values as $1.. and
#                      MULTILANG_TXID, MULTILANG_ATTEMPT, MULTILANG_BATCH_KEY ("$txid-$attempt")
#                      set; emits are anchored to the tuple, which is acked when it returns 0 and
#                      failed otherwise (as run_bolt). FINISH_FN is called once the task has all
#                      of an attempt (no arguments; the same variables and MULTILANG_COMMIT,
#                      true/false); its emits are anchored to the finish, which is acked when it
#                      returns 0; a non-zero return fails the attempt. It runs even for an
#                      attempt that brought this task no tuple. A tuple or finish of an attempt
#                      that is over (a lower attempt than one seen, one finished or aborted, or a
#                      txid committed before the start) is failed unread, with a warning; so is a
#                      tuple without a transaction.
#   run_committer PROCESS_FN FINISH_FN
#                      the same for `batch: committer`: FINISH_FN runs in the commit phase, in
#                      txid order (MULTILANG_COMMIT=true): store MULTILANG_TXID with your state
#                      in one transaction, and skip a batch whose txid you stored already.
#   run_transactional_spout INIT_FN EMIT_FN [COMMIT_FN]
#                      INIT_FN (task 0 only) gets the next txid and the previous txid's meta (JSON,
#                      null for txid 1) as $1 $2, and decides the batch by calling `batch_meta
#                      JSON` (any JSON value); returning 0 without calling it means "not ready"
#                      (the host asks again later). `batch_meta JSON TXID` moves on to a txid
#                      above the proposed one (the txids in between are skipped).
#                      EMIT_FN (every task) gets txid, attempt, meta, task_meta, prev_task_meta
#                      (JSON texts) and replay (true/false) as $1..$6, with MULTILANG_TXID,
#                      MULTILANG_ATTEMPT and MULTILANG_COMMITTED_TXID (the last committed txid:
#                      clean up below it) set. It emits this task's share with emit / emit_json /
#                      emit_with (no message ids), the same tuples for the same metadata, and may
#                      call `batch_meta JSON` to have its own metadata of the txid stored (given
#                      back as task_meta on a replay, as prev_task_meta for the next txid).
#                      COMMIT_FN gets txid and attempt in the commit phase. A non-zero return from
#                      any of the three sends an `error` and ends the task (exit 1): the protocol
#                      has no failure answer there; the host aborts and replays the attempt.
#   Per-attempt state is yours; the idiom is an associative array keyed by the attempt:
#       declare -A counts=()
#       count() { counts[$MULTILANG_BATCH_KEY]=$(( ${counts[$MULTILANG_BATCH_KEY]:-0} + 1 )); }
#       report() { emit_json "[$MULTILANG_TXID, ${counts[$MULTILANG_BATCH_KEY]:-0}]"
#                  unset 'counts[$MULTILANG_BATCH_KEY]'; }
#       on_abort() { unset 'counts[$MULTILANG_BATCH_KEY]'; }
#       run_batch_bolt count report
#   Unset it in FINISH_FN and in on_abort: an attempt ends with one or the other.
#
# OPTIONAL HOOKS (plain functions; called when they are defined at the time the runner starts)
#   on_init CONF_JSON CONTEXT_JSON   after the handshake (pid already sent); non-zero = exit 1
#   on_tick FREQ                     bolts: tick tuples (MULTILANG_TUPLE_* set); the library acks
#                                    the tick (fails it, with an `error`, on a non-zero return)
#   on_activate / on_deactivate      spouts: the host's activate / deactivate commands
#   on_abort                         batch bolts: an attempt's state is to be dropped
#                                    (MULTILANG_TXID, MULTILANG_ATTEMPT, MULTILANG_BATCH_KEY set):
#                                    the host aborted it, or a higher attempt of its txid came.
#                                    Nothing is answered; emit nothing from it.
#
# VALUES: strings arrive raw (any bytes but NUL, which bash variables cannot hold, so NULs are
# dropped); numbers, booleans, null, arrays and objects arrive as their JSON text ("3", "true",
# "null", "[1,2]"). jq 1.6 reads numbers as doubles: integers beyond 2^53 lose precision.
# `emit` sends every value as a JSON string; use `emit_json` (or `emit_with --json`) for numbers.
#
# EMITTING (bolts: anchored to the current tuple; all: "need_task_ids": false unless asked)
#   emit VALUE...                 one tuple on the default stream; values are taken as strings and
#                                 never as options, so a word such as `-n` or `--` is safe
#   emit_each VALUE...            one single-value tuple per argument (a fast splitter)
#   emit_id ID VALUE...           spouts: a tuple with message id ID (a string); ack/fail get it
#   emit_json JSON_ARRAY          the tuple as raw JSON text, e.g. emit_json '["w", 3]'
#   emit_with [OPTIONS] [--] [VALUE...]
#       -s|--stream STREAM        a named stream
#       -d|--direct TASK          direct emit to task TASK (never gets a task-id reply)
#       -i|--id ID                message id (a string); -I|--id-json JSON: any JSON value
#       -a|--anchor TUPLE_ID      anchor to this tuple id (repeatable; replaces the automatic one)
#       -u|--unanchored           no anchors at all
#       -j|--json JSON_ARRAY      the tuple as raw JSON text (then no VALUE arguments)
#       -T|--task-ids             wait for the host's reply and store it in MULTILANG_TASK_IDS
#                                 (an array); host messages arriving meanwhile are handled later
#   json_quote VAR STRING         sets VAR to STRING as a JSON string literal (to build arrays)
#
# OTHER MESSAGES
#   ack [TUPLE_ID] / fail [TUPLE_ID]   default: the current tuple (manual bolts)
#   batch_meta JSON [TXID]             batch spouts: see run_transactional_spout
#   log MSG [LEVEL]                    LEVEL 0..4 or trace|debug|info|warn|error (default info)
#   error MSG                          reported by the host as a component error
#   metrics NAME [PARAMS_JSON]         a metric update (PARAMS_JSON default null)
#   multilang_flush                    write what is buffered now (normally done before a read blocks)
#
# VARIABLES
#   after the handshake: MULTILANG_CONF_JSON, MULTILANG_CONTEXT_JSON (JSON text),
#     MULTILANG_CONF[key] (top-level conf values: strings raw, the rest as JSON text),
#     MULTILANG_TASK_COMPONENT[task] (context task->component), MULTILANG_TASKID,
#     MULTILANG_COMPONENTID, MULTILANG_PID_DIR
#   while handling a tuple: MULTILANG_TUPLE_ID, MULTILANG_TUPLE_COMPONENT (source component),
#     MULTILANG_TUPLE_STREAM, MULTILANG_TUPLE_TASK (source task)
#   in spout ack/fail hooks: MULTILANG_MSG_ID_JSON (the message id exactly as JSON)
#   after emit_with -T: MULTILANG_TASK_IDS (array of task ids)
#   batch runners: MULTILANG_BATCH_ROLE (bolt, committer or spout), MULTILANG_TRANSACTIONAL_ID,
#     MULTILANG_COMMITTED_TXID (the last committed txid: at start, then per batch_emit);
#     while handling an attempt: MULTILANG_TXID, MULTILANG_ATTEMPT, MULTILANG_BATCH_KEY,
#     MULTILANG_COMMIT (in FINISH_FN); in FINISH_FN, MULTILANG_TUPLE_ID is the finish's id
#
# RULES OF THE HOUSE
# * stdout belongs to the protocol: after sourcing, fd 1 is the component's stderr (so `echo`
#   lands in the host's log) and fd 0 is /dev/null. Use `log` for messages meant for the host.
# * Messages are buffered and written when the library is about to block on a read (no host
#   message is ready), and at the latest after 100 messages or within a second, so a burst of
#   tuples is answered in a few writes and a lone tuple at once. Acks of earlier tuples may
#   therefore wait for the user function of a later one (call multilang_flush to send output
#   early from a long-running function).
# * Parsing uses one long-lived jq co-process (no process per tuple) reading stdin. It is killed
#   when the script exits; if you replace the EXIT trap, call multilang_cleanup from yours.
#   Background processes you start inherit the protocol pipe: one that outlives the script
#   hides the script's exit from the host until it ends too.
# * Do not change LC_ALL / LC_CTYPE globally after the runner started (lengths in the jq ->
#   bash encoding are counted in the locale that was active then). UTF-8 and single-byte
#   locales work as they are; any other multibyte locale is replaced by LC_ALL=C.
# * A function called by the library runs in a condition context, so `set -e` does not stop it
#   half-way; return a non-zero status yourself to fail a tuple. (`set -u` errors and `exit`
#   still end the whole script: that is bash.)
# * `for w in $1` splits on IFS and also expands globs: use `set -f` in a splitter.
# * Public names: run_bolt run_spout run_batch_bolt run_committer run_transactional_spout emit
#   emit_each emit_id emit_json emit_with json_quote ack fail batch_meta log error metrics
#   multilang_flush multilang_cleanup, the hooks above and MULTILANG_*.
#   Redefining log or error is harmless to the library. Names starting with _ml_ / _ML_ are
#   private.

if [[ -n ${_ML_SOURCED-} ]]; then
    return 0
fi
_ML_SOURCED=1

# Keep the protocol pipes on private fds and give user code harmless ones: a stray `echo` must
# not corrupt the protocol, and nothing but jq may consume the host's messages.
exec {_ML_OUT}>&1 {_ML_IN}<&0 1>&2 0</dev/null

_ML_END=$'\nend\n'
_ML_SYNC='{"command":"sync"}'$_ML_END
_ML_NO_ANCHOR=',"need_task_ids":false'
# Replacement texts, quoted where used so that patsub_replacement cannot touch them.
# shellcheck disable=SC1003  # two backslashes are meant: the JSON escape of one
_ML_BS2='\\'
_ML_BSQ='\"'
_ML_BSN='\n'
_ML_BST='\t'
_ML_BSR='\r'
_ML_BUF=''          # messages produced since the last write
_ML_FLUSH_EVERY=100  # messages handled at most between two writes while jq has more ready
_ML_WROTE_AT=0      # SECONDS at the last write: output kept back goes when it changes
_ML_TURNS=0         # messages handled since the last write
_ML_EACH_HEAD='{"command":"emit","tuple":["%s"]'
_ML_EACH_TAIL='}\nend\n'
_ML_EACH_PLAIN=$_ML_EACH_HEAD$_ML_NO_ANCHOR$_ML_EACH_TAIL
_ML_EACH_FMT=$_ML_EACH_PLAIN  # emit_each's format: set with _ML_SUFFIX
_ML_EACH_OUT=''
_ML_SUFFIX=$_ML_NO_ANCHOR  # what `emit` appends: anchors (in a bolt tuple) and need_task_ids
_ML_ANCHOR=''       # JSON text of the current tuple's id, '' outside a tuple
_ML_DONE=0          # the current tuple was acked or failed by the user
_ML_STASH=()        # messages read while waiting for task ids, handled afterwards
_ML_STASH_HEAD=0
_ML_JQPID=''
_ML_STARTED=''
_ML_FROM_JQ=''
_ML_ROLE=''
_ML_SHOOK=0          # the handshake was seen
_ML_FN=''           # the user's functions, for the message handlers
_ML_MANUAL=0
_ML_TICK=''
_ML_NEXT=''
_ML_ACK=''
_ML_FAIL=''
_ML_ACTIVATE=''
_ML_DEACTIVATE=''
_ML_BATCH=''         # batch/1 runners: bolt (run_batch_bolt), committer, spout; '' for plain ones
_ML_FINISH=''        # their functions
_ML_ABORT=''
_ML_INIT=''
_ML_EMIT=''
_ML_COMMIT=''
_ML_STEP=''          # init / emit while INIT_FN / EMIT_FN runs: where batch_meta may be called
_ML_META=''          # what batch_meta was given there, sent after the function returns
_ML_META_TXID=''
declare -gA _ML_ATTEMPTS=()  # batch bolts: txid -> its open attempt (until finish / abort)
declare -gA _ML_RETIRED=()   # txid -> its highest finished or aborted attempt (the last ~1024)
MULTILANG_TXID=''
MULTILANG_ATTEMPT=''
MULTILANG_BATCH_KEY=''
MULTILANG_COMMIT=''
MULTILANG_BATCH_ROLE=''
MULTILANG_TRANSACTIONAL_ID=''
MULTILANG_COMMITTED_TXID=''
MULTILANG_TUPLE_ID=''
MULTILANG_TUPLE_COMPONENT=''
MULTILANG_TUPLE_STREAM=''
MULTILANG_TUPLE_TASK=''
MULTILANG_MSG_ID_JSON=''
MULTILANG_TASK_IDS=()
declare -gA MULTILANG_CONF=() MULTILANG_TASK_COMPONENT=()

# The jq side of the pipe. jq reads the host's stdin itself (lines up to `end`) and turns each
# message into one bash command: a handler name and its arguments, every argument quoted with
# @sh, so evaluating it is safe whatever bytes the values hold. Each command is preceded by its
# length in 10 decimal digits, counted in the unit bash counts in (bytes, or characters in a
# UTF-8 locale): bash reads a whole message with `read -N`, one syscall, and `eval`s it, so no
# per-field parsing happens in bash. Handlers: _ml_S handshake, _ml_T tuple, _ml_H heartbeat,
# _ml_K tick, _ml_C spout command, _ml_I task ids, _ml_X a message we cannot use; batch/1
# (docs/transactional.md §4): _ml_B a tuple of an attempt, _ml_N a tuple without one in a batch
# runner ($batch), _ml_F finish / abort (looked for before the heartbeat test: they are
# heartbeat-shaped), and the batch_* spout commands' fields after _ml_C's usual three. A plain
# tuple costs jq one key lookup more (`tx`) and bash nothing.
# shellcheck disable=SC2016
_ML_JQ_PROGRAM='
def clean: if type == "string" then (if index("\u0000") then split("\u0000") | join("") else . end)
           else tojson end;
def call($handler; $args):
  ($handler + " " + ($args | map(clean) | @sh)) as $code
  | ($code | if $bytes then utf8bytelength else length end | tostring) as $n
  | "0000000000"[($n | length):] + $n + $code;
def msg:
  if type == "array" then call("_ml_I"; .)
  elif type != "object" then call("_ml_X"; ["unexpected host message: " + tojson])
  elif has("tuple") then
    if .task == -1 and .stream == "__heartbeat" then
      if (.batch | type) == "object" then  # batch/1 finish / abort: heartbeat-shaped
        call("_ml_F"; [.id, (.id | tojson), .batch.op, .batch.txid, .batch.attempt,
                       (.batch.commit == true)])
      else call("_ml_H"; []) end
    elif .tx then
      call("_ml_B"; [.tx.txid, .tx.attempt, .id, (.id | tojson), (.comp // ""), .stream, .task]
                    + .tuple)
    else call(if .task == -1 and .stream == "__tick" then "_ml_K" elif $batch then "_ml_N"
              else "_ml_T" end; [.id, (.id | tojson), (.comp // ""), .stream, .task] + .tuple)
    end
  elif has("command") then
    call("_ml_C"; [.command, .id, (.id | tojson)]
      + if .command == "batch_emit" then
          [.tx.txid, .tx.attempt, (.meta | tojson), (.task_meta | tojson),
           (.prev_task_meta | tojson), (.replay == true), (.committed // 0)]
        elif .command == "batch_init" then [.txid, (.prev_meta | tojson)]
        elif .command == "batch_commit" then [.tx.txid, .tx.attempt]
        else [] end)
  elif has("pidDir") then
    (.conf // {}) as $c | (.context // {}) as $x
    | [$c | to_entries[] | select(.key != "") | .key, .value] as $cp
    | [($x["task->component"] // {}) | to_entries[] | .key, .value] as $tp
    | ($x.batch | if type == "object" then . else {} end) as $b
    | call("_ml_S"; [.pidDir, ($c | tojson), ($x | tojson), ($x.taskid // ""),
                     ($x.componentid // ""), ($b.role // ""), ($b.transactional_id // ""),
                     ($b.committed_txid // ""), ($cp | length / 2)] + $cp + $tp)
  else call("_ml_X"; ["unrecognised host message: " + tojson])
  end;
foreach inputs as $line ({};
  if $line == "end" then {out: .buf}
  else {buf: ((if .buf then .buf + "\n" else "" end) + $line)} end;
  .out // empty)
| . as $raw
| try (fromjson | msg)
  catch call("_ml_X"; ["cannot read a host message (" + . + "): " + $raw[0:300]])
'

# ---- output -------------------------------------------------------------------------------------

multilang_flush() {
    _ml_write
}

# Writes _ML_BUF (if any) and empties it. Bash's stdout is line-buffered by stdio (a 4 KiB buffer
# on a pipe): one printf of more than a buffer would send its last part as one write per line.
# So a long buffer goes out as a whole number of 4 KiB blocks, then the rest: at most three
# writes.
_ml_write() {
    _ML_TURNS=0 _ML_WROTE_AT=$SECONDS
    if (( ${#_ML_BUF} <= 1024 )); then  # at most 4 KiB in any locale
        [[ -z $_ML_BUF ]] || printf '%s' "$_ML_BUF" >&"$_ML_OUT"
    else
        local LC_ALL=C  # lengths and offsets in bytes
        local n=$(( ${#_ML_BUF} / 4096 * 4096 ))
        { printf '%s' "${_ML_BUF:0:n}"; printf '%s' "${_ML_BUF:n}"; } >&"$_ML_OUT"
    fi
    _ML_BUF=''
}

# $1 -> _ML_J, a JSON string literal. Pure bash, and plain strings take one pattern test.
_ml_quote() {
    case $1 in
        *[\"\\[:cntrl:]]*) local s=$1; _ml_escape; _ML_J=\"$s\" ;;
        *) _ML_J=\"$1\" ;;
    esac
}

# Escapes the caller's local `s` for JSON: \ and " always, control characters as \n \t \r or
# \u00XX (the rarer ones in a slower loop).
_ml_escape() {
    s=${s//\\/"$_ML_BS2"}
    s=${s//\"/"$_ML_BSQ"}
    case $s in
        *[[:cntrl:]]*)
            s=${s//$'\n'/"$_ML_BSN"}
            s=${s//$'\t'/"$_ML_BST"}
            s=${s//$'\r'/"$_ML_BSR"}
            local pre c u
            while [[ $s == *[[:cntrl:]]* ]]; do
                pre=${s%%[[:cntrl:]]*}
                c=${s:${#pre}:1}
                [[ -n $c ]] || break  # cannot happen with valid text; never loop forever
                printf -v u '\\u%04x' "'$c"
                s=${s//"$c"/"$u"}
            done ;;
    esac
}

json_quote() {
    _ml_quote "$2"
    printf -v "$1" '%s' "$_ML_J"
}

# "$@" -> _ML_J, a JSON array of strings.
_ml_values() {
    local s t=''
    for s; do
        case $s in *[\"\\[:cntrl:]]*) _ml_escape ;; esac
        t+=,\"$s\"
    done
    _ML_J="[${t:1}]"
}

emit() {
    if (( $# == 1 )); then  # the usual case, kept to two bash statements
        case $1 in
            *[\"\\[:cntrl:]]*) _ml_quote "$1"
                _ML_BUF+="{\"command\":\"emit\",\"tuple\":[$_ML_J]$_ML_SUFFIX}$_ML_END" ;;
            *) _ML_BUF+="{\"command\":\"emit\",\"tuple\":[\"$1\"]$_ML_SUFFIX}$_ML_END" ;;
        esac
    else
        _ml_values "$@"
        _ML_BUF+="{\"command\":\"emit\",\"tuple\":$_ML_J$_ML_SUFFIX}$_ML_END"
    fi
}

_ml_emit_each_slow() {
    local s
    for s; do
        case $s in *[\"\\[:cntrl:]]*) _ml_escape ;; esac
        _ML_BUF+="{\"command\":\"emit\",\"tuple\":[\"$s\"]$_ML_SUFFIX}$_ML_END"
    done
}

emit_each() {
    case "$*" in
        *[\"\\[:cntrl:]]*) _ml_emit_each_slow "$@" ;;
        *)  # nothing to escape: every message at once, printf repeating its format per word
            # (a third of what substituting on the arguments costs bash), unless the anchor
            # holds what a format would read as a conversion or an escape; no words, no emits
            case $#$_ML_ANCHOR in
                0*) ;;
                *[%\\]*) _ml_emit_each_slow "$@" ;;
                *)  # shellcheck disable=SC2059  # the format is the point (no % or \ in the anchor)
                    printf -v _ML_EACH_OUT "$_ML_EACH_FMT" "$@"
                    _ML_BUF+=$_ML_EACH_OUT ;;
            esac ;;
    esac
}

emit_id() {
    if (( $# < 1 )); then
        _ml_usage "emit_id ID VALUE..."
        return 2
    fi
    if [[ $_ML_BATCH == spout ]]; then
        _ml_usage "emit_id: a batch spout's tuples carry no message id (use emit)"
        return 2
    fi
    _ml_quote "$1"
    local id=$_ML_J
    shift
    _ml_values "$@"
    _ML_BUF+="{\"command\":\"emit\",\"tuple\":$_ML_J,\"id\":$id$_ML_SUFFIX}$_ML_END"
}

emit_json() {
    if (( $# != 1 )); then
        _ml_usage "emit_json JSON_ARRAY"
        return 2
    fi
    _ML_BUF+="{\"command\":\"emit\",\"tuple\":$1$_ML_SUFFIX}$_ML_END"
}

emit_with() {
    local stream='' task='' id='' anchors='' own_anchors=0 want=0 tuple='' have_tuple=0
    while (( $# )); do
        case $1 in
            -s|--stream|-d|--direct|-i|--id|-I|--id-json|-a|--anchor|-j|--json)
                if (( $# < 2 )); then
                    _ml_usage "emit_with: $1 needs a value"
                    return 2
                fi ;;
        esac
        case $1 in
            -s|--stream) _ml_quote "$2"; stream=$_ML_J; shift 2 ;;
            -d|--direct)
                if [[ ! $2 =~ ^-?[0-9]+$ ]]; then
                    _ml_usage "emit_with: --direct needs a task id, got '$2'"
                    return 2
                fi
                task=$2; shift 2 ;;
            -i|--id) _ml_quote "$2"; id=$_ML_J; shift 2 ;;
            -I|--id-json) id=$2; shift 2 ;;
            -a|--anchor) _ml_quote "$2"; anchors+=,$_ML_J; own_anchors=1; shift 2 ;;
            -u|--unanchored) anchors=''; own_anchors=1; shift ;;
            -j|--json) tuple=$2; have_tuple=1; shift 2 ;;
            -T|--task-ids) want=1; shift ;;
            --) shift; break ;;
            -*) _ml_usage "emit_with: unknown option '$1' (values go after --)"; return 2 ;;
            *) break ;;
        esac
    done
    if [[ -n $id && $_ML_BATCH == spout ]]; then
        _ml_usage "emit_with: a batch spout's tuples carry no message id"
        return 2
    fi
    if (( have_tuple )); then
        if (( $# )); then
            _ml_usage "emit_with: give either --json or values, not both"
            return 2
        fi
    else
        _ml_values "$@"
        tuple=$_ML_J
    fi
    local m="{\"command\":\"emit\",\"tuple\":$tuple"
    [[ -z $stream ]] || m+=",\"stream\":$stream"
    [[ -z $task ]] || m+=",\"task\":$task"
    [[ -z $id ]] || m+=",\"id\":$id"
    if [[ $_ML_ROLE == bolt ]]; then  # spouts have no anchors
        if (( own_anchors )); then
            [[ -z $anchors ]] || m+=",\"anchors\":[${anchors:1}]"
        elif [[ -n $_ML_ANCHOR ]]; then
            m+=",\"anchors\":[$_ML_ANCHOR]"
        fi
    fi
    if (( ! want )); then
        _ML_BUF+="$m,\"need_task_ids\":false}$_ML_END"
    elif [[ -n $task ]]; then  # the host never answers a direct emit: the answer is known
        _ML_BUF+="$m,\"need_task_ids\":false}$_ML_END"
        MULTILANG_TASK_IDS=("$task")
    else
        _ML_BUF+="$m}$_ML_END"
        _ml_await_task_ids
    fi
}

# Reads until the task-id list arrives; other messages are stashed for the main loop, in order.
# Stashed messages are older than anything jq still holds, and never a task-id list.
_ml_await_task_ids() {
    while true; do
        multilang_flush
        if ! _ml_read_jq; then
            _ml_eof  # the host is gone: nobody will answer
        fi
        if [[ $_ML_MSG == "_ml_I "* ]]; then
            eval "$_ML_MSG"
            return 0
        fi
        _ML_STASH+=("$_ML_MSG")
    done
}

# ack / fail [TUPLE_ID]: settle a tuple (default: the current one)
_ml_settle() {  # COMMAND [TUPLE_ID]
    local command=$1 id
    shift
    if (( $# )); then
        _ml_quote "$1"
        id=$_ML_J
    elif [[ -n $_ML_ANCHOR ]]; then
        id=$_ML_ANCHOR
    else
        _ml_usage "$command: no current tuple; give a tuple id"
        return 2
    fi
    if [[ $id == "$_ML_ANCHOR" ]]; then
        _ML_DONE=1
    fi
    _ML_BUF+="{\"command\":\"$command\",\"id\":$id}$_ML_END"
}

ack() { _ml_settle ack "$@"; }
fail() { _ml_settle fail "$@"; }

# The public log / error are wrappers, so that a component that defines its own `log` or
# `error` (a common name in scripts) does not break the library's reporting.
log() { _ml_log "$@"; }
error() { _ml_error "$@"; }

_ml_log() {
    local level=${2-2}
    case $level in
        0|1|2|3|4) ;;
        trace|TRACE) level=0 ;;
        debug|DEBUG) level=1 ;;
        warn|WARN|warning|WARNING) level=3 ;;
        error|ERROR) level=4 ;;
        *) level=2 ;;
    esac
    _ml_quote "${1-}"
    _ML_BUF+="{\"command\":\"log\",\"msg\":$_ML_J,\"level\":$level}$_ML_END"
}

_ml_error() {
    _ml_quote "${1-}"
    _ML_BUF+="{\"command\":\"error\",\"msg\":$_ML_J}$_ML_END"
}

metrics() {
    if (( $# < 1 )) || [[ -z $1 ]]; then
        _ml_usage "metrics NAME [PARAMS_JSON]"
        return 2
    fi
    _ml_quote "$1"
    _ML_BUF+="{\"command\":\"metrics\",\"name\":$_ML_J,\"params\":${2:-null}}$_ML_END"
}

# A programming error in the component: told on stderr and in the host's log.
_ml_usage() {
    printf 'multilang.sh: usage: %s\n' "$1" >&2
    _ml_log "multilang.sh: usage: $1" 4
}

# ---- input --------------------------------------------------------------------------------------

# The next command from jq -> _ML_MSG; status 1 at the end of input.
_ml_read_jq() {
    local len
    IFS= read -r -N 10 -u "$_ML_FROM_JQ" len || return 1
    IFS= read -r -N "$((10#$len))" -u "$_ML_FROM_JQ" _ML_MSG || return 1
}

# The main loop of both runners: take the next message (stashed ones first) and run its handler.
# What the handlers buffered is written before the next blocking read, i.e. when jq has nothing
# ready (`read -t 0` asks without reading), and at the latest after _ML_FLUSH_EVERY messages or
# when the clock's second changes (`_ml_turn`, at the start of every handler that may come in a
# burst): the host acks and routes the first tuples of a long burst while we work on the rest,
# and a slow bolt with a long queue never goes silent for a second plus one tuple (the host
# takes silence while it owes answers for a hang). The handlers count, not the loop, because a
# message may hold several tuples (`joined` below). The loop never expands _ML_BUF: bash copies
# a value char by char at every expansion, which would cost per byte buffered at every turn.
# Returns at the end of input.
#
# A message is one command, or under shell-frames/1;joined several tuples' _ml_T commands, one a
# line: the host joins the tuples it writes to us at once (docs/protocol.md §3.5), and bash pays
# for the reads, the `read -t 0` and the loop turn once for all of them (a quarter of a bash
# split's instructions per tuple).
_ml_loop() {
    local _ml_len
    while true; do
        if (( _ML_STASH_HEAD < ${#_ML_STASH[@]} )); then
            _ML_MSG=${_ML_STASH[_ML_STASH_HEAD]}
            _ML_STASH_HEAD=$((_ML_STASH_HEAD + 1))
            if (( _ML_STASH_HEAD == ${#_ML_STASH[@]} )); then
                _ML_STASH=()
                _ML_STASH_HEAD=0
            fi
        else
            read -t 0 -u "$_ML_FROM_JQ" || _ml_write
            IFS= read -r -N 10 -u "$_ML_FROM_JQ" _ml_len || return 0
            IFS= read -r -N "$((10#$_ml_len))" -u "$_ML_FROM_JQ" _ML_MSG || return 0
        fi
        eval "$_ML_MSG"
    done
}

# Counts a message handled; writes what is buffered after _ML_FLUSH_EVERY of them or when the
# clock's second changed. SECONDS, not EPOCHREALTIME: reading the latter as a number costs bash
# 15 % more instructions per tuple; and a change of SECONDS, not a deadline, so that a script
# that resets SECONDS cannot stop it. Inlined in _ml_T (a call costs bash as much again).
_ml_turn() {
    (( ++_ML_TURNS < _ML_FLUSH_EVERY && SECONDS == _ML_WROTE_AT )) || _ml_write
}

# ---- message handlers (called by eval; every one returns 0) -------------------------------------

# A bolt tuple: $1 id, $2 id as JSON, $3 source component, $4 stream, $5 source task, $6.. values.
# A spout has its own (`_ml_spout_role`): this one runs per tuple and is kept to what a bolt needs.
_ml_T() {
    (( ++_ML_TURNS < _ML_FLUSH_EVERY && SECONDS == _ML_WROTE_AT )) || _ml_write  # _ml_turn
    # One command per group of assignments: bash pays per command, and this runs per tuple.
    MULTILANG_TUPLE_ID=$1 _ML_ANCHOR=$2 MULTILANG_TUPLE_COMPONENT=$3 MULTILANG_TUPLE_STREAM=$4 \
        MULTILANG_TUPLE_TASK=$5 _ML_SUFFIX=",\"anchors\":[$2],\"need_task_ids\":false" _ML_DONE=0 \
        _ML_EACH_FMT=$_ML_EACH_HEAD$_ML_SUFFIX$_ML_EACH_TAIL
    shift 5
    if "$_ML_FN" "$@"; then
        (( _ML_DONE | _ML_MANUAL )) || _ML_BUF+="{\"command\":\"ack\",\"id\":$_ML_ANCHOR}$_ML_END"
    else
        _ml_T_failed $?
    fi
    _ML_ANCHOR='' _ML_SUFFIX=$_ML_NO_ANCHOR _ML_EACH_FMT=$_ML_EACH_PLAIN
}

# The rare path of _ml_T, apart: bash copies a function's body at every call.
_ml_T_failed() {
    _ml_error "$_ML_FN returned status $1 for tuple $MULTILANG_TUPLE_ID"
    (( _ML_DONE )) || _ML_BUF+="{\"command\":\"fail\",\"id\":$_ML_ANCHOR}$_ML_END"
}

_ml_H() {
    _ml_turn
    if [[ $_ML_ROLE == bolt ]]; then
        _ML_BUF+=$_ML_SYNC
    else
        _ml_unexpected "a heartbeat tuple"
    fi
}

# A tick: the hook runs unanchored, and the library settles the tick itself.
# shellcheck disable=SC2034  # MULTILANG_TUPLE_*: for the component's on_tick to read
_ml_K() {
    _ml_turn
    if [[ $_ML_ROLE != bolt ]]; then
        _ml_unexpected "a tick tuple"
        return 0
    fi
    local _ml_rc=0 _ml_id=$2
    MULTILANG_TUPLE_ID=$1
    MULTILANG_TUPLE_COMPONENT=$3
    MULTILANG_TUPLE_STREAM=$4
    MULTILANG_TUPLE_TASK=$5
    shift 5
    if [[ -n $_ML_TICK ]]; then
        "$_ML_TICK" "$@" || _ml_rc=$?
    fi
    if (( _ml_rc )); then
        _ml_error "$_ML_TICK returned status $_ml_rc for tick tuple $MULTILANG_TUPLE_ID"
        _ML_BUF+="{\"command\":\"fail\",\"id\":$_ml_id}$_ML_END"
    else
        _ML_BUF+="{\"command\":\"ack\",\"id\":$_ml_id}$_ML_END"
    fi
}

# A spout command: $1 the command, $2 its id (raw string, or JSON text), $3 the id as JSON.
# shellcheck disable=SC2034  # MULTILANG_MSG_ID_JSON: for the component's ack/fail hooks to read
_ml_C() {
    _ml_turn
    if [[ $_ML_ROLE != spout ]]; then
        _ml_unexpected "the spout command '$1'"
        return 0
    fi
    case $1 in
        next) _ml_call "$_ML_NEXT" ;;
        ack) MULTILANG_MSG_ID_JSON=$3; _ml_call "$_ML_ACK" "$2" ;;
        fail) MULTILANG_MSG_ID_JSON=$3; _ml_call "$_ML_FAIL" "$2" ;;
        activate) _ml_call "$_ML_ACTIVATE" ;;
        deactivate) _ml_call "$_ML_DEACTIVATE" ;;
        batch_init|batch_emit|batch_commit)
            if [[ $_ML_BATCH == spout ]]; then
                _ml_batch_command "$@"
            else
                _ml_log "multilang.sh: unknown spout command '$1', ignored" 3
            fi ;;
        *) _ml_log "multilang.sh: unknown spout command '$1', ignored" 3 ;;
    esac
    _ML_BUF+=$_ML_SYNC
}

# ---- batch/1 (docs/transactional.md §4) ---------------------------------------------------------

# A tuple of an attempt: $1 txid, $2 attempt, then _ml_T's arguments. The usual case (a tuple of
# the attempt already open for its txid) takes one test. (A plain runner never announced batch/1
# and so never gets one; it would take it as a plain tuple.)
_ml_B() {
    if [[ -n $_ML_BATCH ]]; then
        if [[ ${_ML_ATTEMPTS[$1]-} != "$2" ]]; then
            _ml_open "$1" "$2" tuple "$4" || return 0
        fi
        MULTILANG_TXID=$1 MULTILANG_ATTEMPT=$2 MULTILANG_BATCH_KEY=$1-$2
    fi
    shift 2
    _ml_T "$@"
}

# A tuple without `tx` in a batch bolt (the host tags every tuple of the batch group, §4.2):
# there is no attempt to give it to, so it is failed, unread. $1 its id, $2 the id as JSON.
_ml_N() {
    _ml_turn
    _ml_log "multilang.sh: a batch bolt received tuple $1 without a transaction (tx), failed" 3
    _ML_BUF+="{\"command\":\"fail\",\"id\":$2}$_ML_END"
}

# Opens attempt $2 of txid $1 for a message ($3: tuple or finish; $4 its id as JSON), as the
# Python client's AttemptStates: status 1 (after failing the message, with a warning, unread)
# when the attempt is over: lower than the open one, finished or aborted already, or of a txid
# committed before this task started (the host ignores answers about it, §2.7; no code is run
# for state that is gone). A higher attempt replaces the open one, whose state is dropped
# (§4.2): on_abort is called for it.
_ml_open() {
    local _ml_open_attempt=${_ML_ATTEMPTS[$1]-}
    if (( $1 <= ${MULTILANG_COMMITTED_TXID:-0} || $2 <= ${_ML_RETIRED[$1]:-0} )) ||
        { [[ -n $_ml_open_attempt ]] && (( _ml_open_attempt > $2 )); }; then
        _ml_log "multilang.sh: failing a $3 of txid $1 attempt $2, which is over" 3
        _ML_BUF+="{\"command\":\"fail\",\"id\":$4}$_ML_END"
        return 1
    fi
    _ML_ATTEMPTS[$1]=$2
    if [[ -n $_ml_open_attempt ]]; then
        _ml_aborted "$1" "$_ml_open_attempt"
    fi
}

# Closes attempt $2 of txid $1 (after its finish, or on abort): later messages of it, or of a
# lower attempt, are stale. The memory of closed txids is kept to the last 1024 or so (txids
# grow: the oldest are dropped, in one pass once it doubles).
_ml_retire() {
    local _ml_open_attempt=${_ML_ATTEMPTS[$1]-}
    if [[ -n $_ml_open_attempt ]] && (( _ml_open_attempt <= $2 )); then
        unset '_ML_ATTEMPTS[$1]'
    fi
    if (( $2 > ${_ML_RETIRED[$1]:-0} )); then
        _ML_RETIRED[$1]=$2
    fi
    if (( ${#_ML_RETIRED[@]} > 2048 )); then
        local _ml_txid
        for _ml_txid in "${!_ML_RETIRED[@]}"; do
            (( _ml_txid > $1 - 1024 )) || unset '_ML_RETIRED[$_ml_txid]'
        done
    fi
}

# on_abort for attempt $2 of txid $1 (if the component defines it).
_ml_aborted() {
    MULTILANG_TXID=$1 MULTILANG_ATTEMPT=$2 MULTILANG_BATCH_KEY=$1-$2
    _ml_call "$_ML_ABORT"
}

# finish / abort (heartbeat-shaped): $1 id, $2 id as JSON, $3 op, $4 txid, $5 attempt, $6 commit.
_ml_F() {
    _ml_turn
    if [[ $_ML_BATCH != bolt && $_ML_BATCH != committer ]]; then
        _ml_unexpected "a batch '$3' message"
        return 0
    fi
    case $3 in
        finish)
            if [[ ${_ML_ATTEMPTS[$4]-} == "$5" ]] || _ml_open "$4" "$5" finish "$2"; then
                _ml_finish "$@"
            fi ;;
        abort)  # not answered (§4.2); on_abort for the open attempt if lower, then for this one
            local _ml_open_attempt=${_ML_ATTEMPTS[$4]-}
            _ml_retire "$4" "$5"
            if [[ -n $_ml_open_attempt ]] && (( _ml_open_attempt < $5 )); then
                _ml_aborted "$4" "$_ml_open_attempt"
            fi
            _ml_aborted "$4" "$5" ;;
        *) _ml_log "multilang.sh: unknown batch message '$3', ignored" 3 ;;
    esac
}

# Runs the finish function with the finish's id as the current tuple (emits are anchored to it),
# then acks it, or fails it on a non-zero status. The attempt is closed either way: its state is
# dropped after the finish (§4.2).
# shellcheck disable=SC2034  # MULTILANG_*: for the component's finish function to read
_ml_finish() {
    MULTILANG_TXID=$4 MULTILANG_ATTEMPT=$5 MULTILANG_BATCH_KEY=$4-$5 MULTILANG_COMMIT=$6 \
        MULTILANG_TUPLE_ID=$1 _ML_ANCHOR=$2 MULTILANG_TUPLE_COMPONENT='' \
        MULTILANG_TUPLE_STREAM=__heartbeat MULTILANG_TUPLE_TASK=-1 \
        _ML_SUFFIX=",\"anchors\":[$2],\"need_task_ids\":false" _ML_DONE=0 \
        _ML_EACH_FMT=$_ML_EACH_HEAD$_ML_SUFFIX$_ML_EACH_TAIL
    local _ml_rc=0
    "$_ML_FINISH" || _ml_rc=$?
    if (( _ml_rc )); then
        _ml_error "$_ML_FINISH returned status $_ml_rc for the finish of txid $4 attempt $5"
        (( _ML_DONE )) || _ML_BUF+="{\"command\":\"fail\",\"id\":$_ML_ANCHOR}$_ML_END"
    elif (( ! _ML_DONE )); then
        _ML_BUF+="{\"command\":\"ack\",\"id\":$_ML_ANCHOR}$_ML_END"
    fi
    _ml_retire "$4" "$5"
    _ML_ANCHOR='' _ML_SUFFIX=$_ML_NO_ANCHOR _ML_EACH_FMT=$_ML_EACH_PLAIN
}

# A batch spout's command (§4.3); _ml_C sends the sync after it. batch_init: $4 txid, $5 the
# previous txid's meta; batch_emit: $4 txid, $5 attempt, $6 meta, $7 task meta, $8 previous task
# meta, $9 replay, $10 the last committed txid; batch_commit: $4 txid, $5 attempt. A failure has
# no answer in the protocol (a sync after a half-emitted batch would say the task did its share),
# so the task exits: the host aborts the attempt and replays it once the task is restarted, as
# Storm does when an emitter throws (and as the Python client does). "Not ready" is INIT_FN
# returning 0 without calling batch_meta.
# shellcheck disable=SC2034  # MULTILANG_*: for the component's functions to read
_ml_batch_command() {
    local _ml_rc=0
    _ML_META='' _ML_META_TXID=''
    case $1 in
        batch_init)
            _ML_STEP=init
            "$_ML_INIT" "$4" "$5" || _ml_rc=$?
            _ML_STEP=''
            if (( _ml_rc )); then
                _ml_batch_died "$_ML_INIT returned status $_ml_rc for batch_init of txid $4"
            fi ;;
        batch_emit)
            MULTILANG_TXID=$4 MULTILANG_ATTEMPT=$5 MULTILANG_BATCH_KEY=$4-$5 \
                MULTILANG_COMMITTED_TXID=${10} _ML_STEP=emit
            "$_ML_EMIT" "$4" "$5" "$6" "$7" "$8" "$9" || _ml_rc=$?
            _ML_STEP=''
            if (( _ml_rc )); then
                _ml_batch_died "$_ML_EMIT returned status $_ml_rc for batch_emit of txid $4" \
                    "attempt $5"
            fi ;;
        batch_commit)
            MULTILANG_TXID=$4 MULTILANG_ATTEMPT=$5 MULTILANG_BATCH_KEY=$4-$5
            [[ -z $_ML_COMMIT ]] || "$_ML_COMMIT" "$4" "$5" || _ml_rc=$?
            if (( _ml_rc )); then
                _ml_batch_died "$_ML_COMMIT returned status $_ml_rc for batch_commit of txid $4" \
                    "attempt $5"
            fi ;;
    esac
    if [[ -n $_ML_META ]]; then
        _ML_BUF+="{\"command\":\"batch_meta\",\"meta\":$_ML_META"
        _ML_BUF+="${_ML_META_TXID:+,\"txid\":$_ML_META_TXID}}$_ML_END"
    fi
}

_ml_batch_died() {  # WORDS...: what failed
    printf 'multilang.sh: %s; exiting\n' "$*" >&2
    _ml_error "$*; the task exits"
    exit 1
}

batch_meta() {
    if [[ -z $_ML_STEP ]]; then
        _ml_usage "batch_meta: only inside the INIT_FN or EMIT_FN of run_transactional_spout"
        return 2
    fi
    if (( $# < 1 || $# > 2 )) || [[ -z $1 ]]; then
        _ml_usage "batch_meta JSON [TXID]"
        return 2
    fi
    if (( $# == 2 )) && [[ $_ML_STEP != init || ! $2 =~ ^[1-9][0-9]*$ ]]; then
        _ml_usage "batch_meta: a TXID (a positive integer) only inside INIT_FN, got '$2'"
        return 2
    fi
    _ML_META=$1 _ML_META_TXID=${2-}
}

# shellcheck disable=SC2034  # MULTILANG_TASK_IDS: for the component to read after emit_with -T
_ml_I() {
    MULTILANG_TASK_IDS=("$@")
    if [[ ${FUNCNAME[1]-} != _ml_await_task_ids ]]; then
        _ml_log "multilang.sh: unexpected task-id list [$*] (no emit is waiting for one)" 3
    fi
}

# shellcheck disable=SC2034  # MULTILANG_*: the handshake's values, for the component to read
_ml_S() {
    if (( _ML_SHOOK )); then
        _ml_unexpected "a second handshake"
        return 0
    fi
    _ML_SHOOK=1
    MULTILANG_PID_DIR=$1
    MULTILANG_CONF_JSON=$2
    MULTILANG_CONTEXT_JSON=$3
    MULTILANG_TASKID=$4
    MULTILANG_COMPONENTID=$5
    MULTILANG_BATCH_ROLE=$6
    MULTILANG_TRANSACTIONAL_ID=$7
    MULTILANG_COMMITTED_TXID=$8
    local n=$9
    shift 9
    while (( n > 0 )); do
        MULTILANG_CONF[$1]=$2
        shift 2
        n=$((n - 1))
    done
    while (( $# >= 2 )); do
        MULTILANG_TASK_COMPONENT[$1]=$2
        shift 2
    done
}

_ml_X() {
    _ml_turn
    _ml_log "multilang.sh: $1" 3
}

_ml_unexpected() {
    _ml_log "multilang.sh: a $_ML_ROLE received $1, ignored" 3
}

# A spout's _ml_T: a tuple is not for it (the bolts' _ml_T does not test the role, per tuple).
_ml_spout_role() {
    _ML_ROLE=spout
    # shellcheck disable=SC2317  # called by eval
    _ml_T() {
        _ml_turn
        _ml_unexpected "a tuple on stream '$4'"
    }
}

# Calls an optional hook ($1 may be empty); a non-zero status becomes an `error`.
_ml_call() {
    local _ml_f=$1 _ml_rc=0
    [[ -n $_ml_f ]] || return 0
    shift
    "$_ml_f" "$@" || _ml_rc=$?
    if (( _ml_rc )); then
        _ml_error "$_ml_f returned status $_ml_rc"
    fi
    return 0
}

# ---- runners ------------------------------------------------------------------------------------

run_bolt() {
    if [[ ${1-} == -m ]]; then
        _ML_MANUAL=1
        shift
    fi
    if (( $# != 1 )); then
        printf 'multilang.sh: usage: run_bolt [-m] FUNCTION\n' >&2
        exit 2
    fi
    _ML_ROLE=bolt
    _ML_FN=$1
    if declare -F on_tick >/dev/null; then
        _ML_TICK=on_tick
    fi
    _ml_start "$_ML_FN"
    _ml_loop
    _ml_eof
}

run_batch_bolt() {
    _ML_BATCH=bolt
    _ml_run_batch_bolt run_batch_bolt "$@"
}

run_committer() {
    _ML_BATCH=committer
    _ml_run_batch_bolt run_committer "$@"
}

# No locals in runners: user functions run inside them and would see (and set) them.
_ml_run_batch_bolt() {  # RUNNER PROCESS_FN FINISH_FN
    if (( $# != 3 )) || [[ -z $2 || -z $3 ]]; then
        printf 'multilang.sh: usage: %s PROCESS_FUNCTION FINISH_FUNCTION\n' "$1" >&2
        exit 2
    fi
    _ML_ROLE=bolt
    _ML_FN=$2
    _ML_FINISH=$3
    if declare -F on_tick >/dev/null; then
        _ML_TICK=on_tick
    fi
    if declare -F on_abort >/dev/null; then
        _ML_ABORT=on_abort
    fi
    _ml_start "$2" "$3"
    _ml_loop
    _ml_eof
}

run_transactional_spout() {
    if (( $# < 2 || $# > 3 )) || [[ -z $1 || -z $2 ]]; then
        printf 'multilang.sh: usage: %s\n' >&2 \
            'run_transactional_spout INIT_FUNCTION EMIT_FUNCTION [COMMIT_FUNCTION]'
        exit 2
    fi
    _ml_spout_role
    _ML_BATCH=spout
    _ML_INIT=$1
    _ML_EMIT=$2
    _ML_COMMIT=${3-}
    if declare -F on_activate >/dev/null; then
        _ML_ACTIVATE=on_activate
    fi
    if declare -F on_deactivate >/dev/null; then
        _ML_DEACTIVATE=on_deactivate
    fi
    _ml_start "$@"
    _ml_loop
    _ml_eof
}

run_spout() {
    if (( $# < 1 || $# > 3 )); then
        printf 'multilang.sh: usage: run_spout NEXT_FUNCTION [ACK_FUNCTION] [FAIL_FUNCTION]\n' >&2
        exit 2
    fi
    _ml_spout_role
    _ML_NEXT=$1
    _ML_ACK=${2-}
    _ML_FAIL=${3-}
    if declare -F on_activate >/dev/null; then
        _ML_ACTIVATE=on_activate
    fi
    if declare -F on_deactivate >/dev/null; then
        _ML_DEACTIVATE=on_deactivate
    fi
    _ml_start "$@"
    _ml_loop
    _ml_eof
}

# Starts jq, does the handshake, calls on_init. The arguments name the user's functions.
# Locals carry the _ml_ prefix: on_init runs inside this function and sees them.
_ml_start() {
    if [[ -n $_ML_STARTED ]]; then
        printf 'multilang.sh: a runner (run_bolt, run_spout, ...) can be called only once\n' >&2
        exit 2
    fi
    _ML_STARTED=1
    local _ml_f
    for _ml_f; do
        if [[ -n $_ml_f ]] && ! declare -F "$_ml_f" >/dev/null; then
            printf 'multilang.sh: %s is not a function\n' "$_ml_f" >&2
            exit 2
        fi
    done
    if ! type -P jq >/dev/null; then
        printf 'multilang.sh: jq is needed but not on PATH\n' >&2
        exit 1
    fi
    # Lengths from jq must be counted in the unit bash counts in: "é€" is 2 characters in a
    # UTF-8 locale and 5 bytes in the C locale; any other multibyte locale is replaced by C.
    local _ml_probe=$'\xc3\xa9\xe2\x82\xac' _ml_bytes=true _ml_batch=false
    [[ -z $_ML_BATCH ]] || _ml_batch=true
    case ${#_ml_probe} in
        2) _ml_bytes=false ;;
        5) ;;
        *) export LC_ALL=C ;;
    esac
    # A process substitution rather than `coproc`: we never write to jq (it reads stdin
    # itself), and a coproc is a job, which makes bash block and unblock signals around every
    # command it runs (two syscalls per command, tens per tuple); it would also stop the
    # component from using a coproc of its own.
    exec {_ML_FROM_JQ}< <(exec jq -nRj --unbuffered --argjson bytes "$_ml_bytes" \
                              --argjson batch "$_ml_batch" \
                              "$_ML_JQ_PROGRAM" 0<&"$_ML_IN" {_ML_IN}<&- {_ML_OUT}>&-)
    _ML_JQPID=$!
    # shell-frames/1 (docs/protocol.md, "Protocol extensions"): a host that offers it writes
    # every message after the handshake as the jq program would have turned it into a command,
    # so jq is needed for the handshake only. Not for the batch runners (their messages are
    # written by the host's batch layer as JSON).
    local _ml_frames=''
    if [[ " ${MULTILANG_HOST_EXT-} " == *" shell-frames/1 "* && -z $_ML_BATCH ]]; then
        # joined: several tuples may come in one message (_ml_loop)
        _ml_frames="shell-frames/1;$([[ $_ml_bytes == true ]] && echo bytes || echo chars);joined"
    else
        exec {_ML_IN}<&-  # only jq reads the host's messages
    fi
    if ! _ml_read_jq; then
        _ml_eof
    fi
    if [[ $_ML_MSG != "_ml_S "* ]]; then
        printf 'multilang.sh: expected the handshake, got: %s\n' "${_ML_MSG:0:300}" >&2
        exit 1
    fi
    eval "$_ML_MSG"
    if [[ -n $_ML_BATCH ]]; then
        _ml_batch_handshake
    fi
    if [[ -n $_ml_frames ]]; then
        # the host writes nothing more before our pid reply, so jq has read the handshake and
        # nothing after it: it can go, and we read the host's messages ourselves
        kill "$_ML_JQPID" 2>/dev/null || :  # `|| :`: scripts may run under `set -e`
        wait "$_ML_JQPID" 2>/dev/null || :
        _ML_JQPID=''
        exec {_ML_FROM_JQ}<&-
        _ML_FROM_JQ=$_ML_IN
    fi
    # The pid goes out now, not after on_init, which may take its time; the file exists by then.
    # pipeline/1: commands are answered one at a time, in order, so the host may write them
    # ahead of our syncs (docs/protocol.md, "Protocol extensions"); batch/1 from the batch
    # runners only (docs/transactional.md §4.1)
    _ML_BUF+="{\"pid\":$$,\"ext\":[\"pipeline/1\"${_ML_BATCH:+,\"batch/1\"}${_ml_frames:+,\"$_ml_frames\"}]}$_ML_END"
    if ! : >"$MULTILANG_PID_DIR/$$"; then
        _ml_error "cannot create the pid file $MULTILANG_PID_DIR/$$"
    fi
    multilang_flush
    if declare -F on_init >/dev/null; then
        local _ml_rc=0
        on_init "$MULTILANG_CONF_JSON" "$MULTILANG_CONTEXT_JSON" || _ml_rc=$?
        if (( _ml_rc )); then
            _ml_error "on_init returned status $_ml_rc"
            exit 1
        fi
    fi
}

# A batch runner needs a host that declared the component a batch one, in the same role (§4.1):
# under a host without batch/1 (Storm, say) the batches would never come, so it stops at once.
# run_batch_bolt also runs a committer (its finish then comes in the commit phase); the other
# way round a committer would store batches before their turn.
_ml_batch_handshake() {
    if [[ -z $MULTILANG_BATCH_ROLE ]]; then
        printf 'multilang.sh: batch components need a host that speaks batch/1\n' >&2
        exit 1
    fi
    case $_ML_BATCH:$MULTILANG_BATCH_ROLE in
        bolt:bolt | bolt:committer | committer:committer | spout:spout) ;;
        *)
            local runner=run_batch_bolt
            case $_ML_BATCH in
                committer) runner=run_committer ;;
                spout) runner=run_transactional_spout ;;
            esac
            printf 'multilang.sh: %s cannot run component %s, declared "batch: %s"\n' \
                "$runner" "$MULTILANG_COMPONENTID" "$MULTILANG_BATCH_ROLE" >&2
            exit 1 ;;
    esac
}

# The host closed our stdin (jq saw it first and ended): exit 0, or 1 if jq itself failed.
_ml_eof() {
    multilang_flush
    local rc=0 pid=$_ML_JQPID
    _ML_JQPID=''
    if [[ -n $pid ]]; then
        wait "$pid" 2>/dev/null || rc=$?
    fi
    if (( rc != 0 && rc != 127 )); then  # 127: already reaped by bash
        printf 'multilang.sh: jq exited with status %s\n' "$rc" >&2
        exit 1
    fi
    exit 0
}

multilang_cleanup() {
    { _ml_write; } 2>/dev/null
    _ML_BUF=''
    if [[ -n $_ML_JQPID ]]; then
        kill "$_ML_JQPID" 2>/dev/null
        _ML_JQPID=''
    fi
    return 0
}

trap multilang_cleanup EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM
