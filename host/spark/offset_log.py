"""Reading Spark's offset log of the engine's query: the end offset Spark planned for a
micro-batch, written before the micro-batch runs (`<checkpoint>/query/offsets/<batch id>`: two
header lines, then the source's offset as JSON). The engine takes a micro-batch's txid from it,
or sees an idle micro-batch that holds none (host/spark/idle_batches.py; docs/spark.md §4.1)."""

from __future__ import annotations

import json
import os
from typing import Any

from host.errors import TopologyError


def end_offset(query_dir: str, batch_id: int) -> dict[str, Any]:
    """Micro-batch `batch_id`'s end offset (a dict with an integer `txid`); a TopologyError
    naming the file when it cannot be read."""
    path = os.path.join(query_dir, "offsets", str(batch_id))
    try:
        with open(path, encoding="utf-8") as f:
            offset = json.loads(f.read().splitlines()[2])
        int(offset["txid"])
    except (OSError, ValueError, IndexError, KeyError, TypeError) as exc:
        raise TopologyError(
            f"cannot read the offset of Spark's micro-batch {batch_id} from {path}: {exc}"
        ) from None
    if not isinstance(offset, dict):
        raise TopologyError(
            f"the offset of Spark's micro-batch {batch_id} in {path} is not an object"
        )
    return offset


def txid_of(offset: dict[str, Any]) -> int | None:
    """The txid a micro-batch's end offset holds: usually batch id + 1; but a fresh query has no
    committed offset, so Spark runs micro-batch 0 at its first trigger even when the source's
    latest offset is still its initial one, txid 0 (a spout with nothing yet): an empty
    micro-batch, None here, and the txids then run one behind the batch ids (docs/spark.md
    §4.1). An idle offset (host/spark/idle_batches.py) is told apart before this is asked."""
    return int(offset["txid"]) or None
