"""`python -m components.kafka_bolt`: run the Kafka bolt (docs/kafka.md)."""

from .bolt import main

main()
