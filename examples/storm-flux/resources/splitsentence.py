"""The split bolt: [sentence] -> one [word] tuple per word, each anchored to the sentence, which
is acked when process returns. Written with our Python client (`from multilang import ...`)."""

from multilang import BasicBolt


class SplitSentence(BasicBolt):
    def process(self, tup):
        for word in tup.values[0].split():
            self.emit([word])


SplitSentence().run()
