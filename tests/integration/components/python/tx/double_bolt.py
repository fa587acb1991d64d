"""A plain bolt (no batch API): doubles each number. Inside a batch group it is a plain member."""

from multilang import BasicBolt


class Double(BasicBolt):
    def process(self, tup):
        self.emit([tup.values[0] * 2])


Double().run()
