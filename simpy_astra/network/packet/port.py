"""A directed link of the packet backend: a SimPy resource whose users are packet trains, and a
SimPy process that serves its ``put()`` queue and its changes of speed.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Protocol

import simpy

from simpy_astra.network.link import LinkResource, Transmission

if TYPE_CHECKING:
    from simpy_astra.network.packet.trains import Train, TrainPath


class PortOwner(Protocol):
    """What a port asks of the network it belongs to."""

    def start_put(self, port: Port, request: Transmission) -> None:
        """Start a queued background transfer (``yield port.put(n)``) as a train."""

    def speed_changed(self, port: Port) -> None:
        """The port's speed changed: what was solved for the old speed is void from now."""

    def reshare(self, seeds: list[Port]) -> None:
        """Share the rates again among the trains on ``seeds``."""


class BufferKeeper(Protocol):
    """The process that keeps the port's buffer (its device's switch process)."""

    def notify(self, port: Port) -> None: ...



class Port(LinkResource):
    """A directed link ``src -> dst`` and the output port (buffer) that feeds it: a SimPy
    resource of unbounded capacity whose users are the trains crossing it.

    ``flows`` are those trains, each with the index of this port on its path (a train joins
    with :meth:`request`, leaves with :meth:`release`: plain calls, not SimPy events, which
    would cost events per train and hop); ``buffered`` the trains with a backlog
    in this port's buffer, kept by ``switch`` (the :class:`SwitchProcess` of ``src``);
    ``load_bytes_per_ns`` the trains' summed rates; ``capacity_bytes_per_ns`` its speed while
    up, 0 while down. Co-simulation may change it live, as a congestion-aware link:
    :meth:`set_bandwidth`, :meth:`take_down`, :meth:`bring_up`, and ``yield port.put(n)``.

    Its process (``process``, :meth:`run`) takes what is queued on it: each ``put()`` request,
    started as a train of its own on this link, and each change of speed, after which it has
    its trains' rates shared again. The network's messages do not queue here: a train's rate
    on every link is solved for all links at once, and its events (its last byte leaving,
    its delivery) are the train's own, so a process step per train and link would buy
    nothing but events."""

    def __init__(self, env: simpy.Environment, src: Any, dst: Any, bandwidth_gbps: float, latency_ns: float,
                 network: PortOwner | None = None) -> None:
        super().__init__(env, src, dst, bandwidth_gbps, latency_ns, capacity=math.inf)
        self.network = network
        self.capacity_bytes_per_ns = self.bytes_per_ns
        self.flows: dict[Train, int] = {}
        self.buffered: dict[Train, None] = {}
        self.switch: BufferKeeper | None = None
        self.full = False  # the buffer is full (set and cleared by the switch process)
        self.paths: list[TrainPath] = []  # every path through this link (re-timed on a change of speed)
        self.load_bytes_per_ns = 0.0
        self.carried_bytes = 0.0  # a sprayed message's share may be a fraction
        self.max_queue_bytes = 0
        self._busy_done_ns = 0.0
        self._load_since = 0.0
        self._stall_done_ns = 0.0
        self._stalled_since: float | None = None
        self._own_path: TrainPath | None = None
        self._timer_ns: float | None = None  # when the switch's pending buffer timer fires
        self._timer_version = 0
        self._instant_ns: float | None = None  # when the switch last handed a buffer instant over
        self._instants = 0
        self._work = env.event()  # succeeds when a put() queued or the speed changed
        self._speed_changed = False
        self.process = env.process(self.run())

    # ------------------------------------------------------------------ the process
    def run(self):
        """The port's behaviour, forever: wait for work; start every queued ``put()`` as a
        train on this link (it shares the link from now; the request succeeds when its last
        byte arrived); after a change of speed, have the trains on it re-shared (they moved
        at the old rates until this instant)."""
        queue = self.put_queue
        while True:
            yield self._work
            self._work = self.env.event()
            while queue:
                self.network.start_put(self, queue.pop(0))
            if self._speed_changed:
                self._speed_changed = False
                if self.flows:
                    self.network.reshare([self])

    def _call(self) -> None:
        if not self._work.triggered:
            self._work.succeed()

    # ------------------------------------------------------------------ the resource
    def request(self, flow: Train, hop: int) -> None:
        """A train joins the link (hop ``hop`` of its path): it shares the wire from now
        (probe ``link_start``, for the network's messages: not a user's own ``put()``)."""
        self.flows[flow] = hop
        watchers = self.probe_link_start
        if watchers is not None and flow.message.done.__class__ is not Transmission:
            for watcher in watchers:
                watcher(self, flow.message.key, flow.size_bytes)

    def release(self, flow: Train) -> None:
        """A train leaves the link (probe ``link_end``); an idle link stops counting busy
        and stalled time."""
        del self.flows[flow]
        watchers = self.probe_link_end
        if watchers is not None and flow.message.done.__class__ is not Transmission:
            for watcher in watchers:
                watcher(self, flow.message.key, flow.size_bytes)
        if not self.flows:
            self._set_load(0.0)
            self._set_stalled(False)

    def _trigger_put(self, _get_event: Any) -> None:
        """A user's ``put(n)`` (a :class:`Transmission`) queued: the process starts it."""
        if self.put_queue:
            self._call()

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

    def held(self) -> list[tuple[Any, Any]]:
        """(message, its board key or None) of every train's message on this link."""
        return [(flow.message, flow.message.key) for flow in self.flows]

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
        if self.network is not None:
            self.network.speed_changed(self)
        self._speed_changed = True
        self._call()
