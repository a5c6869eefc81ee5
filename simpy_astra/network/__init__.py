"""Network backends: how long bytes take between two NPUs, and send/receive matching.

What the system layer and the workload may ask of a network is :class:`Network`; a backend
is one module here plus one :data:`BACKENDS` entry (``--network-backend NAME``,
``backend: NAME`` in a scenario).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

import simpy

from simpy_astra.network.fabric import DeviceId, LinkStats
from simpy_astra.network.link import LinkResource
from simpy_astra.network.messages import Handler, MessageBoard
from simpy_astra.topologies.base import BasicTopology

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


#: (env, dimensions, network YAML path, the parsed network config or None) -> backend
Builder = Callable[[simpy.Environment, list[BasicTopology], str, Any], Network]


def _congestion_unaware(env: simpy.Environment, dims: list[BasicTopology], source: str,
                        config: Any = None) -> Network:
    from simpy_astra.network.congestion_unaware import CongestionUnawareNetwork

    _no_models(config, "congestion_unaware")

    return CongestionUnawareNetwork(env, dims, rails=getattr(config, "rails", None))


def _congestion_aware(env: simpy.Environment, dims: list[BasicTopology], source: str,
                      config: Any = None, **fold_hooks: Any) -> Network:
    """``fold_hooks``: a folded run's (``links_at_start``, ``link_of_hop``), passed on."""
    from simpy_astra.network.congestion_aware import CongestionAwareNetwork
    from simpy_astra.network.models import lookup_link, lookup_switch

    link, switch = getattr(config, "link_model", None), getattr(config, "switch_model", None)
    return CongestionAwareNetwork(env, dims, source, link_model=lookup_link(link) if link else None,
                                  switch_model=lookup_switch(switch) if switch else None,
                                  link_params=dict(getattr(config, "link_params", ())),
                                  switch_params=dict(getattr(config, "switch_params", ())), **fold_hooks)


def _no_models(config: Any, backend: str) -> None:
    """Element models replace the congestion-aware backend's links and switches only."""
    for key in ("link_model", "switch_model"):
        if getattr(config, key, None):
            from simpy_astra.errors import InputError

            raise InputError.at(getattr(config, "source", "<network>"), key.replace("_", "-"),
                                f"is read by the congestion_aware backend only, not {backend}")


def _packet(env: simpy.Environment, dims: list[BasicTopology], source: str, config: Any = None,
            **fold_hooks: Any) -> Network:
    """``fold_hooks``: a folded run's (``links_at_start``, ``path_of_route``), passed on."""
    from simpy_astra.network.packet import PacketNetwork

    _no_models(config, "packet")

    return PacketNetwork(env, dims, source,
                         packet_size_bytes=getattr(config, "packet_size_bytes", None),
                         switch_buffer_bytes=getattr(config, "switch_buffer_bytes", None), **fold_hooks)


BACKENDS: dict[str, Builder] = {
    "congestion_unaware": _congestion_unaware,
    "congestion_aware": _congestion_aware,
    "packet": _packet,  # beyond ASTRA-sim: packets pipelined across hops, fair sharing, credits
}

__all__ = ["Network", "BACKENDS", "DeviceId", "Handler", "LinkStats", "MessageBoard"]
