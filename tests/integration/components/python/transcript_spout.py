"""A spout that replays a script taken from a recorded transcript (conf `test.script`):
`init` = emits made in initialize, `commands` = for each command received, in order, the emits
to make while handling it. An emit that asks for task ids logs the list it got back."""

from multilang import Spout


class Scripted(Spout):
    def initialize(self, conf, context):
        script = conf["test.script"]
        self.commands = list(script["commands"])
        self.play(script["init"])

    def play(self, emits):
        for e in emits:
            ids = self.emit(
                e["tuple"],
                id=e.get("id"),
                stream=e.get("stream", "default"),
                direct_task=e.get("task"),
                need_task_ids=e.get("need_task_ids", False),
            )
            if e.get("need_task_ids"):
                self.log(f"task ids {ids}")

    def next_command(self):
        self.play(self.commands.pop(0) if self.commands else [])

    def activate(self):
        self.next_command()

    def deactivate(self):
        self.next_command()

    def next_tuple(self):
        self.next_command()

    def ack(self, msg_id):
        self.next_command()

    def fail(self, msg_id):
        self.next_command()


Scripted().run()
