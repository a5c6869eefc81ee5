"""Packet backend: messages cut into packets, pipelined across hops, links shared round robin
over their inputs, output buffers that fill and drain, lossless credit back-pressure --
simulated as packet trains, so that time costs events only when the sharing of a link or
the state of a buffer changes, never per packet.

What is modelled (beyond ASTRA-sim, whose congestion-aware model moves whole messages
store-and-forward):

* a message of ``S`` bytes is a train of packets of ``packet-size`` bytes (the last one
  shorter); every directed link serialises one packet at a time at its bandwidth ``B`` and
  the packet then propagates for the link's latency; a device forwards a packet as soon as it
  has received it (per-packet store-and-forward, i.e. pipelined across hops), so one message
  alone over ``h`` hops takes ``h*latency + S/B + (h-1)*P/B`` (``P = min(packet-size, S)``;
  with unequal links ``sum(latency_i + P/B_i) + (S-P)/min(B_i)``);
* every directed link is a :class:`Port`, a SimPy resource
  (:class:`~simpy_astra.network.link.LinkResource`, shared with the congestion-aware
  backend's links): a train joining the link is a request (:meth:`Port.request`), leaving it
  a release (:meth:`Port.release`); ``yield port.put(n)`` is background traffic on it;
* an output port serves its *inputs* (the links that feed it, and the device's own
  injection) in round robin, and each input's share in turn its trains: an input with ``m``
  trains among ``n`` inputs gives each ``B/(n*m)``; a train or an input that cannot use its
  share (it is slower elsewhere) leaves the rest to the others (hierarchical max-min
  fairness: a water-filling over inputs, then over each input's trains);
* every output port of a forwarding device (a switch, or an NPU on a multi-hop route) has a
  buffer of ``switch-buffer`` bytes, kept by that device's SimPy process
  (:class:`SwitchProcess`, ``network.switches[device].process``). A train whose tightest port
  is such a port, and whose upstream links could carry it faster, fills that buffer at
  ``in - out``: upstream it runs at its own share of the upstream links, downstream at its
  share of the port. When the buffer is full, credits hold the trains that were filling it
  to their downstream rate (the one event of the fill instant, then a re-share); when a
  train's backlog can leave faster than it arrives, the buffer drains, and the train is
  whole again once its backlog is empty (one event). The largest queue per port is this
  tracked occupancy;
* the link into a buffer sends only against credits for it, returned one latency after a
  packet leaves: a buffer smaller than the credit loop's bandwidth-delay product
  ``B*(2*latency) + P`` caps that link at ``switch-buffer / (2*latency + P/B)``.

How it is simulated: a flow (one message, or one of its sprayed parts) is a *train*. While
the trains on a set of links and the states of their buffers do not change, round robin
with credits gives every train constant rates: one on the hops before its buffer (if it
is filling or draining one), one from there on. A train costs one event when its last byte
leaves the source, one for its delivery (``tail`` later: the last packet crossing the
remaining hops), and, only when it is congested, the buffer's fill and empty instants.
Rates are re-shared -- only among the trains that transitively share links with the ones
that changed, and once for all the changes of one instant (one event) -- when a train starts
or ends, a buffer fills or empties, or a link changes speed. An uncontended message is two
events whatever its size; runtime grows with contention, not with bytes. After every
solve, the switch process of each port that holds a backlog is woken (its event): it sums
the backlogs into the port's occupancy, records the largest, and arms a timer for the next
fill or empty instant, at which it wakes again and hands the instant to the network, which
re-shares.

Approximations that this buys, and only these:

* a train occupies every link of its path from its start (the head's arrival offset,
  ``latency + P/B`` per hop, is charged in the delivery time, not in the sharing);
* a train has at most one buffer at a time: the one at its tightest port when it became
  congested (the first such hop if several tie; none if the first link ties with it); a
  second, upstream bottleneck opens no second buffer, and if its tightest port later moves
  further on, its backlog stays where it is (the hops between carry its downstream rate);
* a solve changes each train's state (whole, filling or draining a buffer, held by
  credits) at most once and re-solves at most 6 times; a switch hands over at most 6
  buffer instants of one port per simulated instant (guards against a state that solves
  back to itself);
* a full buffer's split between trains is frozen: each train that was filling it is held
  to its downstream rate (per-train credits) until its own rate downstream exceeds its
  rate upstream (then its backlog drains); space that a draining train frees is not handed
  to trains held by credits, and a train arriving at a full port is credit-paced at once;
* events fall on whole nanoseconds (rounded up): a buffer may overshoot its size by the
  bytes of under 1 ns, which the statistics clip.

Statistics per directed link (:meth:`PacketNetwork.port_stats`): bytes carried, busy time
(the trains' summed rates over the link's speed, integrated), the largest occupancy of the
buffer of the port that feeds it (0 for a source NPU's own link: the message in its memory
is not a queue), and the time it was held back by credits (it had spare capacity while a
train on it waited for a full buffer downstream, or for credits of its own credit loop).

Defaults, when the network YAML does not set them:

* ``packet-size: 4096`` bytes -- the MTU of InfiniBand and RoCE fabrics (NVLink moves
  smaller flits, but as the pipeline term ``(h-1)*P/B`` shows, the packet size only matters
  for messages of a few packets; halving it changes a 4x4-mesh ring all-reduce by far less
  than 1%);
* ``switch-buffer: 1048576`` bytes (1 MiB) per output port -- the per-port share of a
  modern data-centre switch's 32-64 MiB shared buffer, and above the credit loop's
  bandwidth-delay product of links up to 400 GB/s with 1 us latency. Lossless fabrics are
  built so that credits never idle a link, so while the YAML does not set ``switch-buffer``
  no credit loop caps a link (whatever its speed); the buffer still fills and drains.

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
from simpy_astra.network.link import LinkResource, Transmission
from simpy_astra.network.messages import Handler
from simpy_astra.topologies.base import BasicTopology

DEFAULT_PACKET_SIZE_BYTES = 4096
DEFAULT_SWITCH_BUFFER_BYTES = 1 << 20
#: relative tolerance under which a port counts as saturated / two fair shares as equal
_TOLERANCE = 1e-9
#: a backlog of at most this many bytes is empty (floating-point dust)
_EMPTY_BYTES = 1e-3
#: how often one re-share may re-solve after trains opened, joined or froze buffers
_MAX_ROUNDS = 6


class Port(LinkResource):
    """A directed link ``src -> dst`` and the output port (buffer) that feeds it: a SimPy
    resource of unbounded capacity whose users are the trains crossing it.

    ``flows`` are those trains, each with the index of this port on its path (a train joins
    with :meth:`request`, leaves with :meth:`release`: plain calls, not SimPy events, which
    would cost events per train and hop); ``buffered`` the trains with a backlog
    in this port's buffer, kept by ``switch`` (the :class:`SwitchProcess` of ``src``);
    ``load_bytes_per_ns`` the trains' summed rates; ``capacity_bytes_per_ns`` its speed while
    up, 0 while down. Co-simulation may change it live, as a congestion-aware link:
    :meth:`set_bandwidth`, :meth:`take_down`, :meth:`bring_up`, and ``yield port.put(n)``."""

    def __init__(self, env: simpy.Environment, src: Any, dst: Any, bandwidth_gbps: float, latency_ns: float,
                 network: PacketNetwork | None = None) -> None:
        super().__init__(env, src, dst, bandwidth_gbps, latency_ns, capacity=math.inf)
        self.network = network
        self.capacity_bytes_per_ns = self.bytes_per_ns
        self.flows: dict[_Flow, int] = {}
        self.buffered: dict[_Flow, None] = {}
        self.switch: SwitchProcess | None = None
        self.full = False  # the buffer is full (set and cleared by the switch process)
        self.paths: list[_Path] = []  # every path through this link (re-timed on a change of speed)
        self.load_bytes_per_ns = 0.0
        self.carried_bytes = 0.0  # a sprayed message's share may be a fraction
        self.max_queue_bytes = 0
        self._busy_done_ns = 0.0
        self._load_since = 0.0
        self._stall_done_ns = 0.0
        self._stalled_since: float | None = None
        self._own_path: _Path | None = None
        self._timer_ns: float | None = None  # when the switch's pending buffer timer fires
        self._timer_version = 0
        self._instant_ns: float | None = None  # when the switch last handed a buffer instant over
        self._instants = 0

    # ------------------------------------------------------------------ the resource
    def request(self, flow: _Flow, hop: int) -> None:
        """A train joins the link (hop ``hop`` of its path): it shares the wire from now."""
        self.flows[flow] = hop

    def release(self, flow: _Flow) -> None:
        """A train leaves the link; an idle link stops counting busy and stalled time."""
        del self.flows[flow]
        if not self.flows:
            self._set_load(0.0)
            self._set_stalled(False)

    def _trigger_put(self, _get_event: Any) -> None:
        """A user's ``put(n)`` (a :class:`Transmission`): its bytes become a train on this
        one link, sharing it; the event succeeds when the last byte arrived."""
        queue = self.put_queue
        while queue:
            self.network._put(self, queue.pop(0))

    # ------------------------------------------------------------------ statistics
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

    @property
    def queued_bytes(self) -> float:
        """The bytes in this port's buffer now."""
        now = self.env.now
        return sum(flow.backlog_at(now) for flow in self.buffered)

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

    # ------------------------------------------------------------------ live changes
    def set_bandwidth(self, bandwidth_gbps: float) -> None:
        """New speed for every byte not yet sent (from now): trains are re-shared."""
        self._check_bandwidth(bandwidth_gbps)
        self._set_load(self.load_bytes_per_ns)  # account the busy time at the old speed
        self._new_bandwidth(bandwidth_gbps)
        if self.up:
            self.capacity_bytes_per_ns = self.bytes_per_ns
        for path in self.paths:
            path.measure()
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

    def _changed(self) -> None:
        if self.flows and self.network is not None:
            self.network._reshare([self])


class SwitchProcess:
    """A forwarding device's process (a switch, or an NPU that forwards on multi-hop routes):
    it keeps the buffers of its output ports.

    The network wakes it (:meth:`notify`: its ``_wake`` event succeeds) whenever trains
    start, end or change rate on one of its buffered ports. Woken, it sums each such port's
    backlogs into its occupancy, records the largest, and arms a timer for the port's next
    buffer instant (full, or a train's backlog empty); the timer wakes it again, and it hands
    the instant to the network (:meth:`PacketNetwork._buffer_instant`), which re-shares."""

    def __init__(self, env: simpy.Environment, device: Any, network: PacketNetwork) -> None:
        self.env = env
        self.device = device
        self.network = network
        self.wakes = 0
        self._due: dict[Port, None] = {}
        self._wake = env.event()
        self.process = env.process(self._serve())

    def notify(self, port: Port) -> None:
        self._due[port] = None
        if not self._wake.triggered:
            self._wake.succeed()

    def _serve(self):
        while True:
            yield self._wake
            self._wake = self.env.event()
            self.wakes += 1
            due, self._due = self._due, {}
            for port in due:
                self._look(port)

    def _look(self, port: Port) -> None:
        now = self.env.now
        buffer_bytes = self.network.switch_buffer_bytes
        occupancy = slope = 0.0
        soonest = math.inf
        instant = False
        for flow in port.buffered:
            backlog = flow.backlog_at(now)
            occupancy += backlog
            net = (flow.in_rate if flow.left_bytes > 0 else 0.0) - flow.out_rate
            slope += net
            if net < 0:
                if backlog <= _EMPTY_BYTES:
                    instant = True  # emptied
                else:
                    soonest = min(soonest, backlog / -net)
        full = occupancy >= buffer_bytes - _EMPTY_BYTES
        if full and any(not f.coupled and f.left_bytes > 0 and f.in_rate > f.out_rate * (1 + _TOLERANCE)
                        for f in port.buffered):
            instant = True
        port.full = full
        seen = min(occupancy, buffer_bytes)
        if seen > port.max_queue_bytes:
            port.max_queue_bytes = round(seen)
        if instant:
            if port._instant_ns != now:
                port._instant_ns, port._instants = now, 0
            port._instants += 1
            if port._instants <= _MAX_ROUNDS:  # (a guard: a state that re-solves to itself)
                self.network._buffer_instant(port)
                return
        if slope > 0 and not full:
            soonest = min(soonest, (buffer_bytes - occupancy) / slope)
        if soonest == math.inf:
            return
        at_ns = math.ceil(now + soonest - 1e-9)
        if port._timer_ns is not None and now <= port._timer_ns <= at_ns:
            return  # the pending timer comes first; it wakes us and we look again
        port._timer_version += 1
        port._timer_ns = at_ns
        version = port._timer_version
        Timeout(self.env, max(0, at_ns - now)).callbacks.append(lambda _e: self._timer(port, version))

    def _timer(self, port: Port, version: int) -> None:
        if version == port._timer_version:
            port._timer_ns = None
            self.notify(port)

    def __repr__(self) -> str:
        return f"<SwitchProcess {self.device}>"


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

    __slots__ = ("ports", "packet_bytes", "buffer_bytes", "latency_ns", "inverse_sum",
                 "credit_caps", "min_cap", "min_from")

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
        speeds = [p.bytes_per_ns for p in ports]
        self.inverse_sum = sum(1.0 / b for b in speeds)
        self.min_from = [min(speeds[i:]) for i in range(len(speeds))]
        # the device at the end of every hop but the last forwards: the link into it waits for
        # credits of its buffer, returned one latency after a packet leaves that buffer
        self.credit_caps = tuple(
            self.buffer_bytes / (2 * p.latency_ns + packet_bytes / p.bytes_per_ns) if i < len(ports) - 1
            else math.inf for i, p in enumerate(ports))
        self.min_cap = min(self.credit_caps)

    def tail_ns(self, packet_bytes: float, hop: int = 0) -> float:
        """From the last byte leaving the source (``hop`` 0), or the buffer of hop ``hop``, to
        its arrival: the latencies plus one packet serialised on every hop but the slowest from
        ``hop`` on (whose packet is part of the drain). Hops before ``hop`` count too: the
        fluid trains start serving every hop at once, the packets reach it a hop later."""
        return self.latency_ns + packet_bytes * (self.inverse_sum - 1.0 / self.min_from[hop])


class _Flow:
    """A train: one message's bytes (or its share on one sprayed path) on one path.

    ``left_bytes`` is what had not left the source at ``since``; ``buf`` the hop whose
    port's buffer holds its ``backlog_bytes`` (0: none); ``in_rate`` its bytes per ns on the
    hops before ``buf`` (on every hop when ``buf`` is 0), ``out_rate`` from ``buf`` on;
    ``coupled``: its buffer is full, so credits hold ``in_rate`` to ``out_rate``; ``first``
    the first hop it still holds (``buf`` once its source is drained); ``version`` makes a
    superseded drain event harmless."""

    __slots__ = ("message", "path", "ports", "size_bytes", "left_bytes", "backlog_bytes", "since", "in_rate",
                 "out_rate", "buf", "coupled", "first", "r_in", "lim_in", "r_out", "lim_out", "version",
                 "drain_ns", "timer_ns")

    def __init__(self, message: _Message, path: _Path, size_bytes: float, now: float) -> None:
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
        self.r_in = self.r_out = 0.0  # the current solution's rates and the hops that set them
        self.lim_in = self.lim_out = 0
        self.version = 0
        self.drain_ns = 0  # when the last byte leaves the source at the current rate
        self.timer_ns: int | None = None  # when the pending drain event fires

    def backlog_at(self, now: float) -> float:
        if not self.buf:
            return 0.0
        dt = now - self.since
        sent = min(self.left_bytes, self.in_rate * dt) if self.left_bytes > 0 else 0.0
        return max(0.0, self.backlog_bytes + sent - self.out_rate * dt)

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
        self.since = now


def _limit_hop(lim: int) -> int:
    """The hop of a freezing limit (a credit loop's limit is stored as ``~hop``)."""
    return lim if lim >= 0 else ~lim


class PacketNetwork(CongestionAwareNetwork):
    """The packet backend (see the module docstring). Topology, routes and device naming are
    the congestion-aware backend's; links are :class:`Port` resources instead of FIFO links,
    and forwarding devices are :class:`SwitchProcess` processes that keep the buffers."""

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
        self._pending: dict[Port, None] = {}  # links whose trains changed in this instant
        self._flush_armed = False
        super().__init__(env, dims, source)

    # ------------------------------------------------------------------ topology
    def _new_link(self, u: Any, v: Any, bandwidth_gbps: float, latency_ns: float, *,  # type: ignore[override]
                  into_switch: bool, from_switch: bool) -> Port:
        port = Port(self.env, u, v, bandwidth_gbps, latency_ns, self)
        if from_switch:  # out of a switch: its process keeps the buffer
            port.switch = self.switch(u)  # type: ignore[assignment]
        return port

    def _new_switch(self, device: Any) -> SwitchProcess:  # type: ignore[override]
        """The process of forwarding device ``device`` (a switch, or an NPU once a train
        buffers at one of its ports: :meth:`switch` starts it then)."""
        return SwitchProcess(self.env, device, self)
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

    def _put(self, port: Port, request: Transmission) -> None:
        if port._own_path is None:
            port._own_path = self._path((port,))
        self._start((port._own_path,), request.size, None, request)

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
                port.request(flow, i)
            if idle:  # alone on every link: the slowest link or a credit loop sets the rate
                rate, hop = path.min_cap, ~path.credit_caps.index(path.min_cap)
                for i, port in enumerate(flow.ports):
                    if port.capacity_bytes_per_ns < rate * (1 - _TOLERANCE) or not port.capacity_bytes_per_ns:
                        rate, hop = port.capacity_bytes_per_ns, i
                if hop <= 0:  # the first link or a credit loop: no buffer fills
                    flow.lim_in = hop
                    flow.in_rate = flow.out_rate = rate
                    self._arm_drain(flow, now)
                    for port in flow.ports:
                        port._set_load(rate)
                    self._mark_credit_stall(flow)
                    continue
            self._reshare(flow.ports)

    # ------------------------------------------------------------------ events of a train
    def _arm_drain(self, flow: _Flow, now: float) -> None:
        """(Re-)arm the train's source-drain event for its current ``in_rate``.

        It is re-armed only if the drain comes earlier than the pending event: a later drain
        (the train slowed down) lets the pending event fire and re-arm itself, so a train
        that only slows down keeps one event."""
        rate = flow.in_rate
        # events at whole nanoseconds (the drain rounded up: at most 1 ns late), so the clock
        # the NPUs read stays an integer as with the other backends
        if rate <= 0:  # a link on its path is down: no drain until it is up again
            flow.drain_ns = math.inf
            return
        drain_ns = math.ceil(flow.since + flow.left_bytes / rate - 1e-9)
        flow.drain_ns = drain_ns
        if flow.timer_ns is None or drain_ns < flow.timer_ns:
            flow.version += 1
            flow.timer_ns = drain_ns
            version = flow.version
            Timeout(self.env, max(0, drain_ns - now)).callbacks.append(lambda _e: self._drained(flow, version))

    def _drained(self, flow: _Flow, version: int) -> None:
        """The train's last byte left the source (or it slowed down since this event was
        armed: then re-arm): free the links before its buffer; done if nothing is buffered."""
        if flow.version != version:
            return
        now = self.env.now
        if flow.drain_ns > now:
            flow.timer_ns = None
            if flow.drain_ns != math.inf:
                self._arm_drain(flow, now)
            return
        flow.timer_ns = None
        flow.advance(now)
        flow.left_bytes = 0.0
        b = flow.buf
        if not b or flow.backlog_bytes <= _EMPTY_BYTES:
            busy = self._finish(flow, 0)
        else:  # the rest waits in the buffer of hop b: the links before it are free
            busy = []
            for port in flow.ports[:b]:
                port.release(flow)
                if port.flows:
                    busy.append(port)
            flow.first = b
            flow.in_rate = 0.0
            busy.append(flow.ports[b])
        if busy:
            self._reshare(busy)

    def _finish(self, flow: _Flow, hop: int) -> list[Port]:
        """The train's last byte left the source (``hop`` 0) or the buffer of ``hop``: free
        its links and schedule its delivery; returns the freed links that others still use."""
        busy = []
        for port in flow.ports[flow.first:]:
            port.release(flow)
            if port.flows:
                busy.append(port)
        if flow.buf:
            flow.ports[flow.buf].buffered.pop(flow, None)
        flow.version += 1  # a pending drain event is void
        message = flow.message
        packet = min(self.packet_size_bytes, flow.size_bytes)
        message.deliver_ns = max(message.deliver_ns, self.env.now + flow.path.tail_ns(packet, hop))
        message.parts -= 1
        if message.parts == 0:
            self._schedule_delivery(message)
        return busy

    def _schedule_delivery(self, message: _Message) -> None:
        # whole nanoseconds, as the other backends deliver (never before the last byte arrived)
        at_ns = math.ceil(message.deliver_ns - 1e-6)
        Timeout(self.env, max(0, at_ns - self.env.now)).callbacks.append(lambda _e: self._deliver(message))

    def _deliver(self, message: _Message) -> None:
        if message.key is not None:
            self.board.arrived(message.key)
        else:
            message.done.succeed(self.env.now)

    def _buffer_instant(self, port: Port) -> None:
        """The switch process of ``port`` found its buffer full, or a train's backlog empty:
        a full buffer holds the trains filling it to their downstream rate (credits); an empty
        backlog makes its train whole again, or ends it if its source is drained."""
        now = self.env.now
        seeds = [port]
        for flow in list(port.buffered):
            flow.advance(now)
            if flow.backlog_bytes <= _EMPTY_BYTES and (flow.left_bytes <= 0 or flow.out_rate >= flow.in_rate):
                if flow.left_bytes <= 0:
                    seeds += self._finish(flow, flow.buf)
                else:
                    del port.buffered[flow]
                    flow.buf = 0
                    flow.coupled = False
                    flow.backlog_bytes = 0.0
        if port.full:
            for flow in port.buffered:
                if flow.left_bytes > 0 and flow.in_rate > flow.out_rate * (1 + _TOLERANCE):
                    flow.coupled = True
        port.full = port.full and bool(port.buffered)
        self._reshare([p for p in seeds if p.flows])
        if port.buffered and port.switch is not None:
            port.switch.notify(port)  # look again after the change, even if nothing was re-shared

    # ------------------------------------------------------------------ sharing
    def _reshare(self, seeds: list[Port]) -> None:
        """Re-solve the rates of every train that transitively shares a link with ``seeds``.

        Changes of one instant are solved together, once, by an event at that instant
        (:meth:`_flush`): no time passes in between, so nothing moves at the old rates.

        Each train is one unit of demand over its whole path, or two when it has a buffer
        that is not full (its hops before the buffer, and from the buffer on; a train whose
        source is drained is only the latter). The units get hierarchical max-min rates
        (:meth:`_max_min`). Then: a whole train held by a port whose buffer is not full,
        with a faster way there, opens that buffer (it will fill); a train whose backlog is
        empty and that arrives no faster than it leaves becomes whole again; a filling train
        at a full buffer is held by credits (coupled); a coupled train whose tightest port is
        now upstream of its buffer is let go (it drains). Solve again until nothing changes."""
        if not seeds:
            return
        pending = self._pending
        for port in seeds:
            pending[port] = None
        if not self._flush_armed:  # one solve for every change of this instant (one event)
            self._flush_armed = True
            Timeout(self.env, 0).callbacks.append(self._flush)

    def _flush(self, _event: Any) -> None:
        self._flush_armed = False
        seeds = list(self._pending)
        self._pending.clear()
        now = self.env.now
        ports: set[Port] = set(seeds)
        flows: dict[_Flow, None] = {}
        stack = list(seeds)
        while stack:
            for flow in stack.pop().flows:
                if flow not in flows:
                    flows[flow] = None
                    for port in flow.ports[flow.first:]:
                        if port not in ports:
                            ports.add(port)
                            stack.append(port)
        for flow in flows:
            flow.advance(now)
        changed_once: set[_Flow] = set()
        for _round in range(_MAX_ROUNDS):
            self._max_min(flows)
            changed = False
            for flow in flows:
                if flow.left_bytes <= 0 or flow in changed_once:
                    continue
                b = flow.buf
                if not b:
                    k = flow.lim_in
                    if k >= 1 and not flow.ports[k].full:
                        port = flow.ports[k]
                        flow.buf = k
                        flow.backlog_bytes = 0.0
                        port.buffered[flow] = None
                        if port.switch is None:
                            port.switch = self.switch(port.src)
                    else:
                        continue
                elif flow.coupled:
                    if _limit_hop(flow.lim_in) >= b:
                        continue
                    flow.coupled = False
                elif flow.backlog_bytes <= _EMPTY_BYTES and flow.r_in <= flow.r_out * (1 + _TOLERANCE):
                    del flow.ports[b].buffered[flow]
                    flow.buf = 0
                elif flow.r_in > flow.r_out * (1 + _TOLERANCE) and flow.ports[b].full:
                    flow.coupled = True
                else:
                    continue
                changed_once.add(flow)
                changed = True
            if not changed:
                break
        self._apply(flows, ports, now)

    def _max_min(self, flows) -> None:
        """Hierarchical max-min rates for the trains' units (results in ``r_in``/``lim_in``
        for the unit over the hops before the buffer, or the whole path, and ``r_out``/
        ``lim_out`` for the unit from the buffer on).

        Progressive filling: every port offers each of its inputs (the link a unit arrives
        on, or None for the device's own injection) an equal part of what the inputs whose
        units are all frozen left, and each input's part is split evenly among its unfrozen
        units; the smallest offer (or credit cap) freezes the units it was made to, at that
        rate, with the hop that made it; offers are recomputed where those units pass."""
        if all(len(flow.ports) - flow.first == 1 for flow in flows):
            self._one_hop_shares(flows)
            return
        units: list[list] = []  # [flow, first hop, end hop, is_out, cap]
        inputs: dict[Port, dict[Any, list]] = {}  # port -> input -> [unfrozen, frozen sum, [(unit, hop)]]
        for flow in flows:
            h = len(flow.ports)
            b = flow.buf
            caps = flow.path.credit_caps
            if flow.left_bytes <= 0:
                spans = ((b, h, True),)
            elif not b or flow.coupled:
                spans = ((0, h, False),)
            else:
                spans = ((0, b, False), (b, h, True))
            for a, e, is_out in spans:
                cap = min(caps[a:e]) if flow.path.min_cap != math.inf else math.inf
                u = len(units)
                units.append([flow, a, e, is_out, cap])
                fp = flow.ports
                for i in range(a, e):
                    port = fp[i]
                    key = fp[i - 1] if i else None
                    by_input = inputs.get(port)
                    if by_input is None:
                        by_input = inputs[port] = {}
                    slot = by_input.get(key)
                    if slot is None:
                        slot = by_input[key] = [0, 0.0, []]
                    slot[0] += 1
                    slot[2].append((u, i))
        state = {p: [p.capacity_bytes_per_ns, len(by_input)] for p, by_input in inputs.items()}  # spare, open
        offers: dict[Port, float] = {}

        def offer(port: Port) -> float:
            spare, n_open = state[port]
            share = spare / n_open
            return min((share - slot[1]) / slot[0] for slot in inputs[port].values() if slot[0])

        for port in inputs:
            offers[port] = offer(port)
        capped = [u for u, unit in enumerate(units) if unit[4] != math.inf]
        rate: list[float | None] = [None] * len(units)
        limit = [0] * len(units)
        waiting = len(units)
        while waiting:
            level = min(offers.values()) if offers else math.inf
            if capped:
                cap_level = min((units[u][4] for u in capped if rate[u] is None), default=math.inf)
                level = min(level, cap_level)
            level = max(level, 0.0)
            top = level * (1 + _TOLERANCE) + 1e-15
            hits: dict[int, int] = {}
            for port, value in offers.items():
                if value <= top:
                    spare, n_open = state[port]
                    share = spare / n_open
                    for slot in inputs[port].values():
                        if slot[0] and (share - slot[1]) / slot[0] <= top:
                            for u, i in slot[2]:
                                if rate[u] is None and (u not in hits or i < hits[u]):
                                    hits[u] = i
            for u in capped:
                if rate[u] is None and u not in hits and units[u][4] <= top:
                    flow, a, e = units[u][0], units[u][1], units[u][2]
                    hits[u] = ~flow.path.credit_caps.index(units[u][4], a, e)
            dirty: set[Port] = set()
            for u, hop in hits.items():
                rate[u] = level
                limit[u] = hop
                waiting -= 1
                flow, a, e = units[u][0], units[u][1], units[u][2]
                fp = flow.ports
                for i in range(a, e):
                    port = fp[i]
                    slot = inputs[port][fp[i - 1] if i else None]
                    slot[0] -= 1
                    slot[1] += level
                    if not slot[0]:
                        st = state[port]
                        st[0] -= slot[1]
                        st[1] -= 1
                    dirty.add(port)
            for port in dirty:
                if state[port][1]:
                    offers[port] = offer(port)
                else:
                    offers.pop(port, None)
        for u, unit in enumerate(units):
            flow = unit[0]
            if unit[3]:
                flow.r_out, flow.lim_out = rate[u], limit[u]
            else:
                flow.r_in, flow.lim_in = rate[u], limit[u]
            if not flow.buf or flow.coupled:
                if not unit[3]:
                    flow.r_out, flow.lim_out = rate[u], limit[u]

    @staticmethod
    def _one_hop_shares(flows) -> None:
        """:meth:`_max_min` when every train has one link left (the last hop, no credit loop):
        links do not interact, so each link's inputs share it evenly and each input's part
        goes evenly to its trains."""
        per_port: dict[Port, dict[Any, int]] = {}
        for flow in flows:
            i = flow.first
            port = flow.ports[i]
            key = flow.ports[i - 1] if i else None
            counts = per_port.get(port)
            if counts is None:
                per_port[port] = {key: 1}
            else:
                counts[key] = counts.get(key, 0) + 1
        for flow in flows:
            i = flow.first
            port = flow.ports[i]
            counts = per_port[port]
            rate = port.capacity_bytes_per_ns / len(counts) / counts[flow.ports[i - 1] if i else None]
            flow.r_in = flow.r_out = rate
            flow.lim_in = flow.lim_out = i

    def _apply(self, flows, ports, now: float) -> None:
        """Take the solved rates: re-arm drains, set the links' loads, mark the stalls and wake
        the switch processes of the buffers involved."""
        load = dict.fromkeys(ports, 0.0)
        held: set[Port] = set()  # links a unit of which is held back by a port further on
        buffers: dict[Port, None] = {}
        for flow in flows:
            fp = flow.ports
            h = len(fp)
            b = flow.buf
            if flow.left_bytes > 0:
                old_in = flow.in_rate
                flow.in_rate = flow.r_in
                flow.out_rate = flow.r_out if b else flow.r_in
                if abs(flow.in_rate - old_in) > _TOLERANCE * flow.in_rate or flow.timer_ns is None:
                    self._arm_drain(flow, now)
            else:
                flow.in_rate = 0.0
                flow.out_rate = flow.r_out
            # hops before ``split`` carry the train's input rate, from there on its output rate
            split = b if b and (not flow.coupled or flow.left_bytes <= 0) else h
            for i in range(flow.first, h):
                port = fp[i]
                if i < split:
                    r, lim = flow.in_rate, flow.lim_in
                else:
                    r, lim = flow.out_rate, flow.lim_out
                load[port] += r
                hop = _limit_hop(lim)
                if hop > i or (lim < 0 and hop == i):
                    held.add(port)
            if b:
                buffers[fp[b]] = None
        for port in ports:
            port._set_load(load[port])
            saturated = port.load_bytes_per_ns >= port.capacity_bytes_per_ns * (1 - 1e-6)
            stalled = port in held and not saturated and bool(port.flows)
            if stalled != (port._stalled_since is not None):
                port._set_stalled(stalled)
        for port in buffers:
            port.switch.notify(port)

    @staticmethod
    def _mark_credit_stall(flow: _Flow) -> None:
        """A lone train held by the credit loop of hop ``~lim_in``: that link and those before
        it had spare capacity while it waited for credits (as :meth:`_apply` marks them)."""
        lim = flow.lim_in
        if lim < 0:
            for port in flow.ports[:~lim + 1]:
                if port.load_bytes_per_ns < port.capacity_bytes_per_ns * (1 - 1e-6):
                    port._set_stalled(True)
