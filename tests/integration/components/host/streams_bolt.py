"""Routes each input: word -> `words` stream (asking for task ids, logged as metrics), the length
-> direct to the lowest task of `sink` on stream `lengths`. Acks after emitting."""

from multilang import Bolt


class StreamsBolt(Bolt):
    def initialize(self, conf, context):
        tasks = context["task->component"]
        self.direct_target = min(int(t) for t, c in tasks.items() if c == "direct_sink")

    def process(self, tup):
        sentence = tup.values[0]
        for word in sentence.split():
            task_ids = self.emit([word], stream="words", anchors=[tup], need_task_ids=True)
            self.metrics("task_ids_seen", len(task_ids))
        self.emit([len(sentence)], stream="lengths", anchors=[tup], direct_task=self.direct_target)
        self.ack(tup)


StreamsBolt().run()
