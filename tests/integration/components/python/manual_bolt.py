"""A Bolt (manual acking) for the client tests: the first value says what to do."""

from multilang import Bolt


class Manual(Bolt):
    def initialize(self, conf, context):
        self.held = []

    def process(self, tup):
        action = tup.values[0]
        if action == "ack":
            self.emit(["unanchored"])
            self.ack(tup)
        elif action == "ack_id":
            self.ack(tup.id)
        elif action == "fail":
            self.fail(tup)
        elif action == "hold":
            self.held.append(tup)
        elif action == "release":
            for held in self.held:
                self.emit(["released", held.id], anchors=[held])
                self.ack(held)
            self.held.clear()
            self.ack(tup)
        elif action == "raise":
            raise RuntimeError("manual bolt failure")
        elif action == "ack_then_raise":
            self.ack(tup)
            raise RuntimeError("after the ack")
        else:
            raise ValueError(f"unknown action {action!r}")


Manual().run()
