"""Network backends: how long bytes take between two NPUs, and send/receive matching.

What the system layer and the workload may ask of a network is :class:`Network`; a backend
is one module here plus one :class:`~simpy_astra.network.backends.BackendSpec` in
:data:`BACKENDS` (``--network-backend NAME``, ``backend: NAME`` in a scenario).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

import simpy

from simpy_astra.network.backends import BACKENDS, DEFAULT_BACKEND, BackendSpec
from simpy_astra.network.fabric import DeviceId, LinkStats
from simpy_astra.network.link_resource import LinkResource
from simpy_astra.network.messages import Handler, MessageBoard

if TYPE_CHECKING:
    import networkx as nx


class Network(Protocol):
    """A network backend: message delivery between NPUs of a (stacked) topology.

    ``send`` and ``recv`` post one side of a message identified by (tag, src, dst, bytes);
    the k-th send of an identity matches its k-th receive. A posted side's handler runs as
    ``fn(arg)`` in the instant the message is delivered (a receive posted after delivery:
    in an event of its own, 0 ns later).

    Everything a caller may use is declared here, and every backend implements each member
    or says in one line that it does not (a backend without links answers ``links()`` with
    ``[]``, ``link_stats()`` with None, and ``link``, ``send_background`` and
    ``fail_device`` with an AttributeError naming the backends that have links). Callers
    read the capabilities below; none tests what class of network it holds."""

    name: str
    env: simpy.Environment
    #: every message of the run is posted here; its probe points see them all
    board: MessageBoard
    #: a message's delay depends only on its two endpoints (no shared links): what symmetry
    #: folding (:mod:`simpy_astra.folding`) needs; backends with links leave it False
    pair_delays_only: bool
    #: messages cross live links that they share (links(), link(), link_stats(), the link
    #: probes, send_background): jobs interfere, links can be observed
    has_links: bool
    #: links and devices can be changed and failed while it runs (set_bandwidth, take_down,
    #: bring_up, fail_device); a stall may be a message held by a link that is down
    has_faults: bool
    #: send_background's ``priority`` selects a class that a link model may serve by
    has_priorities: bool

    def send(self, src: int, dst: int, tag: int, size: int, fn: Handler, arg: Any) -> None: ...

    def recv(self, dst: int, src: int, tag: int, size: int, fn: Handler, arg: Any) -> None: ...

    @property
    def graph(self) -> nx.DiGraph:
        """The physical network as one ``networkx.DiGraph`` (NPUs ``0..N-1``, switches with
        ``kind: switch``, edges with ``bandwidth_gbps`` and ``latency_ns``; on a link-level
        backend the live link as ``"link"``). Backends without links build it on request."""
        ...

    def label(self, device: DeviceId) -> int | str:
        """How reports name a device (an NPU by its id, a switch by its name)."""
        ...

    def links(self) -> list[LinkResource]:
        """Every directed link (the element contract of :mod:`simpy_astra.network.link`);
        ``[]`` for a backend without links."""
        ...

    def link(self, u: Any, v: Any) -> LinkResource:
        """The directed link from device ``u`` to ``v`` (by id or label)."""
        ...

    def link_stats(self) -> list[LinkStats] | None:
        """One :class:`LinkStats` per directed link, or None for a backend without links."""
        ...

    def send_background(self, src: int, dst: int, size_bytes: int, priority: int = 0) -> simpy.Event:
        """``size_bytes`` from NPU ``src`` to ``dst`` along the usual route, sharing the links
        with the workload, matched by no receive; the event succeeds (value: the time) at
        delivery. ``priority``: its class (0 is the workload's), for link models with classes."""
        ...

    def fail_device(self, device: Any) -> None:
        """Fail a switch (or NPU) for good, now: every link into or out of it goes down."""
        ...


__all__ = ["Network", "BACKENDS", "BackendSpec", "DEFAULT_BACKEND", "DeviceId", "Handler", "LinkStats", "MessageBoard"]
