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

Nothing is watched until someone subscribes: the first subscription to a kind wraps the
methods that kind needs, on the objects of this run only, so a run nobody observes runs the
code it always ran. Callbacks run inside the model's event: they must not change the model
(do that from a process, e.g. one reading a stream). In a folded run only the simulated
representatives are observed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import simpy

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


class _Delivered:
    """A message's sender callback, wrapped to report its delivery first; keeps ``__self__``
    so that stall reports still name the phase or node that sent it."""

    __slots__ = ("fn", "emit", "env", "src", "dst", "tag", "size", "__self__")

    def __init__(self, fn: Callable | None, emit: Callable, env: simpy.Environment, src: int, dst: int, tag: int,
                 size: int) -> None:
        self.fn, self.emit, self.env = fn, emit, env
        self.src, self.dst, self.tag, self.size = src, dst, tag, size
        self.__self__ = getattr(fn, "__self__", None)

    def __call__(self, arg: Any) -> None:
        self.emit(Observation("message_delivered", self.env.now, self.src, self.dst, self.size, self.tag))
        if self.fn is not None:
            self.fn(arg)


class ObservedRun(Protocol):
    """What the observer reads of a run (a :class:`~simpy_astra.simulation.Simulation`)."""

    env: simpy.Environment
    network: Any
    npus: list
    systems: list


class Observer:
    """The subscribers of one run, and the wrapping that feeds them."""

    def __init__(self, sim: ObservedRun) -> None:
        self.sim = sim
        self.env = sim.env
        self.subscribers: dict[str, list[Callable[[Observation], None]]] = {}

    def on(self, kind: str, callback: Callable[[Observation], None]) -> None:
        if kind not in KINDS:
            raise ValueError(f"no milestone '{kind}'; choose one of: {', '.join(KINDS)}")
        if kind not in self.subscribers:
            self.subscribers[kind] = []
            self._install(kind)
        self.subscribers[kind].append(callback)

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

    # ------------------------------------------------------------------ wrapping
    def _install(self, kind: str) -> None:
        getattr(self, "_install_" + kind.rsplit("_", 1)[0])()

    def _install_node(self) -> None:
        emit, env = self._emitter("node_end"), self.env
        for npu in self.sim.npus:
            def release(node, slot, now, _orig=npu._release, _npu=npu.device_id) -> None:
                _orig(node, slot, now)
                emit(Observation("node_end", env.now, _npu, what=node.id))

            npu._release = release

    def _install_collective(self) -> None:
        if getattr(self, "_collectives_wrapped", False):
            return
        self._collectives_wrapped = True
        subs, env = self.subscribers, self.env
        for kind in ("collective_start", "collective_end"):
            subs.setdefault(kind, [])
        start, end = self._emitter("collective_start"), self._emitter("collective_end")
        for npu in self.sim.npus:  # physical NPU ids (a job's system layer knows its rank only)
            system = npu.system

            def generate(kind, size, involved, plan, priority, custom, on_done, _orig=system.generate_collective,
                         _npu=npu.device_id):
                start(Observation("collective_start", env.now, _npu, size_bytes=size, what=kind))

                def done() -> None:
                    end(Observation("collective_end", env.now, _npu, size_bytes=size, what=kind))
                    on_done()

                return _orig(kind, size, involved, plan, priority, custom, done)

            system.generate_collective = generate

    def _install_message(self) -> None:
        if getattr(self, "_messages_wrapped", False):
            return
        self._messages_wrapped = True
        subs, env, network = self.subscribers, self.env, self.sim.network
        for kind in ("message_sent", "message_delivered"):
            subs.setdefault(kind, [])
        sent, delivered = self._emitter("message_sent"), self._emitter("message_delivered")
        orig = network.send

        def send(src: int, dst: int, tag: int, size: int, fn: Any, arg: Any) -> None:
            sent(Observation("message_sent", env.now, src, dst, size, tag))
            orig(src, dst, tag, size, _Delivered(fn, delivered, env, src, dst, tag, size), arg)

        network.send = send

    def _install_link(self) -> None:
        if getattr(self, "_links_wrapped", False):
            return
        network = self.sim.network
        if not hasattr(network, "links"):
            raise ValueError(f"the {network.name} backend has no links to observe (links exist in the "
                             f"congestion_aware and packet backends); observe message_sent/message_delivered")
        self._links_wrapped = True
        from simpy_astra.network.link import Link, Transmission

        subs, env = self.subscribers, self.env
        for kind in ("link_start", "link_end"):
            subs.setdefault(kind, [])
        start, end = self._emitter("link_start"), self._emitter("link_end")
        for link in network.links():
            if isinstance(link, Link):  # a user's own put() (a Transmission) is not observed
                def begin(item, _orig=link._start, _link=link) -> None:
                    if item.__class__ is not Transmission:
                        start(Observation("link_start", env.now, size_bytes=item.size, what=_link))
                    _orig(item)

                def arrive(item, _orig=link._on_arrival, _link=link) -> None:
                    end(Observation("link_end", env.now, size_bytes=item.size, what=_link))
                    _orig(item)

                link._start, link._on_arrival = begin, arrive
            elif hasattr(link, "request") and hasattr(link, "release"):  # a packet port: trains join and leave it
                def join(flow, hop, _orig=link.request, _link=link) -> None:
                    start(Observation("link_start", env.now, size_bytes=flow.size_bytes, what=_link))
                    _orig(flow, hop)

                def leave(flow, _orig=link.release, _link=link) -> None:
                    _orig(flow)
                    end(Observation("link_end", env.now, size_bytes=flow.size_bytes, what=_link))

                link.request, link.release = join, leave
