"""The few lines of JSON multilang a stand-in for an old vendored library needs, written without
any client library: the stand-ins reproduce that library's quirks, which ours does not have."""

import json
import sys


def messages():
    """The host's messages, one parsed JSON value each (lines up to `end`)."""
    lines = []
    for line in sys.stdin:
        line = line.rstrip("\n")
        if line == "end":
            yield json.loads("\n".join(lines))
            lines = []
        else:
            lines.append(line)


def send(obj) -> None:
    sys.stdout.write(json.dumps(obj) + "\nend\n")
    sys.stdout.flush()
