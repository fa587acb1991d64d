"""The `shell-frames/1` extension: what this host writes to a bash component of ours, already in
the form the bash library's jq co-process would have turned it into, so that under this host the
component runs without jq (docs/protocol.md, "Protocol extensions").

The bash library (multilang/bash/multilang.sh) has jq read the host's JSON messages and write
each as one bash command: `<length in 10 digits><handler> '<arg>' '<arg>' ...`, every argument
quoted as jq's `@sh` quotes it, non-string values as jq 1.6's `tojson` writes them, NULs taken
out of strings, the length counted in characters (a UTF-8 locale) or bytes. `command` is that jq
program (`_ML_JQ_PROGRAM`) in Python, message shape by message shape, so that what a handler gets
is what it gets from jq, byte for byte (tests/unit/test_shell_frames.py runs both on the same
messages). jq costs a bash component about a third of its CPU per tuple and is a second process
per task (docs/architecture.md, "Many tasks").

The library asks for it: offered by the host in the environment (`MULTILANG_HOST_EXT`), it
parses the handshake with jq as always, stops jq, and announces `shell-frames/1;chars` or
`shell-frames/1;bytes` (its length unit) in its pid reply (`taken`); from then on the host writes
it shell frames (`ShellFrames`) and reads what it writes as JSON, as before. The batch runners
do not take it (the host's batch layer writes their messages as JSON). Under Storm nothing is
offered and jq runs as it always has. Our library also announces `joined` (`…;chars;joined`): it
reads the bolt tuples of one write joined into one frame (`ShellFrames.join_frames`), which
saves bash its per-message reads and loop turn for all but one of them.
"""

from __future__ import annotations

import json
import math
from decimal import Decimal
from typing import Any

from . import codec
from .component_decoding import ComponentDecoder
from .messages import HostMessage

EXT = "shell-frames/1"
OFFER_ENV = "MULTILANG_HOST_EXT"  # the extensions the host offers, space-separated


# A joined frame (`ShellFrames.join_frames`) holds at most JOIN_MAX bolt tuples and, unless one
# tuple alone is larger, JOIN_BYTES: bash reads a frame whole, so this bounds what it holds at once
JOIN_MAX = 64
JOIN_BYTES = 65536


def taken(ext: tuple[str, ...]) -> ShellFrames | None:
    """From a pid reply's extensions: the writer for a component that took shell frames (its
    length unit, `chars` or `bytes`; `joined` when it reads several tuples in one frame), or
    None when it did not take them."""
    for e in ext:
        parts = e.split(";")
        if parts[0] == EXT:
            return shell_frames("chars" in parts[1:], "joined" in parts[1:])
    return None


# ---- jq 1.6's text of a value ---------------------------------------------------------------------

_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
}
for _c in [*range(0x20), 0x7F]:
    _ESCAPES.setdefault(chr(_c), f"\\u{_c:04x}")
_TO_ESCAPE = str.maketrans(_ESCAPES)


def jq_number(x: float) -> str:
    """A number as jq 1.6 prints it: a double's shortest digits, positional unless the decimal
    point would sit 4 or more places before them or more than 15 after them (jv_dtoa.c
    `jvp_dtoa_fmt`), an exponent of at least two digits with its sign."""
    if math.isnan(x):
        return "null"
    if math.isinf(x):
        return "1.7976931348623157e+308" if x > 0 else "-1.7976931348623157e+308"
    sign = "-" if math.copysign(1.0, x) < 0 else ""
    if x == 0:
        return sign + "0"
    t = Decimal(repr(abs(x))).normalize().as_tuple()  # repr: the shortest digits that round-trip
    digits = "".join(map(str, t.digits))
    decpt = len(digits) + int(t.exponent)
    if decpt <= -4 or decpt > len(digits) + 15:
        e = decpt - 1
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{mantissa}e{'-' if e < 0 else '+'}{abs(e):02d}"
    if decpt <= 0:
        return f"{sign}0.{'0' * -decpt}{digits}"
    if decpt >= len(digits):
        return sign + digits + "0" * (decpt - len(digits))
    return f"{sign}{digits[:decpt]}.{digits[decpt:]}"


def jq_string(s: str) -> str:
    return '"' + s.translate(_TO_ESCAPE) + '"'


def jq_tojson(v: Any) -> str:
    """`tojson` as jq 1.6 writes it: compact, keys in their order, numbers as doubles."""
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, str):
        return jq_string(_valid(v))
    if isinstance(v, int):
        try:
            return jq_number(float(v))
        except OverflowError:  # beyond a double: jq reads it as the largest one
            return jq_number(math.inf if v > 0 else -math.inf)
    if isinstance(v, float):
        return jq_number(v)
    if isinstance(v, (list, tuple)):
        return "[" + ",".join(jq_tojson(x) for x in v) + "]"
    if isinstance(v, dict):
        return (
            "{"
            + ",".join(f"{jq_string(_valid(str(k)))}:{jq_tojson(x)}" for k, x in v.items())
            + "}"
        )
    raise codec.EncodeError(f"cannot write {type(v).__name__} {v!r} for a bash component")


def _valid(s: str) -> str:
    """Lone surrogates (JSON allows them, UTF-8 does not) as U+FFFD, as jq reads them."""
    try:
        s.encode("utf-8")
        return s
    except UnicodeEncodeError:
        return s.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


# ---- the jq program's `call` and `msg` ----------------------------------------------------------


def _clean(v: Any) -> str:
    if isinstance(v, str):
        s = _valid(v)
        return s.replace("\0", "") if "\0" in s else s
    return jq_tojson(v)


def sh_quote(s: str) -> str:
    return "'" + s.replace("'", "'\\''") + "'"


def call(handler: str, args: list[Any], chars: bool) -> bytes:
    code = handler + " " + " ".join(sh_quote(_clean(a)) for a in args)
    data = code.encode("utf-8")
    n = len(code) if chars else len(data)
    return b"%010d%b" % (n, data)


def command(obj: Any, chars: bool, batch: bool) -> bytes:
    """One host message (as its JSON value) as the bash library's jq program writes it."""
    if isinstance(obj, list):
        return call("_ml_I", obj, chars)
    if not isinstance(obj, dict):
        return call("_ml_X", ["unexpected host message: " + jq_tojson(obj)], chars)
    if "tuple" in obj:
        if obj.get("task") == -1 and obj.get("stream") == "__heartbeat":
            b = obj.get("batch")
            if isinstance(b, dict):
                args = [obj.get("id"), jq_tojson(obj.get("id")), b.get("op"), b.get("txid")]
                args += [b.get("attempt"), b.get("commit") is True]
                return call("_ml_F", args, chars)
            return call("_ml_H", [], chars)
        head = [obj.get("id"), jq_tojson(obj.get("id")), obj.get("comp") or "", obj.get("stream")]
        head.append(obj.get("task"))
        tx = obj.get("tx")
        if tx not in (None, False):
            return call("_ml_B", [tx.get("txid"), tx.get("attempt"), *head, *obj["tuple"]], chars)
        if obj.get("task") == -1 and obj.get("stream") == "__tick":
            handler = "_ml_K"
        else:
            handler = "_ml_N" if batch else "_ml_T"
        return call(handler, [*head, *obj["tuple"]], chars)
    if "command" in obj:
        c = obj["command"]
        args = [c, obj.get("id"), jq_tojson(obj.get("id"))]
        if c == "batch_emit":
            tx = obj.get("tx") or {}
            args += [tx.get("txid"), tx.get("attempt"), jq_tojson(obj.get("meta"))]
            args += [jq_tojson(obj.get("task_meta")), jq_tojson(obj.get("prev_task_meta"))]
            args += [obj.get("replay") is True, obj.get("committed") or 0]
        elif c == "batch_init":
            args += [obj.get("txid"), jq_tojson(obj.get("prev_meta"))]
        elif c == "batch_commit":
            tx = obj.get("tx") or {}
            args += [tx.get("txid"), tx.get("attempt")]
        return call("_ml_C", args, chars)
    return call("_ml_X", ["unrecognised host message: " + jq_tojson(obj)], chars)


# ---- the serializer ------------------------------------------------------------------------------


class ShellFrames:
    """The host's writer for a bash component that took `shell-frames/1` (`offered`); what the
    component writes is still read as JSON. A bolt's input tuples (the hot path) are built from
    parts as the JSON serializer's are: a cached prefix, the values once for every copy, the id;
    each part carries its length in characters in its first 10 bytes, which `tuple_frame` adds
    up. Everything else goes through its JSON form and `command`."""

    name = "shell-frames"

    def __init__(self, chars: bool, joined: bool = False) -> None:
        self.chars = chars
        self.joined = joined
        self._prefixes: dict[tuple[str | None, str, int], bytes] = {}

    def decoder(self, max_frame: int) -> ComponentDecoder:
        return ComponentDecoder(max_frame=max_frame, awaiting_pid=True)

    def encode(self, message: HostMessage) -> bytes:
        return self.from_json(codec.encode(message))

    def from_json(self, frame: bytes) -> bytes:
        """A JSON frame (`<json>\\nend\\n`) as a shell frame."""
        return command(json.loads(frame[: -len(codec.END)]), self.chars, False)

    def handshake_context(self, context: dict[str, Any]) -> dict[str, Any]:
        return context

    def spout_command(self, command_name: str, msg_id: Any) -> bytes:
        return command({"command": command_name, "id": msg_id}, self.chars, False)

    def tuple_prefix(self, comp: str | None, stream: str, task: int) -> bytes:
        key = (comp, stream, task)
        prefix = self._prefixes.get(key)
        if prefix is None:
            text = " " + " ".join(sh_quote(_clean(a)) for a in (comp or "", stream, task))
            prefix = self._prefixes[key] = b"%010d%b" % (len(text), text.encode("utf-8"))
        return prefix

    def values(self, values: list[Any]) -> bytes:
        if not values:
            return b"0000000000"
        text = " " + " ".join([sh_quote(_clean(v)) for v in values])
        return b"%010d%b" % (len(text), text.encode("utf-8"))

    def tuple_frame(self, prefix: bytes, values: bytes, tuple_id: int) -> bytes:
        head = b"_ml_T '%d' '\"%d\"'" % (tuple_id, tuple_id)
        if self.chars:
            n = len(head) + int(prefix[:10]) + int(values[:10])
        else:
            n = len(head) + len(prefix) + len(values) - 20
        return b"%010d%b%b%b" % (n, head, prefix[10:], values[10:])

    def task_ids(self, tasks: list[int]) -> bytes:
        return call("_ml_I", tasks, self.chars)

    def join_frames(self, frames: list[bytes]) -> bytes:
        """One write of `frames`. For a library that reads joined frames, consecutive bolt
        tuples (`_ml_T`) go in one frame, up to JOIN_MAX of them and JOIN_BYTES, their commands
        one a line (a command's quoted arguments may hold newlines: bash parses them as one);
        the bash loop's reads and turn are then paid once for all of them
        (multilang/bash/multilang.sh `_ml_loop`). Everything else stays a frame of its own, in
        order: a task-id list in particular, which the library waits for by reading whole
        frames."""
        if not self.joined or len(frames) < 2:
            return b"".join(frames)
        out: list[bytes] = []
        run: list[bytes] = []
        size = 0
        for f in frames:
            if f.startswith(b"_ml_T ", 10):
                if run and (len(run) == JOIN_MAX or size + len(f) > JOIN_BYTES):
                    out.append(_joined(run))
                    run, size = [], 0
                run.append(f)
                size += len(f)
            else:
                if run:
                    out.append(_joined(run))
                    run, size = [], 0
                out.append(f)
        if run:
            out.append(_joined(run))
        return b"".join(out)


def _joined(run: list[bytes]) -> bytes:
    """Frames as one: their lengths (in the frames' unit) add up, plus one per newline."""
    if len(run) == 1:
        return run[0]
    n = sum([int(f[:10]) for f in run]) + len(run) - 1
    return b"%010d%b" % (n, b"\n".join([f[10:] for f in run]))


_SHARED: dict[tuple[bool, bool], ShellFrames] = {}


def shell_frames(chars: bool, joined: bool = False) -> ShellFrames:
    """One writer per length unit (and joining) for every link, so that a tuple's values are
    written once for all its copies to such components (host/runtime/data_path.py
    `send_copies`)."""
    key = (chars, joined)
    if key not in _SHARED:
        _SHARED[key] = ShellFrames(chars, joined)
    return _SHARED[key]
