"""A stand-in for a bolt on storm.py <= 0.9.2 (docs/protocol.md §4.7): it knows nothing of
heartbeats, so a heartbeat tuple is data to it, and like that library's BasicBolt it acks every
tuple it gets, heartbeat ids included, which Storm (and our host) treats as a fatal protocol
error.

Raw protocol, no client library. Appends the stream of every tuple it gets to the file named by
argv[1].
"""

import os
import sys

from raw_protocol import messages, send

seen = open(sys.argv[1], "a", buffering=1)

inbox = messages()
handshake = next(inbox)
send({"pid": os.getpid()})
open(os.path.join(handshake["pidDir"], str(os.getpid())), "w").close()
for msg in inbox:
    if isinstance(msg, dict) and "tuple" in msg:
        seen.write(f"{msg['stream']}\n")
        send({"command": "ack", "id": msg["id"]})
