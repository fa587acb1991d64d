"""`org.apache.storm.flux.wrappers.bolts.LogInfoBolt`: log every tuple at INFO and ack it.

Storm's is a basic bolt that declares no output and logs the tuple's string form; this one logs
the same facts (source component and task, stream, id, values) through the host's log.
"""

from __future__ import annotations

from multilang import INFO, BasicBolt, Tuple


def describe(tup: Tuple) -> str:
    """The tuple as one line, in the shape of Storm's tuple toString."""
    return f"source: {tup.component}:{tup.task}, stream: {tup.stream}, id: {tup.id}, {tup.values!r}"


class LogInfoBolt(BasicBolt):
    def process(self, tup: Tuple) -> None:
        self.log(describe(tup), INFO)  # BasicBolt acks when process returns


if __name__ == "__main__":
    LogInfoBolt().run()
