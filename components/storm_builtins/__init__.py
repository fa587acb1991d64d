"""Python equivalents of the Java classes Storm's Flux examples mix with shell components, written
with our Python client and launched like any user component (`python -m
components.storm_builtins.<module>`). The Flux loader (`host.topology.flux.BUILTINS`) maps the class names
to these modules by name; `host/` never imports this package.

* `org.apache.storm.flux.wrappers.bolts.LogInfoBolt` -> `log_info_bolt`: logs every tuple at
  INFO as Storm's tuple `toString` shows it, values as Java writes them (`java_text`), and acks
  it; declares no output.
* `org.apache.storm.testing.TestWordCounter` -> `test_word_counter`: counts field 0 (a word),
  emits `[word, count]` anchored to the input, acks it.
* `org.apache.storm.testing.TestWordSpout` -> `test_word_spout`: one random word of five every
  100 ms on field `word`, unreliable (no message id), as Storm's.
* `org.apache.storm.kafka.KafkaSpout` (the older storm-kafka) -> `storm_kafka_spout`: launches
  components/kafka_spout's storm-kafka flavour (brokers and offsets in ZooKeeper, docs/kafka.md).
"""
