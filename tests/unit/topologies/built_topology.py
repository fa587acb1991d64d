"""A Python topology file that builds the Topology itself (paths still relative to this file)."""

from host.topology import TopologyBuilder

b = TopologyBuilder("built")
b.spout("sentences", ["python", "sentences.py"], outputs=["sentence"])
b.bolt("report", ["python", "report.py"], cwd="subdir").global_("sentences")
topology = b.build()
