"""One path of the packet backend: its ports, what each hop is entered from, and what is fixed
per path (summed latency, the slowest link, the pipeline tail, the credit-loop rate cap per
hop), measured again when a link's speed changes; the trains (:mod:`.trains`) that ride it
read it.
"""

from __future__ import annotations

import math
from typing import Any, Protocol

from simpy_astra.network.packet.solver import TOLERANCE, Limit, Route, Share


class PathLink(Protocol):
    """What a path reads of each of its links (a :class:`~simpy_astra.network.packet.port.Port`)."""

    latency_ns: float
    bytes_per_ns: float
    capacity_bytes_per_ns: float
    paths: list[TrainPath]


#: a train reaches its hops one by one (its head's way) only if the head's way to its last hop
#: is at least this share of its time alone at its path's slowest speed; a longer train takes
#: every hop from its start (the head's way is charged in its delivery alone), which is off
#: by well under this share (a 4-hop flow whose head's way is 11% of its time was at most 4.5%
#: late against the per-packet reference) and costs no event per hop
START_UP_SHARE = 1 / 32


def alone_share(path: TrainPath) -> Share:
    """A train's share alone on ``path``: the slowest link now (0 while one is down), or the
    tightest credit loop if that is slower."""
    cap = path.min_cap_bytes_per_ns
    alone = Share(cap, Limit(path.credit_caps_bytes_per_ns.index(cap), True))
    for i, port in enumerate(path.ports):
        speed = port.capacity_bytes_per_ns
        if speed < alone.bytes_per_ns * (1 - TOLERANCE) or not speed:
            alone = Share(speed, Limit(i))
    return alone


class TrainPath:
    """One path's ports, the input each is entered from, each distinct port with how many
    hops cross it (``visits``), and what is fixed per path: summed latency, the slowest link,
    ``sum(1/B_i)`` for the pipeline tail, and the credit-loop rate cap per hop."""

    __slots__ = ("ports", "inputs", "visits", "packet_bytes", "buffer_bytes", "latency_ns", "ns_per_byte_sum",
                 "credit_caps_bytes_per_ns", "min_cap_bytes_per_ns", "min_speed_from_bytes_per_ns",
                 "latency_before_ns", "ns_per_byte_before", "head_offsets_ns", "start_up_bytes", "alone",
                 "free_routes")

    def __init__(self, ports: tuple[PathLink, ...], packet_bytes: int, buffer_bytes: float,
                 inputs: tuple[Any, ...] | None = None) -> None:
        """``inputs``: what each hop is entered from, by default the link before it (None:
        the source's injection); a folded run names the real link a representative port's
        copy of the train comes from (:mod:`simpy_astra.folding.packet`)."""
        self.ports = ports
        self.inputs = (None,) + ports[:-1] if inputs is None else inputs
        self.packet_bytes = packet_bytes
        self.buffer_bytes = buffer_bytes
        self.latency_ns = sum(p.latency_ns for p in ports)
        # the latencies before each hop (its head's way there, with ``ns_per_byte_before``)
        self.latency_before_ns = tuple(sum(p.latency_ns for p in ports[:k]) for k in range(len(ports)))
        visits: dict[PathLink, int] = {}  # (a folded run's path may cross a port at several hops)
        for port in ports:
            visits[port] = visits.get(port, 0) + 1
        self.visits = tuple(visits.items())
        # the FIFO route (:func:`~.solver.fifo_arrivals`) of a train at its source that holds
        # no backlog, by the hops its head reached: most trains of every re-share
        self.free_routes = (None,) + tuple(Route(ports[:n], self.inputs[:n], (False,) * n, (None,) * n)
                                           for n in range(1, len(ports) + 1))
        self.measure()
        for port in visits:
            port.paths.append(self)

    def measure(self) -> None:
        """What depends on the links' speeds (again after one changed)."""
        ports, packet_bytes = self.ports, self.packet_bytes
        speeds = [p.bytes_per_ns for p in ports]
        self.ns_per_byte_before = tuple(sum(1.0 / b for b in speeds[:k]) for k in range(len(speeds)))
        self.ns_per_byte_sum = sum(1.0 / b for b in speeds)
        self.head_offsets_ns = self.head_offsets_for(packet_bytes)
        # trains this long or longer take every hop from their start (START_UP_SHARE)
        self.start_up_bytes = self.head_offsets_ns[-1] * min(speeds) / START_UP_SHARE if len(speeds) > 1 else 0.0
        self.min_speed_from_bytes_per_ns = [min(speeds[i:]) for i in range(len(speeds))]
        # the device at the end of every hop but the last forwards: the link into it waits for
        # credits of its buffer, returned one latency after a packet leaves that buffer
        self.credit_caps_bytes_per_ns = tuple(
            self.buffer_bytes / (2 * p.latency_ns + packet_bytes / p.bytes_per_ns) if i < len(ports) - 1
            else math.inf for i, p in enumerate(ports))
        self.min_cap_bytes_per_ns = min(self.credit_caps_bytes_per_ns)
        self.alone = alone_share(self)  # a train's share alone on it (every link up)

    def head_offsets_for(self, packet_bytes: float) -> tuple[float, ...]:
        """When the head of a train whose packets are ``packet_bytes`` reaches each hop, from
        its start: ``o_k = sum over j < k of (latency_j + P/B_j)`` (its first packet crossed
        every link before, each at full speed)."""
        return tuple(lat + packet_bytes * inv for lat, inv in zip(self.latency_before_ns, self.ns_per_byte_before,
                                                                   strict=True))

    def tail_ns(self, packet_bytes: float, hop: int = 0) -> float:
        """From the last byte leaving the source (``hop`` 0), or the buffer of hop ``hop``, to
        its arrival: the latencies plus one packet serialised on every hop but the slowest from
        ``hop`` on (whose packet is part of the drain). Hops before ``hop`` count too: the hops
        a train has reached move together (a hop it reaches is credited with what crossed the
        one before), so the bytes in flight to its buffer are charged here, as its head's way."""
        return self.latency_ns + packet_bytes * (self.ns_per_byte_sum - 1.0 / self.min_speed_from_bytes_per_ns[hop])

    def alone_arrival_ns(self, size_bytes: float, packet_bytes: float, hop: int) -> float:
        """From a train's start to its last byte's arrival were it alone on hops ``hop`` on:
        the latencies, one packet on every link, the rest at the slowest of those hops. A
        train whose source drains before its head reaches a slower hop (a fast first link)
        arrives no sooner: its bytes still cross that hop at its speed."""
        return (self.latency_ns + packet_bytes * self.ns_per_byte_sum
                + (size_bytes - packet_bytes) / self.min_speed_from_bytes_per_ns[hop])
