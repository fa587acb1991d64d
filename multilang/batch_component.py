"""What every batch-aware component shares (docs/transactional.md §4.1): the `batch/1`
negotiation in the handshake, JSON only, and the batch decoder.
"""

from __future__ import annotations

from typing import Any

from .batch_messages import BatchHostDecoder
from .client_base import _Component
from .client_io import _StartupError
from .messages import BATCH_EXT, PIPELINE_EXT

NO_BATCH_HOST = "batch components need a host that speaks batch/1"


class _BatchComponent(_Component):
    """A _Component whose pid reply announces batch/1, which refuses to start without
    `context.batch` (under Storm, say) or under msgpack, and reads the batch messages."""

    def __init__(self) -> None:
        super().__init__()
        self._decoder = BatchHostDecoder(tuple_type=self._tuple_type)
        #: the handshake's `context.batch`: protocol, role, transactional_id, committed_txid
        self.batch_context: dict[str, Any] = {}

    def _speak_msgpack(self) -> None:
        raise _StartupError(
            f"{type(self).__name__}: batch components speak JSON only "
            "(docs/transactional.md §3: declare them with `serializer: json`)"
        )

    def _pid_reply(self) -> bytes:
        batch = self.context.get("batch")
        if type(batch) is not dict:
            raise _StartupError(NO_BATCH_HOST)
        self.batch_context = batch
        self._batch_handshake(batch)
        return self._pack({"pid": self.pid, "ext": [PIPELINE_EXT, BATCH_EXT]})

    def _batch_handshake(self, batch: dict[str, Any]) -> None:
        """The subclass's look at `context.batch`, before the pid reply."""
