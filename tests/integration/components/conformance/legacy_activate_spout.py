"""A stand-in for a spout on the storm.js copy shipped with Storm <= 1.1.1 (docs/protocol.md
§5.1): it ignores `activate` and `deactivate` without ever answering `sync`, so a host that sends
them waits forever. Otherwise a plain spout: emits `test.messages` tuples with integer ids, one per
`next`.

Raw protocol, no client library (ours always answers). Appends every command it receives to the
file named by argv[1], and `ack <id>` lines for acked ids to the `test.ledger` file.
"""

import os
import sys

from raw_protocol import messages, send

commands_log = open(sys.argv[1], "a", buffering=1)

inbox = messages()
handshake = next(inbox)
open(os.path.join(handshake["pidDir"], str(os.getpid())), "w").close()
send({"pid": os.getpid()})
total = int(handshake["conf"]["test.messages"])
ledger = open(handshake["conf"]["test.ledger"], "a", buffering=1)
emitted = 0
for msg in inbox:
    if isinstance(msg, list):  # a task-id reply: we never ask, so there are none
        continue
    command = msg.get("command")
    commands_log.write(f"{command}\n")
    if command in ("activate", "deactivate"):
        continue  # the bug being reproduced: no sync
    if command == "next" and emitted < total:
        send(
            {
                "command": "emit",
                "tuple": [f"message {emitted}"],
                "id": emitted,
                "need_task_ids": False,
            }
        )
        emitted += 1
    elif command == "ack":
        ledger.write(f"ack {msg['id']}\n")
    send({"command": "sync"})
