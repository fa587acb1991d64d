"""A ready multilang spout that reads Kafka topics with storm-kafka-client's semantics, on
confluent-kafka (librdkafka). Run it as `python -m components.kafka_spout`; settings are
`kafka.spout.*` keys of the component's config. docs/kafka.md describes it in full.

- message id = [topic, partition, offset]; a failed tuple is emitted again with back-off, and
  after the retry limit goes to a dead-letter topic or is logged and skipped;
- per partition the committed offset is the first offset not yet done (offsets.py), committed on
  a period, on deactivate and on shutdown; `max.uncommitted.offsets` pauses a partition;
- partitions are spread over the spout's tasks round-robin and refreshed on a period (the
  manual partitioner of storm-kafka-client 2.x), commits go to the consumer group.

`python -m components.kafka_spout.transactional` is the same source as a partitioned
transactional batch spout (transactional.py; docs/kafka.md, "The transactional spout").
"""
