"""The Kafka Flux fixtures' split bolt: [value] -> one [word] per word."""

from multilang import BasicBolt


class Split(BasicBolt):
    def process(self, tup):
        for word in str(tup.values[0]).split():
            self.emit([word])


if __name__ == "__main__":
    Split().run()
