"""Prints the word counts the SQLite committer stored, and checks them against a direct count of
the input files: `python report.py [DATABASE]`."""

import collections
import glob
import os
import sqlite3
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
db = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "counts.db")
stored = dict(sqlite3.connect(db).execute("SELECT word, count FROM counts"))
expected = collections.Counter(
    w
    for path in sorted(glob.glob(os.path.join(HERE, "data", "*.txt")))
    for line in open(path, encoding="utf-8")
    for w in line.split()
)
for word, n in sorted(stored.items(), key=lambda kv: -kv[1])[:10]:
    print(f"{word:10} {n}")
print("exactly once:", stored == dict(expected))
sys.exit(0 if stored == dict(expected) else 1)
