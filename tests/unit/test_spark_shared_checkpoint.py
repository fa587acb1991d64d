"""host/spark/shared_checkpoint.py without Spark: URLs refused for the checkpoint and the state
directory, the token the driver writes and what an executor makes of it. The check itself, on a
real standalone cluster whose executors cannot see the checkpoint, is in
tests/integration/test_spark_standalone.py; every local-cluster test runs it too, and passes."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest
from click.testing import CliRunner

from host.errors import TopologyError
from host.spark.command import spark as spark_command
from host.spark.shared_checkpoint import (
    TOKEN_FILE,
    UnsharedCheckpoint,
    look,
    read_token,
    unseen,
    unshared_reason,
    write_token,
)
from host.spark.staging import read_rows
from host.topology.setting_checks import directory_path as local_directory
from host.topology.setting_checks import path as path_check


@pytest.mark.parametrize(
    "url", ["hdfs://namenode:8020/state", "s3a://bucket/state", "gs://b/x", "abfss://c@a/x"]
)
def test_a_url_is_refused_with_its_scheme_and_the_reason(url: str) -> None:
    with pytest.raises(ValueError) as caught:
        local_directory(url, "--checkpoint")
    text = str(caught.value)
    scheme = url.split("://")[0]
    assert text.startswith(f"--checkpoint {url!r}: a {scheme}:// URL is not supported")
    assert "plain file calls" in text and "docs/spark.md §6.1" in text
    # the same for host.state.dir, through its setting check
    problem = path_check(url)
    assert problem is not None and f"{scheme}:// URL" in problem


def test_a_path_or_a_file_url_is_an_absolute_directory(tmp_path: Path) -> None:
    assert local_directory(str(tmp_path), "--checkpoint") == str(tmp_path)
    assert local_directory(f"file://{tmp_path}", "--checkpoint") == str(tmp_path)
    assert local_directory("rel/dir", "--checkpoint") == os.path.abspath("rel/dir")
    # a colon is no URL: a local directory may be named so
    assert local_directory("a:b/c", "--checkpoint") == os.path.abspath("a:b/c")
    assert path_check(str(tmp_path)) is None and path_check("a:b") is None
    assert path_check("") == "must be a non-empty path"


def test_the_token_is_new_each_time_and_read_back(tmp_path: Path) -> None:
    checkpoint = tmp_path / "checkpoint"  # created by the write
    first = write_token(str(checkpoint))
    second = write_token(str(checkpoint))
    assert first != second
    path = str(checkpoint / TOKEN_FILE)
    assert read_token(path) == (second, None)
    assert look(path, second) == (socket.gethostname(), os.getpid(), None)
    assert look(path, first)[2] == "another driver's token (another directory)"
    assert look(str(tmp_path / "elsewhere" / TOKEN_FILE), second)[2] == "no such file"


def test_an_unreadable_token_says_why(tmp_path: Path) -> None:
    (tmp_path / TOKEN_FILE).mkdir()  # a directory where the file should be: EISDIR for anyone
    token, problem = read_token(str(tmp_path / TOKEN_FILE))
    assert token is None and problem is not None and problem.startswith("cannot read it (")


def test_every_sight_of_the_token_passes() -> None:
    assert unseen([("a", 1, None), ("b", 2, None)], "/shared/ckpt") is None
    assert unseen([], "/shared/ckpt") is None


def test_an_executor_that_missed_the_token_is_named_with_its_host() -> None:
    sights = [("a", 1, None), ("b", 2, "no such file"), ("b", 3, "no such file")]
    error = unseen(sights, "/tmp/ckpt")
    assert isinstance(error, UnsharedCheckpoint) and isinstance(error, TopologyError)
    text = str(error)
    assert text.startswith("the executors do not see the checkpoint /tmp/ckpt as the driver does")
    assert "(on b: no such file)" in text  # each host and problem once
    assert "/tmp/ckpt/driver-token" in text and "mount at the same path" in text


def test_many_hosts_are_cut_to_three() -> None:
    sights = [(f"h{i}", i, "no such file") for i in range(5)]
    text = str(unseen(sights, "/c"))
    assert "on h0" in text and "on h2" in text and "on h3" not in text
    assert "(and 2 more)" in text


def test_a_read_with_no_metadata_says_when_the_token_is_missing(tmp_path: Path) -> None:
    state_root = tmp_path / "checkpoint" / "batches"
    state_root.mkdir(parents=True)
    spout_root = state_root / "spout-lines"  # a spout's own directory, further down
    spout_root.mkdir()
    for root in (state_root, spout_root):
        reason = unshared_reason(str(root))
        assert reason.startswith(
            f"; this executor on {socket.gethostname()} finds no driver's token (driver-token) "
            f"in {root} or above it: it does not see the driver's checkpoint"
        )
    write_token(str(tmp_path / "checkpoint"))
    assert unshared_reason(str(state_root)) == ""
    assert unshared_reason(str(spout_root)) == ""


WORDCOUNT = Path(__file__).resolve().parents[2] / "examples/transactional/wordcount-sqlite"


def test_the_command_refuses_a_url_checkpoint_before_anything_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # where abspath would have made "hdfs:/nn:8020/wc"
    topology = str(WORDCOUNT / "topology.yaml")
    result = CliRunner().invoke(spark_command, [topology, "--checkpoint", "hdfs://nn:8020/wc"])
    assert result.exit_code == 2, result.output
    assert "error: --checkpoint 'hdfs://nn:8020/wc': a hdfs:// URL is not supported" in (
        result.output
    )
    assert list(tmp_path.iterdir()) == []


def test_the_command_refuses_a_url_state_dir_naming_the_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    topology = str(WORDCOUNT / "topology.yaml")
    result = CliRunner().invoke(spark_command, [topology, "-c", "host.state.dir=s3a://b/state"])
    assert result.exit_code == 2, result.output
    assert "key 'host.state.dir'" in result.output
    assert "must be a directory path, not a s3a:// URL" in result.output
    assert list(tmp_path.iterdir()) == []


def test_a_staged_read_with_no_rows_says_when_the_token_is_missing(tmp_path: Path) -> None:
    """A plain spout's staged share, read in an executor that does not see the checkpoint."""
    staged = tmp_path / "checkpoint" / "staged"
    staged.mkdir(parents=True)
    with pytest.raises(TopologyError) as caught:
        list(read_rows(str(staged), 3, 0, 5))
    text = str(caught.value)
    assert text.startswith("txid 3: no staged rows of spout task 5 at ")
    assert "finds no driver's token (driver-token)" in text
    write_token(str(tmp_path / "checkpoint"))  # the executor sees the checkpoint: only the fact
    with pytest.raises(TopologyError) as caught:
        list(read_rows(str(staged), 3, 0, 5))
    assert "token" not in str(caught.value)
