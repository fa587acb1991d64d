"""The three sources: background threads that turn Spark output into chunks of JSON rows.

A source never touches the protocol. It runs on its own thread (and, for Structured Streaming,
on Spark's foreachBatch thread) and hands `Chunk`s to the protocol loop through `Handoff`, a
bounded queue: when the loop is not taking rows (max.spout.pending reached, slow bolts), `put`
blocks and the source stops reading, so at most `read.ahead` chunks of `batch.rows` rows are
held. Log lines go through an unbounded queue the loop drains; a fatal problem is a `Fatal`
item. Every wait checks `Handoff.stopping`, so a source ends promptly when the spout closes.

Rows are read with pyarrow (record batches, converted column by column), never row by row
through Py4J: Spark writes (the DataFrame source's staging, each micro-batch), pyarrow reads.
"""

from __future__ import annotations

import os
import queue
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import pyarrow.fs as pafs

from multilang import WARN

from .checkpoint import Checkpoint, order_of
from .config import SpoutConfig
from .convert import RowConverter
from .session import call_job, load_callable, start_session

if TYPE_CHECKING:  # pyspark is imported when a session starts: it is slow to import
    from pyspark.sql import DataFrame, SparkSession

from .segments import (
    SUCCESS,
    End,
    Fatal,
    Handoff,
    Segment,
    SourceError,
    Stopped,
    exists,
    feed,
    filesystem,
    format_of,
    listing,
    open_segment,
    part_files,
    stage,
    staged,
)

# ---- the sources --------------------------------------------------------------------------------


class Source:
    """Base: runs `produce` on a daemon thread; any exception becomes a Fatal for the loop."""

    name = "source"

    def __init__(
        self,
        cfg: SpoutConfig,
        conf: Mapping,
        checkpoint: Checkpoint,
        handoff: Handoff,
        app_name: str,
    ):
        self.cfg = cfg
        self.conf = conf
        self.checkpoint = checkpoint
        self.handoff = handoff
        self.app_name = app_name
        self.converter = RowConverter(cfg.fields)
        self.spark: SparkSession | None = None
        self.thread = threading.Thread(
            target=self._run, name=f"spark-spout-{self.name}", daemon=True
        )

    def start(self) -> None:
        self.thread.start()

    def _run(self) -> None:
        try:
            self.produce()
        except Stopped:
            pass
        except SourceError as exc:
            self._fatal(str(exc))
        except Exception as exc:  # the user's job, Spark, the file system
            if self.handoff.stopping.is_set():
                return
            import traceback

            self._fatal(f"the {self.name} source failed: {exc}\n{traceback.format_exc()}")

    def _fatal(self, message: str) -> None:
        try:
            self.handoff.items.put(Fatal(message), timeout=5)
        except queue.Full:  # the loop is not taking items: it will not read this either
            self.handoff.log(message, WARN)

    def produce(self) -> None:
        raise NotImplementedError

    def covered(self, key: str) -> bool:
        """Every row of this segment is done according to the checkpoint we started from."""
        wm = self.checkpoint.watermark
        return wm is not None and order_of(key) <= order_of(wm)

    def start_spark(self) -> SparkSession:
        started = time.monotonic()
        spark = self.spark = start_session(self.cfg.spark, self.app_name, self.cfg.log_level)
        self.handoff.log(
            f"Spark {spark.version} ready in {time.monotonic() - started:.1f}s "
            f"(master {spark.sparkContext.master})"
        )
        return spark

    def stop(self, timeout: float = 5.0) -> None:
        """Called by the protocol loop at close: stop Spark, within `timeout` seconds."""
        self.handoff.stopping.set()
        if self.spark is not None:
            stopper = threading.Thread(target=stop_spark, args=(self.spark,), daemon=True)
            stopper.start()
            stopper.join(timeout)


def stop_spark(spark: SparkSession) -> None:
    """Stop the session and let the JVM go: it exits when its stdin (a pipe from us) closes."""
    try:
        spark.stop()
    except Exception:
        pass
    try:
        from pyspark import SparkContext

        gateway = SparkContext._gateway
        proc = getattr(gateway, "proc", None)
        if gateway is not None and proc is not None:
            gateway.shutdown()
            proc.stdin.close()
            proc.wait(timeout=10)
            SparkContext._gateway = None
            SparkContext._jvm = None
    except Exception:
        pass


class DataFrameSource(Source):
    """The user's DataFrame (a job, SQL or a path), staged once as parquet, then read back."""

    name = "dataframe"

    def staging_uri(self) -> str:
        return f"{self.cfg.staging_dir.rstrip('/')}/{self.cfg.fingerprint()}"

    def produce(self) -> None:
        uri = self.staging_uri()
        manifest = staged(uri)
        if manifest is None:
            manifest = self.materialise(uri)
            if self.spark is not None:  # the rows are on disk: Spark's memory is not needed
                stop_spark(self.spark)
                self.spark = None
        else:
            self.handoff.log(
                f"resuming from the staged DataFrame at {uri} ({manifest['rows']} rows)"
            )
        fs, path = filesystem(uri)
        for i, entry in enumerate(manifest["files"]):
            key = f"part-{i:05d}"
            if self.covered(key):
                continue
            segment = Segment(key, int(entry["rows"]), [f"{path}/{entry['name']}"], fs)
            feed(self.handoff, segment, self.converter, self.cfg.batch_rows)
        self.handoff.put(End())

    def dataframe(self, spark):
        cfg = self.cfg
        if cfg.job:
            df = call_job(load_callable(cfg.job), spark, self.conf)
            what = f"spark.spout.job {cfg.job}"
        elif cfg.sql:
            df = spark.sql(cfg.sql)
            what = "spark.spout.sql"
        else:
            df = (
                spark.read.format(cfg.format or "parquet")
                .options(**{k: str(v) for k, v in cfg.read_options.items()})
                .load(cfg.path)
            )
            what = f"spark.spout.path {cfg.path}"
        if getattr(df, "isStreaming", False):
            raise SourceError(
                f"{what} gave a streaming DataFrame: use spark.spout.source: streaming for it"
            )
        return df, what

    def materialise(self, uri: str) -> dict:
        spark = self.start_spark()
        df, what = self.dataframe(spark)
        missing = [f for f in self.cfg.fields if f not in df.columns]
        if missing:
            raise SourceError(
                f"{what}: the DataFrame has no column(s) {', '.join(missing)} "
                f"(its columns: {', '.join(df.columns)}); the spout's output "
                f"fields must be columns of the DataFrame"
            )
        started = time.monotonic()
        manifest = stage(
            df, uri, list(self.cfg.fields), {"fingerprint": self.cfg.fingerprint(), "source": what}
        )
        self.handoff.log(
            f"staged {manifest['rows']} rows in {len(manifest['files'])} file(s) "
            f"at {uri} in {time.monotonic() - started:.1f}s"
        )
        return manifest


class DirectorySource(Source):
    """Output directories of Spark jobs: each one read when its `_SUCCESS` marker appears; a
    parent's subdirectories one after the other in name order, for as long as the spout runs."""

    name = "directory"

    def produce(self) -> None:
        assert self.cfg.path is not None  # config.from_conf requires it for this source
        fs, root = filesystem(self.cfg.path)
        single = self._is_output(fs, root)
        done: set[str] = set()
        waiting_for: str | None = None
        while True:
            dirs = [root] if single else self._subdirs(fs, root)
            for directory in dirs:
                name = os.path.basename(directory)
                if name in done:
                    continue
                if not exists(fs, f"{directory}/{SUCCESS}"):
                    if waiting_for != name:
                        self.handoff.log(f"waiting for {directory}/{SUCCESS}")
                        waiting_for = name
                    break  # name order: later directories wait for this one
                self._read_directory(fs, directory, name)
                done.add(name)
            else:
                if single:
                    self.handoff.put(End())
                    return
            self.handoff.sleep(self.cfg.poll_secs)

    @staticmethod
    def _is_output(fs: pafs.FileSystem, path: str) -> bool:
        return exists(fs, f"{path}/{SUCCESS}") or bool(part_files(fs, path))

    @staticmethod
    def _subdirs(fs: pafs.FileSystem, root: str) -> list[str]:
        names = [
            info.base_name
            for info in listing(fs, root)
            if info.type == pafs.FileType.Directory and not info.base_name.startswith(("_", "."))
        ]
        return [f"{root}/{name}" for name in sorted(names, key=order_of)]

    def _read_directory(self, fs: pafs.FileSystem, directory: str, name: str) -> None:
        files = part_files(fs, directory)
        fed = 0
        for i, path in enumerate(files):
            key = f"{name}/part-{i:05d}"
            if self.covered(key):
                continue
            segment = open_segment(key, fs, [path], format_of(path, self.cfg.format), self.cfg)
            feed(self.handoff, segment, self.converter, self.cfg.batch_rows)
            fed += segment.rows
        if fed:
            self.handoff.log(f"read {directory}: {len(files)} file(s), {fed} rows")


class StreamingSource(Source):
    """A Structured Streaming query run with foreachBatch: each micro-batch is staged, fed, and
    the batch function returns only when all its rows are done, so Spark commits the batch to
    its checkpoint only after the topology processed it."""

    name = "streaming"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.query = None

    def produce(self) -> None:
        spark = self.start_spark()
        cfg = self.cfg
        assert cfg.job is not None  # config.from_conf requires it for this source
        sdf = call_job(load_callable(cfg.job), spark, self.conf)
        if not getattr(sdf, "isStreaming", False):
            raise SourceError(
                f"spark.spout.job {cfg.job} did not return a streaming DataFrame "
                f"(spark.readStream...): use spark.spout.source: dataframe for a "
                f"batch DataFrame"
            )
        missing = [f for f in cfg.fields if f not in sdf.columns]
        if missing:
            raise SourceError(
                f"spark.spout.job {cfg.job}: the streaming DataFrame has no "
                f"column(s) {', '.join(missing)} (its columns: "
                f"{', '.join(sdf.columns)})"
            )
        writer = (
            sdf.select(*cfg.fields)
            .writeStream.foreachBatch(self._batch)
            .option("checkpointLocation", cfg.streaming_checkpoint)
        )
        if cfg.trigger_secs:
            writer = writer.trigger(processingTime=f"{cfg.trigger_secs:g} seconds")
        if self.handoff.stopping.is_set():
            raise Stopped()
        self.query = writer.start()
        self.handoff.log(
            f"streaming query {self.query.id} started (Spark checkpoint {cfg.streaming_checkpoint})"
        )
        self.query.awaitTermination()
        if not self.handoff.stopping.is_set():
            self.handoff.log("the streaming query ended", WARN)
            self.handoff.put(End())

    def _batch(self, df: DataFrame, batch_id: int) -> None:
        """Runs on Spark's thread. Raises (and so fails the batch, which Spark retries after a
        restart) when the spout is closing."""
        handoff = self.handoff
        if handoff.stopping.is_set():
            raise Stopped("the spout is closing")
        key = f"batch-{batch_id}"
        if self.covered(key):
            return  # done before a restart; Spark had not committed it yet
        uri = f"{self.cfg.staging_dir.rstrip('/')}/{key}"
        manifest = staged(uri)
        if manifest is None:  # a replayed batch keeps its first staging: same rows, same ids
            manifest = stage(df, uri, list(self.cfg.fields), {"batch": batch_id})
        fs, path = filesystem(uri)
        segment = Segment(
            key, int(manifest["rows"]), [f"{path}/{f['name']}" for f in manifest["files"]], fs
        )
        feed(handoff, segment, self.converter, self.cfg.batch_rows)
        while not segment.done.wait(0.1):
            if handoff.stopping.is_set():
                raise Stopped("the spout is closing")
        fs.delete_dir(path)

    def stop(self, timeout: float = 5.0) -> None:
        self.handoff.stopping.set()
        query = self.query
        if query is not None:
            stopper = threading.Thread(target=_quietly, args=(query.stop,), daemon=True)
            stopper.start()
            stopper.join(timeout / 2)
        super().stop(timeout / 2)


def _quietly(fn: Callable[[], Any]) -> None:
    try:
        fn()
    except Exception:
        pass


SOURCES = {"dataframe": DataFrameSource, "directory": DirectorySource, "streaming": StreamingSource}
