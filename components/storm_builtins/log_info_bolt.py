"""`org.apache.storm.flux.wrappers.bolts.LogInfoBolt`: log every tuple at INFO and ack it.

Storm's is a basic bolt that declares no output and logs `tuple.toString()` (Storm's
`LogInfoBolt.java`, `TupleImpl.toString`): source component and task, stream, id, the values as
Java writes a `List` (`[the, 1]`, `null`, `{a=1}`, `1.0E10`: `java_text`), then the two sampled
start times, which are `null` for the tuples Storm does not sample. Tick tuples are logged too, as
Storm's basic bolt executes them like any tuple.

Two things differ and cannot be otherwise: the id is the tuple id the host sent (Storm prints
the tuple's anchor map, which a multilang component never sees), and the times are always
`null`. The values are written as Storm writes a Java list, which is what it logs for tuples
from its Java components (`Values`) or from another worker; values a shell component in the same
worker emitted stay its JSON library's list there, which Storm prints as JSON text (`["the",1]`).
"""

from __future__ import annotations

from components.storm_builtins.java_text import java_string
from multilang import INFO, BasicBolt, Tuple


def describe(tup: Tuple) -> str:
    """The tuple as one line, in the shape of Storm's `TupleImpl.toString`."""
    return (
        f"source: {tup.component}:{tup.task}, stream: {tup.stream}, id: {tup.id}, "
        f"{java_string(tup.values)} PROC_START_TIME(sampled): null "
        f"EXEC_START_TIME(sampled): null"
    )


class LogInfoBolt(BasicBolt):
    def process(self, tup: Tuple) -> None:
        self.log(describe(tup), INFO)  # BasicBolt acks when process returns

    def process_tick(self, tup: Tuple) -> None:
        self.log(describe(tup), INFO)


if __name__ == "__main__":
    LogInfoBolt().run()
