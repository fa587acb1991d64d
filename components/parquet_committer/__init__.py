"""The Parquet committer: an exactly-once sink for transactional topologies, one Parquet file per
batch (docs/transactional.md, "Ready components").

```yaml
transactional: {id: lines}
bolts:
  files:
    command: [python, -m, components.parquet_committer]
    batch: committer
    inputs: {lines: shuffle}
    outputs: []
    config:
      parquet.committer.dir: out/lines        # required; created if missing
      parquet.committer.fields: [file, line]  # optional: the columns (default: the input fields)
      parquet.committer.schema: {lineno: int64}  # optional: pyarrow types of columns
      parquet.committer.compression: snappy   # any pyarrow codec
```

It collects each attempt's tuples (acking them as they come) and in the commit phase, which the
host runs in strict txid order, writes them as `part-<txid:020d>.parquet` (txid zero-padded to 20
digits, so names sort in txid order): to `.part-<txid>.parquet.tmp` (hidden from Spark by its
leading dot), fsynced, renamed into place, directory fsynced (the Parquet sink's
`write_table_atomically`). When the txid's file is there already (a replay after a crash between
the rename and the ack), the write is skipped. Each txid's file appears once, whole, and Spark
reading the directory sees every tuple exactly once. An empty batch is a file with no rows.

Columns and types are the Parquet sink's (`components/parquet_sink`): the input fields, pyarrow's
inferred types, mixed-type columns as strings (with a warning), all-null columns as strings;
`parquet.committer.schema` fixes types (worth doing: each file's types are inferred from its own
rows). Each file's schema metadata holds `multilang.txid`, `multilang.attempt` and
`multilang.content_hash` (as the SQLite committer's audit: `components/audit.py`).

The committer runs as one task (parallelism 1): one file per txid. Temporary files a crash left
are deleted at start. The directory belongs to one `topology.transactional.id`: a topology started
over with fresh state must write to a fresh directory, or its txids, starting at 1 again, would be
skipped. The fault seam `FAULT=point:txid[:attempt]` is the SQLite committer's (see
`components/fault_seam.py`): `before_write` is just before the temporary file is written,
`after_commit` just after the rename.
"""
