"""build() raises a TopologyError inside the file: it surfaces with this file's name."""

from host.topology import TopologyBuilder

b = TopologyBuilder("bad")
b.spout("sentences", ["python", "sentences.py"], outputs=["sentence"])
b.bolt("split", ["bash", "split.sh"]).shuffle("nowhere")
topology = b.build()
