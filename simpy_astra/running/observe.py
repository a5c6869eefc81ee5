"""Observing a run by events: hooks on message, link, collective and node milestones.

``sim.on(kind, callback)`` calls ``callback(observation)`` in the instant each milestone of
``kind`` happens; ``sim.stream(kind)`` returns a :class:`simpy.Store` that a user process
reads with ``yield store.get()``. Kinds (:data:`KINDS`):

* ``message_sent`` / ``message_delivered``: a workload or collective message between NPUs
  (``npu`` sends to ``peer``, ``size_bytes``, ``what`` = tag); every backend.
* ``link_start`` / ``link_end``: bytes start on a directed link / leave it (``what`` = the
  link; congestion-aware: a message starts serialising / reaches the far end; packet: a
  train joins / leaves the port). Link-level backends only.
* ``collective_start`` / ``collective_end``: a collective on one NPU (``what`` = its kind).
* ``node_end``: a workload node completed (``what`` = the node id).

The observer is a subscriber of the run's probe points (:mod:`simpy_astra.engine.probes`): the
first subscription to a kind watches the points that kind needs (the NPUs', the system
layers', the message board's, every link's), so a run nobody observes pays one attribute
test per point, and every link that keeps the element contract -- a ``link-model`` of the
user's included -- is observed as the built-in one is. Callbacks run inside the model's
event: they must not change the model (do that from a process, e.g. one reading a stream).
In a folded run only the simulated representatives are observed, and messages as the
representatives exchange them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import simpy

from simpy_astra.engine.probes import check_watcher

KINDS = ("message_sent", "message_delivered", "link_start", "link_end", "collective_start", "collective_end",
         "node_end")


@dataclass(frozen=True)
class Observation:
    """One milestone: its kind, when, the NPU (sender of a message), the peer (receiver),
    bytes, and ``what`` (node id, collective kind, message tag or the link)."""

    kind: str
    time_ns: float
    npu: int | None = None
    peer: int | None = None
    size_bytes: float = 0
    what: Any = None


class ObservedRun(Protocol):
    """What the observer reads of a run (a :class:`~simpy_astra.simulation.Simulation`)."""

    env: simpy.Environment
    network: Any
    npus: list
    systems: list


class Observer:
    """The subscribers of one run, fed by the probe points they need."""

    def __init__(self, sim: ObservedRun) -> None:
        self.sim = sim
        self.env = sim.env
        self.subscribers: dict[str, list[Callable[[Observation], None]]] = {}
        self._installed: set[str] = set()  # kinds of milestone whose probe points are watched

    def on(self, kind: str, callback: Callable[[Observation], None],
           held: Callable[[Callable], Callable] | None = None) -> None:
        """Subscribe ``callback`` to ``kind``; ``held(callback)``, if given, is what is called
        instead (the callback followed by the run's hold on processes it started)."""
        if kind not in KINDS:
            raise ValueError(f"no milestone '{kind}'; choose one of: {', '.join(KINDS)}")
        check_watcher(callback, "callback", ("observation",), f"on({kind!r}, callback)")  # not deep in run()
        self.subscribers.setdefault(kind, [])
        self._install(kind)
        self.subscribers[kind].append(callback if held is None else held(callback))

    def stream(self, kind: str) -> simpy.Store:
        store = simpy.Store(self.env)
        self.on(kind, store.put)
        return store

    def _emitter(self, kind: str) -> Callable[[Observation], None]:
        callbacks = self.subscribers[kind]

        def emit(observation: Observation) -> None:
            for callback in callbacks:
                callback(observation)

        return emit

    # ------------------------------------------------------------------ subscribing
    def _install(self, kind: str) -> None:
        group = kind.rsplit("_", 1)[0]
        if group in self._installed:
            return
        {"node": self._watch_nodes, "collective": self._watch_collectives, "message": self._watch_messages,
         "link": self._watch_links}[group]()
        self._installed.add(group)

    def _watch_nodes(self) -> None:
        emit, env = self._emitter("node_end"), self.env
        for npu in self.sim.npus:
            def node_end(node_id: int, _now: float, _npu: int = npu.device_id) -> None:
                emit(Observation("node_end", env.now, _npu, what=node_id))

            npu.watch("node_end", node_end)

    def _watch_collectives(self) -> None:
        env = self.env
        for kind in ("collective_start", "collective_end"):
            self.subscribers.setdefault(kind, [])
        start, end = self._emitter("collective_start"), self._emitter("collective_end")
        for npu in self.sim.npus:  # physical NPU ids (a job's system layer knows its rank only)
            def started(kind: str, size: int, _npu: int = npu.device_id) -> None:
                start(Observation("collective_start", env.now, _npu, size_bytes=size, what=kind))

            def ended(kind: str, size: int, _npu: int = npu.device_id) -> None:
                end(Observation("collective_end", env.now, _npu, size_bytes=size, what=kind))

            npu.system.watch("collective_start", started)
            npu.system.watch("collective_end", ended)

    def _watch_messages(self) -> None:
        env = self.env
        for kind in ("message_sent", "message_delivered"):
            self.subscribers.setdefault(kind, [])
        sent, delivered = self._emitter("message_sent"), self._emitter("message_delivered")
        board = self.sim.network.board
        board.watch("message_sent", lambda src, dst, tag, size: sent(
            Observation("message_sent", env.now, src, dst, size, tag)))
        board.watch("message_delivered", lambda src, dst, tag, size: delivered(
            Observation("message_delivered", env.now, src, dst, size, tag)))

    def _watch_links(self) -> None:
        network = self.sim.network
        if not network.has_links:
            raise ValueError(f"the {network.name} backend has no links to observe (links exist in the "
                             f"congestion_aware and packet backends); observe message_sent/message_delivered")
        env = self.env
        for kind in ("link_start", "link_end"):
            self.subscribers.setdefault(kind, [])
        start, end = self._emitter("link_start"), self._emitter("link_end")

        def started(link: Any, _key: Any, size: float) -> None:
            start(Observation("link_start", env.now, size_bytes=size, what=link))

        def ended(link: Any, _key: Any, size: float) -> None:
            end(Observation("link_end", env.now, size_bytes=size, what=link))

        for link in network.links():
            link.watch("link_start", started)
            link.watch("link_end", ended)
