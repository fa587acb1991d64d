"""Records every tuple as a JSON line in argv[1]: the bolt's serializer and, per value, its type
and content (bytes as base64); acks it; with argv[2] == "relay", emits the values on first.
See README.md."""

import base64
import json
import sys

from multilang import BasicBolt


def describe(value):
    if type(value) is bytes:
        return ["bytes", base64.b64encode(value).decode("ascii")]
    return [type(value).__name__, value]


class BytesBolt(BasicBolt):
    def initialize(self, conf, context):
        self.out = open(sys.argv[1], "a", buffering=1)
        self.relay = sys.argv[2:] == ["relay"]

    def process(self, tup):
        record = {"serializer": self.serializer, "values": [describe(v) for v in tup.values]}
        self.out.write(json.dumps(record) + "\n")
        if self.relay:
            self.emit(tup.values)


BytesBolt().run()
