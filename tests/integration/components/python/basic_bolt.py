"""A BasicBolt for the client tests: the first value of each tuple says what to do."""

import os

from multilang import DEBUG, ERROR, INFO, TRACE, WARN, BasicBolt


class Scripted(BasicBolt):
    def initialize(self, conf, context):
        if conf.get("test.init.log"):
            self.log(
                f"init task={self.task_id} component={self.component_id} "
                f"pid={self.pid} answer={conf.get('test.answer')}"
            )

    def process(self, tup):
        action, *args = tup.values
        if action == "split":
            for word in args[0].split():
                self.emit([word])
        elif action == "raise":
            self.emit(["before"])
            raise ValueError(f"boom on {tup.id}")
        elif action == "print":
            print("hello", "world")
            print("no newline", end="")
            self.emit(["after print"])
        elif action == "fd1":
            os.write(1, b"raw bytes on fd 1\n")
            os.system("echo from a child process")
            self.emit(["after fd1"])
        elif action == "stream":
            self.emit(["to errors"], stream="errors")
        elif action == "direct":
            self.emit(["direct"], direct_task=args[0])
        elif action == "direct_ids":
            ids = self.emit(["direct"], direct_task=args[0], need_task_ids=True)
            self.emit(["got", ids])
        elif action == "taskids":
            ids = self.emit(["asking"], need_task_ids=True)
            self.emit(["got", ids])
        elif action == "anchors":
            self.emit(["explicit"], anchors=[tup, "other-id"])
        elif action == "log":
            for level in (TRACE, DEBUG, INFO, WARN, ERROR):
                self.log(f"level {level}", level)
            self.log("default level")
            self.error("an error report")
            self.metrics("my-metric", {"n": 3})
        elif action == "ack_itself":
            self.ack(tup)
        elif action == "bad_value":
            self.emit([object()])
        elif action == "echo":
            self.emit(list(args))
        else:
            raise ValueError(f"unknown action {action!r}")

    def process_tick(self, tup):
        if tup.values[0] == 0:
            raise RuntimeError("tick with frequency 0")
        self.emit(["tick", tup.values[0]])


Scripted().run()
