"""[sentence] -> one [word] per word, each anchored to the sentence (acked when process returns)."""

from multilang import BasicBolt


class Split(BasicBolt):
    def process(self, tup):
        emit = self.emit
        for word in tup.values[0].split():
            emit([word])


if __name__ == "__main__":
    Split().run()
