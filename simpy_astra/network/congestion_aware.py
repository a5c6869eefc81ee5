"""Congestion-aware backend: every directed link is a FIFO server; messages queue for links.

As in ASTRA-sim's ``congestion_aware`` library, which handles one-dimensional networks:

* a message follows its topology's route hop by hop, store-and-forward, whole message;
* a link that is free starts a message at once, otherwise queues it (FIFO);
* a message starting on a link at ``t`` schedules, on the global queue and in this order,
  "arrived at the next device" at ``t + trunc(latency + bytes / B')`` and "link free" at
  ``t + trunc(bytes / B')`` (``B'`` in bytes/ns, GB = 2^30 B);
* "link free" marks the link free and starts the next queued message;
* arriving at a switch (its SimPy process, :class:`SwitchProcess`) or an intermediate NPU
  offers the message to the next link in that instant; arriving at the destination
  completes it (send/receive matching in :class:`MessageBoard`).

Beyond the reference, stacked dimensions work too (a 2D mesh is [Line, Line], a torus
[Ring, Ring, Ring]): a message crosses dimension 0 first, then 1, ... (dimension-order, XY
routing on a mesh), each hop on that dimension's links with its bandwidth and latency. A
Graph dimension (``topologies/graph.py``) gives every link its own bandwidth and latency.

Every directed link is a :class:`~simpy_astra.network.link.Link`, a SimPy resource with
live statistics and speed (``network.link(u, v)``); every switch is a SimPy process. A
message is one small :class:`_Message` handed from link to link (no SimPy process per
message); routes are tuples of links computed once per (src, dst).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import simpy

from simpy_astra.engine import Doorbell
from simpy_astra.grid import Grid
from simpy_astra.network.link import Link
from simpy_astra.network.messages import Handler, MessageBoard
from simpy_astra.topologies.base import BasicTopology

if TYPE_CHECKING:
    import networkx as nx


class _Message:
    """One message in flight: its board key (None for background traffic), route (links),
    the index of the hop it is on, its size, and for background traffic the event to
    succeed on delivery."""

    __slots__ = ("key", "route", "hop", "size", "done")

    def __init__(self, key: Any, route: tuple, size: int, done: simpy.Event | None = None) -> None:
        self.key = key
        self.route = route
        self.hop = 0
        self.size = size
        self.done = done


class SwitchProcess:
    """A switch: a SimPy process that forwards each message arriving on one of its input
    links to the message's next link, at the instant it arrives (a link's arrival event
    rings the switch's :class:`~simpy_astra.engine.Doorbell`, so the process runs in that
    instant, as the reference forwards inside that event)."""

    def __init__(self, env: simpy.Environment, device: Any, forward) -> None:
        self.device = device
        self._forward = forward
        self._doorbell = Doorbell(env)
        self.process = env.process(self._doorbell.serve())

    def receive(self, msg: _Message) -> None:
        self._doorbell.ring(self._forward, msg)


class CongestionAwareNetwork:
    name = "congestion_aware"
    pair_delays_only = False  # messages share links

    def __init__(self, env: simpy.Environment, dims: list[BasicTopology], source: str = "<network>") -> None:
        self.env = env
        self.board = MessageBoard(env)
        self.dims = dims
        self.source = source
        self.grid = Grid([d.npus_count for d in dims])
        self._links: dict[tuple, Link] = {}
        self._routes: dict[tuple[int, int], tuple[Link, ...]] = {}
        self.switches: dict[Any, SwitchProcess] = {}
        if len(dims) == 1:  # ASTRA-sim's devices: NPUs 0..n-1, the switch n
            for u, v in dims[0].links():
                self._link(u, v, 0, u, v)

    def _link(self, u: Any, v: Any, dim: int, local_u: int, local_v: int) -> Link:
        """The link from device ``u`` to ``v`` (``local_*``: their ids inside dimension ``dim``)."""
        link = self._links.get((u, v))
        if link is None:  # a 2-NPU ring names each pair twice: one link per direction
            bandwidth_gbps, latency_ns = self.dims[dim].link_params(local_u, local_v)
            link = self._links[(u, v)] = self._new_link(u, v, bandwidth_gbps, latency_ns,
                                                        into_switch=local_v >= self.dims[dim].npus_count,
                                                        from_switch=local_u >= self.dims[dim].npus_count)
        return link

    def _new_link(self, u: Any, v: Any, bandwidth_gbps: float, latency_ns: float, *,
                  into_switch: bool, from_switch: bool) -> Link:
        """This backend's directed link (a backend with other links overrides this)."""
        return Link(self.env, u, v, bandwidth_gbps, latency_ns,
                    self.switch(v).receive if into_switch else self._arrived)

    def switch(self, device: Any) -> SwitchProcess:
        """The switch process of ``device`` (started when a link first leads into it)."""
        sw = self.switches.get(device)
        if sw is None:
            sw = self.switches[device] = self._new_switch(device)
        return sw

    def _new_switch(self, device: Any) -> SwitchProcess:
        """This backend's switch process (a backend with other switches overrides this)."""
        return SwitchProcess(self.env, device, self._arrived)

    def _device(self, dim: int, base: int, local: int) -> Any:
        """Global id of device ``local`` of the ``dim`` instance at NPU ``base``: an NPU id,
        or for switches of stacked dimensions ``("switch", dim, base, local)``."""
        n = self.dims[dim].npus_count
        if local < n:
            return self.grid.moved(base, dim, local)
        return local if len(self.dims) == 1 else ("switch", dim, base, local)

    # ------------------------------------------------------------------ public interface
    def send(self, src: int, dst: int, tag: int, size: int, fn: Handler, arg: Any) -> None:
        key = self.board.post_send(src, dst, tag, size, fn, arg)
        route = self._routes.get((src, dst))
        if route is None:
            route = self._route(src, dst)
        route[0].offer(_Message(key, route, size))

    def recv(self, dst: int, src: int, tag: int, size: int, fn: Handler, arg: Any) -> None:
        self.board.post_recv(dst, src, tag, size, fn, arg)

    def send_background(self, src: int, dst: int, size_bytes: int) -> simpy.Event:
        """Background traffic: ``size_bytes`` from NPU ``src`` to ``dst`` along the usual
        route, queued with the workload's messages, matched by no receive. The event
        succeeds (value: the time) when the last byte reached ``dst``."""
        if size_bytes < 0:
            raise ValueError(f"background message of {size_bytes} bytes")
        done = self.env.event()
        route = self._routes.get((src, dst)) or self._route(src, dst)
        route[0].offer(_Message(None, route, size_bytes, done))
        return done

    def link(self, u: Any, v: Any) -> Link:
        """The directed link from device ``u`` to ``v`` (NPU ids; switches by their label
        in a one-dimensional network, e.g. 8 for an 8-NPU Switch or a Graph switch name)."""
        for (a, b), lk in self._links.items():
            if (a, b) == (u, v) or (self._label(a), self._label(b)) == (u, v):
                return lk
        raise KeyError(f"no link {u} -> {v} in this network")

    def links(self) -> list[Link]:
        """Every directed link, in creation order."""
        return list(self._links.values())

    def complete_links(self) -> None:
        """Create every directed link of a stacked network: routes create only the links they
        use, and a report must list the idle ones too (a one-dimension network has them all)."""
        grid = self.grid
        for dim, topo in enumerate(self.dims):
            for base in range(grid.size):
                if grid.coord(base, dim) == 0:
                    for u, v in topo.links():
                        self._link(self._device(dim, base, u), self._device(dim, base, v), dim, u, v)

    def _label(self, device: Any) -> Any:
        return self.dims[0].device_label(device) if len(self.dims) == 1 else device

    def physical_graph(self) -> nx.DiGraph:
        """Every device and directed link of the (possibly stacked) topology, as networkx."""
        import networkx as nx

        g = nx.DiGraph()
        grid = self.grid
        g.add_nodes_from(range(grid.size), kind="npu")
        for dim, topo in enumerate(self.dims):
            for base in range(grid.size):
                if grid.coord(base, dim):
                    continue  # one instance of this dimension per base NPU (coordinate 0)
                for u, v in topo.links():
                    gu, gv = self._device(dim, base, u), self._device(dim, base, v)
                    for node, local in ((gu, u), (gv, v)):
                        if node not in g:
                            g.add_node(node, kind="switch", label=topo.device_label(local))
                    bandwidth_gbps, latency_ns = topo.link_params(u, v)
                    g.add_edge(gu, gv, dim=dim, bandwidth_gbps=bandwidth_gbps, latency_ns=latency_ns)
        return g

    def link_stats(self) -> list[tuple[Any, Any, int, int]]:
        """(from device, to device, bytes carried, busy ns) for every directed link; devices
        of a one-dimensional network by their labels (named switches of a Graph)."""
        label = self._label
        return [(label(lk.src), label(lk.dst), lk.bytes, lk.busy_ns) for lk in self._links.values()]

    # ------------------------------------------------------------------ internals
    def _route(self, src: int, dst: int) -> tuple[Link, ...]:
        """Dimension-order routing: cross dimension 0 first, then 1, ... (XY on a mesh).

        Within a dimension the building block's own route is used; its devices are NPU ids
        with that coordinate replaced (switches: see :meth:`_device`)."""
        if src == dst:
            raise ValueError(f"NPU {src} cannot send to itself")
        route: list[Link] = []
        here = src
        grid = self.grid
        for dim, topo in enumerate(self.dims):
            a, b = grid.coord(here, dim), grid.coord(dst, dim)
            if a == b:
                continue
            base = grid.moved(here, dim, 0)
            local = topo.route(a, b)
            devices = [self._device(dim, base, k) for k in local]
            route += [self._link(devices[i], devices[i + 1], dim, local[i], local[i + 1])
                      for i in range(len(devices) - 1)]
            here = grid.moved(here, dim, b)
        self._routes[(src, dst)] = tuple(route)
        return self._routes[(src, dst)]

    def _arrived(self, msg: _Message) -> None:
        """``msg`` reached the far end of its current hop: forward it at once (through a
        switch or an intermediate NPU) or deliver it."""
        hop = msg.hop + 1
        route = msg.route
        if hop == len(route):
            if msg.key is not None:
                self.board.arrived(msg.key)
            else:
                msg.done.succeed(self.env.now)
        else:
            msg.hop = hop
            route[hop].offer(msg)
