"""A bolt for chaos tests (the Python one of three alike; see README.md beside it).

Splits "message N with some words in it" into words (emits anchored; acks when done), or just acks
as a sink (`chaos.sink: true`). Told by its component config to misbehave:
  chaos.fail.share  share of tuples to fail (0..1)        chaos.slow.ms   sleep per tuple
  chaos.mode        one of MODES, done after chaos.after tuples (default 0)
  chaos.marker      a file: misbehave in one incarnation only (the one that creates the file)
  chaos.trigger     a file: misbehave only once this file exists (it is consumed)
  chaos.grandchild  true: start a detached `sleep` grandchild (same process group) at start-up
  chaos.big.mb      size of the `bigline` write (default 100)
  env CHAOS_MUTE_MARKER  a file: the incarnation that creates it never answers the handshake
  env CHAOS_CHATTY_MARKER  the same, but it writes log messages without end instead
Mode `fuzz` writes random protocol messages (valid, half-valid and junk) among its real ones, in
the first chaos.fuzz.incarnations processes (counted in the chaos.marker file), then behaves.
"""

import json
import os
import random
import signal
import subprocess
import time

from multilang import BasicBolt

MODES = (
    "none",
    "crash",
    "hang",
    "garbage",
    "badutf8",
    "surrogate_emit",
    "surrogate_log",
    "bigline",
    "flood",
    "exit",
    "fuzz",
)


def _claim(path: str) -> bool:
    """True for exactly one caller per file: O_EXCL creation is atomic."""
    try:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        return True
    except FileExistsError:
        return False


def _mute_before_handshake() -> None:
    # Never answer the handshake (in the incarnation that claims the marker): the host must time
    # the handshake out, kill this process and start another.
    marker = os.environ.get("CHAOS_MUTE_MARKER")
    if marker is not None and _claim(marker):
        time.sleep(3600)
    # Or log without end instead of answering (a chatty initialize gone wrong): the host keeps
    # what comes before the pid, and must not keep it without bound.
    marker = os.environ.get("CHAOS_CHATTY_MARKER")
    if marker is not None and _claim(marker):
        frame = b'{"command":"log","msg":"initializing...","level":2}\nend\n'
        while True:
            os.write(1, frame * 1000)


class ChaosBolt(BasicBolt):
    protect_stdout = False  # it writes raw bytes to the protocol pipe on purpose

    def initialize(self, conf, context):
        self.fail_share = float(conf.get("chaos.fail.share", 0))
        self.slow = float(conf.get("chaos.slow.ms", 0)) / 1000
        self.mode = conf.get("chaos.mode", "none")
        assert self.mode in MODES, self.mode
        self.after = int(conf.get("chaos.after", 0))
        self.marker = conf.get("chaos.marker")
        self.trigger = conf.get("chaos.trigger")
        self.big = int(conf.get("chaos.big.mb", 100)) << 20
        self.sink = bool(conf.get("chaos.sink", False))
        self.rng = random.Random(f"{conf.get('chaos.seed', 0)}-{os.getpid()}")
        self.seen = 0
        if self.mode == "fuzz":
            self._count_incarnation(int(conf.get("chaos.fuzz.incarnations", 10)))
        if conf.get("chaos.grandchild"):
            subprocess.Popen(
                ["sleep", "600"],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )

    def _count_incarnation(self, limit: int) -> None:
        with open(self.marker, "a+") as fh:
            fh.write("x\n")
            fh.seek(0)
            if len(fh.read().split()) > limit:
                self.mode = "none"

    def _armed(self) -> bool:
        if self.mode == "fuzz":
            return self.rng.random() < 0.3
        if self.mode == "none" or self.seen <= self.after:
            return False
        if self.trigger is not None:
            try:
                os.unlink(self.trigger)
            except FileNotFoundError:
                return False
        if self.marker is not None and not _claim(self.marker):
            self.mode = "none"
            return False
        return True

    def process(self, tup):
        self.seen += 1
        if self._armed():
            self.misbehave(tup)
        if self.slow:
            time.sleep(self.slow)
        if self.fail_share and self.rng.random() < self.fail_share:
            raise RuntimeError(f"chaos: failing tuple {tup.id} on purpose")
        if not self.sink:
            for word in tup.values[0].split():
                self.emit([word])

    def misbehave(self, tup):
        if self.mode == "fuzz":
            self.fuzz(tup)
            return
        mode, self.mode = self.mode, "none"
        if mode == "crash":
            os.kill(os.getpid(), signal.SIGKILL)
        elif mode == "hang":
            time.sleep(3600)
        elif mode == "garbage":
            os.write(1, b"this is not json\nend\n")
        elif mode == "badutf8":
            os.write(1, b'{"command":"log","msg":"bad \xff\xfe\xc3\x28 bytes"}\nend\n')
        elif mode == "surrogate_emit":  # valid JSON, but a lone surrogate is no UTF-8 text
            os.write(
                1,
                b'{"command":"emit","anchors":["%s"],"tuple":["\\ud800 lone"]}\nend\n'
                % tup.id.encode(),
            )
        elif mode == "surrogate_log":
            os.write(1, b'{"command":"log","msg":"lone \\udcff surrogate"}\nend\n')
        elif mode == "bigline":  # a frame that never ends: the host must cut it off
            chunk = b"x" * (1 << 20)
            for _ in range(self.big >> 20):
                os.write(1, chunk)
            time.sleep(3600)
        elif mode == "flood":
            line = b"x" * 1023 + b"\n"
            for _ in range(1024):
                os.write(2, line)
        elif mode == "exit":
            os._exit(0)

    def fuzz(self, tup):
        """One random message, written raw: the host must fault this task for whatever is wrong
        with it (or accept it), never fail itself."""
        r = self.rng
        junk = [
            None,
            True,
            0,
            -1,
            2**63,
            2**70,
            1.5,
            float("nan"),
            float("inf"),
            "",
            "x",
            "\ud800",
            "é€",
            [],
            {},
            [1, [2, [3]]],
            {"a": {"b": None}},
            tup.id,
            "12345",
            "-1",
            "__tick",
            "default",
            "nope",
            "x" * 5000,
        ]

        def pick():
            return r.choice(junk)

        values = r.choice([[], ["w"], ["w", "x"], [pick()], pick()])
        message = r.choice(
            [
                {
                    "command": "emit",
                    "tuple": values,
                    "anchors": r.choice([[tup.id], [pick()], pick(), [tup.id, tup.id], []]),
                    "stream": r.choice(["default", "nope", pick()]),
                    **r.choice([{}, {"task": pick()}]),
                    **r.choice([{}, {"need_task_ids": pick()}]),
                },
                {"command": "ack", "id": r.choice([tup.id, pick()])},
                {"command": "fail", "id": r.choice([tup.id, pick()])},
                {"command": "log", "msg": pick(), "level": pick()},
                {"command": "error", "msg": pick()},
                {"command": "metrics", "name": pick(), "params": pick()},
                {"command": "sync"},
                {"pid": pick()},
                {"command": pick()},
                {},
                pick(),
                {"command": "emit", "tuple": ["w"], "anchors": [tup.id], "id": pick()},
            ]
        )
        text = json.dumps(message, allow_nan=True)
        frame = text.encode("utf-8", "surrogatepass") + r.choice(
            [b"\nend\n", b"\nend\n", b"\r\nend\r\n", b"\n"]
        )
        os.write(1, frame)


_mute_before_handshake()
ChaosBolt().run()
