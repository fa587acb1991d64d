"""`python -m components.kafka_spout`: run the Kafka spout (docs/kafka.md)."""

from .spout import main

main()
