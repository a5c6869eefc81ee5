"""A small per-packet SimPy simulator, independent of the packet backend, to check it against.

Every directed link is an output port that serves its inputs (the links feeding it, and
the device's own injection) round robin, one packet at a time; each transit input is a
FIFO; the injection input serves its flows round robin (a NIC interleaves its messages).
A packet of ``P`` bytes holds the link for ``P/B`` ns, then propagates for the latency;
a device forwards a packet once it has received it. Buffers are unbounded. Routes and
link speeds are the fabric's (:class:`simpy_astra.network.fabric.Fabric`).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import simpy

from simpy_astra.network.fabric import Fabric
from simpy_astra.topologies.base import BasicTopology
from simpy_astra.units import network_gbps_to_bytes_per_ns


@dataclass
class Flow:
    src: int
    dst: int
    size_bytes: int
    start_ns: float = 0.0
    path: list = field(default_factory=list)  # ports
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

    def popleft(self):
        packets = self.flows.popleft()
        pkt = packets.popleft()
        if packets:
            self.flows.append(packets)
        return pkt


class _Port:
    def __init__(self, env: simpy.Environment, bytes_per_ns: float, latency_ns: float) -> None:
        self.env = env
        self.bytes_per_ns = bytes_per_ns
        self.latency_ns = latency_ns
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

    def _pick(self):
        n = len(self.order)
        for k in range(n):
            key = self.order[(self.next + k) % n]
            if self.inputs[key]:
                self.next = (self.next + k + 1) % n
                return key, self.inputs[key].popleft()
        return None

    def run(self):
        env = self.env
        while True:
            got = self._pick()
            if got is None:
                self.wake = env.event()
                yield self.wake
                continue
            _key, pkt = got
            yield env.timeout(pkt[1] / self.bytes_per_ns)
            env.timeout(self.latency_ns).callbacks.append(lambda _e, pkt=pkt, port=self: _arrive(pkt, port))


def _arrive(pkt, port: _Port) -> None:
    flow, _size, hop = pkt
    if hop + 1 == len(flow.path):
        flow.left -= 1
        if flow.left == 0:
            flow.done_ns = port.env.now
        return
    flow.path[hop + 1].put(port, (flow, pkt[1], hop + 1))


def simulate(dims: list[BasicTopology], flows: list[Flow], packet_bytes: int = 4096) -> list[float]:
    """Each flow's delivery time (its last packet at its destination), in ns."""
    env = simpy.Environment()
    fabric = Fabric(dims)
    ports = {(u, v): _Port(env, network_gbps_to_bytes_per_ns(bw), lat) for u, v, _d, bw, lat in fabric.edges()}
    for flow in flows:
        devices = fabric.device_paths(flow.src, flow.dst)[0]
        flow.path = [ports[(devices[i], devices[i + 1])] for i in range(len(devices) - 1)]
        sizes = [packet_bytes] * (flow.size_bytes // packet_bytes)
        if flow.size_bytes % packet_bytes:
            sizes.append(flow.size_bytes % packet_bytes)
        flow.left = len(sizes)

        def start(flow=flow, sizes=sizes):
            yield env.timeout(flow.start_ns)
            flow.path[0].inject(deque((flow, size, 0) for size in sizes))

        env.process(start())
    env.run()
    return [flow.done_ns for flow in flows]
