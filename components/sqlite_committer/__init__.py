"""The SQLite committer: an exactly-once sink for transactional topologies
(docs/transactional.md, "Ready components").

```yaml
transactional: {id: word-count}
bolts:
  store:
    command: [python, -m, components.sqlite_committer]
    batch: committer
    inputs: {count: {fields: [word]}}
    outputs: []
    config:
      sqlite.committer.path: out/counts.db    # required: the database file (its directory must exist)
      sqlite.committer.table: counts          # required: the table written (created if missing)
      sqlite.committer.mode: upsert-add       # or insert (the default)
      sqlite.committer.keys: [word]           # upsert-add: the row's key fields ...
      sqlite.committer.values: [count]        # ... and the fields added into it
      sqlite.committer.audit: audit           # optional: an audit table, one row per txid
      sqlite.committer.attempts_log: out/attempts.log  # optional: a line per commit-phase finish
```

It collects each attempt's tuples (acking them as they come, §4.2) and in the commit phase, which
the host runs in strict txid order, applies them in ONE SQLite transaction (`BEGIN IMMEDIATE`,
`synchronous = FULL`): unless the stored `last_txid` (table `committer_state`, one row per data
table) is already >= the txid, it writes the batch, stores `last_txid = txid`, and, with an audit
table, inserts `(txid, attempt, tuples, content_hash, committed_at)`. A replay of a txid whose
write committed before a crash is therefore skipped, and every tuple counts exactly once.

- `insert`: a row per tuple, columns = the input fields;
- `upsert-add`: a row per key (PRIMARY KEY = the key fields); the value fields (numbers) of the
  batch are summed per key and added to the row (word counts);
- values that are lists or objects are stored as JSON text, booleans as 0/1;
- columns are the input fields: the declared fields of the subscribed streams, which must agree
  (`sqlite.committer.fields` names them explicitly); table and column names are plain identifiers.
- `content_hash` is the sha256 of the tuples' compact JSON (keys sorted), sorted and joined by
  newlines (`components/audit.py`): the same for every attempt of a txid from a transactional
  spout. Empty batches are applied too, so the audit lists every committed txid.

The committer runs as one task (parallelism 1): the stored txid is one per table. The output
belongs to one `topology.transactional.id`: a topology started over with fresh state must write
to a fresh table (or file), or its txids, starting at 1 again, would be skipped.

`sqlite.committer.attempts_log` (for the chaos tests) appends a line `txid attempt tuples
content_hash applied|skipped` to a text file at every commit-phase finish, a skipped replay
included (written right after the transaction, before the `after_commit` seam): the audit table
keeps only the applied attempt, the log shows that every attempt of a txid had the same content.

Fault seam for the chaos tests (`components/fault_seam.py`): `FAULT=point:txid[:attempt]` in the
environment exits with status 137 at `before_write` (inside the transaction, once the skip check
passed), `after_commit` (the transaction committed, the finish not acked) or `after_ack`. A client
acks when `finish_batch` returns, so `after_ack` is armed there and fires at the next tuple or
finish the committer is given (after writing out the queued ack); it never fires after the last
batch of a run.
"""
