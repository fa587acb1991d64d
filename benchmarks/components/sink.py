"""Acks every input tuple and does nothing else (the tuple-size benchmark's last stage)."""

from multilang import BasicBolt


class Sink(BasicBolt):
    def process(self, tup):
        pass


if __name__ == "__main__":
    Sink().run()
