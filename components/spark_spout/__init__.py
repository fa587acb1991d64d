"""The Spark spout: feed a topology from PySpark, with replay, dead letters and checkpoints.

A multilang spout written with our Python client, launched like any other component:

```yaml
spouts:
  lines:
    command: [python, -m, components.spark_spout]
    outputs: [line_no, line]                  # = the columns emitted, in this order
    config:
      spark.spout.source: dataframe           # dataframe | directory | streaming
      spark.spout.job: job:lines              # module:function(spark[, conf]) -> DataFrame
      spark.spout.checkpoint.dir: .run/spark-spout
      spark.master: local[2]                  # any spark.* key goes to the SparkSession
```

Each row becomes one tuple on the default stream whose values are the row's columns named by
the spout's declared output fields, in that order. Its message id is `[segment, offset]`: the
segment is a staged file (`part-00003`), an output directory's part file
(`<directory>/part-00001`) or a micro-batch (`batch-17`), the offset the row's position in it;
both are stable across restarts. A failed row is emitted again (before new rows) until it has
failed `spark.spout.retries` + 1 times, then written to the dead-letter file with the reason
(and emitted on the `dead` stream when the spout declares one). Progress is checkpointed to
`<spark.spout.checkpoint.dir>/checkpoint.json` (see `checkpoint.py`): after a crash or a
restart of the spout or of the host, only rows the checkpoint does not cover are emitted, and a
row it covers is never emitted again.

## Sources

- **dataframe**: `spark.spout.job` (`module:function`, called with the SparkSession, or with the
  SparkSession and the component conf when it takes two arguments; the module is imported from
  the component's cwd, the topology's directory), or `spark.spout.sql` (a query), or
  `spark.spout.path` + `spark.spout.format` (parquet, json, csv, orc, text) +
  `spark.spout.read.options`. The result's output columns are written once, as parquet, to
  `<staging.dir>/<fingerprint>/` (temporary directory, manifest, rename), so row order and ids
  stay the same across restarts, and Spark is stopped; rows are then read back with pyarrow in
  record batches. A restart finds the staged copy and does not start Spark again. Sort the
  DataFrame (`orderBy`) if the order matters: the staged order is the DataFrame's partition order.
- **directory**: `spark.spout.path` is a Spark output directory (read once) or a parent whose
  subdirectories are output directories, read one after the other in name order as they appear
  (polled every `spark.spout.poll.secs`). A directory is read when its `_SUCCESS` file exists;
  later directories wait for it. Its `part-*` files are read with pyarrow, no JVM:
  parquet, json (JSON lines; a column missing from a file is null, as Spark's writer leaves out
  nulls) or csv (Spark writes no header by default: the columns are `spark.spout.csv.columns`,
  or the output fields; `spark.spout.csv.header: true` for files with one); the format comes
  from the file names unless `spark.spout.format` says. A directory that sorts before the
  checkpoint's last finished one is taken as done: name directories so that they sort in
  the order they are written (a sequence number, a timestamp). Local paths or any URI pyarrow
  reads (hdfs://, s3://, ...).
- **streaming**: `spark.spout.job` returns a streaming DataFrame (`spark.readStream...`). The
  spout runs it with `foreachBatch`: each micro-batch is staged as parquet under
  `<staging.dir>/batch-<id>/`, its rows are emitted, and the batch function returns only when
  every row is acked or dead-lettered and checkpointed, so Spark commits the batch to its own
  checkpoint (`spark.spout.streaming.checkpoint`) only after the topology processed it. A batch
  that Spark replays after a crash reuses its staged rows: the same ids, and only the rows our
  checkpoint does not cover are emitted.

## Transactional (exactly-once)

With `spark.spout.transactional: true` (streaming source only) the spout is a transactional batch
spout (docs/transactional.md): declare it `batch: spout` in a topology with `transactional: {id:
...}`, and store the results with a committer (`components.sqlite_committer`, ...):

```yaml
transactional: {id: clicks}
spouts:
  clicks:
    command: [python, -m, components.spark_spout]
    outputs: [user, page]
    batch: spout
    config:
      spark.spout.source: streaming
      spark.spout.transactional: true
      spark.spout.job: job:clicks                 # returns spark.readStream...
      spark.spout.checkpoint.dir: .run/clicks
bolts:
  store: {command: [python, -m, components.sqlite_committer], batch: committer,
          inputs: {clicks: global}, config: {sqlite.committer.path: out/clicks.db,
          sqlite.committer.table: clicks}}
```

Spark's micro-batch N is the transaction txid N+1 (Spark counts from 0, the host from 1):

- `foreachBatch(df, N)` (Spark's thread) stages the micro-batch as parquet under
  `<staging.dir>/batch-N/` (a micro-batch Spark runs again keeps its first staging), offers it,
  and returns only once the host commits txid N+1; Spark then writes its own commit of N;
- the host's `batch_init` (the protocol loop, the main thread) gets the staged batch's metadata
  `{"spark_batch_id": N, "staging": ".../batch-N", "rows": R}` with `"txid": N+1`, or, while
  nothing is staged yet, "not ready" (asked again after `host.spout.idle.max.sleep.ms` at most);
- `batch_emit` emits the staged rows, on the first attempt and on every replay (a failed
  attempt, a restarted host): the same tuples each time, read from the staging, never from Spark;
- after a restart, a micro-batch that Spark runs again whose txid the host committed before
  (the handshake's `committed_txid`, or a `batch_commit` already seen) returns at once; one the
  host replays from its stored metadata returns when that replay commits;
- a staging directory is deleted once its txid's commit is recorded by the host (the `committed`
  of a later `batch_emit` or `batch_commit`, or the handshake), not earlier: a host that dies
  after `batch_commit` and before it records the commit replays the txid from the staging.

Spark runs one micro-batch at a time, so at most one txid is open (`topology.max.spout.pending`
above 1 gains nothing). Tuples carry no message id and are not retried one by one: a failed
tuple fails its attempt, which is emitted again whole; `spark.spout.retries`, the dead-letter
file, `rows.per.next`, `max.pending` and `checkpoint.json` are not used (the host's state is the
progress, Spark's checkpoint says what comes next; `checkpoint.dir` still holds it and the
staging). Keep `spark.spout.streaming.checkpoint`, the staging and the host's state directory
together: a host's state with another Spark checkpoint would skip or repeat micro-batches.

## Settings (component config)

| key | default | meaning |
|---|---|---|
| `spark.spout.source` | `dataframe` | `dataframe`, `directory` or `streaming` |
| `spark.spout.job` | | `module:function` returning a DataFrame (streaming: a streaming one) |
| `spark.spout.sql` | | dataframe source: a SQL query instead of a job |
| `spark.spout.path` | | dataframe: input read by Spark; directory: the directory to watch |
| `spark.spout.format` | parquet / from file names | dataframe: parquet, json, csv, orc, text; directory: parquet, json, csv |
| `spark.spout.read.options` | `{}` | dataframe source with a path: Spark reader options (`{header: true}`) |
| `spark.spout.fields` | the output fields | the columns to emit, in order; must equal the declared output fields (an error at start otherwise) |
| `spark.spout.checkpoint.dir` | required | progress file, default staging and dead-letter location (created 0700) |
| `spark.spout.checkpoint.interval.ms` | 1000 | how often progress is written while rows are acked (also at deactivate, close and when a segment completes) |
| `spark.spout.staging.dir` | `<checkpoint.dir>/staging` | where the DataFrame and micro-batches are staged (on a cluster: storage that both the executors and the spout reach) |
| `spark.spout.retries` | 3 | re-emits of a failed row before it is dead-lettered |
| `spark.spout.dead.letter` | `<checkpoint.dir>/dead-letter.jsonl` | one JSON object per dead row: key, offset, row, reason, attempts, time |
| `spark.spout.batch.rows` | 1024 | rows per record batch read with pyarrow |
| `spark.spout.read.ahead` | 4 | record batches read ahead of the emits (the bounded hand-over queue) |
| `spark.spout.rows.per.next` | 100 | rows emitted per `next` at most |
| `spark.spout.max.pending` | 1000 | rows in flight when `topology.max.spout.pending` is not set (when it is, that) |
| `spark.spout.poll.secs` | 1.0 | directory source: how often to look for new directories |
| `spark.spout.csv.header` / `spark.spout.csv.columns` | false / the output fields | directory source, csv files |
| `spark.spout.streaming.checkpoint` | `<checkpoint.dir>/streaming` | Spark's checkpointLocation for the streaming query |
| `spark.spout.trigger.secs` | 0 (as fast as possible) | streaming: processing-time trigger interval |
| `spark.spout.log.level` | WARN | Spark's log level |
| `spark.spout.transactional` | false | true: a transactional batch spout (`batch: spout`, streaming source; see "Transactional") |
| `spark.*` (any other) | `spark.master: local[*]` | passed to the SparkSession builder: `spark.master: spark://host:7077` runs the Spark side on a cluster |

The `dead` stream, when declared (e.g. `outputs: {default: [...], dead: [key, offset, row,
reason]}`), gets an untracked tuple per dead-lettered row, with any of the fields `key`, `offset`,
`row` (the row as an object), `reason`, `attempts`.

Rows in flight are capped at `topology.max.spout.pending` (the host enforces it too), and the
source reads at most `read.ahead` record batches ahead, so memory stays bounded. Types are
converted as `convert.py` documents: timestamps ISO-8601, decimals as strings, binary as base64,
nulls as null. Spark's start-up shows as "starting Spark…" in the host's log; its own console
output is kept to warnings (log4j2 at WARN, progress bars off). `JAVA_HOME` is derived from the
`java` on PATH when unset. The spout runs as one task (parallelism 1).
"""
