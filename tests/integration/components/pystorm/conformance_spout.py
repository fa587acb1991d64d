"""The conformance spout written with pystorm from PyPI (see ../conformance/README.md).

Run as `python conformance_spout.py [json|msgpack]` or through `streamparse_run`.
"""

import sys

from pystorm import Spout


class ConformanceSpout(Spout):
    def initialize(self, conf, context):
        self.limit = int(conf.get("test.limit", 2))
        self.n = 0
        self.log(f"ready {self.component_name} {self.task_id}")

    def activate(self):
        self.log("activated")

    def deactivate(self):
        self.log("deactivated")

    def next_tuple(self):
        if self.n < self.limit:
            self.n += 1
            self.emit([f"s{self.n}"], tup_id=f"m{self.n}")

    def ack(self, tup_id):
        self.log(f"acked {tup_id}")

    def fail(self, tup_id):
        self.emit([f"s{tup_id[1:]}"], tup_id=tup_id)  # replay


if __name__ == "__main__":
    ConformanceSpout(serializer=sys.argv[1] if len(sys.argv) > 1 else "json").run()
