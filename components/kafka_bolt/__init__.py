"""A ready multilang bolt that writes tuples to Kafka, like storm-kafka-client's `KafkaBolt`:
each tuple becomes one record (key and message taken from fields by name, `key` and `message` by
default; the topic fixed or taken from a field), produced with `acks=all`. A tuple is acked only
when the broker has acknowledged its record, and failed on a delivery error, so the spout
replays it. Run it as `python -m components.kafka_bolt`; settings: docs/kafka.md ("Bolt
settings").
"""
