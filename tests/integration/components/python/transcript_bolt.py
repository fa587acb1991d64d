"""The split-sentence bolt of the recorded transcripts, written with our client."""

from multilang import BasicBolt


class SplitSentence(BasicBolt):
    def process(self, tup):
        for word in tup.values[0].split(" "):
            self.emit([word])


SplitSentence().run()
