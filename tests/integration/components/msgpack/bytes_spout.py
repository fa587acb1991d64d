"""Emits [i, payload(i)] with message id i, i in 0..test.messages-1; payload(i) is bytes that are
not UTF-8. Its serializer, acks and fails go to the file
test.ledger. See README.md."""

from multilang import Spout


def payload(i: int) -> bytes:
    return bytes([0xFF, 0x00, i % 256, 0xC3]) + b"\x80%d" % i


class BytesSpout(Spout):
    def initialize(self, conf, context):
        self.todo = list(range(int(conf["test.messages"])))
        self.ledger = open(conf["test.ledger"], "a", buffering=1)
        self.ledger.write(f"serializer {self.serializer}\n")

    def next_tuple(self):
        if self.todo:
            i = self.todo.pop(0)
            self.emit([i, payload(i)], id=i)

    def ack(self, msg_id):
        self.ledger.write(f"ack {msg_id}\n")

    def fail(self, msg_id):
        self.ledger.write(f"fail {msg_id}\n")
        self.todo.append(msg_id)


if __name__ == "__main__":  # the tests import payload()
    BytesSpout().run()
