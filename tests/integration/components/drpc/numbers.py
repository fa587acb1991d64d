"""A plain bolt of a linear DRPC topology: [request, "3 4 5"] -> [request, n] for each number."""

from multilang import BasicBolt


class Numbers(BasicBolt):
    def process(self, tup):
        request, text = tup.values
        for word in text.split():
            self.emit([request, int(word)])


Numbers().run()
