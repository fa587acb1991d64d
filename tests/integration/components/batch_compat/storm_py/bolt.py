"""A storm.py BasicBolt for tests/integration/test_batch_compat.py: logs what reached `process`
(see ../README.md); storm.py acks it when `process` returns."""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "storm"))
import storm  # noqa: E402  (Storm's storm.py, vendored in ../storm/)


class SeenBolt(storm.BasicBolt):
    def process(self, tup):
        seen = [tup.id, tup.component, tup.stream, tup.task, tup.values]
        storm.log("process " + json.dumps(seen))


SeenBolt().run()
