"""The storm-kafka Flux tests' sink bolt (tests/integration/test_storm_kafka_flux.py): appends
each tuple's one value (StringScheme's field `str`) as a line to `received` in its working
directory (the topology's directory), then acks it. Written before the ack, so the file has a
record before the spout can count the tuple done."""

from __future__ import annotations

from multilang import Bolt


class Sink(Bolt):
    def initialize(self, conf, context):
        self.out = open("received", "a", encoding="utf-8", buffering=1)

    def process(self, tup):
        (value,) = tup.values
        self.out.write(f"{value}\n")
        self.ack(tup)


if __name__ == "__main__":
    Sink().run()
