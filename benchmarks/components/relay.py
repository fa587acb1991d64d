"""Re-emits every input tuple unchanged, anchored to it: the middle stage of the size benchmark."""

from multilang import BasicBolt


class Relay(BasicBolt):
    def process(self, tup):
        self.emit(tup.values)


if __name__ == "__main__":
    Relay().run()
