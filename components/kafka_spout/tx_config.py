"""The transactional Kafka spout's settings: the Kafka spout's own (config.py: servers, topics,
group, first-poll strategy, translator, consumer properties), plus `kafka.spout.batch.max.records`;
the settings of acks, retries and periodic commits mean nothing to a batch spout (a batch is
replayed whole, and commits follow the batches) and are refused rather than ignored."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .config import PREFIX, ConfigError, SpoutConfig, from_conf

BATCH_MAX_RECORDS = PREFIX + "batch.max.records"
DEFAULT_BATCH_MAX_RECORDS = 1000
NOT_FOR_BATCHES = frozenset(
    PREFIX + k
    for k in (
        "processing.guarantee",
        "offset.commit.period.ms",
        "max.uncommitted.offsets",
        "retry.initial.delay.ms",
        "retry.delay.period.ms",
        "retry.max.retries",
        "retry.max.delay.ms",
        "dead.letter.topic",
        "records.per.next",
        "tuple.tracking.enforced",
    )
)


@dataclass(frozen=True)
class TxSpoutConfig:
    spout: SpoutConfig  # the Kafka spout's settings, as config.py reads them
    batch_max_records: int = DEFAULT_BATCH_MAX_RECORDS  # per partition per batch


def tx_from_conf(conf: Mapping[str, Any], context: Mapping[str, Any]) -> TxSpoutConfig:
    refused = sorted(k for k in conf if k in NOT_FOR_BATCHES)
    if refused:
        raise ConfigError(
            f"{refused[0]} is not a setting of the transactional Kafka spout: a batch is "
            f"replayed whole and offsets are committed with each batch (docs/kafka.md)"
        )
    rest = {k: v for k, v in conf.items() if k != BATCH_MAX_RECORDS}
    limit = conf.get(BATCH_MAX_RECORDS, DEFAULT_BATCH_MAX_RECORDS)
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ConfigError(f"{BATCH_MAX_RECORDS} must be an integer >= 1, got {limit!r}")
    return TxSpoutConfig(from_conf(rest, context), limit)
