"""`topology` is neither a Topology nor a TopologyBuilder."""

topology = {"name": "a dict is not a topology"}
