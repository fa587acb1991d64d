"""The conformance bolt on our Python client (see README.md in this directory)."""

from multilang import BasicBolt


class Conformance(BasicBolt):
    def initialize(self, conf, context):
        self.log(f"ready {self.component_id} {self.task_id}")

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
            raise RuntimeError("failing as asked")
        elif action == "error":
            self.error(arg1)
        elif action == "log":
            for level in range(5):
                self.log(f"level {level}", level)
        elif action == "metrics":
            self.metrics("calls")
            self.metrics("calls", 2)
            self.metrics("state", {"phase": "x"})

    def process_tick(self, tup):
        self.log(f"tick {tup.values[0]}")


Conformance().run()
