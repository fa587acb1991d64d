"""host.topology.settings (the Key table, Settings, effective config), host.topology.config_check and
host.topology.overrides (-c KEY=VALUE)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from host.errors import TopologyError
from host.topology import TopologyBuilder
from host.topology import settings as cfg
from host.topology.component_config import (
    component_overrides,
    component_settings,
    effective_config,
    tick_freq,
)
from host.topology.config_check import check_config
from host.topology.model import BOLT, SHUFFLE, SPOUT, Component, Grouping, Input, Topology
from host.topology.overrides import parse_override, parse_overrides, with_overrides
from host.topology.settings import DEFAULTS, KEYS, Settings, settings_for

FIXTURES = Path(__file__).parent / "topologies"
SCRIPT = ["python", "sentences.py"]  # exists in FIXTURES


def spout(id: str, config: dict | None = None) -> Component:
    return Component(id, SPOUT, tuple(SCRIPT), {"default": ("x",)}, config=config or {})


def bolt(id: str, inputs: tuple[Input, ...] = (), config: dict | None = None) -> Component:
    return Component(id, BOLT, tuple(SCRIPT), {}, inputs, config=config or {})


def shuffle(source: str) -> Input:
    return Input(source, "default", Grouping(SHUFFLE))


def wordcount(config: dict | None = None) -> Topology:
    """sentences -> split -> count, built and validated."""
    b = TopologyBuilder("wc", config=config)
    b.spout("sentences", SCRIPT, outputs=["sentence"])
    b.bolt("split", SCRIPT, outputs=["word"]).shuffle("sentences")
    b.bolt("count", SCRIPT, outputs=["word", "count"], parallelism=2).fields("split", "word")
    return b.build(base_dir=FIXTURES)


# ---- the Key table and Settings -----------------------------------------------------------------


def test_defaults():
    assert DEFAULTS == {
        "topology.message.timeout.secs": 30,
        "topology.shellbolt.max.pending": 100,
        "supervisor.worker.timeout.secs": 30,
        "topology.debug": False,
        "topology.enable.message.timeouts": True,
        "host.handshake.timeout.secs": 30,
        "host.restart.backoff.initial.secs": 0.5,
        "host.restart.backoff.max.secs": 30,
        "host.restart.max": 10,
        "host.restart.window.secs": 60,
        "host.shutdown.grace.secs": 5,
        "host.spout.idle.max.sleep.ms": 100,
        "host.batch.idle.max.sleep.ms": 1000,
        "host.spout.ack.batch": 100,
        "host.spout.next.depth": 32,
        "host.bolt.max.in.flight": 1000,
        "host.shuffle.run.max": 128,
        "host.shuffle.run.budget.ms": 4,
        "host.cpu.isolate": "auto",
        "host.task.nice": "auto",
        "host.acker.latency.sample": 16,
        "host.max.frame.bytes": 16 * 1024 * 1024,
        "drpc.http.port": 3774,
        "drpc.request.timeout.secs": 600,
        "drpc.max_buffer_size": 1048576,
        "host.drpc.bind": "127.0.0.1",
        "host.drpc.max.pending": 1024,
        "host.drpc.max.connections": 1024,
        "host.spark.batch.max.tuples": 10_000,
        "host.spark.kafka.batch.max.records": 1000,
        "host.spark.ship": "auto",
        "host.spark.ship.max.mb": 512,
    }


def test_settings_of_an_empty_config_are_the_defaults():
    assert Settings.from_config({}) == Settings(
        message_timeout_secs=30,
        message_timeouts_enabled=True,
        max_spout_pending=None,
        acking=True,
        acker_tasks=1,
        shellbolt_max_pending=100,
        bolt_max_in_flight=1000,
        shuffle_run_max=128,
        shuffle_run_budget_secs=0.004,
        cpu_isolate="auto",
        task_nice="auto",
        subprocess_timeout_secs=30.0,
        handshake_timeout_secs=30.0,
        shutdown_grace_secs=5.0,
        restart_backoff_initial_secs=0.5,
        restart_backoff_max_secs=30.0,
        restart_max=10,
        restart_window_secs=60.0,
        spout_idle_max_sleep_secs=0.1,
        batch_idle_max_sleep_secs=1.0,
        spout_pipelining=None,
        spout_ack_batch=100,
        spout_next_depth=32,
        acker_latency_sample=16,
        max_frame_bytes=16 * 1024 * 1024,
        debug=False,
        tick_tuple_freq_secs=None,
    )


def test_settings_read_set_values():
    conf = {
        "topology.acker.executors": 0,
        "topology.max.spout.pending": 7,
        "supervisor.worker.timeout.secs": 12,
        "topology.debug": None,
        "host.spout.idle.max.sleep.ms": 250,
        "host.handshake.timeout.secs": 2,
    }
    settings = Settings.from_config(conf)
    assert not settings.acking and settings.acker_tasks == 0
    assert settings.max_spout_pending == 7
    assert settings.subprocess_timeout_secs == 12.0  # falls back to the worker timeout
    assert settings.debug is False  # null = default
    assert settings.spout_idle_max_sleep_secs == 0.25
    assert isinstance(settings.handshake_timeout_secs, float)
    with_own_timeout = Settings.from_config({**conf, "topology.subprocess.timeout.secs": 4})
    assert with_own_timeout.subprocess_timeout_secs == 4.0
    assert Settings.from_config({"topology.acker.executors": 3}).acker_tasks == 3


def _another_valid_value(key: cfg.Key) -> object:
    """A value that passes the key's check and differs from its default."""
    if key.check(True) is None:  # a boolean key
        return not key.default
    if key.check("/a/path") is None:  # a path key (host.state.dir)
        return "/a/path"
    if key.check("0.0.0.0:1") is None:  # an address (host.drpc.bind)
        return "0.0.0.0:1"
    return 0 if key.check(0) is None else 7


def _wrong_value(key: str) -> object:
    """A value of the wrong type for `key`: text for numbers and booleans, a number for paths."""
    return 7 if KEYS[key].check("/a/path") is None else "not a number or bool"


def _changed_fields(conf: dict) -> set[str]:
    default, changed = Settings.from_config({}), Settings.from_config(conf)
    return {
        f.name
        for f in dataclasses.fields(Settings)
        if getattr(default, f.name) != getattr(changed, f.name)
    }


def test_every_key_feeds_a_field_and_every_field_is_fed_by_a_key():
    """The Key table and Settings describe the same keys: changing any key in the table changes
    a field, and every field changes with some key."""
    fed: set[str] = set()
    for key in KEYS.values():
        changed = _changed_fields({key.name: _another_valid_value(key)})
        assert changed, f"{key.name} changes no field of Settings"
        fed |= changed
    assert fed == {f.name for f in dataclasses.fields(Settings)}


@pytest.mark.parametrize("key", sorted(KEYS))
def test_settings_refuse_a_wrong_type(key):
    with pytest.raises(TopologyError) as info:
        Settings.from_config({key: _wrong_value(key)}, file="f.yaml", component="b")
    assert (info.value.file, info.value.component, info.value.key) == ("f.yaml", "b", key)


def test_settings_refuse_a_value_out_of_range():
    with pytest.raises(TopologyError, match=r"must be a positive integer, got 0"):
        Settings.from_config({"topology.message.timeout.secs": 0})


def test_topology_and_component_settings():
    t = Topology(
        "t",
        (
            spout("s"),
            bolt("b", (shuffle("s"),), config={"topology.max.spout.pending": 5}),
            bolt("c", (shuffle("s"),), config={"topology.tick.tuple.freq.secs": 7}),
        ),
        config={"topology.max.spout.pending": 100, "topology.message.timeout.secs": 45},
    )
    assert settings_for(t).max_spout_pending == 100
    assert component_settings(t, "b").max_spout_pending == 5  # whitelisted: the bolt's own
    assert component_settings(t, t.component("c")).tick_tuple_freq_secs == 7
    assert component_settings(t, "b").tick_tuple_freq_secs is None
    # spouts see the message timeout as their tick frequency, as in Storm (but get no ticks)
    assert component_settings(t, "s").tick_tuple_freq_secs == 45
    assert tick_freq(t, "s") is None


def test_settings_for_names_the_file():
    t = Topology("t", (spout("s"),), config={"host.restart.max": -1}, source="t.yaml")
    with pytest.raises(TopologyError) as info:
        settings_for(t)
    assert (info.value.file, info.value.key) == ("t.yaml", "host.restart.max")


# ---- effective configuration --------------------------------------------------------------------


def test_effective_config_applies_storms_component_whitelist():
    b = bolt(
        "b",
        (shuffle("s"),),
        config={
            "topology.max.spout.pending": 5,  # whitelisted: overrides the topology's
            "topology.debug": True,  # whitelisted
            "topology.bolts.window.length.count": 10,  # whitelisted by prefix
            "topology.message.timeout.secs": 1,  # known, not whitelisted: dropped
            "topology.subprocess.timeout.secs": 1,  # topology-wide: dropped
            "topology.shellbolt.max.pending": 1,  # topology-wide: dropped
            "topology.workers": 4,  # known Storm key: dropped
            "supervisor.worker.timeout.secs": 1,  # cluster key: dropped
            "host.restart.max": 1,  # our keys are topology-wide
            "my.custom": [1, 2],  # custom keys pass
            "topology.myapp.key": "x",  # custom even under topology.
        },
    )
    t = Topology(
        "t",
        (spout("s"), b),
        config={"topology.max.spout.pending": 100, "topology.shellbolt.max.pending": 50},
    )
    conf = effective_config(t, "b")
    assert conf["topology.max.spout.pending"] == 5
    assert conf["topology.debug"] is True
    assert conf["topology.bolts.window.length.count"] == 10
    assert conf["topology.message.timeout.secs"] == 30
    assert "topology.subprocess.timeout.secs" not in conf
    assert conf["topology.shellbolt.max.pending"] == 50
    assert "topology.workers" not in conf
    assert conf["supervisor.worker.timeout.secs"] == 30
    assert conf["host.restart.max"] == 10
    assert conf["my.custom"] == [1, 2] and conf["topology.myapp.key"] == "x"
    assert component_overrides(b) == {
        "topology.max.spout.pending": 5,
        "topology.debug": True,
        "topology.bolts.window.length.count": 10,
        "my.custom": [1, 2],
        "topology.myapp.key": "x",
    }
    settings = component_settings(t, b)
    assert (settings.max_spout_pending, settings.debug, settings.restart_max) == (5, True, 10)
    assert settings.shellbolt_max_pending == 50 and settings.subprocess_timeout_secs == 30.0


def test_effective_config_null_means_default_or_unset():
    t = Topology(
        "t",
        (spout("s"), bolt("b", (shuffle("s"),), config={"topology.max.spout.pending": None})),
        config={"topology.max.spout.pending": 9, "topology.debug": None},
    )
    conf = effective_config(t, "b")
    assert "topology.max.spout.pending" not in conf
    assert conf["topology.debug"] is False


def test_spouts_see_the_message_timeout_as_tick_frequency_but_get_no_ticks():
    t = Topology(
        "t",
        (spout("s", config={"topology.tick.tuple.freq.secs": 2}), bolt("b", (shuffle("s"),))),
        config={"topology.message.timeout.secs": 45},
    )
    assert effective_config(t, "s")["topology.tick.tuple.freq.secs"] == 45
    assert tick_freq(t, "s") is None
    assert tick_freq(t, "b") is None
    assert "topology.tick.tuple.freq.secs" not in effective_config(t, "b")


def test_ticks_go_to_bolts_that_configure_them():
    t = Topology(
        "t",
        (
            spout("s"),
            bolt("b", (shuffle("s"),)),
            bolt("c", (shuffle("s"),), config={"topology.tick.tuple.freq.secs": 7}),
        ),
        config={"topology.tick.tuple.freq.secs": 3},
    )
    assert tick_freq(t, t.component("b")) == 3  # topology-wide setting
    assert tick_freq(t, "c") == 7  # the bolt's own wins
    assert tick_freq(t, "s") is None


# ---- checking a config --------------------------------------------------------------------------


def test_check_config_strictness():
    conf = {"topology.subprocess.timeout.secs": 3}
    assert check_config(conf) is conf  # fine at topology level
    check_config(conf, component="b", strict=False)  # Flux: Storm drops it silently
    with pytest.raises(TopologyError, match="topology-wide") as info:
        check_config(conf, file="f.yaml", component="b")
    assert (info.value.file, info.value.component, info.value.key) == (
        "f.yaml",
        "b",
        "topology.subprocess.timeout.secs",
    )


@pytest.mark.parametrize("key", sorted(KEYS))
def test_every_known_key_rejects_a_wrong_type(key):
    with pytest.raises(TopologyError) as info:
        check_config({key: _wrong_value(key)})
    assert info.value.key == key


def test_check_config_wants_the_backoff_bounds_in_order():
    with pytest.raises(
        TopologyError, match=r"must be >= host.restart.backoff.initial.secs \(0.5\)"
    ):
        check_config({"host.restart.backoff.max.secs": 0.25})
    with pytest.raises(TopologyError, match=r"must be >= host.restart.backoff.initial.secs \(60\)"):
        check_config({"host.restart.backoff.initial.secs": 60})


# ---- -c KEY=VALUE -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, expected",
    [
        ("topology.max.spout.pending=10", ("topology.max.spout.pending", 10)),
        ("host.restart.backoff.initial.secs=0.25", ("host.restart.backoff.initial.secs", 0.25)),
        ("topology.debug=true", ("topology.debug", True)),
        ("topology.debug=False", ("topology.debug", False)),
        ("topology.max.spout.pending=null", ("topology.max.spout.pending", None)),
        ("topology.max.spout.pending=", ("topology.max.spout.pending", None)),
        ("app.name=word count", ("app.name", "word count")),
        ("app.quoted='10'", ("app.quoted", "10")),
        ("app.url=http://host:8080/x", ("app.url", "http://host:8080/x")),
        ("app.expr=a=b", ("app.expr", "a=b")),
        ("app.list=[1, 2]", ("app.list", "[1, 2]")),  # not a scalar: kept as text
        ("app.map=a: b", ("app.map", "a: b")),
        ("app.date=2024-01-01", ("app.date", "2024-01-01")),  # a date is not JSON: kept as text
        ("app.bad=[unclosed", ("app.bad", "[unclosed")),
        ("app.nan=.nan", ("app.nan", ".nan")),
        (" spaced = 3", ("spaced", 3)),
    ],
)
def test_parse_override(text, expected):
    assert parse_override(text) == expected


@pytest.mark.parametrize("text", ["no-equals", "=5", "  =5"])
def test_parse_override_errors(text):
    with pytest.raises(TopologyError, match="expected KEY=VALUE"):
        parse_override(text)


def test_parse_overrides_later_wins():
    assert parse_overrides(["a=1", "b=x", "a=2"]) == {"a": 2, "b": "x"}


def test_with_overrides_merges_and_checks():
    t = wordcount({"topology.max.spout.pending": 100})
    merged = with_overrides(t, {"topology.max.spout.pending": 5, "app.x": "y"})
    assert merged.config == {"topology.max.spout.pending": 5, "app.x": "y"}
    assert settings_for(merged).max_spout_pending == 5
    assert t.config == {"topology.max.spout.pending": 100}
    assert with_overrides(t, {}) is t
    with pytest.raises(TopologyError, match=r"positive integer, got 'x' \(from -c\)") as info:
        with_overrides(t, parse_overrides(["topology.max.spout.pending=x"]))
    assert info.value.key == "topology.max.spout.pending"
    with pytest.raises(TopologyError, match="must be >= host.restart.backoff.initial.secs"):
        with_overrides(t, {"host.restart.backoff.initial.secs": 60})
