"""`org.apache.storm.testing.TestWordCounter`: count words, emit `[word, count]`.

As Storm's: a basic bolt (emits anchored to the input, which is acked when `process` returns),
the word is field 0 of any input tuple, the counts live in this task's memory, and the output
stream `default` has the fields `word` and `count`. Storm's casts the word to a Java String, so a
non-string value crashes its worker; here that tuple is failed with an error instead.
"""

from __future__ import annotations

from multilang import BasicBolt, Tuple


class TestWordCounter(BasicBolt):
    __test__ = False  # not a pytest test class, whatever its name

    def __init__(self) -> None:
        super().__init__()
        self.counts: dict[str, int] = {}

    def process(self, tup: Tuple) -> None:
        word = tup.values[0] if tup.values else None
        if not isinstance(word, str):
            raise TypeError(f"TestWordCounter counts strings; field 0 is {word!r}")
        count = self.counts.get(word, 0) + 1
        self.counts[word] = count
        self.emit([word, count])


if __name__ == "__main__":
    TestWordCounter().run()
