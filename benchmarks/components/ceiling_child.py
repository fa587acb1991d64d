"""The protocol ceiling's child: the least a bolt can do per tuple, with no library. Reads tuple
frames from stdin, answers each with an anchored emit of its values and an ack, one write per
read. No handshake, no heartbeats: only the data exchange.

    python ceiling_child.py ujson|orjson
"""

import os
import sys

END = b"\nend\n"


def main() -> None:
    if sys.argv[1] == "orjson":
        import orjson

        loads, dumps = orjson.loads, orjson.dumps
    else:
        import ujson

        loads = ujson.loads

        def dumps(value, _dumps=ujson.dumps):
            return _dumps(value).encode()

    read, write = os.read, os.write
    rest = b""
    while True:
        data = read(0, 65536)
        if not data:
            return
        frames = (rest + data).split(END)
        rest = frames.pop()
        out = []
        for raw in frames:
            t = loads(raw)
            tid = t["id"]
            out.append(
                dumps(
                    {
                        "command": "emit",
                        "anchors": [tid],
                        "tuple": t["tuple"],
                        "need_task_ids": False,
                    }
                )
            )
            out.append(dumps({"command": "ack", "id": tid}))
        if out:
            out.append(b"")
            data = END.join(out)
            while data:
                data = data[write(1, data) :]


if __name__ == "__main__":
    main()
