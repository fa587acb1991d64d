"""Defines no `topology`: loading it is an error."""

from host.topology import TopologyBuilder

builder = TopologyBuilder("nothing")
