"""An ordinary bolt (no batch API): one tuple per word of a line. In the batch group it is a plain
member: it never sees a txid, and its emits, anchored to the line, belong to the line's batch."""

from multilang import BasicBolt


class Split(BasicBolt):
    def process(self, tup):
        for word in tup.values[2].split():
            self.emit([word])


Split().run()
