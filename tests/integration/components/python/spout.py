"""A Spout for the client tests; conf `test.spout.mode` picks the behaviour of next_tuple."""

from multilang import Spout


class Counting(Spout):
    def initialize(self, conf, context):
        self.mode = conf.get("test.spout.mode", "plain")
        self.n = 0
        if conf.get("test.spout.init_emit"):
            self.emit(["initializing"])

    def activate(self):
        self.log("activated")

    def deactivate(self):
        self.log("deactivated")

    def next_tuple(self):
        if self.mode == "empty":
            return
        self.n += 1
        if self.mode == "plain":
            self.emit(["tuple", self.n], id=self.n)
        elif self.mode == "batch":
            for _ in range(3):
                self.emit(["tuple", self.n], id=self.n)
                self.n += 1
        elif self.mode == "taskids":
            ids = self.emit(["tuple", self.n], id=f"m{self.n}", need_task_ids=True)
            self.log(f"task ids {ids}")
        elif self.mode == "direct":
            self.emit(["direct", self.n], id=self.n, direct_task=4, stream="ctl")
        elif self.mode == "raise":
            raise RuntimeError(f"next_tuple failed at {self.n}")

    def ack(self, msg_id):
        self.log(f"acked {msg_id!r}")

    def fail(self, msg_id):
        self.log(f"failed {msg_id!r}")


Counting().run()
