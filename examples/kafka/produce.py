"""Write sentences to the `sentences` topic of the broker at 127.0.0.1:9092 (default 10,000)."""

from __future__ import annotations

import random
import sys

from confluent_kafka import Producer

SENTENCES = [
    "the cow jumped over the moon",
    "an apple a day keeps the doctor away",
    "four score and seven years ago",
    "snow white and the seven dwarfs",
    "i am at two with nature",
]

count = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
producer = Producer({"bootstrap.servers": "127.0.0.1:9092", "acks": "all"})
for _ in range(count):
    producer.produce("sentences", value=random.choice(SENTENCES))
    producer.poll(0)
left = producer.flush(30)
print(f"wrote {count - left} sentences to 'sentences'")
sys.exit(1 if left else 0)
