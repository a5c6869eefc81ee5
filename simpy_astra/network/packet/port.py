"""A directed link of the packet backend: a SimPy resource whose users are packet trains, and a
SimPy process that serves its ``put()`` queue and its changes of speed.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

import simpy
from simpy.events import Timeout

from simpy_astra.network.link_resource import LinkResource, Transmission
from simpy_astra.network.packet.solver import TOLERANCE
from simpy_astra.network.packet.trains import EMPTY_BYTES

if TYPE_CHECKING:
    from simpy_astra.network.packet.train_path import TrainPath
    from simpy_astra.network.packet.trains import Train


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

    def notify(self, port: Port) -> None:
        """Something changed at ``port``'s buffer: look at it again (in this instant)."""



class Port(LinkResource):
    """A directed link ``src -> dst`` and the output port (buffer) that feeds it: a SimPy
    resource of unbounded capacity whose users are the trains crossing it.

    ``flows`` are those trains, each with how many hops of its path cross this port (1
    but on a folded run's representative ports; a train joins with :meth:`request`, leaves
    with :meth:`release`: plain calls, not SimPy events, which would cost events per train
    and hop); ``buffered`` the trains with a backlog in this
    port's buffer (:meth:`hold`, :meth:`let_go`), which the port measures
    (:meth:`look_at_buffer`) and times (:meth:`arm_buffer_timer`) when ``switch`` (the
    :class:`SwitchProcess` of ``src``) asks;
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
        self._buffered: dict[Train, None] = {}
        self.switch: BufferKeeper | None = None  # the process that keeps the buffer (attach_switch)
        self.full = False  # the buffer is full (as the last look_at_buffer found it)
        self.paths: list[TrainPath] = []  # every path through this link (re-timed on a change of speed)
        self.load_bytes_per_ns = 0.0
        self.carried_bytes = 0.0  # a sprayed message's share may be a fraction
        self.max_queue_bytes = 0
        self._busy_done_ns = 0.0
        self._load_since = 0.0
        self._stall_done_ns = 0.0
        self._stalled_since: float | None = None
        self.stalled = False  # spare capacity now while a train on it waits for credits (set_stalled)
        self._timer_ns: float | None = None  # when the pending buffer timer fires
        self._timer_version = 0
        self._instant_ns: float | None = None  # when a buffer instant was last handed over
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
    def request(self, flow: Train, times: int = 1) -> None:
        """A train joins the link, crossing it at ``times`` hops of its path: it shares the
        wire from now (probe ``link_start``, for the network's messages: not a user's own
        ``put()``).

        Only a folded run's path crosses a port at several hops (each a relabelled copy of
        the train on a link of that orbit): ``flows`` counts them, each one carries the
        train's bytes, and each :meth:`release` lets go of one."""
        self.flows[flow] = times
        self.carried_bytes += flow.size_bytes * times
        watchers = self.probe_link_start
        if watchers is not None and not flow.message.users_put:
            for _ in range(times):  # (once per hop, as each release reports one)
                for watcher in watchers:
                    watcher(self, flow.message.key, flow.size_bytes)

    def release(self, flow: Train) -> None:
        """A train leaves the link (probe ``link_end``); an idle link stops counting busy
        and stalled time."""
        flows = self.flows
        times = flows[flow]
        if times == 1:
            del flows[flow]
        else:
            flows[flow] = times - 1
        watchers = self.probe_link_end
        if watchers is not None and not flow.message.users_put:
            for watcher in watchers:
                watcher(self, flow.message.key, flow.size_bytes)
        if not self.flows:
            self.set_load(0.0)
            self.set_stalled(False)

    def _trigger_put(self, _get_event: Any) -> None:
        """A user's ``put(n)`` (a :class:`Transmission`) queued: the process starts it."""
        if self.put_queue:
            self._call()

    # ------------------------------------------------------------------ the buffer
    def attach_switch(self, switch: BufferKeeper) -> None:
        """``switch`` keeps this port's buffer from now (the device at ``src`` forwards)."""
        self.switch = switch

    @property
    def buffered(self) -> tuple[Train, ...]:
        """The trains with a backlog in this port's buffer."""
        return tuple(self._buffered)

    def hold(self, flow: Train) -> None:
        """``flow`` has a backlog in this buffer from now."""
        self._buffered[flow] = None

    def let_go(self, flow: Train) -> None:
        """``flow`` has no backlog here any more; an empty buffer is not full."""
        self._buffered.pop(flow, None)
        if not self._buffered:
            self.full = False

    def look_at_buffer(self, buffer_bytes: float) -> tuple[bool, float]:
        """Sum the backlogs into the occupancy now, note whether the buffer is full and the
        largest queue, and say when it next changes state: (an instant is now -- a backlog
        ran out, or the buffer is full while a train still fills it --, in how many ns the
        buffer fills or a backlog empties at the current rates; inf: never)."""
        now = self.env.now
        occupancy = slope = 0.0
        soonest = math.inf
        instant = False
        for flow in self._buffered:
            backlog, buffered = flow.in_buffer(now)
            sending = flow.in_bytes_per_ns if flow.left_bytes > 0 else 0.0
            occupancy += buffered
            slope += sending - flow.buffer_bytes_per_ns()
            net = sending - flow.out_bytes_per_ns
            if net < 0:
                if backlog <= EMPTY_BYTES:
                    instant = True  # emptied
                else:
                    soonest = min(soonest, backlog / -net)
        full = occupancy >= buffer_bytes - EMPTY_BYTES
        if full and any(f.fills_buffer() for f in self._buffered):
            instant = True
        self.full = full
        seen = min(occupancy, buffer_bytes)
        if seen > self.max_queue_bytes:
            self.max_queue_bytes = round(seen)
        # (a slope within rounding of 0 fills nothing: no timer for a far-off phantom instant)
        if slope > TOLERANCE * self.capacity_bytes_per_ns and not full:
            soonest = min(soonest, (buffer_bytes - occupancy) / slope)
        return instant, soonest

    def count_instant(self) -> int:
        """How many buffer instants this port handed over in the current instant, this one
        included (a guard against a state that solves back to itself)."""
        now = self.env.now
        if self._instant_ns != now:
            self._instant_ns, self._instants = now, 0
        self._instants += 1
        return self._instants

    def arm_buffer_timer(self, at_ns: int, wake: Callable[[Port], None]) -> None:
        """Call ``wake(self)`` at ``at_ns`` unless a pending timer comes first (it will look
        again then) or a later call re-arms it."""
        now = self.env.now
        if self._timer_ns is not None and now <= self._timer_ns <= at_ns:
            return
        self._timer_version += 1
        self._timer_ns = at_ns
        version = self._timer_version
        Timeout(self.env, max(0, at_ns - now)).callbacks.append(lambda _e: self._timer(version, wake))

    def _timer(self, version: int, wake: Callable[[Port], None]) -> None:
        if version == self._timer_version:
            self._timer_ns = None
            wake(self)

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

    def set_load(self, load_bytes_per_ns: float) -> None:
        """The trains on the link move ``load_bytes_per_ns`` together from now."""
        now = self.env.now
        if self.load_bytes_per_ns:  # (:meth:`_busy_open_ns`, inlined: a re-share sets every link's load)
            self._busy_done_ns += (now - self._load_since) * self.load_bytes_per_ns / self.bytes_per_ns
        self._load_since = now
        self.load_bytes_per_ns = load_bytes_per_ns

    def count_carried(self, size_bytes: float) -> None:
        """``size_bytes`` crossed the link before a train's head reached it (a train is
        credited with them when it joins): busy time as if serialised at full speed."""
        self._busy_done_ns += size_bytes / self.bytes_per_ns

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
        return sum(flow.in_buffer(now)[0] for flow in self._buffered)

    @property
    def stall_ns(self) -> int:
        """Time so far this link had spare capacity while a flow on it waited for credits."""
        since = self._stalled_since
        open_ns = 0.0 if since is None else self.env.now - since
        return round(self._stall_done_ns + open_ns)

    def set_stalled(self, stalled: bool) -> None:
        """Start or stop counting stall time (no change if it already is as asked)."""
        if stalled == self.stalled:
            return
        self.stalled = stalled
        now = self.env.now
        if self._stalled_since is not None:
            self._stall_done_ns += now - self._stalled_since
        self._stalled_since = now if stalled else None

    # ------------------------------------------------------------------ live changes
    def set_bandwidth(self, bandwidth_gbps: float) -> None:
        """New speed for every byte not yet sent (from now): trains are re-shared."""
        bandwidth_gbps = self._check_bandwidth(bandwidth_gbps)
        self.set_load(self.load_bytes_per_ns)  # account the busy time at the old speed
        self._new_bandwidth(bandwidth_gbps)
        if self.up:
            self.capacity_bytes_per_ns = self.bytes_per_ns
        for path in self.paths:
            path.measure()
        self._changed()

    def take_down(self) -> None:
        """Stop the wire: its trains (and what they hold back) wait for bring_up()."""
        if self.up:
            self.set_load(self.load_bytes_per_ns)
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
