"""A buffering sink for the tick tests (tests/integration/test_spark_ticks.py and the tick tests of
tests/integration/test_spark_component_process.py): it holds every input tuple, unacked, until a
tick tuple comes, and only then writes and acks them. Never on a count: a bolt that gets no tick
never acks anything.

Run as `python tick_sink.py` (its path). Settings (component config):
  test.sink.dir   required: the directory it writes to, one pair of files per task
Files, one JSON array per line, each line written and flushed (and the rows fsynced) before the
acks it stands for are sent:
  rows-<task>.jsonl   every input tuple's values, in the order received, written at a tick
  ticks-<task>.jsonl  per tick: [component, stream, task, values, rows it flushed]
"""

from __future__ import annotations

import json
import os

from multilang import Bolt


class TickSink(Bolt):
    def initialize(self, conf, context):
        directory = conf["test.sink.dir"]
        os.makedirs(directory, exist_ok=True)
        task = context["taskid"]
        self.rows = open(os.path.join(directory, f"rows-{task}.jsonl"), "a", encoding="utf-8")
        self.ticks = open(os.path.join(directory, f"ticks-{task}.jsonl"), "a", encoding="utf-8")
        self.buffer = []

    def process(self, tup):
        self.buffer.append(tup)

    def process_tick(self, tup):
        batch, self.buffer = self.buffer, []
        for held in batch:
            self.rows.write(json.dumps(held.values) + "\n")
        self.rows.flush()
        os.fsync(self.rows.fileno())
        self.ticks.write(
            json.dumps([tup.component, tup.stream, tup.task, tup.values, len(batch)]) + "\n"
        )
        self.ticks.flush()
        for held in batch:
            self.ack(held)


TickSink().run()
