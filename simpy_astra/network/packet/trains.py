"""Packet trains and their paths: the records the packet backend's sharing works on, and the
constants that bound it.
"""

from __future__ import annotations

import math
from typing import Any, Protocol

import simpy


class PathLink(Protocol):
    """What a path reads of each of its links (a :class:`~simpy_astra.network.packet.port.Port`)."""

    latency_ns: float
    bytes_per_ns: float
    paths: list[TrainPath]



DEFAULT_PACKET_SIZE_BYTES = 4096


DEFAULT_SWITCH_BUFFER_BYTES = 1 << 20


#: a backlog of at most this many bytes is empty (floating-point dust)
EMPTY_BYTES = 1e-3


#: a train reaches its hops one by one (its head's way) only if the head's way to its last hop
#: is at least this share of its time alone at its path's slowest speed; a longer train takes
#: every hop from its start (the head's way is charged in its delivery alone), which is off
#: by well under this share (a 4-hop flow whose head's way is 11% of its time was at most 4.5%
#: late against the per-packet reference) and costs no event per hop
START_UP_SHARE = 1 / 32


#: how often one re-share may re-solve after trains opened, joined or froze buffers
MAX_ROUNDS = 6


class PacketMessage:
    """One message: its board key (None for background traffic, then ``done`` succeeds),
    how many of its trains are still draining, and the latest delivery among those done."""

    __slots__ = ("key", "done", "parts", "deliver_ns")

    def __init__(self, key: Any, done: simpy.Event | None, parts: int) -> None:
        self.key = key
        self.done = done
        self.parts = parts
        self.deliver_ns = 0.0


class TrainPath:
    """One path's ports, the input each is entered from, and what is fixed per path: summed
    latency, the slowest link,
    ``sum(1/B_i)`` for the pipeline tail, and the credit-loop rate cap per hop."""

    __slots__ = ("ports", "inputs", "packet_bytes", "buffer_bytes", "latency_ns", "inverse_sum",
                 "credit_caps", "min_cap", "min_from", "latency_before", "inverse_before", "offsets",
                 "start_up_bytes")

    def __init__(self, ports: tuple[PathLink, ...], packet_bytes: int, buffer_bytes: float) -> None:
        self.ports = ports
        # the input each hop is entered from: the link before it (None: the source's injection)
        self.inputs = (None,) + ports[:-1]
        self.packet_bytes = packet_bytes
        self.buffer_bytes = buffer_bytes
        self.latency_ns = sum(p.latency_ns for p in ports)
        # the latencies before each hop (its head's way there, with ``inverse_before``)
        self.latency_before = tuple(sum(p.latency_ns for p in ports[:k]) for k in range(len(ports)))
        self.measure()
        for port in ports:
            port.paths.append(self)

    def measure(self) -> None:
        """What depends on the links' speeds (again after one changed)."""
        ports, packet_bytes = self.ports, self.packet_bytes
        speeds = [p.bytes_per_ns for p in ports]
        self.inverse_before = tuple(sum(1.0 / b for b in speeds[:k]) for k in range(len(speeds)))
        self.inverse_sum = sum(1.0 / b for b in speeds)
        self.offsets = self.head_offsets(packet_bytes)
        # trains this long or longer take every hop from their start (START_UP_SHARE)
        self.start_up_bytes = self.offsets[-1] * min(speeds) / START_UP_SHARE if len(speeds) > 1 else 0.0
        self.min_from = [min(speeds[i:]) for i in range(len(speeds))]
        # the device at the end of every hop but the last forwards: the link into it waits for
        # credits of its buffer, returned one latency after a packet leaves that buffer
        self.credit_caps = tuple(
            self.buffer_bytes / (2 * p.latency_ns + packet_bytes / p.bytes_per_ns) if i < len(ports) - 1
            else math.inf for i, p in enumerate(ports))
        self.min_cap = min(self.credit_caps)

    def head_offsets(self, packet_bytes: float) -> tuple[float, ...]:
        """When the head of a train whose packets are ``packet_bytes`` reaches each hop, from
        its start: ``o_k = sum over j < k of (latency_j + P/B_j)`` (its first packet crossed
        every link before, each at full speed)."""
        return tuple(lat + packet_bytes * inv for lat, inv in zip(self.latency_before, self.inverse_before,
                                                                   strict=True))

    def tail_ns(self, packet_bytes: float, hop: int = 0) -> float:
        """From the last byte leaving the source (``hop`` 0), or the buffer of hop ``hop``, to
        its arrival: the latencies plus one packet serialised on every hop but the slowest from
        ``hop`` on (whose packet is part of the drain). Hops before ``hop`` count too: the hops
        a train has reached move together (a hop it reaches is credited with what crossed the
        one before), so the bytes in flight to its buffer are charged here, as its head's way."""
        return self.latency_ns + packet_bytes * (self.inverse_sum - 1.0 / self.min_from[hop])


class Train:
    """A train: one message's bytes (or its share on one sprayed path) on one path.

    ``left_bytes`` is what had not left the source at ``since``; ``buf`` the hop whose
    port's buffer holds its ``backlog_bytes`` (0: none); ``in_rate`` its bytes per ns on the
    hops before ``buf`` (on every hop when ``buf`` is 0), ``out_rate`` from ``buf`` on (on
    the last hop, what is delivered, when the hops from ``buf`` on have rates of their own:
    ``hop_out``, per hop of the path, set where FIFO inputs cut it at several hops);
    ``crossed`` (while buffered) the bytes that crossed each hop from ``buf`` on, so that
    its backlog is known per buffer it really sits in; ``coupled``: its buffer is full, so
    credits hold ``in_rate`` to ``out_rate``; ``first`` the first hop it still holds (``buf``
    once its source is drained, later ones as its bytes cross them); ``drain_weights`` once
    its source is drained, the rate its bytes came in at on each hop from ``buf`` on (their
    weights in the FIFOs that hold them: a FIFO holds a flow's bytes in the proportion they
    arrived in); ``reach`` the hops its head has reached (``start_ns`` + ``offsets()``),
    which it shares (the hops after it has yet to reach hold it as a resource already, so
    that re-shares there find it, but give it no share); ``version``, ``hop_version`` and
    ``join_version`` make superseded drain, hop and join events harmless."""

    __slots__ = ("message", "path", "ports", "size_bytes", "left_bytes", "backlog_bytes", "since", "in_rate",
                 "out_rate", "buf", "coupled", "first", "drain_weights", "cut", "hop_out", "crossed", "r_in",
                 "lim_in", "r_out", "lim_out", "version", "hop_version", "hop_ns", "drain_ns", "timer_ns", "arrivals", "route",
                 "start_ns", "reach", "join_version", "join_ns", "opened", "reached")

    def __init__(self, message: PacketMessage, path: TrainPath, size_bytes: float, now: float) -> None:
        self.message = message
        self.path = path
        self.ports = path.ports
        self.size_bytes = size_bytes
        self.left_bytes = size_bytes
        self.backlog_bytes = 0.0
        self.since = now
        self.in_rate = self.out_rate = 0.0
        self.buf = 0
        self.coupled = False
        self.first = 0
        self.drain_weights: tuple[float, ...] = ()
        self.cut = 0  # the first hop at which FIFO inputs would cut its rate (0: none)
        self.hop_out: list[tuple[float, int]] | None = None  # (rate, limit) per hop, from ``buf`` on
        self.crossed: list[float] | None = None  # bytes across each hop, from ``buf`` on
        self.r_in = self.r_out = 0.0  # the current solution's rates and the hops that set them
        self.lim_in = self.lim_out = 0
        self.version = 0
        self.hop_version = 0
        self.hop_ns: int | None = None  # when the pending hop event fires
        self.arrivals: tuple[float, ...] | None = None  # the last FIFO arrival rates per hop (a warm start)
        self.route: Any = None  # the solver.Route those were computed for
        self.drain_ns = 0  # when the last byte leaves the source at the current rate
        self.timer_ns: int | None = None  # when the pending drain event fires
        self.start_ns = now
        # the hops its head has reached, that it shares (from ``first``)
        self.reach = len(path.ports) if size_bytes >= path.start_up_bytes else 1
        self.join_version = 0
        self.join_ns: int | None = None  # when the pending join event fires
        self.opened = False  # it opened its buffer in the re-share under way
        self.reached = 0  # the hops it had reached before the re-share under way, if it reached more

    def offsets(self) -> tuple[float, ...]:
        """When its head reaches each hop, from its start (its packets are at most its size)."""
        path = self.path
        if self.size_bytes >= path.packet_bytes:
            return path.offsets
        return path.head_offsets(self.size_bytes)

    def join(self, now: float) -> None:
        """Take the hops its head has reached by ``now`` into its sharing. From its buffer
        on, hops move together (their packets' way between them is charged in its delivery,
        :meth:`TrainPath.tail_ns`): a reached hop is credited with what crossed the one before."""
        k = self.reach
        h = len(self.ports)
        if k >= h:
            return
        offsets = self.offsets()
        age = now - self.start_ns + 1e-6
        while k < h and offsets[k] <= age:
            k += 1
        crossed = self.crossed
        if crossed is not None:
            for i in range(self.reach, k):
                crossed[i] = crossed[i - 1]
        if k > self.reach:
            self.reached = self.reached or self.reach
            self.reach = k

    def credited(self, hop: int) -> float:
        """The bytes a hop it reached in this re-share counts as crossed already."""
        if self.crossed is None or hop < self.buf:
            return self.size_bytes - self.left_bytes
        return self.crossed[hop]

    def join_at(self, hop: int) -> int:
        """The whole nanosecond its head reaches hop ``hop``."""
        return math.ceil(self.start_ns + self.offsets()[hop] - 1e-9)

    def backlog_at(self, now: float) -> float:
        if not self.buf:
            return 0.0
        dt = now - self.since
        sent = min(self.left_bytes, self.in_rate * dt) if self.left_bytes > 0 else 0.0
        return max(0.0, self.backlog_bytes + sent - self.out_rate * dt)

    def buffer_rate(self) -> float:
        """What the port of its buffer passes on of it (bytes per ns): its own rate at that
        hop where FIFO inputs cut it hop by hop, else its rate from the buffer on."""
        hop_out = self.hop_out
        return hop_out[self.buf][0] if hop_out is not None else self.out_rate

    def buffered_at(self, now: float) -> float:
        """Its bytes in its buffer's port at ``now`` (not those waiting further on, which
        that buffer no longer holds): its backlog, or where it is tracked per hop, what
        crossed the hop before and not this one."""
        if self.hop_out is None or self.crossed is None:
            return self.backlog_at(now)
        dt = now - self.since
        sent = self.size_bytes - self.left_bytes
        if self.left_bytes > 0:
            sent += min(self.left_bytes, self.in_rate * dt)
        b = self.buf
        upstream = sent if b <= self.first or self.left_bytes > 0 else self.crossed[b - 1]
        crossed = min(upstream, self.crossed[b] + self.hop_out[b][0] * dt)
        return max(0.0, upstream - crossed)

    def queue(self, hop: int) -> float:
        """Its bytes waiting in the buffer of hop ``hop`` (at ``since``): crossed the hop before,
        not this one."""
        crossed = self.crossed
        upstream = self.size_bytes - self.left_bytes if hop == self.buf else crossed[hop - 1]
        return max(0.0, upstream - crossed[hop])

    def advance(self, now: float) -> None:
        """Account what moved since ``since`` at the current rates."""
        dt = now - self.since
        if dt <= 0:
            return
        left = self.left_bytes
        sent = min(left, self.in_rate * dt) if left > 0 else 0.0
        self.left_bytes = left - sent
        if self.buf:
            self.backlog_bytes = max(0.0, self.backlog_bytes + sent - self.out_rate * dt)
            crossed = self.crossed
            if crossed is not None:
                hop_out = self.hop_out
                upstream = self.size_bytes - self.left_bytes
                for k in range(max(self.buf, self.first), self.reach):
                    rate = hop_out[k][0] if hop_out is not None else self.out_rate
                    crossed[k] = upstream = min(upstream, crossed[k] + rate * dt)
        self.since = now

    def open_buffer(self, hop: int) -> None:
        """Its buffer is now at hop ``hop``, empty: every hop from there has carried what left
        (but see :meth:`place_backlog`)."""
        self.buf = hop
        self.backlog_bytes = 0.0
        self.crossed = [self.size_bytes - self.left_bytes] * len(self.ports)
        self.opened = True

    def place_backlog(self, now: float) -> None:
        """A buffer just opened at a hop the train's head reached in this instant (its join
        event): what it sent faster before waits there, but for what that hop passes on
        (``out_rate``) in the train's time so far (the bytes in flight in its head's time to
        the hop, which its delivery charges, and the part of a nanosecond since the head got
        there: events fall on whole ns)."""
        self.opened = False
        b = self.buf
        if not b or self.left_bytes <= 0 or self.start_ns + self.offsets()[b] <= now - 1:
            return
        sent = self.size_bytes - self.left_bytes
        crossed = min(sent, self.out_rate * (now - self.start_ns))
        if crossed < sent - EMPTY_BYTES:
            self.backlog_bytes = sent - crossed
            self.crossed = [crossed] * len(self.ports)

    def close_buffer(self) -> None:
        self.buf = 0
        self.backlog_bytes = 0.0
        self.crossed = None
        self.hop_out = None


def limit_hop(lim: int) -> int:
    """The hop of a freezing limit (a credit loop's limit is stored as ``~hop``)."""
    return lim if lim >= 0 else ~lim
