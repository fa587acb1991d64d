"""Word-count report bolt: receives (word, count), keeps the latest count per word, logs a top-10
summary on every tick tuple (configure `topology.tick.tuple.freq.secs` for this component), and
writes the whole table as a JSON object to `wordcount.report.path` (when set) at every tick where
it changed and when the topology stops (stdin EOF).
"""

from __future__ import annotations

import json
import os

from multilang import BasicBolt


class Report(BasicBolt):
    def initialize(self, conf, context):
        self.counts: dict[str, int] = {}
        self.path: str | None = conf.get("wordcount.report.path")
        self.changed = False

    def process(self, tup):
        word, count = tup.values[0], tup.values[1]
        self.counts[word] = count
        self.changed = True

    def process_tick(self, tup):
        if not self.changed:
            return
        top = sorted(self.counts.items(), key=lambda item: (-item[1], item[0]))[:10]
        self.log("top 10: " + ", ".join(f"{word}={count}" for word, count in top))
        self.write()

    def cleanup(self):
        self.write()

    def write(self) -> None:
        self.changed = False
        if not self.path:
            return
        # write-then-rename, so a reader never sees a half-written table
        tmp = f"{self.path}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(self.counts, f, ensure_ascii=False, sort_keys=True, indent=1)
        os.replace(tmp, self.path)


if __name__ == "__main__":
    Report().run()
