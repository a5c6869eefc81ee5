"""Packet backend: messages cut into packets, pipelined across hops, links shared fairly,
lossless credit back-pressure -- simulated as packet trains, so that time costs events only
when the sharing of a link changes, never per packet.

What is modelled (beyond ASTRA-sim, whose congestion-aware model moves whole messages
store-and-forward):

* a message of ``S`` bytes is a train of packets of ``packet-size`` bytes (the last one
  shorter); every directed link serialises one packet at a time at its bandwidth ``B`` and
  the packet then propagates for the link's latency; a device forwards a packet as soon as it
  has received it (per-packet store-and-forward, i.e. pipelined across hops), so one message
  alone over ``h`` hops takes ``h*latency + S/B + (h-1)*P/B`` (``P = min(packet-size, S)``;
  with unequal links ``sum(latency_i + P/B_i) + (S-P)/min(B_i)``);
* an output port serves the flows that have packets for it packet by packet in round robin,
  so ``k`` backlogged flows each get ``B/k``; a flow that cannot use its share (it is slower
  elsewhere) leaves the rest to the others;
* every output port has a buffer of ``switch-buffer`` bytes and the link into it sends only
  against credits for that buffer (as NVLink and PFC-enabled fabrics do): nothing is
  dropped, a full buffer holds the upstream link back, and a buffer smaller than the credit
  loop's bandwidth-delay product ``B*(2*latency) + P`` caps that link at
  ``switch-buffer / (2*latency + P/B)``.

How it is simulated: a flow (one message, or one of its sprayed parts) is a *train*. While
the set of trains on the links a train uses does not change, packet-by-packet round robin
with credits gives every train a constant rate: the max-min fair share over its path (the
rate round robin converges to once the bottleneck port's buffer is full and credits pace
the upstream links). So a train costs one event when its last byte leaves the source
(plus one for its delivery, ``tail`` later: the last packet crossing the remaining hops),
and rates are re-shared -- only among the trains that transitively share links with the one
that came or went -- when a train starts or ends. An uncontended message is two events
whatever its size; runtime grows with contention, not with bytes. The fair share is per
flow (virtual output queues at every hop, no head-of-line blocking); round robin over
*inputs* gives the same shares whenever each input of a port carries one flow.

Approximations that this buys: a train occupies every link of its path from its start
until its last byte leaves the source (the head's arrival offset, ``latency + P/B`` per hop,
is charged in the delivery time but not in the sharing), and a change of sharing takes
effect at once everywhere (no transient while a buffer fills). Links are :class:`Port`
objects and switches are no SimPy processes of their own: a train needs neither, and each
would cost events per packet or per hop.

Statistics per directed link (:meth:`PacketNetwork.port_stats`): bytes carried, busy time
(the trains' summed rates over the link's speed, integrated), the largest queue estimated at the port
that feeds it, and the time it was held back by credits (it had spare capacity while a flow
on it waited for a full buffer downstream). The queue is the fluid estimate: a port that is
the bottleneck of a flow arriving from an upstream link with spare capacity has a full
buffer (``switch-buffer`` bytes); a saturated port shared by ``k`` arriving flows holds one
packet per other flow; the source NPU's own queue (the message in its memory) is not counted.

Defaults, when the network YAML does not set them:

* ``packet-size: 4096`` bytes -- the MTU of InfiniBand and RoCE fabrics (NVLink moves
  smaller flits, but as the pipeline term ``(h-1)*P/B`` shows, the packet size only matters
  for messages of a few packets; halving it changes a 4x4-mesh ring all-reduce by far less
  than 1%);
* ``switch-buffer: 1048576`` bytes (1 MiB) per output port -- the per-port share of a
  modern data-centre switch's 32-64 MiB shared buffer, and above the credit loop's
  bandwidth-delay product of links up to 400 GB/s with 1 us latency. Lossless fabrics are
  built so that credits never idle a link, so while the YAML does not set ``switch-buffer``
  no credit loop caps a link (whatever its speed) and the buffer only shows in the queue
  statistics; set it to study small buffers.

Routing is the other backends' (dimension-order across stacked dimensions, each building
block's route, Graph shortest path or ECMP per flow); a Graph with ``routing: spray``
sprays each flow's packets evenly over all its fewest-link paths (one train per path).
"""

from __future__ import annotations

import math
from typing import Any

import simpy
from simpy.events import Timeout

from simpy_astra.network.congestion_aware import CongestionAwareNetwork
from simpy_astra.network.messages import Handler
from simpy_astra.topologies.base import BasicTopology
from simpy_astra.units import network_gbps_to_bytes_per_ns

DEFAULT_PACKET_SIZE_BYTES = 4096
DEFAULT_SWITCH_BUFFER_BYTES = 1 << 20
#: relative tolerance under which a port counts as saturated / two fair shares as equal
_TOLERANCE = 1e-9


def _first(pair: tuple) -> Any:
    return pair[0]


class Port:
    """A directed link ``src -> dst`` and the output port (buffer) that feeds it.

    ``flows`` are the trains crossing it now, each with the index of this port on its path;
    ``load_bytes_per_ns`` their summed rates; ``capacity_bytes_per_ns`` its speed while up,
    0 while down. Co-simulation may change it live, as a congestion-aware link:
    :meth:`set_bandwidth`, :meth:`take_down`, :meth:`bring_up`, and ``yield port.put(n)``."""

    __slots__ = ("env", "network", "src", "dst", "bandwidth_gbps", "latency_ns", "bytes_per_ns", "up",
                 "capacity_bytes_per_ns", "flows", "paths", "load_bytes_per_ns", "carried_bytes", "max_queue_bytes",
                 "_busy_done_ns", "_load_since", "_stall_done_ns", "_stalled_since", "_own_path")

    def __init__(self, env: simpy.Environment, src: Any, dst: Any, bandwidth_gbps: float, latency_ns: float,
                 network: PacketNetwork | None = None) -> None:
        self.env = env
        self.network = network
        self.src = src
        self.dst = dst
        self.bandwidth_gbps = bandwidth_gbps
        self.latency_ns = latency_ns
        self.bytes_per_ns = network_gbps_to_bytes_per_ns(bandwidth_gbps)
        self.up = True
        self.capacity_bytes_per_ns = self.bytes_per_ns
        self.flows: dict[_Flow, int] = {}
        self.paths: list[_Path] = []  # every path through this link (re-timed on a change of speed)
        self.load_bytes_per_ns = 0.0
        self.carried_bytes = 0.0  # a sprayed message's share may be a fraction
        self.max_queue_bytes = 0
        self._busy_done_ns = 0.0
        self._load_since = 0.0
        self._stall_done_ns = 0.0
        self._stalled_since: float | None = None
        self._own_path: _Path | None = None

    @property
    def bytes(self) -> int:
        """Bytes of every train that started on this link."""
        return round(self.carried_bytes)

    @property
    def busy_ns(self) -> int:
        """Serialising time so far: the trains' summed rates over the link's speed, over time."""
        return round(self._busy_done_ns + self._busy_open_ns())

    def _busy_open_ns(self) -> float:
        if not self.load_bytes_per_ns:
            return 0.0
        return (self.env.now - self._load_since) * self.load_bytes_per_ns / self.bytes_per_ns

    def _set_load(self, load_bytes_per_ns: float) -> None:
        self._busy_done_ns += self._busy_open_ns()
        self._load_since = self.env.now
        self.load_bytes_per_ns = load_bytes_per_ns

    @property
    def busy(self) -> bool:
        return bool(self.flows)

    @property
    def queue(self) -> list:
        """The trains sharing the link now (they interleave: none waits behind another)."""
        return list(self.flows)

    # ------------------------------------------------------------------ live changes
    def set_bandwidth(self, bandwidth_gbps: float) -> None:
        """New speed for every byte not yet sent (from now): trains are re-shared."""
        if bandwidth_gbps <= 0:
            raise ValueError(f"link {self.src}->{self.dst}: bandwidth must be > 0 GB/s "
                             f"(use take_down() to stop it)")
        self._set_load(self.load_bytes_per_ns)  # account the busy time at the old speed
        self.bandwidth_gbps = bandwidth_gbps
        self.bytes_per_ns = network_gbps_to_bytes_per_ns(bandwidth_gbps)
        if self.up:
            self.capacity_bytes_per_ns = self.bytes_per_ns
        for path in self.paths:
            path.measure()
        for flow in self.flows:
            flow.cap = min(flow.path.credit_caps)
        self._changed()

    def take_down(self) -> None:
        """Stop the wire: its trains (and what they hold back) wait for bring_up()."""
        if self.up:
            self._set_load(self.load_bytes_per_ns)
            self.up = False
            self.capacity_bytes_per_ns = 0.0
            self._changed()

    def bring_up(self) -> None:
        if not self.up:
            self.up = True
            self.capacity_bytes_per_ns = self.bytes_per_ns
            self._changed()

    def put(self, size_bytes: int) -> simpy.Event:
        """``size_bytes`` of background traffic over this one link, sharing it with the
        trains on it; the event succeeds (value: the time) when the last byte arrived."""
        if size_bytes < 0:
            raise ValueError(f"a transmission carries 0 or more bytes, not {size_bytes}")
        if self._own_path is None:
            self._own_path = self.network._path((self,))
        done = self.env.event()
        self.network._start((self._own_path,), size_bytes, None, done)
        return done

    def _changed(self) -> None:
        if self.flows and self.network is not None:
            self.network._reshare([self])

    @property
    def stall_ns(self) -> int:
        """Time so far this link had spare capacity while a flow on it waited for credits."""
        since = self._stalled_since
        open_ns = 0.0 if since is None else self.env.now - since
        return round(self._stall_done_ns + open_ns)

    def _set_stalled(self, stalled: bool) -> None:
        now = self.env.now
        if self._stalled_since is not None:
            self._stall_done_ns += now - self._stalled_since
        self._stalled_since = now if stalled else None

    def __repr__(self) -> str:
        return f"<Port {self.src}->{self.dst} {self.bandwidth_gbps} GB/s {self.latency_ns} ns>"


class _Message:
    """One message: its board key (None for background traffic, then ``done`` succeeds),
    how many of its trains are still draining, and the latest delivery among those done."""

    __slots__ = ("key", "done", "parts", "deliver_ns")

    def __init__(self, key: Any, done: simpy.Event | None, parts: int) -> None:
        self.key = key
        self.done = done
        self.parts = parts
        self.deliver_ns = 0.0


class _Path:
    """One path's ports and what is fixed per path: summed latency, the slowest link,
    ``sum(1/B_i)`` for the pipeline tail, and the credit-loop rate cap per hop."""

    __slots__ = ("ports", "packet_bytes", "buffer_bytes", "latency_ns", "min_bytes_per_ns", "inverse_sum",
                 "credit_caps")

    def __init__(self, ports: tuple[Port, ...], packet_bytes: int, buffer_bytes: float) -> None:
        self.ports = ports
        self.packet_bytes = packet_bytes
        self.buffer_bytes = buffer_bytes
        self.latency_ns = sum(p.latency_ns for p in ports)
        self.measure()
        for port in ports:
            port.paths.append(self)

    def measure(self) -> None:
        """What depends on the links' speeds (again after one changed)."""
        ports, packet_bytes = self.ports, self.packet_bytes
        self.min_bytes_per_ns = min(p.bytes_per_ns for p in ports)
        self.inverse_sum = sum(1.0 / p.bytes_per_ns for p in ports)
        # the device at the end of every hop but the last forwards: the link into it waits for
        # credits of its buffer, returned one latency after a packet leaves that buffer
        self.credit_caps = tuple(
            self.buffer_bytes / (2 * p.latency_ns + packet_bytes / p.bytes_per_ns) if i < len(ports) - 1
            else math.inf for i, p in enumerate(ports))

    def tail_ns(self, packet_bytes: float) -> float:
        """From the last byte leaving the source to its arrival: the latencies plus one packet
        serialised on every further hop (``sum(P/B_i) - P/min(B)``: the slowest hop's packet
        is part of the drain ``S/min(B)``)."""
        return self.latency_ns + packet_bytes * (self.inverse_sum - 1.0 / self.min_bytes_per_ns)


class _Flow:
    """A train: one message's bytes (or its share on one sprayed path) on one path.

    ``left_bytes`` is what had not left the source at ``since``; ``rate`` the train's bytes
    per ns on every link of its path; ``bottleneck`` the hop whose port (or credit loop)
    sets that rate; ``version`` makes a superseded drain event harmless."""

    __slots__ = ("message", "path", "ports", "size_bytes", "left_bytes", "rate", "since", "cap", "bottleneck",
                 "version", "drain_ns", "timer_ns")

    def __init__(self, message: _Message, path: _Path, size_bytes: float, now: float) -> None:
        self.message = message
        self.path = path
        self.ports = path.ports
        self.size_bytes = size_bytes
        self.left_bytes = size_bytes
        self.rate = 0.0
        self.since = now
        self.cap = min(path.credit_caps)
        self.bottleneck = 0
        self.version = 0
        self.drain_ns = 0  # when the last byte leaves the source at the current rate
        self.timer_ns: int | None = None  # when the pending drain event fires


class PacketNetwork(CongestionAwareNetwork):
    """The packet backend (see the module docstring). Topology, routes and device naming are
    the congestion-aware backend's; links are :class:`Port` objects instead of FIFO links."""

    name = "packet"

    def __init__(self, env: simpy.Environment, dims: list[BasicTopology], source: str = "<network>",
                 packet_size_bytes: int | None = None, switch_buffer_bytes: int | None = None) -> None:
        self.packet_size_bytes = DEFAULT_PACKET_SIZE_BYTES if packet_size_bytes is None else packet_size_bytes
        self.switch_buffer_bytes = (DEFAULT_SWITCH_BUFFER_BYTES if switch_buffer_bytes is None
                                    else switch_buffer_bytes)
        # the default buffer is sized for its link's credit loop: only a given one caps links
        self._credit_buffer_bytes = math.inf if switch_buffer_bytes is None else switch_buffer_bytes
        if self.packet_size_bytes <= 0:
            raise ValueError(f"{source}: packet-size must be > 0 bytes (got {self.packet_size_bytes})")
        if self.switch_buffer_bytes < self.packet_size_bytes:
            raise ValueError(f"{source}: switch-buffer ({self.switch_buffer_bytes} bytes) must hold at least "
                             f"one packet ({self.packet_size_bytes} bytes)")
        self._paths: dict[tuple[int, int], tuple[_Path, ...]] = {}
        self.reshares = 0  # how often rates were re-shared among contending trains
        super().__init__(env, dims, source)

    # ------------------------------------------------------------------ topology
    def _link(self, u: Any, v: Any, dim: int, local_u: int, local_v: int) -> Port:  # type: ignore[override]
        port = self._links.get((u, v))
        if port is None:
            bandwidth_gbps, latency_ns = self.dims[dim].link_params(local_u, local_v)
            port = self._links[(u, v)] = Port(self.env, u, v, bandwidth_gbps, latency_ns, self)
        return port

    def _paths_between(self, src: int, dst: int) -> tuple[_Path, ...]:
        """Dimension-order routing, as the congestion-aware backend; a dimension that sprays
        gives several paths: path ``k`` takes alternative ``k mod m`` in every dimension."""
        paths = self._paths.get((src, dst))
        if paths is not None:
            return paths
        if src == dst:
            raise ValueError(f"NPU {src} cannot send to itself")
        per_dim: list[list[list[Port]]] = []
        here, grid = src, self.grid
        for dim, topo in enumerate(self.dims):
            a, b = grid.coord(here, dim), grid.coord(dst, dim)
            if a == b:
                continue
            base = grid.moved(here, dim, 0)
            options = []
            for local in topo.routes(a, b):
                devices = [self._device(dim, base, k) for k in local]
                options.append([self._link(devices[i], devices[i + 1], dim, local[i], local[i + 1])
                                for i in range(len(devices) - 1)])
            per_dim.append(options)
            here = grid.moved(here, dim, b)
        count = max(len(options) for options in per_dim)
        paths = tuple(self._path(tuple(p for options in per_dim for p in options[k % len(options)]))
                      for k in range(count))
        self._paths[(src, dst)] = paths
        return paths

    def _path(self, ports: tuple[Port, ...]) -> _Path:
        return _Path(ports, self.packet_size_bytes, self._credit_buffer_bytes)

    # ------------------------------------------------------------------ public interface
    def send(self, src: int, dst: int, tag: int, size: int, fn: Handler, arg: Any) -> None:
        key = self.board.post_send(src, dst, tag, size, fn, arg)
        self._inject(src, dst, size, key, None)

    def send_background(self, src: int, dst: int, size_bytes: int) -> simpy.Event:
        """``size_bytes`` from ``src`` to ``dst`` sharing the links with the workload, matched
        by no receive; the event succeeds (value: the time) when the last packet arrived."""
        if size_bytes < 0:
            raise ValueError(f"background message of {size_bytes} bytes")
        done = self.env.event()
        self._inject(src, dst, size_bytes, None, done)
        return done

    def link_stats(self) -> list[tuple[Any, Any, int, int, int, int]]:
        """(from, to, bytes, busy ns, largest queue in bytes, back-pressure stall ns) for every
        directed link; devices of a one-dimensional network by their labels."""
        label = self._label
        return [(label(p.src), label(p.dst), p.bytes, p.busy_ns, p.max_queue_bytes, p.stall_ns)
                for p in self._links.values()]

    def port_stats(self) -> list[dict[str, Any]]:
        """:meth:`link_stats` as named fields."""
        return [{"from": u, "to": v, "bytes": b, "busy_ns": t, "max_queue_bytes": q, "stall_ns": s}
                for u, v, b, t, q, s in self.link_stats()]

    # ------------------------------------------------------------------ trains
    def _inject(self, src: int, dst: int, size: int, key: Any, done: simpy.Event | None) -> None:
        self._start(self._paths_between(src, dst), size, key, done)

    def _start(self, paths: tuple[_Path, ...], size: int, key: Any, done: simpy.Event | None) -> None:
        """One message of ``size`` bytes sprayed evenly over ``paths`` (usually one)."""
        message = _Message(key, done, len(paths))
        now = self.env.now
        if size == 0:  # no packet to pipeline: only the latencies
            message.parts = 1
            message.deliver_ns = now + paths[0].latency_ns
            self._schedule_delivery(message)
            return
        share = size / len(paths)
        for path in paths:
            flow = _Flow(message, path, share, now)
            idle = True
            for i, port in enumerate(flow.ports):
                port.carried_bytes += share
                if port.flows:
                    idle = False
                port.flows[flow] = i
            if idle:  # alone on every link: the slowest link or a credit loop sets the rate
                rate, hop = flow.cap, flow.path.credit_caps.index(flow.cap)
                for i, port in enumerate(flow.ports):
                    if port.capacity_bytes_per_ns < rate * (1 - _TOLERANCE) or not port.capacity_bytes_per_ns:
                        rate, hop = port.capacity_bytes_per_ns, i
                flow.bottleneck = hop
                self._set_rate(flow, rate)
                for port in flow.ports:
                    port._set_load(rate)
                self._mark(flow.ports)
            else:
                self._reshare(flow.ports)

    def _set_rate(self, flow: _Flow, rate: float) -> None:
        """Account the bytes sent at the old rate; the train now drains at ``rate``.

        Its drain event is re-armed only if the drain comes earlier than the pending event:
        a later drain (the train slowed down) lets the pending event fire and re-arm itself,
        so a train that only slows down keeps one event."""
        now = self.env.now
        flow.left_bytes = max(0.0, flow.left_bytes - flow.rate * (now - flow.since))
        flow.since = now
        flow.rate = rate
        # events at whole nanoseconds (the drain rounded up: at most 1 ns late), so the clock
        # the NPUs read stays an integer as with the other backends
        if rate <= 0:  # a link on its path is down: no drain until it is up again
            flow.drain_ns = math.inf
            return
        drain_ns = math.ceil(now + flow.left_bytes / rate - 1e-9)
        flow.drain_ns = drain_ns
        if flow.timer_ns is None or drain_ns < flow.timer_ns:
            self._arm(flow, drain_ns)

    def _arm(self, flow: _Flow, at_ns: int) -> None:
        flow.version += 1
        flow.timer_ns = at_ns
        version = flow.version
        Timeout(self.env, max(0, at_ns - self.env.now)).callbacks.append(lambda _e: self._drained(flow, version))

    def _drained(self, flow: _Flow, version: int) -> None:
        """The train's last byte left the source (or it slowed down since this event was
        armed: then re-arm): free its links; deliver when it arrives."""
        if flow.version != version:
            return
        if flow.drain_ns > self.env.now:
            if flow.drain_ns == math.inf:
                flow.timer_ns = None  # stopped: armed again when it moves
            else:
                self._arm(flow, flow.drain_ns)
            return
        busy = []
        for port in flow.ports:
            del port.flows[flow]
            if port.flows:
                busy.append(port)
            else:
                port._set_load(0.0)
                port._set_stalled(False)
        message = flow.message
        packet = min(self.packet_size_bytes, flow.size_bytes)
        message.deliver_ns = max(message.deliver_ns, self.env.now + flow.path.tail_ns(packet))
        message.parts -= 1
        if message.parts == 0:
            self._schedule_delivery(message)
        if busy:
            self._reshare(busy)

    def _schedule_delivery(self, message: _Message) -> None:
        # whole nanoseconds, as the other backends deliver (never before the last byte arrived)
        at_ns = math.ceil(message.deliver_ns - 1e-6)
        Timeout(self.env, max(0, at_ns - self.env.now)).callbacks.append(lambda _e: self._deliver(message))

    def _deliver(self, message: _Message) -> None:
        if message.key is not None:
            self.board.arrived(message.key)
        else:
            message.done.succeed(self.env.now)

    def _reshare(self, seeds: list[Port]) -> None:
        """Max-min fair rates (progressive filling) for every train that transitively shares a
        link with ``seeds``: raise all rates together; a port that fills freezes its trains
        at that rate, as does a train reaching its credit cap; repeat with the rest."""
        self.reshares += 1
        ports: set[Port] = set(seeds)
        flows: dict[_Flow, None] = {}
        stack = list(seeds)
        while stack:
            for flow in stack.pop().flows:
                if flow not in flows:
                    flows[flow] = None
                    for port in flow.ports:
                        if port not in ports:
                            ports.add(port)
                            stack.append(port)
        spare = {p: p.capacity_bytes_per_ns for p in ports}
        unfrozen = {p: len(p.flows) for p in ports if p.flows}
        rates: dict[_Flow, float] = {}
        waiting = dict(flows)
        # credit caps bind only below some link's speed (never with the default buffer)
        capped = [f for f in flows if f.cap < f.path.min_bytes_per_ns]
        while waiting:
            shares = [(spare[p] / n, p) for p, n in unfrozen.items()]
            level = min(shares, key=_first)[0]
            limit = level * (1 + _TOLERANCE)
            frozen: list[tuple[_Flow, int]] = []
            if capped:
                cap_level = min((f.cap for f in capped if f in waiting), default=math.inf)
                if cap_level <= limit:
                    level = min(level, cap_level)
                    limit = level * (1 + _TOLERANCE)
                    frozen += [(f, f.path.credit_caps.index(f.cap)) for f in capped
                               if f in waiting and f.cap <= limit]
            for share, p in shares:
                if share <= limit:
                    frozen += [(f, i) for f, i in p.flows.items() if f in waiting]
            for flow, hop in frozen:
                if flow not in waiting:
                    continue
                del waiting[flow]
                rates[flow] = level
                flow.bottleneck = hop
                for port in flow.ports:
                    spare[port] -= level
                    left = unfrozen[port] - 1
                    if left:
                        unfrozen[port] = left
                    else:
                        del unfrozen[port]
        for flow, rate in rates.items():
            if abs(rate - flow.rate) > _TOLERANCE * rate:
                self._set_rate(flow, rate)
        for port in ports:  # what the frozen rates took of each port
            port._set_load(max(0.0, port.capacity_bytes_per_ns - spare[port]))
        self._mark(ports)

    def _mark(self, ports) -> None:
        """After rates changed: which links are held back by credits, and the queues."""
        buffer_bytes = self.switch_buffer_bytes
        packet = self.packet_size_bytes
        for port in ports:
            saturated = port.load_bytes_per_ns >= port.capacity_bytes_per_ns * (1 - 1e-6)
            stalled = full = False
            transit = 0
            for flow, i in port.flows.items():
                if flow.bottleneck > i or (flow.bottleneck == i and not saturated):
                    stalled = True
                if i:
                    transit += 1
                    if flow.bottleneck == i:
                        upstream = flow.ports[i - 1]
                        if upstream.load_bytes_per_ns < upstream.capacity_bytes_per_ns * (1 - 1e-6):
                            full = True  # the upstream link could send more: credits hold it
            stalled = stalled and not saturated
            if stalled != (port._stalled_since is not None):
                port._set_stalled(stalled)
            queue = buffer_bytes if full else min(buffer_bytes, (transit - 1) * packet) if saturated and transit > 1 else 0
            if queue > port.max_queue_bytes:
                port.max_queue_bytes = queue
