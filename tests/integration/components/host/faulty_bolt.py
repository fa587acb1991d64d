"""A bolt for fault tests: splits sentences into words (anchored, acked), and misbehaves once
per run as told by argv: MODE AFTER MARKER. When MARKER does not exist yet and AFTER tuples were
processed, it creates MARKER and then: crash (SIGKILL itself), garbage (writes non-protocol bytes),
hang (sleeps forever), flood (writes 1 MB to stderr, then carries on), exit (exits 0).
"""

import os
import signal
import sys
import time

from multilang import BasicBolt

MODE, AFTER, MARKER = sys.argv[1], int(sys.argv[2]), sys.argv[3]


class FaultyBolt(BasicBolt):
    protect_stdout = False  # it writes raw bytes to the protocol pipe on purpose

    def initialize(self, conf, context):
        self.seen = 0
        self.armed = not os.path.exists(MARKER)

    def process(self, tup):
        self.seen += 1
        if self.armed and self.seen > AFTER:
            self.armed = False
            open(MARKER, "w").close()
            self.misbehave()
        for word in tup.values[0].split():
            self.emit([word])

    def misbehave(self):
        if MODE == "crash":
            os.kill(os.getpid(), signal.SIGKILL)
        elif MODE == "garbage":
            os.write(1, b"this is not json\nend\n")
            time.sleep(60)
        elif MODE == "hang":
            time.sleep(3600)
        elif MODE == "flood":
            line = b"x" * 1023 + b"\n"
            for _ in range(1024):
                os.write(2, line)
        elif MODE == "exit":
            os._exit(0)


FaultyBolt().run()
