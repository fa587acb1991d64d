"""A spout that writes before its pid reply, as a storm.js component that logs in `initialize`
does (storm.js sends the pid only after `initialize` calls `done()`, docs/protocol.md §3.4): a
`log` and an unreliable `emit` come first, then `{"pid": ...}`. Afterwards a plain spout emitting
`test.messages` tuples with integer ids and recording acks in the `test.ledger` file.

Raw protocol, no client library (ours sends the pid first, as it should).
"""

import os

from raw_protocol import messages, send

inbox = messages()
handshake = next(inbox)
send({"command": "log", "msg": "initializing before the pid", "level": 2})
send({"command": "emit", "tuple": ["early"], "need_task_ids": False})
open(os.path.join(handshake["pidDir"], str(os.getpid())), "w").close()
send({"pid": os.getpid()})
total = int(handshake["conf"]["test.messages"])
ledger = open(handshake["conf"]["test.ledger"], "a", buffering=1)
emitted = 0
for msg in inbox:
    if isinstance(msg, list):
        continue
    command = msg.get("command")
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
