"""Storm's multilang protocol: typed messages and codec (`multilang.messages`, `multilang.codec`,
`multilang.component_decoding`, `multilang.host_decoding`) and the Python client library for
writing spouts and bolts:

```python
from multilang import BasicBolt, Spout, Bolt, Tuple, INFO
from multilang import BatchBolt, Committer, TransactionalSpout  # docs/transactional.md §5
```

The client classes are loaded on first use, so that `import multilang.codec` (what the host does,
with `multilang.component_decoding`) does not pull in the client.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .messages import DEBUG, ERROR, INFO, TRACE, WARN

if TYPE_CHECKING:
    from .batch import (
        Batch,
        BatchBolt,
        Committer,
        Numbered,
        OpaquePartitionedTransactionalSpout,
        PartitionedTransactionalSpout,
        TransactionalSpout,
        Tx,
    )
    from .client import BasicBolt, Bolt, Spout, Tuple

__all__ = [
    "Bolt",
    "BasicBolt",
    "Spout",
    "Tuple",
    "TRACE",
    "DEBUG",
    "INFO",
    "WARN",
    "ERROR",
    # transactional batches (multilang.batch, docs/transactional.md §5)
    "Batch",
    "BatchBolt",
    "Committer",
    "Numbered",
    "OpaquePartitionedTransactionalSpout",
    "PartitionedTransactionalSpout",
    "TransactionalSpout",
    "Tx",
]

_CLIENT_NAMES = frozenset({"Bolt", "BasicBolt", "Spout", "Tuple"})
_BATCH_NAMES = frozenset(__all__[__all__.index("Batch") :])


def __getattr__(name: str) -> Any:
    if name in _CLIENT_NAMES:
        from . import client

        return getattr(client, name)
    if name in _BATCH_NAMES:
        from . import batch

        return getattr(batch, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
