"""Building a run from its topology: one link and one `Task` per task of each component that runs
as a process, and, where the topology has them, the batch layer of a transactional topology and
the DRPC service. Done once, before the run starts; apart from host/runtime/supervisor.py, which
drives what is built here."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING

from host.observe.metrics import ComponentStats
from host.observe.observations import Observations
from host.runtime.bolt_link import BoltLink
from host.runtime.context import HandshakeCache, TaskMap
from host.runtime.data_path import DataPath
from host.runtime.lifecycle import RestartPolicy
from host.runtime.loop import EventLoop
from host.runtime.run_length import RunLength
from host.runtime.spout_link import SpoutLink
from host.runtime.task import Task
from host.runtime.task_log import TaskLog
from host.topology import settings as cfg
from host.topology.component_config import component_settings, tick_freq
from host.topology.model import Topology
from multilang.serializers import Serializer, serializer

if TYPE_CHECKING:
    from host.drpc.service import DrpcService


def build_tasks(
    topology: Topology,
    settings: cfg.Settings,
    task_map: TaskMap,
    run_id: str,
    path: DataPath,
    observe: Observations,
    run_lengths: dict[str, RunLength],
    strict: bool,
) -> tuple[dict[int, Task], list[SpoutLink], dict[str, list[Task]]]:
    """The tasks by id, the spout links, and the tasks of each component that runs as processes
    (DRPC's in-host parts have none); every link is registered in `path.links`."""
    tasks: dict[int, Task] = {}
    spouts: list[SpoutLink] = []
    by_component: dict[str, list[Task]] = {
        c.id: [] for c in topology.components if c.in_host is None
    }
    batch_spout_class: type[SpoutLink] = SpoutLink
    if topology.transactional_id is not None:
        from host.batch.spout_link import BatchSpoutLink  # only transactional runs pay

        batch_spout_class = BatchSpoutLink
    handshakes = HandshakeCache(topology, task_map, run_id)
    serializers: dict[str, Serializer] = {}  # shared: they cache per route
    metrics: dict[str, dict] = {c.id: {} for c in topology.components}
    for comp in topology.components:
        if comp.in_host is not None:
            continue  # built with the DRPC service (`build_drpc`)
        own = component_settings(topology, comp)
        ser = serializers.get(comp.serializer)
        if ser is None:
            ser = serializers[comp.serializer] = serializer(comp.serializer)
        for task_id in task_map.tasks_of(comp.id):
            task_log = TaskLog(f"{comp.id}[{task_id}]", comp.id, task_id, observe)
            task_stats = ComponentStats(tasks=1, metrics=metrics[comp.id])
            link: BoltLink | SpoutLink
            if comp.is_spout:
                cls = batch_spout_class if comp.batch is not None else SpoutLink
                link = cls(
                    path,
                    comp,
                    task_id,
                    ser,
                    task_stats,
                    task_log,
                    max_pending=own.max_spout_pending,
                    # --strict: Storm's exchange, one command at a time, for every spout
                    pipelining=False
                    if strict
                    else (
                        settings.spout_pipelining if comp.pipelining is None else comp.pipelining
                    ),
                    next_depth=settings.spout_next_depth,
                    ack_batch=settings.spout_ack_batch,
                    idle_max_sleep=settings.spout_idle_max_sleep_secs,
                )
                spouts.append(link)
            else:
                link = BoltLink(
                    path,
                    comp,
                    task_id,
                    ser,
                    task_stats,
                    task_log,
                    max_in_flight=settings.bolt_max_in_flight,
                    max_queued=settings.shellbolt_max_pending,
                    tick_freq=tick_freq(topology, comp),
                )
                link.run_length = run_lengths.get(comp.id)
            policy = RestartPolicy(
                settings.restart_backoff_initial_secs,
                settings.restart_backoff_max_secs,
                settings.restart_max,
                settings.restart_window_secs,
            )
            task = Task(
                link, policy, handshakes.conf(comp.id), handshakes.context(comp.id, task_id)
            )
            path.links[task_id] = link
            tasks[task_id] = task
            by_component[comp.id].append(task)
    return tasks, spouts, by_component


def build_batches(
    topology: Topology,
    settings: cfg.Settings,
    task_map: TaskMap,
    path: DataPath,
    tasks: dict[int, Task],
) -> None:
    """The batch layer of a transactional topology (host/batch/layer.py), and the `batch` key
    of its batch components' handshake context."""
    from host.batch.layer import BatchLayer

    tid = topology.transactional_id
    assert tid is not None
    spout = next(c for c in topology.components if c.batch == "spout")
    layer = BatchLayer(
        topology,
        path,
        task_map.tasks_of,
        os.path.join(cfg.state_dir(settings), "transactional", tid),
        max_open=component_settings(topology, spout).max_spout_pending or 1,
        timeout_secs=settings.message_timeout_secs,
        idle_max_sleep=settings.batch_idle_max_sleep_secs,
    )
    path.batches = layer
    for task in tasks.values():
        extra = layer.context(task.link.cid)
        if extra is not None:
            task.context["batch"] = extra


def build_drpc(
    topology: Topology,
    settings: cfg.Settings,
    task_map: TaskMap,
    path: DataPath,
    loop: EventLoop,
    observe: Observations,
    blocked: Callable[[str], bool],
    tasks: dict[int, Task],
) -> DrpcService:
    """The DRPC server, the request table and the in-host DRPC tasks (docs/drpc.md); for a
    linear DRPC topology also its request layer, and the `batch` key of its finish-batch
    bolts' handshake context. `blocked(component)`: whether backpressure holds that spout
    component's tasks (the DRPC spouts' too)."""
    from host.drpc.service import DrpcService  # only DRPC runs pay

    drpc = DrpcService(
        topology,
        path,
        loop,
        settings,
        task_map.tasks_of,
        observe,
        blocked,
    )
    if drpc.linear is not None:
        path.batches = drpc.linear
        extra = drpc.linear.context()
        for task in tasks.values():
            if task.link.component.batch is not None:
                task.context["batch"] = extra
    return drpc
