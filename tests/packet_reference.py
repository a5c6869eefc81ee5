"""A small per-packet SimPy simulator, independent of the packet backend, to check it against.

Every directed link is an output port that serves its inputs (the links feeding it, and
the device's own injection) round robin, one packet at a time; each transit input is a
FIFO; the injection input serves its flows round robin (a NIC interleaves its messages).
A packet of ``P`` bytes holds the link for ``P/B`` ns, then propagates for the latency;
a device forwards a packet once it has received it. Routes and link speeds are the
fabric's (:class:`simpy_astra.network.fabric.Fabric`).

Buffers are unbounded unless ``buffer_bytes`` is given; then every output port that a
packet is forwarded into (every hop but a flow's first) holds at most that many bytes, with
lossless credit flow control as the packet backend describes it: a port sends a packet
into the next port's buffer only against credits for its bytes, taken when it starts
sending and returned to the buffer one latency (of the link it came in by) after the packet
starts leaving that buffer, so that a credit loop takes ``2*latency + P/B``. A packet that
has no credit does not hold up the others: a transit input sends the first of its packets
that has one (virtual output queues), the injection input the next of its flows that has
one. Entering a ring (a flow's first buffered hop, or its turn into a ring dimension) takes
one packet's room more than the packet (bubble flow control: without it, a ring whose
buffers all fill deadlocks).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

import simpy

from simpy_astra.infra.units import network_gbps_to_bytes_per_ns
from simpy_astra.network.fabric import Fabric
from simpy_astra.topologies import Ring
from simpy_astra.topologies.base import BasicTopology


@dataclass
class Flow:
    src: int
    dst: int
    size_bytes: int
    start_ns: float = 0.0
    path: list = field(default_factory=list)  # ports
    enters_ring: list = field(default_factory=list)  # per hop: its port starts a ring (bubble)
    left: int = 0  # packets not yet delivered
    done_ns: float | None = None


class _Injection:
    """The device's own input of one port: its flows' packets, round robin over flows."""

    def __init__(self) -> None:
        self.flows: deque[deque] = deque()

    def __bool__(self) -> bool:
        return bool(self.flows)

    def add(self, packets: deque) -> None:
        self.flows.append(packets)

    def take(self, can_send):
        """The next flow's next packet that ``can_send`` (None if none can); round robin."""
        for _ in range(len(self.flows)):
            packets = self.flows.popleft()
            if can_send(packets[0]):
                pkt = packets.popleft()
                if packets:
                    self.flows.append(packets)
                return pkt
            self.flows.append(packets)
        return None


def _take_first(queue: deque, can_send):
    """The first packet of a transit FIFO that ``can_send`` (None if none can)."""
    for k, pkt in enumerate(queue):
        if can_send(pkt):
            del queue[k]
            return pkt
    return None


class _Port:
    def __init__(self, env: simpy.Environment, bytes_per_ns: float, latency_ns: float,
                 buffer_bytes: float = math.inf, packet_bytes: int = 4096) -> None:
        self.env = env
        self.bytes_per_ns = bytes_per_ns
        self.latency_ns = latency_ns
        self.credits = buffer_bytes  # room left in this port's buffer (packets sent into it count)
        self.bubble_bytes = packet_bytes
        # ports that send into this one (woken by its credits), in the order their flows were
        # added: a set would wake them in the order of their memory addresses, run to run
        self.feeders: dict[_Port, None] = {}
        self.inputs: dict[object, deque | _Injection] = {}
        self.order: list[object] = []
        self.next = 0
        self.wake: simpy.Event | None = None
        env.process(self.run())

    def put(self, key: object, pkt) -> None:
        queue = self.inputs.get(key)
        if queue is None:
            queue = self.inputs[key] = deque()
            self.order.append(key)
        queue.append(pkt)
        self._wake()

    def inject(self, packets: deque) -> None:
        if None not in self.inputs:
            self.inputs[None] = _Injection()
            self.order.append(None)
        self.inputs[None].add(packets)
        self._wake()

    def _wake(self) -> None:
        if self.wake is not None and not self.wake.triggered:
            self.wake.succeed()

    def _can_send(self, pkt) -> bool:
        """Whether the next port's buffer has credits for the packet (always, on its last hop)."""
        flow, size, hop = pkt
        if hop + 1 == len(flow.path):
            return True
        bubble = self.bubble_bytes if flow.enters_ring[hop + 1] else 0
        return flow.path[hop + 1].credits >= size + bubble

    def _pick(self):
        n = len(self.order)
        for k in range(n):
            key = self.order[(self.next + k) % n]
            queue = self.inputs[key]
            if not queue:
                continue
            if key is None:
                pkt = queue.take(self._can_send)
            elif self._can_send(queue[0]):
                pkt = queue.popleft()
            else:
                pkt = _take_first(queue, self._can_send)
            if pkt is not None:
                self.next = (self.next + k + 1) % n
                return key, pkt
        return None

    def _credit(self, size_bytes: int) -> None:
        """Room for ``size_bytes`` again: the ports feeding this one may send."""
        self.credits += size_bytes
        for port in self.feeders:
            port._wake()

    def run(self):
        env = self.env
        while True:
            got = self._pick()
            if got is None:
                self.wake = env.event()
                yield self.wake
                continue
            _key, pkt = got
            flow, size, hop = pkt
            if self.credits != math.inf:
                if hop + 1 < len(flow.path):
                    flow.path[hop + 1].credits -= size
                if hop:  # it leaves this buffer: the credit is back one latency later
                    env.timeout(flow.path[hop - 1].latency_ns).callbacks.append(
                        lambda _e, port=self, size=size: port._credit(size))
            yield env.timeout(size / self.bytes_per_ns)
            env.timeout(self.latency_ns).callbacks.append(lambda _e, pkt=pkt, port=self: _arrive(pkt, port))


def _arrive(pkt, port: _Port) -> None:
    flow, _size, hop = pkt
    if hop + 1 == len(flow.path):
        flow.left -= 1
        if flow.left == 0:
            flow.done_ns = port.env.now
        return
    flow.path[hop + 1].put(port, (flow, pkt[1], hop + 1))


def simulate(dims: list[BasicTopology], flows: list[Flow], packet_bytes: int = 4096,
             buffer_bytes: int | None = None) -> list[float]:
    """Each flow's delivery time (its last packet at its destination), in ns; ``buffer_bytes``
    per output port with credits (None: unbounded)."""
    env = simpy.Environment()
    fabric = Fabric(dims)
    room = math.inf if buffer_bytes is None else buffer_bytes
    ports = {(u, v): _Port(env, network_gbps_to_bytes_per_ns(bw), lat, room, packet_bytes)
             for u, v, _d, bw, lat in fabric.edges()}
    dim = {(u, v): d for u, v, d, _bw, _lat in fabric.edges()}
    for flow in flows:
        devices = fabric.device_paths(flow.src, flow.dst)[0]
        links = [(devices[i], devices[i + 1]) for i in range(len(devices) - 1)]
        flow.path = [ports[link] for link in links]
        # its first buffered hop, or a turn into another dimension, on a ring: the bubble
        flow.enters_ring = [i > 0 and isinstance(dims[dim[link]], Ring)
                            and (i == 1 or dim[link] != dim[links[i - 1]]) for i, link in enumerate(links)]
        for i in range(1, len(flow.path)):
            flow.path[i].feeders[flow.path[i - 1]] = None
        sizes = [packet_bytes] * (flow.size_bytes // packet_bytes)
        if flow.size_bytes % packet_bytes:
            sizes.append(flow.size_bytes % packet_bytes)
        flow.left = len(sizes)

        def start(flow=flow, sizes=sizes):
            yield env.timeout(flow.start_ns)
            flow.path[0].inject(deque((flow, size, 0) for size in sizes))

        env.process(start())
    env.run()
    stuck = [(flow.src, flow.dst) for flow in flows if flow.done_ns is None]
    if stuck:
        raise RuntimeError(f"per-packet reference: {len(stuck)} flows never arrived (credits deadlocked), "
                           f"e.g. {stuck[0]}")
    return [flow.done_ns for flow in flows]
