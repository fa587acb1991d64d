"""The topology: the frozen model, its settings, the loaders (our YAML, Flux, a Python builder),
validation, and the Flux export. Nothing here starts a process or imports the runtime."""

from host.topology.builder import ComponentDeclarer, TopologyBuilder
from host.topology.files import load
from host.topology.validation import validate

__all__ = ["ComponentDeclarer", "TopologyBuilder", "load", "validate"]
