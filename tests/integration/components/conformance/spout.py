"""The conformance spout on our Python client (see README.md in this directory)."""

from multilang import Spout


class Conformance(Spout):
    def initialize(self, conf, context):
        self.limit = int(conf.get("test.limit", 2))
        self.n = 0
        self.log(f"ready {self.component_id} {self.task_id}")

    def activate(self):
        self.log("activated")

    def deactivate(self):
        self.log("deactivated")

    def next_tuple(self):
        if self.n < self.limit:
            self.n += 1
            self.emit([f"s{self.n}"], id=f"m{self.n}")

    def ack(self, msg_id):
        self.log(f"acked {msg_id}")

    def fail(self, msg_id):
        self.emit([f"s{msg_id[1:]}"], id=msg_id)  # replay


Conformance().run()
