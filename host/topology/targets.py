"""What a topology is validated for: the runtime that is to run it. A loader validates the
topology it builds once, for one target; the rules are the same for both except where a runtime
gives a topology something the other cannot (so no check is loosened for everyone):

- `host spark` makes every spout transactional, each micro-batch one transaction
  (docs/spark.md §4.6-4.8), so a topology meant for it may declare `batch: bolt` and
  `batch: committer` downstream of a plain spout; `host local` needs a batch spout for them
  (docs/transactional.md §3).
"""

from __future__ import annotations

from typing import Literal

Target = Literal["local", "spark"]
LOCAL: Target = "local"  # `python -m host local`, `validate`, `graph`, `export-flux`, the tests
SPARK: Target = "spark"  # `python -m host spark`
TARGETS: tuple[Target, ...] = (LOCAL, SPARK)
