"""A partitioned transactional spout over text files: every line of the files exactly once, in
batches (docs/transactional.md, "Ready components").

```yaml
transactional: {id: lines}
spouts:
  lines:
    command: [python, -m, components.transactional_files]
    batch: spout
    outputs: [file, lineno, line]               # any three names: file, line number, line
    parallelism: 2                              # file p is emitted by task p % 2
    config:
      files.spout.paths: [logs/*.log]   # required: files or globs (one, or a list)
      files.spout.batch.lines: 1000     # at most this many lines per file per batch
```

Each file is a partition (docs/transactional.md §5, `PartitionedTransactionalSpout`). The metadata
of a partition's batch is `{"file", "offset", "next", "lines", "line"}`: the byte range
`[offset, next)` of the file, the number of whole lines in it and the 1-based number of the first.
A new batch starts at the previous batch's `next` (`emit_new`); a replay reads exactly the stored
range again (`emit_again`), so it emits the same tuples. A tuple is (file name as configured or as
the glob returned it, line number, the line's text without its `\\n` or `\\r\\n`; UTF-8, bad bytes
replaced).

- A file that grows is read further in later batches; a last line without its newline is not
  emitted until the newline is written.
- A plain path that does not exist yet is an empty partition until it appears; a glob must match
  at least one file when the spout starts, and is expanded (sorted) then: files created later are
  not picked up. A partition stores its file name, so if the list of files changes between runs
  (a new file that sorts before an old one), continuing is refused with an error rather than
  reading one file from another's offset; a replay always reads the file its metadata names.
- Files may only grow: a file shorter than what was read of it, or whose stored range no longer
  ends lines as it did, stops the spout with an error (the batch cannot be emitted the same).
"""
