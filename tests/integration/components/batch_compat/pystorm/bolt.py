"""A pystorm Bolt for tests/integration/test_batch_compat.py: logs what reached `process` (see
../README.md); pystorm acks it when `process` returns (auto_ack)."""

import json

from pystorm import Bolt


class SeenBolt(Bolt):
    def process(self, tup):
        seen = [tup.id, tup.component, tup.stream, tup.task, list(tup.values)]
        self.log("process " + json.dumps(seen))


if __name__ == "__main__":
    SeenBolt().run()
