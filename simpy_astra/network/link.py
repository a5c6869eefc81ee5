"""A directed link as a SimPy resource and a SimPy process: one transmission on the wire at a
time, FIFO.

:class:`LinkResource` is what every backend's directed link shares (a SimPy
:class:`~simpy.resources.base.BaseResource` with its ends, speed, latency and up/down
state, and the checks of a change of speed); ``Link`` (congestion-aware backend) and the
packet backend's :class:`~simpy_astra.network.packet.port.Port` build on it.

``Link`` is a :class:`simpy.resources.base.BaseResource` of capacity one. Its ``put`` queue
holds what waits for the wire: the network's messages (:meth:`Link.offer`), and
:class:`Transmission` requests that a user process makes with ``yield link.put(nbytes)``
(background traffic), in one FIFO. Its own process (``link.process``, :meth:`Link.run`, as
ns.py's ``Port``) serves the queue: it takes the next item, schedules its arrival, and
yields ``env.timeout(trunc(S / B))`` while the ``S`` bytes are serialised. A transmission
starting at ``t`` arrives at the far end at ``t + trunc(latency + S / B)`` (``B`` in
bytes/ns, GB = 2^30 B), as ASTRA-sim's congestion-aware links do; the arrival is a
callback timeout (it hands the item on: no process step per hop) scheduled before the
"link free" timeout the process waits on, the order the reference schedules them in.

**Exact order.** A SimPy process resumes as the callback of the event it waits on, so
"link free" resumes the process in the queue position the reference frees its link in, and
it takes the next queued item there. An item offered to an idle link starts in the offer
itself, as the reference starts a message on a free link inside the send: :meth:`Link.offer`
(or a ``put``, or ``bring_up``) puts it on the wire and moves the idle process's wait to that
item's "link free" (:func:`~simpy_astra.engine.wait_instead`: no step of the generator, no
queue entry; waking the process in place to start the item costs a resume per idle
hand-over, measured ~10% of an aware run). The process is started at construction
(:func:`~simpy_astra.engine.start_in_place`), so a link is idle from its first instant.
Those two engine calls are the link's only in-place tricks.

The link's speed is live: :meth:`set_bandwidth`, :meth:`take_down` and :meth:`bring_up`
act on every byte not yet on the wire, those of the transmission being serialised
included (it is re-timed for its remaining bytes: its old events go stale and the process,
interrupted, waits for the new "link free").
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Generator
from typing import Any

import simpy
from simpy.core import BoundClass
from simpy.events import Event, Timeout
from simpy.exceptions import Interrupt
from simpy.resources.base import BaseResource, Put

from simpy_astra.engine import start_in_place, wait_instead
from simpy_astra.units import network_gbps_to_bytes_per_ns


class Transmission(Put):
    """A user's request to carry ``size_bytes`` over one link; its value is the arrival time."""

    def __init__(self, link: Link, size_bytes: int) -> None:
        if size_bytes < 0:
            raise ValueError(f"a transmission carries 0 or more bytes, not {size_bytes}")
        self.size = size_bytes
        super().__init__(link)

    def arrived(self, link: Link) -> None:
        self.succeed(link.env.now)


class LinkResource(BaseResource):
    """What a directed link ``src -> dst`` is on every link-level backend: a SimPy resource
    with ``bandwidth_gbps`` (``bytes_per_ns`` in bytes/ns, GB = 2^30 B), ``latency_ns`` and
    ``up``. ``put(nbytes)`` is a :class:`Transmission` (background bytes over this link);
    subclasses decide how the wire is shared (``capacity``: how many transmissions at once)."""

    put = BoundClass(Transmission)

    def __init__(self, env: simpy.Environment, src: Any, dst: Any, bandwidth_gbps: float,
                 latency_ns: float, capacity: float) -> None:
        super().__init__(env, capacity)
        self.env = env
        self.src = src
        self.dst = dst
        self.latency_ns = latency_ns
        self.bandwidth_gbps = bandwidth_gbps
        self.bytes_per_ns = network_gbps_to_bytes_per_ns(bandwidth_gbps)
        self.up = True

    def _check_bandwidth(self, bandwidth_gbps: float) -> None:
        from simpy_astra.horizon import HORIZON_NS, api_number

        api_number(bandwidth_gbps, f"link {self.src}->{self.dst}: bandwidth_gbps", positive=True, time=False)
        if 1 / network_gbps_to_bytes_per_ns(bandwidth_gbps) > HORIZON_NS:
            raise ValueError(f"link {self.src}->{self.dst}: bandwidth {bandwidth_gbps:g} GB/s is so low that "
                             f"one byte would take past the horizon (2^63 ns)")
        if bandwidth_gbps <= 0:
            raise ValueError(f"link {self.src}->{self.dst}: bandwidth must be > 0 GB/s "
                             f"(use take_down() to stop it)")

    def _new_bandwidth(self, bandwidth_gbps: float) -> None:
        """Take a new speed (checked; the subclass first accounts what the old one did)."""
        self.bandwidth_gbps = bandwidth_gbps
        self.bytes_per_ns = network_gbps_to_bytes_per_ns(bandwidth_gbps)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.src}->{self.dst} {self.bandwidth_gbps} GB/s {self.latency_ns} ns>"


class Link(LinkResource):
    """Directed link ``src -> dst`` with ``bandwidth_gbps`` and ``latency_ns``, served by its
    own SimPy process (``process``, running :meth:`run`).

    Live statistics: ``bytes`` put on the wire, ``busy_ns`` (serialising time so far),
    ``queue`` (what waits). ``on_arrival(item)`` receives the network's messages at the far
    end; user transmissions succeed there instead."""

    PutQueue = deque

    def __init__(self, env: simpy.Environment, src: Any, dst: Any, bandwidth_gbps: float,
                 latency_ns: float, on_arrival: Callable[[Any], None]) -> None:
        super().__init__(env, src, dst, bandwidth_gbps, latency_ns, capacity=1)
        self.bytes = 0
        self._busy_done_ns: float = 0
        # the transmission on the wire (one at a time, so the link holds it, not an object
        # per hop): its item, bytes left at ``_since``, and its two events
        self._item: Any = None
        self._left: float = 0
        self._since: float = 0
        self._arrival: Timeout | None = None
        self._free: Timeout | None = None
        self._stale: set[Timeout] = set()  # arrivals a change of speed re-timed: ignored
        self._idle: Event | None = None  # what the process waits on while nothing is on the wire
        self._on_arrival = on_arrival
        self._arrived_callback = self._arrived  # bound once: the callback of every arrival
        self._delays: dict[int, tuple[int, int]] = {}
        # started now, so it is idle (and an offer starts at once) from the link's first instant
        self.process = start_in_place(env, self.run())

    # ------------------------------------------------------------------ statistics
    @property
    def queue(self) -> deque:
        """Messages and transmissions waiting for the wire, first in line first."""
        return self.put_queue

    @property
    def busy(self) -> bool:
        return self._item is not None

    @property
    def on_wire(self) -> Any | None:
        """The message or transmission being serialised (held while the link is down)."""
        return self._item

    @property
    def busy_ns(self) -> float:
        """Time spent serialising so far (an integer once every transmission ended)."""
        if self._item is None or not self.up:
            return self._busy_done_ns
        return self._busy_done_ns + (self.env.now - self._since)

    # ------------------------------------------------------------------ the process
    def run(self) -> Generator[Event, Any, None]:
        """The link's behaviour, forever: take the next queued item and start it (its arrival
        is a callback timeout, scheduled before "link free", the order the reference
        schedules them in); wait until its last byte is on the wire; account it. While
        nothing is queued (or the link is down) it waits on ``parked``, which nothing
        triggers: an offer, a ``put`` or ``bring_up`` starts the item itself and moves the
        wait to the item's "link free" (:meth:`_hand_over`)."""
        env = self.env
        queue = self.put_queue
        parked = Event(env)  # never triggered: an offer moves the wait to its item's link free
        while True:
            if queue and self.up:
                self._start(queue.popleft())
                waited = self._free
            else:
                self._idle = waited = parked
            try:
                yield waited
            except Interrupt:
                yield from self._retimed()
            self._busy_done_ns += env.now - self._since
            self._item = None

    def _retimed(self) -> Generator[Event, Any, None]:
        """Wait for the end of a transmission whose speed changed (interrupted again by each
        further change)."""
        while True:
            try:
                yield self._free if self.up else Event(self.env)  # down: until bring_up
                return
            except Interrupt:
                pass

    def _hand_over(self, item: Any) -> None:
        """Start ``item`` on the idle link now, as the reference starts a message on a free
        link (waking the process with ``succeed`` would start it one queue entry late), and
        have the parked process wait for its "link free" instead."""
        self._idle = None
        self._start(item)
        wait_instead(self.process, self._free)

    # ------------------------------------------------------------------ faults
    def set_bandwidth(self, bandwidth_gbps: float) -> None:
        """New speed for every byte not yet on the wire (from now)."""
        self._check_bandwidth(bandwidth_gbps)
        self._pause()
        self._new_bandwidth(bandwidth_gbps)
        self._delays = {}
        self._retime()

    def take_down(self) -> None:
        """Stop the wire: the transmission on it and everything queued wait for bring_up()."""
        if self.up:
            self._pause()
            self.up = False
            if self._item is not None:
                self.process.interrupt("link down")  # its "link free" is stale now

    def bring_up(self) -> None:
        if not self.up:
            self.up = True
            self._retime()

    def _pause(self) -> None:
        """Account the current transmission's progress so far; its arrival goes stale."""
        if self._item is None or not self.up:
            return
        now = self.env.now
        self._left = max(0.0, self._left - (now - self._since) * self.bytes_per_ns)
        self._busy_done_ns += now - self._since
        self._since = now
        self._stale.add(self._arrival)

    def _retime(self) -> None:
        """Carry on at the current speed: the paused transmission's remaining bytes get new
        events (and the process is told to wait for them), or an idle link takes what queued."""
        if not self.up:
            return  # bring_up() resumes
        item = self._item
        if item is None:
            if self._idle is not None and self.put_queue:
                self._hand_over(self.put_queue.popleft())
            return
        env = self.env
        self._since = env.now
        ser = self._left / self.bytes_per_ns
        self._schedule(item, int(self.latency_ns + ser), int(ser))
        self.process.interrupt("re-timed")

    # ------------------------------------------------------------------ carrying
    def offer(self, item: Any) -> None:
        """The network's way in (no request event per hop): an idle link starts it now,
        a busy one queues it."""
        if self._idle is not None and self.up:
            self._idle = None  # (_hand_over, inlined: once per message hop)
            self._start(item)
            wait_instead(self.process, self._free)
        else:
            self.put_queue.append(item)

    def _trigger_put(self, _event: Any) -> None:
        """A ``put`` joined the queue: an idle link starts the first in line now."""
        if self._idle is not None and self.up and self.put_queue:
            self._hand_over(self.put_queue.popleft())

    def _start(self, item: Any) -> None:
        """Put ``item`` on the wire now (observe.py wraps this on the instance)."""
        size = item.size
        delays = self._delays.get(size)
        if delays is None:
            ser = size / self.bytes_per_ns
            delays = self._delays[size] = (int(self.latency_ns + ser), int(ser))
        self.bytes += size
        env = self.env
        self._item = item
        self._left = size
        self._since = env.now
        # arrival first, then link free: the order the reference schedules them in
        arrival = self._arrival = Timeout(env, delays[0], item)
        arrival.callbacks.append(self._arrived_callback)
        self._free = Timeout(env, delays[1])

    def _schedule(self, item: Any, arrive_ns: int, free_ns: int) -> None:
        """The events of a re-timed transmission (as :meth:`_start` schedules them)."""
        arrival = self._arrival = Timeout(self.env, arrive_ns, item)
        arrival.callbacks.append(self._arrived_callback)
        self._free = Timeout(self.env, free_ns)

    def _arrived(self, event: Timeout) -> None:
        """An arrival's callback: hand the item (the event's value) on at the far end."""
        stale = self._stale
        if stale and event in stale:  # re-timed: its new arrival is another event
            stale.remove(event)
            return
        item = event.value
        if item.__class__ is Transmission:
            item.arrived(self)
        else:
            self._on_arrival(item)
