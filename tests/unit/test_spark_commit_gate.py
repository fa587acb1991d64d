"""The transactional Spark spout's pure parts: the hand-over between Spark's foreachBatch thread
and the protocol loop (components/spark_spout/commit_gate.py) and the config switch. Through the
real host and real Spark: tests/integration/test_spark_transactional.py."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from components.spark_spout.commit_gate import CommitGate, StagedBatch
from components.spark_spout.config import ConfigError, from_conf, transactional_requested
from components.spark_spout.segments import Stopped


def batch(spark_batch_id: int) -> StagedBatch:
    return StagedBatch(spark_batch_id, f"/staging/batch-{spark_batch_id}", 10)


class Waiter:
    """`offer_and_wait` on its own thread, as Spark's foreachBatch thread calls it."""

    def __init__(self, gate: CommitGate, staged: StagedBatch) -> None:
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, args=(gate, staged), daemon=True)
        self.thread.start()

    def _run(self, gate: CommitGate, staged: StagedBatch) -> None:
        try:
            gate.offer_and_wait(staged)
        except BaseException as exc:
            self.error = exc

    def finished(self) -> bool:
        self.thread.join(10)
        return not self.thread.is_alive()


def until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 10
    while not condition():
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.001)


def test_a_micro_batch_is_the_txid_after_its_id_and_its_meta_says_where_it_is_staged() -> None:
    assert batch(0).txid == 1 and batch(41).txid == 42
    assert batch(7).meta() == {"spark_batch_id": 7, "staging": "/staging/batch-7", "rows": 10}


def test_foreach_batch_waits_until_its_txid_is_released_and_is_proposed_meanwhile() -> None:
    gate = CommitGate(released=2)
    staged = batch(2)  # txid 3
    waiter = Waiter(gate, staged)
    until(lambda: gate.offered() is staged, "offered")
    assert gate.proposal(3) is staged
    assert gate.proposal(1) is staged  # the host may be behind: the txid says which it is
    assert gate.proposal(4) is None  # the host opened txid 3 already: nothing new is ready
    gate.release(2)  # not its txid: it keeps waiting
    assert waiter.thread.is_alive() and gate.offered() is staged
    gate.release(3)
    assert waiter.finished() and waiter.error is None
    assert gate.offered() is None and gate.proposal(3) is None


def test_a_micro_batch_whose_txid_was_committed_before_returns_at_once() -> None:
    gate = CommitGate(released=5)  # the handshake's committed_txid
    assert gate.is_released(5) and not gate.is_released(6)
    gate.offer_and_wait(batch(4))  # txid 5: returns, nothing offered
    assert gate.offered() is None and gate.proposal(5) is None


def test_a_commit_that_comes_before_the_offer_releases_it_at_once() -> None:
    gate = CommitGate()
    gate.release(1)  # the host replayed txid 1 from its staging and committed it
    gate.offer_and_wait(batch(0))
    assert gate.offered() is None


def test_stopping_ends_a_waiting_foreach_batch_with_stopped() -> None:
    gate = CommitGate()
    waiter = Waiter(gate, batch(0))
    until(lambda: gate.offered() is not None, "offered")
    gate.stop()
    assert waiter.finished() and isinstance(waiter.error, Stopped)
    assert gate.offered() is None


@given(st.lists(st.integers(min_value=0, max_value=20), max_size=20), st.integers(0, 20))
def test_released_only_grows_and_nothing_released_is_proposed(
    releases: list[int], spark_batch_id: int
) -> None:
    gate = CommitGate()
    for txid in releases:
        gate.release(txid)
    assert gate.released == max(releases, default=0)
    staged = batch(spark_batch_id)
    gate._offered = staged  # as offer_and_wait leaves it while it waits
    proposed = gate.proposal(1)
    assert (proposed is staged) == (staged.txid > gate.released)


# ---- the switch ---------------------------------------------------------------------------------

CONTEXT = {
    "componentid": "spout",
    "taskid": 1,
    "task->component": {"1": "spout"},
    "stream->outputfields": {"default": ["id", "text"]},
}


def conf(**extra: object) -> dict[str, object]:
    return {
        "spark.spout.source": "streaming",
        "spark.spout.job": "jobs:stream",
        "spark.spout.checkpoint.dir": "/tmp/ck",
        **{k.replace("_", "."): v for k, v in extra.items()},
    }


@pytest.mark.parametrize(
    ("value", "on"), [(True, True), ("true", True), ("TRUE", True), (False, False), (None, False)]
)
def test_the_switch_is_read_before_the_pid_reply(value: object, on: bool) -> None:
    settings = {} if value is None else {"spark.spout.transactional": value}
    assert transactional_requested(settings) is on


def test_the_switch_is_off_by_default_and_needs_the_streaming_source() -> None:
    assert from_conf(conf(), CONTEXT).transactional is False
    assert from_conf(conf(spark_spout_transactional=True), CONTEXT).transactional is True
    plain = conf(spark_spout_transactional=True, spark_spout_source="dataframe")
    with pytest.raises(ConfigError, match="needs spark.spout.source: streaming"):
        from_conf(plain, CONTEXT)
    with pytest.raises(ConfigError, match="must be true or false"):
        from_conf(conf(spark_spout_transactional="yes"), CONTEXT)
