"""The Kafka chaos test's middle bolt: passes each Kafka spout tuple ([topic, partition, offset,
key, value]) on, anchored, or fails it at random.

Settings (component config):
  test.fail.share  the share of tuples failed (e.g. 0.01), drawn from a seeded RNG
  test.seed        the seed (the chaos test's CHAOS_SEED); each task mixes in its task id
"""

from __future__ import annotations

import random

from multilang import Bolt


class RelayBolt(Bolt):
    def initialize(self, conf, context):
        self.share = float(conf.get("test.fail.share", 0.0))
        self.rng = random.Random(f"{conf.get('test.seed', 0)}-{self.task_id}")

    def process(self, tup):
        if self.rng.random() < self.share:
            self.fail(tup)
            return
        self.emit(tup.values, anchors=[tup])
        self.ack(tup)


if __name__ == "__main__":
    RelayBolt().run()
