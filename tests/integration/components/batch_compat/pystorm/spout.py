"""A pystorm Spout for tests/integration/test_batch_compat.py: logs each `next` (see
../README.md); pystorm answers every command with `sync`."""

from pystorm import Spout


class NextSpout(Spout):
    def next_tuple(self):
        self.log("next")


if __name__ == "__main__":
    NextSpout().run()
