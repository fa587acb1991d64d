"""A sentence splitter written with streamparse's Bolt (pystorm underneath), for the end-to-end
tests. Launched the way streamparse submits it: `streamparse_run "-s msgpack split_bolt.SplitBolt"`
(one argument, which streamparse_run splits itself), with this directory as cwd.

Auto-anchored, auto-acked. The first word of every sentence is emitted asking for task ids, whose
count goes to the `task_ids_seen` metric; ticks count in the `ticks` metric.
"""

from streamparse import Bolt


class SplitBolt(Bolt):
    outputs = ["word"]

    def process(self, tup):
        first, *rest = tup.values[0].split()
        task_ids = self.emit([first], need_task_ids=True)
        self.report_metric("task_ids_seen", len(task_ids))
        for word in rest:
            self.emit([word])

    def process_tick(self, tup):
        self.report_metric("ticks", None)
