"""A Python topology file that leaves building to the loader: `topology` is a TopologyBuilder."""

from host.topology import TopologyBuilder

b = TopologyBuilder("wordcount-py", config={"topology.max.spout.pending": 10})
b.spout("sentences", ["python", "sentences.py"], outputs=["sentence"])
b.bolt("split", ["bash", "split.sh"], outputs=["word"], parallelism=2).shuffle("sentences")
b.bolt("count", ["node", "count.js"], outputs=["word", "count"]).fields("split", "word")
topology = b
