"""Congestion-aware backend: every directed link is a FIFO server; messages queue for links.

As in ASTRA-sim's ``congestion_aware`` library, which handles one-dimensional networks:

* a message follows its topology's route hop by hop, store-and-forward, whole message;
* a link that is free starts a message at once, otherwise queues it (FIFO);
* a message starting on a link at ``t`` schedules, on the global queue and in this order,
  "arrived at the next device" at ``t + trunc(latency + bytes / B')`` and "link free" at
  ``t + trunc(bytes / B')`` (``B'`` in bytes/ns, GB = 2^30 B);
* "link free" marks the link free and starts the next queued message;
* arriving at an intermediate device offers the message to the next link immediately;
  arriving at the destination completes it (send/receive matching in :class:`MessageBoard`).

Beyond the reference, stacked dimensions work too (a 2D mesh is [Line, Line], a torus
[Ring, Ring, Ring]): a message crosses dimension 0 first, then 1, ... (dimension-order, XY
routing on a mesh), each hop on that dimension's links with its bandwidth and latency. A
Graph dimension (``topologies/graph.py``) gives every link its own bandwidth and latency.

Speed: no SimPy process per message, one small :class:`_Message` per message, links are
plain objects with a deque, routes are tuples of links computed once per (src, dst).
"""

from __future__ import annotations

import math
from collections import deque
from typing import Any

import networkx as nx

from simpy_astra.kernel import Kernel
from simpy_astra.network.messages import Handler, MessageBoard
from simpy_astra.units import network_gbps_to_bytes_per_ns
from topologies.base import BasicTopology


class _Message:
    """One message in flight: its board key, route (links), the next hop's index, and the
    (latency + serialisation, serialisation) delays of each hop."""

    __slots__ = ("key", "route", "hop", "delays", "size")

    def __init__(self, key: Any, route: tuple, delays: tuple, size: int) -> None:
        self.key = key
        self.route = route
        self.hop = 0
        self.delays = delays
        self.size = size


class _Link:
    """A directed link: one message on the wire at a time, the others wait in FIFO order."""

    __slots__ = ("src", "dst", "kind", "busy", "queue", "bytes", "busy_ns", "free", "_net")

    def __init__(self, net: CongestionAwareNetwork, src: Any, dst: Any, kind: int) -> None:
        self.src = src
        self.dst = dst
        self.kind = kind  # index of its (latency, bandwidth) in the network's table
        self.busy = False
        self.queue: deque[_Message] = deque()
        self.bytes = 0
        self.busy_ns = 0
        self._net = net
        self.free = self._free  # bound once: scheduled on every "link free"

    def _free(self, _arg: Any) -> None:
        self.busy = False
        if self.queue:
            self._net._start(self, self.queue.popleft())


class CongestionAwareNetwork:
    name = "congestion_aware"

    def __init__(self, kernel: Kernel, dims: list[BasicTopology], source: str = "<network>") -> None:
        self.kernel = kernel
        self.board = MessageBoard(kernel)
        self.dims = dims
        self.source = source
        # distinct (latency_ns, bytes_per_ns) of links; a uniform dimension has one entry
        self._link_kinds: dict[tuple[float, float], int] = {}
        self._latency_ns: list[float] = []
        self._bytes_per_ns: list[float] = []
        self._strides = [math.prod(d.npus_count for d in dims[:k]) for k in range(len(dims))]
        self._links: dict[tuple, _Link] = {}
        self._routes: dict[tuple[int, int], tuple[_Link, ...]] = {}
        self._delays: dict[tuple[int, tuple[int, ...]], tuple] = {}
        self._call_later = kernel.call_later
        if len(dims) == 1:  # ASTRA-sim's devices: NPUs 0..n-1, the switch n
            for u, v in dims[0].links():
                self._link(u, v, 0, u, v)

    def _link(self, u: Any, v: Any, dim: int, local_u: int, local_v: int) -> _Link:
        """The link from device ``u`` to ``v`` (``local_*``: their ids inside dimension ``dim``)."""
        link = self._links.get((u, v))
        if link is None:  # a 2-NPU ring names each pair twice: one link per direction
            bandwidth_gbps, latency_ns = self.dims[dim].link_params(local_u, local_v)
            params = (latency_ns, network_gbps_to_bytes_per_ns(bandwidth_gbps))
            kind = self._link_kinds.get(params)
            if kind is None:
                kind = self._link_kinds[params] = len(self._latency_ns)
                self._latency_ns.append(params[0])
                self._bytes_per_ns.append(params[1])
            link = self._links[(u, v)] = _Link(self, u, v, kind)
        return link

    def _device(self, dim: int, base: int, local: int) -> Any:
        """Global id of device ``local`` of the ``dim`` instance at NPU ``base``: an NPU id,
        or for switches of stacked dimensions ``("switch", dim, base, local)``."""
        n = self.dims[dim].npus_count
        if local < n:
            return base + local * self._strides[dim]
        return local if len(self.dims) == 1 else ("switch", dim, base, local)

    # ------------------------------------------------------------------ public interface
    def send(self, src: int, dst: int, tag: int, size: int, fn: Handler, arg: Any) -> None:
        key = self.board.post_send(src, dst, tag, size, fn, arg)
        route = self._routes.get((src, dst))
        if route is None:
            route = self._route(src, dst)
        kinds = tuple(link.kind for link in route)
        delays = self._delays.get((size, kinds))
        if delays is None:
            delays = self._delays[(size, kinds)] = tuple(self._delay(size, k) for k in kinds)
        self._offer(route[0], _Message(key, route, delays, size))

    def recv(self, dst: int, src: int, tag: int, size: int, fn: Handler, arg: Any) -> None:
        self.board.post_recv(dst, src, tag, size, fn, arg)

    def physical_graph(self) -> nx.DiGraph:
        """Every device and directed link of the (possibly stacked) topology, as networkx."""
        g = nx.DiGraph()
        total = math.prod(d.npus_count for d in self.dims)
        g.add_nodes_from(range(total), kind="npu")
        for dim, topo in enumerate(self.dims):
            stride, n = self._strides[dim], topo.npus_count
            for base in range(total):
                if (base // stride) % n:
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
        label = self.dims[0].device_label if len(self.dims) == 1 else (lambda d: d)
        return [(label(lk.src), label(lk.dst), lk.bytes, lk.busy_ns) for lk in self._links.values()]

    # ------------------------------------------------------------------ internals
    def _delay(self, size: int, kind: int) -> tuple[int, int]:
        ser = size / self._bytes_per_ns[kind]
        return int(self._latency_ns[kind] + ser), int(ser)

    def _route(self, src: int, dst: int) -> tuple[_Link, ...]:
        """Dimension-order routing: cross dimension 0 first, then 1, ... (XY on a mesh).

        Within a dimension the building block's own route is used; its devices are NPU ids
        with that coordinate replaced (switches: see :meth:`_device`)."""
        if src == dst:
            raise ValueError(f"NPU {src} cannot send to itself")
        route: list[_Link] = []
        here = src
        for dim, topo in enumerate(self.dims):
            stride, n = self._strides[dim], topo.npus_count
            a, b = (here // stride) % n, (dst // stride) % n
            if a == b:
                continue
            base = here - a * stride
            local = topo.route(a, b)
            devices = [self._device(dim, base, k) for k in local]
            route += [self._link(devices[i], devices[i + 1], dim, local[i], local[i + 1])
                      for i in range(len(devices) - 1)]
            here = base + b * stride
        self._routes[(src, dst)] = tuple(route)
        return self._routes[(src, dst)]

    def _offer(self, link: _Link, msg: _Message) -> None:
        if link.busy:
            link.queue.append(msg)
        else:
            self._start(link, msg)

    def _start(self, link: _Link, msg: _Message) -> None:
        comm_ns, ser_ns = msg.delays[msg.hop]
        link.busy = True
        link.bytes += msg.size
        link.busy_ns += ser_ns
        # arrival first, then link free: the order the reference schedules them in
        self._call_later(comm_ns, self._arrived, msg)
        self._call_later(ser_ns, link.free, None)

    def _arrived(self, msg: _Message) -> None:
        hop = msg.hop + 1
        route = msg.route
        if hop == len(route):
            self.board.arrived(msg.key)
        else:
            msg.hop = hop
            self._offer(route[hop], msg)
