"""A bolt that breaks the protocol once (argv: MODE MARKER), then behaves like a word splitter.
MODE: ack_unknown, ack_twice, anchor_acked, unknown_stream, wrong_fields, numeric_ack_id."""

import os
import sys

from multilang import Bolt

MODE, MARKER = sys.argv[1], sys.argv[2]


class MisuseBolt(Bolt):
    protect_stdout = False  # it writes raw bytes to the protocol pipe on purpose

    def initialize(self, conf, context):
        self.armed = not os.path.exists(MARKER)

    def process(self, tup):
        if self.armed:
            self.armed = False
            open(MARKER, "w").close()
            getattr(self, MODE)(tup)
            return
        for word in tup.values[0].split():
            self.emit([word], anchors=[tup])
        self.ack(tup)

    def ack_unknown(self, tup):
        self.ack("12345")

    def ack_twice(self, tup):
        self.ack(tup)
        self.ack(tup)

    def anchor_acked(self, tup):
        self.ack(tup)
        self.emit(["late"], anchors=[tup])

    def unknown_stream(self, tup):
        self.emit(["x"], stream="nope", anchors=[tup])

    def wrong_fields(self, tup):
        self.emit(["x", "y"], anchors=[tup])

    def numeric_ack_id(self, tup):
        # Storm's ids are strings; a number never matches (docs/protocol.md §4.3)
        os.write(1, b'{"command": "ack", "id": %d}\nend\n' % int(tup.id))


MisuseBolt().run()
