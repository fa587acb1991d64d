"""[word] -> [word, count]: the last stage of the word count (its emits have no subscriber, as in
Storm's classic word count; `bench.count.emit: false` turns them off)."""

from multilang import BasicBolt


class Count(BasicBolt):
    def initialize(self, conf, context):
        self.counts: dict[str, int] = {}
        self.emits = bool(conf.get("bench.count.emit", True))

    def process(self, tup):
        word = tup.values[0]
        n = self.counts.get(word, 0) + 1
        self.counts[word] = n
        if self.emits:
            self.emit([word, n])


if __name__ == "__main__":
    Count().run()
