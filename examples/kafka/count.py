"""Counts words: [word] in, [word, count] out (the running count, on every word)."""

from __future__ import annotations

from multilang import BasicBolt


class Count(BasicBolt):
    def initialize(self, conf, context):
        self.counts: dict[str, int] = {}

    def process(self, tup):
        word = tup.values[0]
        self.counts[word] = self.counts.get(word, 0) + 1
        self.emit([word, self.counts[word]])


if __name__ == "__main__":
    Count().run()
