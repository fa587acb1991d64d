"""Acks everything; appends each tuple it sees as a JSON line to the file named by argv[1]
(stream, source component, values), so tests can check what arrived where."""

import json
import sys

from multilang import Bolt


class Sink(Bolt):
    def initialize(self, conf, context):
        self.out = open(sys.argv[1], "a", buffering=1)
        self.task = context["taskid"]

    def process(self, tup):
        self.out.write(
            json.dumps(
                {
                    "task": self.task,
                    "comp": tup.component,
                    "stream": tup.stream,
                    "values": tup.values,
                }
            )
            + "\n"
        )
        self.ack(tup)

    def process_tick(self, tup):
        self.out.write(json.dumps({"task": self.task, "tick": tup.values}) + "\n")


Sink().run()
