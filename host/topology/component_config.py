"""What one component's configuration is: the part of its own config that Storm honours, the
effective config that merges it over the topology's config and the defaults as Storm's
`Executor.java` does (`normalizedComponentConf`), whether it gets ticks, and its typed `Settings`.

The effective config is what a component receives as `conf` in the handshake (docs/protocol.md).
The keys, their defaults and the whitelist are those of `host.topology.settings`.
"""

from __future__ import annotations

from host.topology.model import Component, Topology
from host.topology.settings import (
    DEFAULTS,
    KEYS,
    MESSAGE_TIMEOUT_SECS,
    TICK_TUPLE_FREQ_SECS,
    KeyReader,
    Settings,
    is_component_level,
)


def _component_of(topology: Topology, component: Component | str) -> Component:
    return topology.component(component) if isinstance(component, str) else component


def component_overrides(component: Component) -> dict:
    """The part of a component's config that Storm honours: whitelisted known keys and custom
    keys; other known keys (e.g. `topology.subprocess.timeout.secs`, `host.*`) are dropped."""
    return {k: v for k, v in component.config.items() if is_component_level(k)}


def effective_config(topology: Topology, component: Component | str) -> dict:
    """Defaults + topology config + the component's honoured config, as Storm's `Executor.java`
    merges them. For spouts, `topology.tick.tuple.freq.secs` is set to the message timeout as
    Storm does (spouts never get ticks: use `tick_freq` to decide who does). Known keys set to
    null fall back to their default or are left out."""
    comp = _component_of(topology, component)
    conf = {**DEFAULTS, **topology.config, **component_overrides(comp)}
    for key, spec in KEYS.items():
        if key in conf and conf[key] is None:
            if spec.default is None:
                del conf[key]
            else:
                conf[key] = spec.default
    if comp.is_spout:
        conf[TICK_TUPLE_FREQ_SECS] = conf[MESSAGE_TIMEOUT_SECS]
    return conf


def tick_freq(topology: Topology, component: Component | str) -> int | None:
    """Seconds between tick tuples for this component, or None for no ticks. Only bolts whose
    topology or own config sets `topology.tick.tuple.freq.secs` get ticks (see docs/protocol.md
    on tick tuples): Storm's own example bolts crash on a tick they did not ask for."""
    comp = _component_of(topology, component)
    if comp.is_spout:
        return None
    return KeyReader(effective_config(topology, comp)).optional_integer(TICK_TUPLE_FREQ_SECS)


def component_settings(topology: Topology, component: Component | str) -> Settings:
    """A component's settings: those of its effective config (`effective_config`)."""
    comp = _component_of(topology, component)
    return Settings.from_config(
        effective_config(topology, comp), file=topology.source, component=comp.id
    )
