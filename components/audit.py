"""What the ready committers record to prove a batch's content (the chaos tests compare it across
attempts of a txid: docs/transactional.md §2.3, same tuples for the same metadata)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any


def canonical(values: Sequence[Any]) -> str:
    """A tuple's values as compact JSON, object keys sorted."""
    return json.dumps(list(values), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def content_hash(tuples: Sequence[Sequence[Any]]) -> str:
    """sha256 (hex) of the tuples' canonical JSON texts, sorted, joined by newlines: the same for
    the same tuples whatever order they arrived in (parallel upstream tasks)."""
    text = "\n".join(sorted(canonical(t) for t in tuples))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
