"""The Parquet sink: a bolt that writes the tuples it receives to Parquet files Spark can read.

```yaml
bolts:
  sink:
    command: [python, -m, components.parquet_sink]
    outputs: []
    inputs: {count: shuffle}
    config:
      parquet.sink.dir: out/counts          # required; created if missing
      parquet.sink.rows: 10000              # roll a file every N tuples ...
      topology.tick.tuple.freq.secs: 2      # ... or at every tick tuple (T seconds)
```

Columns are the input fields (the context's `source->stream->fields` of the streams the bolt
subscribes to, which must all declare the same fields; `parquet.sink.fields` picks or orders them
explicitly). Tuples are buffered, unacked, until the file is rolled: every `parquet.sink.rows`
tuples (at most `host.bolt.max.in.flight`, the host's cap on a bolt's unacked tuples, so
a roll is never waited for forever) and at every tick tuple when the buffer is not empty. A roll
writes `.part-*.parquet.tmp` (hidden from Spark by its leading dot), fsyncs it, renames it to
`part-<task>-<time>-<seq>.parquet`, fsyncs the directory, and only then acks the file's tuples.
A crash before the rename loses nothing: the tuples were never acked, so the spout replays them.
A write that fails fails the file's tuples (replayed) and reports an error. Tuples buffered when
the host closes stdin are not written (they were not acked, so they are replayed on the next
run, not written twice).

Column types are inferred by pyarrow from the values (JSON numbers, strings, booleans, lists,
objects); `parquet.sink.schema` (`{field: type}` with pyarrow type names: string, int64,
double, bool, timestamp[us], ...) fixes them. A column whose values do not share a type is written
as strings (JSON text for non-strings) with a warning; an all-null column is a string column.
Other settings: `parquet.sink.compression` (snappy; any pyarrow codec).
"""
