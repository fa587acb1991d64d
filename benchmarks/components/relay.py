"""Re-emits every input tuple unchanged, anchored to it (the tuple-size benchmark's middle stage)."""

from multilang import BasicBolt


class Relay(BasicBolt):
    def process(self, tup):
        self.emit(tup.values)


if __name__ == "__main__":
    Relay().run()
