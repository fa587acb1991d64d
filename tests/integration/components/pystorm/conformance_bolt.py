"""The conformance bolt written with pystorm from PyPI (see ../conformance/README.md).

Run as `python conformance_bolt.py [json|msgpack]`, or through streamparse's launcher as
`streamparse_run -s msgpack conformance_bolt.ConformanceBolt` (with this directory as cwd).
Acks by hand (auto_ack off): with pystorm's auto-ack, the only way to fail a tuple is to raise,
which makes pystorm exit.
"""

import sys

from pystorm import Bolt


class ConformanceBolt(Bolt):
    auto_ack = False

    def initialize(self, conf, context):
        # with msgpack the context holds only taskid and task->component: pystorm finds its
        # component id from those
        self.log(f"ready {self.component_name} {self.task_id}")

    def process(self, tup):
        action, arg1, arg2 = tup.values
        if action == "split":
            for word in arg1.split():
                self.emit([word])
        elif action == "stream":
            self.emit([arg2], stream=arg1)
        elif action == "direct":
            self.emit([arg2], direct_task=arg1)
        elif action == "taskids":
            ids = self.emit([arg1], need_task_ids=True)
            self.emit(["got", ",".join(str(i) for i in ids)])
        elif action == "fail":
            self.fail(tup)
            return
        elif action == "error":
            try:
                raise RuntimeError(arg1)
            except RuntimeError as exc:
                self.raise_exception(exc, tup)  # pystorm's way: `error` (a traceback), then `sync`
        elif action == "log":
            for number, level in enumerate(("trace", "debug", "info", "warn", "error")):
                self.log(f"level {number}", level)
        elif action == "metrics":
            self.report_metric("calls", None)
            self.report_metric("calls", 2)
            self.report_metric("state", {"phase": "x"})
        self.ack(tup)

    def process_tick(self, tup):
        self.log(f"tick {tup.values[0]}")
        self.ack(tup)  # auto_ack is off, and it covers ticks too


if __name__ == "__main__":
    ConformanceBolt(serializer=sys.argv[1] if len(sys.argv) > 1 else "json").run()
