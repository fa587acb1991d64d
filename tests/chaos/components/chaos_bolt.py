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
"""
import os
import random
import signal
import subprocess
import sys
import time

from multilang import BasicBolt

MODES = ("none", "crash", "hang", "garbage", "badutf8", "surrogate_emit", "surrogate_log",
         "bigline", "flood", "exit")


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
        if conf.get("chaos.grandchild"):
            subprocess.Popen(["sleep", "600"], stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def _armed(self) -> bool:
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
            os.write(1, b'{"command":"emit","anchors":["%s"],"tuple":["\\ud800 lone"]}\nend\n'
                     % tup.id.encode())
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


_mute_before_handshake()
ChaosBolt().run()
