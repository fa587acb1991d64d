"""`org.apache.storm.kafka.KafkaSpout` (the older storm-kafka, with ZkHosts and SpoutConfig):
the Kafka spout of components/kafka_spout with brokers and offsets in ZooKeeper, as storm-kafka
keeps them. Its settings are the `kafka.spoutconfig.*` keys the Flux loader makes of the
SpoutConfig bean (host/topology/flux_storm_kafka.py); docs/kafka.md, "The older storm-kafka
spout"."""

from components.kafka_spout.storm_kafka import main

if __name__ == "__main__":
    main()
