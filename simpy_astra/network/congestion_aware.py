"""Congestion-aware backend: every directed link is a FIFO server; messages queue for links.

As in ASTRA-sim's ``congestion_aware`` library (one-dimensional networks only):

* a message follows its topology's route hop by hop, store-and-forward, whole message;
* a link that is free starts a message at once, otherwise queues it (FIFO);
* a message starting on a link at ``t`` schedules, on the global queue and in this order,
  "arrived at the next device" at ``t + trunc(latency + bytes / B')`` and "link free" at
  ``t + trunc(bytes / B')`` (``B'`` in bytes/ns, GB = 2^30 B);
* "link free" marks the link free and starts the next queued message;
* arriving at an intermediate device offers the message to the next link immediately;
  arriving at the destination completes it (send/receive matching in :class:`MessageBoard`).

Speed: no SimPy process per message, one small :class:`_Message` per message, links are
plain objects with a deque, routes are tuples of links computed once per (src, dst).
"""

from __future__ import annotations

from collections import deque
from typing import Any

from simpy_astra.errors import InputError
from simpy_astra.kernel import Kernel
from simpy_astra.network.messages import Handler, MessageBoard
from simpy_astra.units import network_gbps_to_bytes_per_ns
from topologies.base import BasicTopology


class _Message:
    """One message in flight: its board key, route (links) and the next hop's index."""

    __slots__ = ("key", "route", "hop", "comm_ns", "ser_ns", "size")

    def __init__(self, key: tuple, route: tuple, comm_ns: int, ser_ns: int, size: int) -> None:
        self.key = key
        self.route = route
        self.hop = 0
        self.comm_ns = comm_ns
        self.ser_ns = ser_ns
        self.size = size


class _Link:
    """A directed link: one message on the wire at a time, the others wait in FIFO order."""

    __slots__ = ("src", "dst", "busy", "queue", "bytes", "busy_ns", "free", "_net")

    def __init__(self, net: CongestionAwareNetwork, src: int, dst: int) -> None:
        self.src = src
        self.dst = dst
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
        if len(dims) != 1:
            raise InputError(
                f"{source}: the congestion_aware backend supports one network dimension only "
                f"(this network has {len(dims)}: {', '.join(d.name for d in dims)}); use a single "
                f"topology entry, or --network-backend=congestion_unaware for multi-dimensional networks"
            )
        self.kernel = kernel
        self.board = MessageBoard(kernel)
        self.dims = dims
        topo = dims[0]
        self.topology = topo
        self._latency_ns = topo.latency_ns
        self._bytes_per_ns = network_gbps_to_bytes_per_ns(topo.bandwidth_gbps)
        self._links: dict[tuple[int, int], _Link] = {}
        for u, v in topo.links():
            if (u, v) not in self._links:  # a 2-NPU ring names each pair twice
                self._links[(u, v)] = _Link(self, u, v)
        self._routes: dict[tuple[int, int], tuple[_Link, ...]] = {}
        self._delays: dict[int, tuple[int, int]] = {}
        self._call_later = kernel.call_later

    # ------------------------------------------------------------------ public interface
    def send(self, src: int, dst: int, tag: int, size: int, fn: Handler, arg: Any) -> None:
        key = self.board.post_send(src, dst, tag, size, fn, arg)
        route = self._routes.get((src, dst))
        if route is None:
            route = self._route(src, dst)
        delays = self._delays.get(size)
        if delays is None:
            delays = self._delays[size] = self._delay(size)
        msg = _Message(key, route, delays[0], delays[1], size)
        self._offer(route[0], msg)

    def recv(self, dst: int, src: int, tag: int, size: int, fn: Handler, arg: Any) -> None:
        self.board.post_recv(dst, src, tag, size, fn, arg)

    def link_stats(self) -> list[tuple[int, int, int, int]]:
        """(from device, to device, bytes carried, busy ns) for every directed link."""
        return [(lk.src, lk.dst, lk.bytes, lk.busy_ns) for lk in self._links.values()]

    # ------------------------------------------------------------------ internals
    def _delay(self, size: int) -> tuple[int, int]:
        ser = size / self._bytes_per_ns
        return int(self._latency_ns + ser), int(ser)

    def _route(self, src: int, dst: int) -> tuple[_Link, ...]:
        if src == dst:
            raise ValueError(f"NPU {src} cannot send to itself")
        devices = self.topology.route(src, dst)
        links = self._links
        route = tuple(links[(devices[i], devices[i + 1])] for i in range(len(devices) - 1))
        self._routes[(src, dst)] = route
        return route

    def _offer(self, link: _Link, msg: _Message) -> None:
        if link.busy:
            link.queue.append(msg)
        else:
            self._start(link, msg)

    def _start(self, link: _Link, msg: _Message) -> None:
        link.busy = True
        link.bytes += msg.size
        link.busy_ns += msg.ser_ns
        # arrival first, then link free: the order the reference schedules them in
        self._call_later(msg.comm_ns, self._arrived, msg)
        self._call_later(msg.ser_ns, link.free, None)

    def _arrived(self, msg: _Message) -> None:
        hop = msg.hop + 1
        route = msg.route
        if hop == len(route):
            self.board.arrived(msg.key)
        else:
            msg.hop = hop
            self._offer(route[hop], msg)
