"""A storm.py Spout for tests/integration/test_batch_compat.py: logs each `next` (see
../README.md); storm.py answers every command with `sync`."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "storm"))
import storm  # noqa: E402  (Storm's storm.py, vendored in ../storm/)


class NextSpout(storm.Spout):
    def nextTuple(self):
        storm.log("next")


NextSpout().run()
